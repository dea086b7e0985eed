//===- CacheTrust.cpp - Which cache files the runtime may read ------------===//

#include "CacheTrust.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <mutex>

#include <unistd.h>

using namespace attnc;
namespace fs = llvm::sys::fs;

namespace {

/// What `status` fails of a private path, or success.
llvm::Error checkOwnerAndMode(llvm::StringRef path,
                              const fs::file_status &status,
                              llvm::StringRef what) {
  if (status.getUser() != static_cast<uint32_t>(geteuid()))
    return llvm::createStringError(
        "'" + path + "' belongs to uid " + llvm::Twine(status.getUser()) +
        ", not to this user (uid " + llvm::Twine(geteuid()) +
        "): another user could have written its " + what);
  if (status.permissions() & (fs::group_write | fs::others_write)) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o",
                  static_cast<unsigned>(status.permissions() & fs::all_perms));
    return llvm::createStringError("'" + path + "' is writable by " +
                                   (status.permissions() & fs::others_write
                                        ? "other users"
                                        : "its group") +
                                   " (mode " + llvm::StringRef(mode) + ")");
  }
  return llvm::Error::success();
}

/// `path` (a link followed when `follow`) is of `type` and private.
llvm::Error checkPrivate(llvm::StringRef path, bool follow, fs::file_type type,
                         llvm::StringRef typeName, llvm::StringRef what) {
  fs::file_status status;
  if (std::error_code ec = fs::status(path, status, follow))
    return llvm::createStringError(ec, "cannot read '" + path + "'");
  if (status.type() != type)
    return llvm::createStringError("'" + path + "' is not " + typeName);
  return checkOwnerAndMode(path, status, what);
}

} // namespace

llvm::Error attnc::checkPrivateDirectory(llvm::StringRef path) {
  return checkPrivate(path, /*follow=*/true, fs::file_type::directory_file,
                      "a directory", "kernels");
}

llvm::Error attnc::checkPrivateFile(llvm::StringRef path) {
  return checkPrivate(path, /*follow=*/false, fs::file_type::regular_file,
                      "a regular file", "contents");
}

llvm::Error attnc::makePrivateDirectory(llvm::StringRef path) {
  if (std::error_code ec =
          fs::create_directories(path, /*IgnoreExisting=*/true, fs::owner_all))
    return llvm::createStringError(ec, "cannot create the cache directory '" +
                                           path + "'");
  return checkPrivateDirectory(path);
}

void attnc::warnUntrustedCache(llvm::StringRef directory, llvm::Error why) {
  static std::mutex mutex;
  static llvm::StringSet<> warned;
  std::string reason = llvm::toString(std::move(why));
  std::lock_guard<std::mutex> lock(mutex);
  if (!warned.insert(directory).second)
    return;
  llvm::WithColor::warning(llvm::errs(), "attnc")
      << "not using the kernel cache '" << directory << "': " << reason
      << "; kernels are compiled in memory (the cache must be this user's "
         "alone: 'chmod go-w' a directory of yours, or set ATTNC_CACHE_DIR "
         "to another; docs/security.md)\n";
}
