//===- LoadedObject.h - A kernel object loaded by the JIT -------*- C++ -*-===//

#ifndef ATTNC_RUNTIME_LOADEDOBJECT_H
#define ATTNC_RUNTIME_LOADEDOBJECT_H

#include "attn/Target/KernelAbi.h"

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
  using Entry = mlir::attn::abi::Entry;

  /// Links `object` and finds the entries an object of `kind` exports for
  /// kernel `kernel` (attn/Target/KernelAbi.h): their packed forms, and
  /// NAME_cuda_last_error as it is.
  static llvm::Expected<std::unique_ptr<LoadedObject>>
  load(llvm::StringRef object, llvm::StringRef kernel,
       mlir::attn::abi::ObjectKind kind);
  ~LoadedObject();

  /// Calls the packed form of `entry`: args[i] is its i-th parameter
  /// (abi::parametersOf); returns its status.
  int call(Entry entry, void **args) const {
    return entries[static_cast<unsigned>(entry)](args);
  }

  /// Whether the object exports `entry`.
  bool has(Entry entry) const {
    return entries[static_cast<unsigned>(entry)] != nullptr;
  }

  /// False for GPU objects: their params are passed on every call.
  bool canPrepare() const { return has(Entry::Prepare); }

  /// A GPU object's message for its last failure; empty for a CPU object.
  std::string lastError() const { return gpuLastError ? gpuLastError() : ""; }

private:
  LoadedObject() = default;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  /// Indexed by Entry; null where the object has none.
  int (*entries[5])(void **) = {};
  const char *(*gpuLastError)() = nullptr;
};

} // namespace attnc

#endif // ATTNC_RUNTIME_LOADEDOBJECT_H
