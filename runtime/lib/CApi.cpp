//===- CApi.cpp - The attnc runtime's C API over the C++ API --------------===//

#include "attnc/attnc.h"

#include "attnc/Runtime/Runtime.h"

#include "llvm/Support/ErrorHandling.h"

#include <optional>
#include <string>
#include <utility>

using namespace attnc;

struct attnc_kernel {
  std::shared_ptr<Kernel> kernel;
};

namespace {

thread_local std::string lastError;

/// Records `error` for attnc_last_error(); true when there was one.
bool failed(llvm::Error error) {
  if (!error) {
    lastError.clear();
    return false;
  }
  lastError = llvm::toString(std::move(error));
  return true;
}

int fail(const std::string &message) {
  lastError = message;
  return 1;
}

CompileOptions compileOptions(const char *cpu, int optLevel) {
  CompileOptions options = Runtime::defaultOptions();
  options.target.cpu = cpu ? cpu : "native";
  options.setOptLevel(optLevel < 0 ? 0 : optLevel > 3 ? 3 : optLevel);
  return options;
}

/// compileOptions for `target` ("cpu", "nvptx" or NULL), or an error.
llvm::Expected<CompileOptions> targetOptions(const char *target,
                                             const char *cpu, int optLevel) {
  CompileOptions options = compileOptions(cpu, optLevel);
  llvm::StringRef name = target ? target : "cpu";
  if (name == "nvptx")
    options.target.kind = TargetKind::Nvptx;
  else if (name != "cpu")
    return llvm::createStringError("attnc: unknown target '" + name +
                                   "' (cpu or nvptx)");
  return options;
}

attnc_kernel *wrap(llvm::Expected<std::shared_ptr<Kernel>> kernel) {
  if (!kernel) {
    failed(kernel.takeError());
    return nullptr;
  }
  lastError.clear();
  return new attnc_kernel{std::move(*kernel)};
}

/// A checked argument index, or -1 with the error recorded.
int argument(const attnc_kernel *kernel, int index) {
  if (!kernel) {
    fail("attnc: the kernel is NULL");
    return -1;
  }
  int count = static_cast<int>(kernel->kernel->signature().arguments.size());
  if (index < 0 || index >= count) {
    fail("attnc: argument index " + std::to_string(index) +
         " is out of range [0, " + std::to_string(count) + ")");
    return -1;
  }
  return index;
}

/// The C API's dtypes: the rows of the element-type table it names.
constexpr std::pair<attnc_dtype, ElementType> kDtypes[] = {
    {ATTNC_F32, ElementType::F32},
    {ATTNC_I32, ElementType::I32},
    {ATTNC_BF16, ElementType::BF16},
    {ATTNC_F16, ElementType::F16}};

std::optional<ElementType> elementTypeOf(attnc_dtype dtype) {
  for (auto [c, type] : kDtypes)
    if (c == dtype)
      return type;
  return std::nullopt;
}

bool toHostBuffer(const attnc_buffer &in, HostBuffer &out) {
  std::optional<ElementType> type = elementTypeOf(in.dtype);
  if (!in.name || in.rank < 0 || (in.rank > 0 && !in.shape) || !type) {
    fail("attnc: malformed attnc_buffer (name, dtype, rank and shape must be "
         "set)");
    return false;
  }
  out.name = in.name;
  out.data = in.data;
  out.type = *type;
  out.shape.assign(in.shape, in.shape + in.rank);
  return true;
}

} // namespace

