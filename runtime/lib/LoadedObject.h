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
  /// The functions of a kernel NAME (see attn-split-prepare).
  enum class Entry {
    Kernel,   ///< NAME(args...)
    Prepare,  ///< NAME_prepare(params..., packed)
    Prepared, ///< NAME_prepared(inputs and params..., packed, outputs...)
  };

  /// Links `object` and finds the packed entries of kernel `kernel`.
  static llvm::Expected<std::unique_ptr<LoadedObject>>
  load(llvm::StringRef object, llvm::StringRef kernel);
  ~LoadedObject();

  /// Calls `entry`: args[i] is its i-th buffer; returns its status.
  int call(Entry entry, void **args) const {
    return entries[static_cast<int>(entry)](args);
  }

private:
  LoadedObject() = default;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  int (*entries[3])(void **) = {};
};

} // namespace attnc

#endif // ATTNC_RUNTIME_LOADEDOBJECT_H
