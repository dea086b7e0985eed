//===- LoadedObject.h - A kernel object loaded by the JIT -------*- C++ -*-===//

#ifndef ATTNC_RUNTIME_LOADEDOBJECT_H
#define ATTNC_RUNTIME_LOADEDOBJECT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>

namespace llvm::orc {
class LLJIT;
} // namespace llvm::orc

namespace attnc {

/// An object file produced by attnc's code generator, linked into this
/// process by ORC's LLJIT (malloc/free/memcpy resolve to the process's).
class LoadedObject {
public:
  /// Links `object` and finds the packed entry of kernel `kernel`.
  static llvm::Expected<std::unique_ptr<LoadedObject>>
  load(llvm::StringRef object, llvm::StringRef kernel);
  ~LoadedObject();

  /// Calls the kernel: args[i] is the i-th buffer; returns its status.
  int call(void **args) const { return entry(args); }

private:
  LoadedObject() = default;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  int (*entry)(void **) = nullptr;
};

} // namespace attnc

#endif // ATTNC_RUNTIME_LOADEDOBJECT_H