extern "C" {

attnc_kernel *attnc_compile_string(const char *spec, const char *block,
                                   const char *cpu, int opt_level) {
  if (!spec) {
    fail("attnc: the spec is NULL");
    return nullptr;
  }
  return wrap(Runtime::global().compile(spec, "<string>", block ? block : "",
                                        compileOptions(cpu, opt_level)));
}

attnc_kernel *attnc_compile_file(const char *path, const char *block,
                                 const char *cpu, int opt_level) {
  if (!path) {
    fail("attnc: the path is NULL");
    return nullptr;
  }
  return wrap(Runtime::global().compileFile(path, block ? block : "",
                                            compileOptions(cpu, opt_level)));
}

attnc_kernel *attnc_compile_string_for(const char *spec, const char *block,
                                       const char *target, const char *cpu,
                                       int opt_level) {
  if (!spec) {
    fail("attnc: the spec is NULL");
    return nullptr;
  }
  auto options = targetOptions(target, cpu, opt_level);
  if (!options) {
    failed(options.takeError());
    return nullptr;
  }
  return wrap(Runtime::global().compile(spec, "<string>", block ? block : "",
                                        *options));
}

attnc_kernel *attnc_compile_file_for(const char *path, const char *block,
                                     const char *target, const char *cpu,
                                     int opt_level) {
  if (!path) {
    fail("attnc: the path is NULL");
    return nullptr;
  }
  auto options = targetOptions(target, cpu, opt_level);
  if (!options) {
    failed(options.takeError());
    return nullptr;
  }
  return wrap(
      Runtime::global().compileFile(path, block ? block : "", *options));
}

void attnc_kernel_free(attnc_kernel *kernel) { delete kernel; }

void attnc_clear_memory_cache(void) { Runtime::global().clearMemoryCache(); }

const char *attnc_last_error(void) { return lastError.c_str(); }

const char *attnc_kernel_name(const attnc_kernel *kernel) {
  return kernel ? kernel->kernel->signature().name.c_str() : nullptr;
}

int attnc_kernel_num_args(const attnc_kernel *kernel) {
  return kernel ? static_cast<int>(kernel->kernel->signature().arguments.size())
                : -1;
}

const char *attnc_kernel_arg_name(const attnc_kernel *kernel, int index) {
  if (argument(kernel, index) < 0)
    return nullptr;
  return kernel->kernel->signature().arguments[index].name.c_str();
}

attnc_role attnc_kernel_arg_role(const attnc_kernel *kernel, int index) {
  if (argument(kernel, index) < 0)
    return ATTNC_INPUT;
  switch (kernel->kernel->signature().arguments[index].role) {
  case ArgumentRole::Input:
    return ATTNC_INPUT;
  case ArgumentRole::Param:
    return ATTNC_PARAM;
  case ArgumentRole::State:
    return ATTNC_STATE;
  case ArgumentRole::Output:
    return ATTNC_OUTPUT;
  }
  return ATTNC_INPUT;
}

attnc_dtype attnc_kernel_arg_dtype(const attnc_kernel *kernel, int index) {
  if (argument(kernel, index) < 0)
    return ATTNC_F32;
  ElementType type = kernel->kernel->signature().arguments[index].type;
  for (auto [dtype, row] : kDtypes)
    if (row == type)
      return dtype;
  // The C API names every row of the table (the static_assert above).
  fail("attnc: argument " + std::to_string(index) +
       " has an element type the C API does not name");
  return ATTNC_F32;
}

int attnc_kernel_arg_rank(const attnc_kernel *kernel, int index) {
  if (argument(kernel, index) < 0)
    return -1;
  return static_cast<int>(
      kernel->kernel->signature().arguments[index].shape.size());
}

const int64_t *attnc_kernel_arg_shape(const attnc_kernel *kernel, int index) {
  if (argument(kernel, index) < 0)
    return nullptr;
  return kernel->kernel->signature().arguments[index].shape.data();
}

int attnc_kernel_bind_param(attnc_kernel *kernel, const attnc_buffer *param) {
  if (!kernel || !param)
    return fail("attnc: the kernel or the param is NULL");
  HostBuffer buffer;
  if (!toHostBuffer(*param, buffer))
    return 1;
  return failed(kernel->kernel->bindParam(buffer)) ? 1 : 0;
}

int attnc_kernel_prepare_params(attnc_kernel *kernel) {
  if (!kernel)
    return fail("attnc: the kernel is NULL");
  return failed(kernel->kernel->prepareParams()) ? 1 : 0;
}

int attnc_kernel_run(const attnc_kernel *kernel, const attnc_buffer *buffers,
                     int count) {
  if (!kernel || count < 0 || (count > 0 && !buffers))
    return fail("attnc: the kernel or the buffers are NULL");
  std::vector<HostBuffer> hostBuffers(count);
  for (int i = 0; i < count; ++i)
    if (!toHostBuffer(buffers[i], hostBuffers[i]))
      return 1;
  return failed(kernel->kernel->run(hostBuffers)) ? 1 : 0;
}

int attnc_kernel_run_cuda(const attnc_kernel *kernel, void *stream,
                          const attnc_buffer *buffers, int count) {
  if (!kernel || count < 0 || (count > 0 && !buffers))
    return fail("attnc: the kernel or the buffers are NULL");
  std::vector<HostBuffer> deviceBuffers(count);
  for (int i = 0; i < count; ++i)
    if (!toHostBuffer(buffers[i], deviceBuffers[i]))
      return 1;
  return failed(kernel->kernel->runOnDevice(deviceBuffers, stream)) ? 1 : 0;
}

void attnc_set_num_threads(int threads) {
  Runtime::global().setNumThreads(threads < 1 ? 1 : threads);
}

int attnc_get_num_threads(void) {
  return static_cast<int>(Runtime::global().numThreads());
}

} // extern "C"
