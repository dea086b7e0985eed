//===- LoadedObject.h - A kernel object loaded by the JIT -------*- C++ -*-===//

#ifndef ATTNC_RUNTIME_LOADEDOBJECT_H
#define ATTNC_RUNTIME_LOADEDOBJECT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace llvm::orc {
class LLJIT;
} // namespace llvm::orc

namespace attnc {

/// An object file produced by attnc's code generator, linked into this
/// process by ORC's LLJIT (malloc/free/memcpy resolve to the process's).
class LoadedObject {
public:
  /// The functions of a kernel NAME (see attn-split-prepare).
  enum class Entry {
    Kernel,   ///< NAME(args...)
    Prepare,  ///< NAME_prepare(params..., packed)
    Prepared, ///< NAME_prepared(inputs and params..., packed, outputs...)
  };

  /// Links `object` and finds the packed entries of kernel `kernel`: all
  /// three for a CPU object, NAME's and NAME_cuda_last_error for a GPU one
  /// (`gpu`), which has no prepare step.
  static llvm::Expected<std::unique_ptr<LoadedObject>>
  load(llvm::StringRef object, llvm::StringRef kernel, bool gpu);
  ~LoadedObject();

  /// Calls `entry`: args[i] is its i-th buffer; returns its status.
  int call(Entry entry, void **args) const {
    return entries[static_cast<int>(entry)](args);
  }

  /// False for GPU objects: their params are passed on every call.
  bool canPrepare() const { return entries[1] != nullptr; }

  /// A GPU object's NAME_cuda, packed (args[0] the stream); null for a CPU
  /// object.
  int (*deviceEntry() const)(void **) { return cudaEntry; }

  /// A GPU object's message for its last failure; empty for a CPU object.
  std::string lastError() const { return gpuLastError ? gpuLastError() : ""; }

private:
  LoadedObject() = default;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  int (*entries[3])(void **) = {};
  const char *(*gpuLastError)() = nullptr;
  int (*cudaEntry)(void **) = nullptr;
};

} // namespace attnc

#endif // ATTNC_RUNTIME_LOADEDOBJECT_H
