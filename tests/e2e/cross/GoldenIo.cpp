//===- GoldenIo.cpp - A golden case's buffers as files, and their check ---===//
//
// The host half of the cross-compiled golden tests (CMakeLists.txt):
//
//   attnc-golden-io write CASE DIR   the case's arguments in ABI order:
//                                    DIR/manifest ("in|out BYTES" a line)
//                                    and DIR/argI.bin for every input
//   attnc-golden-io check CASE DIR   DIR/argI.out.bin, written by the
//                                    kernel on the target, against the
//                                    expected outputs (max |error| <= the
//                                    case's tolerance); exit 1 otherwise
//
// The files are raw little-endian, like the target's own memory: the
// targets checked this way (AArch64) are little-endian.
//
//===----------------------------------------------------------------------===//

#include "GoldenCase.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <string>

using namespace attnc;
using namespace attnc::test;

namespace {

std::string argumentPath(llvm::StringRef dir, size_t index,
                         llvm::StringRef suffix) {
  return (dir + "/arg" + std::to_string(index) + suffix).str();
}

bool writeFile(const std::string &path, const char *data, size_t size) {
  std::error_code error;
  llvm::raw_fd_ostream os(path, error);
  if (error) {
    llvm::errs() << "attnc-golden-io: cannot write " << path << ": "
                 << error.message() << "\n";
    return false;
  }
  os.write(data, size);
  return true;
}

int writeCase(const GoldenCase &golden, llvm::StringRef dir) {
  if (std::error_code error = llvm::sys::fs::create_directories(dir)) {
    llvm::errs() << "attnc-golden-io: cannot create " << dir << ": "
                 << error.message() << "\n";
    return 1;
  }
  std::string manifest;
  // An output's size is that of the buffer the kernel fills.
  Buffers outputs = golden.makeOutputs();
  for (size_t i = 0; i < golden.signature.arguments.size(); ++i) {
    bool output = golden.signature.arguments[i].role == ArgumentRole::Output;
    const std::vector<char> &bytes = golden.values[i];
    size_t size = output ? outputs[i].size() : bytes.size();
    manifest += (output ? "out " : "in ") + std::to_string(size) + "\n";
    if (!output &&
        !writeFile(argumentPath(dir, i, ".bin"), bytes.data(), bytes.size()))
      return 1;
  }
  return writeFile((dir + "/manifest").str(), manifest.data(), manifest.size())
             ? 0
             : 1;
}

int checkCase(const GoldenCase &golden, llvm::StringRef dir) {
  Buffers outputs = golden.makeOutputs();
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (golden.signature.arguments[i].role != ArgumentRole::Output)
      continue;
    std::string path = argumentPath(dir, i, ".out.bin");
    auto buffer = llvm::MemoryBuffer::getFile(path);
    if (!buffer) {
      llvm::errs() << "attnc-golden-io: " << path << ": "
                   << buffer.getError().message()
                   << " (did the kernel run on the target?)\n";
      return 1;
    }
    size_t size = outputs[i].size();
    if ((*buffer)->getBufferSize() != size) {
      llvm::errs() << "attnc-golden-io: " << path << " holds "
                   << (*buffer)->getBufferSize() << " bytes, expected " << size
                   << "\n";
      return 1;
    }
    std::memcpy(outputs[i].data(), (*buffer)->getBufferStart(), size);
  }
  llvm::outs() << golden.report(outputs);
  std::string mismatches = golden.mismatches(outputs);
  if (!mismatches.empty()) {
    llvm::errs() << "attnc-golden-io: " << mismatches;
    return 1;
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 4 || (llvm::StringRef(argv[1]) != "write" &&
                    llvm::StringRef(argv[1]) != "check")) {
    llvm::errs() << "usage: attnc-golden-io write|check CASE DIR\n";
    return 2;
  }
  auto golden = loadGoldenCase(argv[2]);
  if (!golden) {
    llvm::errs() << "attnc-golden-io: " << llvm::toString(golden.takeError())
                 << "\n";
    return 1;
  }
  return llvm::StringRef(argv[1]) == "write" ? writeCase(*golden, argv[3])
                                             : checkCase(*golden, argv[3]);
}
