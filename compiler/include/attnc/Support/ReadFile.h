//===- ReadFile.h - Whole files read with a bound ---------------*- C++ -*-===//
//
// A spec or a .npy may name a device or a pipe that never ends (/dev/zero):
// reading it into memory must stop at a bound and say so, not end in
// LLVM's "out of memory" abort. LLVM Support only.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_SUPPORT_READFILE_H
#define ATTNC_SUPPORT_READFILE_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>

namespace llvm {
class MemoryBuffer;
} // namespace llvm

namespace attnc {

/// The largest spec attnc reads (docs/language.md): specs are text of a few
/// kilobytes; a bound keeps a device or a runaway pipe from filling memory.
constexpr uint64_t kMaxSpecBytes = uint64_t(16) << 20;

/// Reads `path` ("-": standard input) whole. Fails, naming the file as
/// `what`, once it holds more than `maxBytes`; `checkStart`, if given, sees
/// the first bytes read (up to 64 KiB, or the whole file) and may reject
/// the file before the rest is read.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> readFileAtMost(
    llvm::StringRef path, uint64_t maxBytes, llvm::StringRef what,
    llvm::function_ref<llvm::Error(llvm::StringRef)> checkStart = nullptr);

/// A spec file ("-": standard input), at most kMaxSpecBytes.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readSpecFile(llvm::StringRef path);

} // namespace attnc

#endif // ATTNC_SUPPORT_READFILE_H
