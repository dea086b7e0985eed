//===- LoadedObject.h - A kernel object loaded by the JIT -------*- C++ -*-===//

#ifndef ATTNC_RUNTIME_LOADEDOBJECT_H
#define ATTNC_RUNTIME_LOADEDOBJECT_H

#include "attn/Target/KernelAbi.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
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
  /// kernel `kernel` (attn/Target/KernelAbi.h), whose buffers have `roles`:
  /// their packed forms, and NAME_cuda_last_error as it is.
  static llvm::Expected<std::unique_ptr<LoadedObject>>
  load(llvm::StringRef object, llvm::StringRef kernel,
       mlir::attn::abi::ObjectKind kind,
       llvm::ArrayRef<mlir::attn::abi::ArgumentRole> roles);
  ~LoadedObject();

  /// Calls the packed form of `entry` with its parameters in ABI order
  /// (abi::parametersOf, laid out once at load), taken from `buffers` (the
  /// kernel's, in ABI order), `packed` and `stream`; returns its status.
  int call(Entry entry, llvm::ArrayRef<void *> buffers, void *packed = nullptr,
           void *stream = nullptr) const;

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
  /// Each entry's parameters, indexed by Entry.
  llvm::SmallVector<mlir::attn::abi::Parameter> layouts[5];
  const char *(*gpuLastError)() = nullptr;
};

} // namespace attnc

#endif // ATTNC_RUNTIME_LOADEDOBJECT_H
