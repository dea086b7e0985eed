//===- ReadFile.cpp - Whole files read with a bound -----------------------===//

#include "attnc/Support/ReadFile.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace attnc;

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> attnc::readFileAtMost(
    llvm::StringRef path, uint64_t maxBytes, llvm::StringRef what,
    llvm::function_ref<llvm::Error(llvm::StringRef)> checkStart) {
  bool standardInput = path == "-";
  llvm::sys::fs::file_t file = llvm::sys::fs::getStdinHandle();
  if (!standardInput) {
    llvm::Expected<llvm::sys::fs::file_t> opened =
        llvm::sys::fs::openNativeFileForRead(path);
    if (!opened)
      return llvm::createStringError(
          "cannot read " + what + " '" + path +
          "': " + llvm::toString(opened.takeError()));
    file = *opened;
  }
  llvm::scope_exit close([&] {
    if (!standardInput)
      llvm::sys::fs::closeFile(file);
  });
  constexpr size_t kChunk = 64 * 1024;
  llvm::SmallString<0> data;
  bool checked = !checkStart;
  while (true) {
    size_t old = data.size();
    data.resize_for_overwrite(old + kChunk);
    llvm::Expected<size_t> got = llvm::sys::fs::readNativeFile(
        file, llvm::MutableArrayRef<char>(data.data() + old, kChunk));
    if (!got)
      return llvm::createStringError("cannot read " + what + " '" + path +
                                     "': " + llvm::toString(got.takeError()));
    data.truncate(old + *got);
    if (!checked && (*got == 0 || data.size() >= kChunk)) {
      checked = true;
      if (llvm::Error bad = checkStart(data))
        return std::move(bad);
    }
    if (*got == 0)
      break;
    if (data.size() > maxBytes)
      return llvm::createStringError(what + " '" + path + "' is larger than " +
                                     llvm::Twine(maxBytes) +
                                     " bytes, the most attnc reads of it");
  }
  return llvm::MemoryBuffer::getMemBufferCopy(data,
                                              standardInput ? "<stdin>" : path);
}

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
attnc::readSpecFile(llvm::StringRef path) {
  return readFileAtMost(path, kMaxSpecBytes, "spec");
}
