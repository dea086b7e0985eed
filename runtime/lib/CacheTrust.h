//===- CacheTrust.h - Which cache files the runtime may read ----*- C++ -*-===//
//
// The disk cache holds machine code that the runtime loads and runs, so it
// trusts only what this user alone can have written (as ccache and OpenSSH
// do): a directory and files owned by the process's effective user, that
// no group or other user may write. Nothing is shared between users.
// docs/security.md says why.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_LIB_CACHETRUST_H
#define ATTNC_RUNTIME_LIB_CACHETRUST_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace attnc {

/// Succeeds when `path` is a directory (a symbolic link to one is followed:
/// its target is checked) owned by this user and not writable by group or
/// others; the error says which of these fails.
llvm::Error checkPrivateDirectory(llvm::StringRef path);

/// Succeeds when `path` is a regular file (not a link) owned by this user
/// and not writable by group or others.
llvm::Error checkPrivateFile(llvm::StringRef path);

/// Creates `path` and its missing parents with mode 0700, then
/// checkPrivateDirectory(path): a directory someone else made first is
/// refused, not used.
llvm::Error makePrivateDirectory(llvm::StringRef path);

/// Prints once per process and directory, to stderr, that the cache
/// `directory` is not used and why.
void warnUntrustedCache(llvm::StringRef directory, llvm::Error why);

} // namespace attnc

#endif // ATTNC_RUNTIME_LIB_CACHETRUST_H
