//===- cpp_api.cpp - The runtime's C++ API from an outside project --------===//
//
// Usage: attnc-sample-jit-host-cpp SPEC.attn
//
// Built only when samples/jit_host is configured on its own against an
// installed attnc: it proves that the installed C++ headers (Runtime.h,
// Npy.h and the two Codegen headers they include) compile and link from
// the install tree alone. Compiles the spec's only block and prints its
// signature.
//
//===----------------------------------------------------------------------===//

#include "attnc/Runtime/Npy.h"
#include "attnc/Runtime/Runtime.h"

#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    llvm::errs() << "usage: " << argv[0] << " SPEC.attn\n";
    return 1;
  }
  auto kernel = attnc::Runtime::global().compileFile(
      argv[1], "", attnc::Runtime::defaultOptions());
  if (!kernel) {
    llvm::errs() << llvm::toString(kernel.takeError()) << "\n";
    return 1;
  }
  for (const attnc::KernelArgument &a : (*kernel)->signature().arguments)
    llvm::outs() << attnc::roleName(a.role) << " " << a.name << ": "
                 << a.typeString() << "\n";
  return 0;
}
