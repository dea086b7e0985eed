/*===- golden_main.c - Runs one golden kernel on the target, files in/out -===//
 *
 * Cross-compiled with the kernel's object (CMakeLists.txt; ATTNC_KERNEL is
 * its packed entry, int NAME(void **args)) and run on the target or its
 * emulator:  golden_main DIR
 * reads DIR/manifest and DIR/argI.bin (written by attnc-golden-io), calls the
 * kernel once and writes every output to DIR/argI.out.bin.
 *
 *===----------------------------------------------------------------------===*/

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ATTNC_KERNEL(void **args);

enum { kMaxArguments = 64 };

static int fail(const char *what, const char *path) {
  fprintf(stderr, "golden_main: %s %s\n", what, path);
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: golden_main DIR\n");
    return 2;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/manifest", argv[1]);
  FILE *manifest = fopen(path, "r");
  if (!manifest)
    return fail("cannot read", path);
  void *args[kMaxArguments];
  int outputs[kMaxArguments];
  long sizes[kMaxArguments];
  int count = 0;
  char role[8];
  long size;
  while (fscanf(manifest, "%7s %ld", role, &size) == 2) {
    if (count == kMaxArguments || size < 0)
      return fail("bad manifest", path);
    outputs[count] = strcmp(role, "out") == 0;
    sizes[count] = size;
    /* One spare float, so that an empty buffer is still a pointer. */
    args[count] = malloc((size_t)size + sizeof(float));
    if (!args[count])
      return fail("out of memory for", path);
    if (!outputs[count]) {
      snprintf(path, sizeof path, "%s/arg%d.bin", argv[1], count);
      FILE *in = fopen(path, "rb");
      if (!in || fread(args[count], 1, (size_t)size, in) != (size_t)size)
        return fail("cannot read", path);
      fclose(in);
    }
    ++count;
  }
  fclose(manifest);
  int status = ATTNC_KERNEL(args);
  if (status != 0) {
    fprintf(stderr, "golden_main: the kernel returned %d\n", status);
    return 1;
  }
  for (int i = 0; i < count; ++i) {
    if (!outputs[i])
      continue;
    snprintf(path, sizeof path, "%s/arg%d.out.bin", argv[1], i);
    FILE *out = fopen(path, "wb");
    if (!out || fwrite(args[i], 1, (size_t)sizes[i], out) != (size_t)sizes[i] ||
        fclose(out) != 0)
      return fail("cannot write", path);
  }
  return 0;
}
