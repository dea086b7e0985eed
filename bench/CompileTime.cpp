//===- CompileTime.cpp - JIT compile time and cache-hit time of a spec ----===//
//
// attnc-compile-time SPEC.attn [BLOCK] [-n N]: compiles the block N times
// with an empty disk cache (cold JIT: front end, lowering, LLVM, linking),
// then N times through a fresh Runtime over the filled disk cache (a cache
// hit: read, verify, link), and once more from the in-memory cache; prints
// the median of each.
//
//===----------------------------------------------------------------------===//

#include "attnc/Runtime/Runtime.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

using namespace attnc;

namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

double millisecondsOf(const std::function<void()> &work) {
  auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

[[noreturn]] void fail(llvm::Error error) {
  llvm::errs() << "attnc-compile-time: " << llvm::toString(std::move(error))
               << "\n";
  std::exit(1);
}

} // namespace

int main(int argc, char **argv) {
  std::string spec, block;
  int repeat = 5;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-n" && i + 1 < argc)
      repeat = std::max(1, std::atoi(argv[++i]));
    else if (spec.empty())
      spec = arg;
    else
      block = arg;
  }
  if (spec.empty()) {
    llvm::errs() << "usage: attnc-compile-time SPEC.attn [BLOCK] [-n N]\n";
    return 1;
  }
  auto text = llvm::MemoryBuffer::getFile(spec);
  if (!text) {
    llvm::errs() << "attnc-compile-time: cannot read " << spec << "\n";
    return 1;
  }

  std::vector<double> cold, diskHit;
  std::string lastDir;
  for (int i = 0; i < repeat; ++i) {
    llvm::SmallString<128> dir;
    if (std::error_code ec =
            llvm::sys::fs::createUniqueDirectory("attnc-bench-cache", dir))
      fail(llvm::errorCodeToError(ec));
    Runtime runtime{std::string(dir)};
    cold.push_back(millisecondsOf([&] {
      if (auto kernel = runtime.compile((*text)->getBuffer(), spec, block);
          !kernel)
        fail(kernel.takeError());
    }));
    if (!lastDir.empty())
      llvm::sys::fs::remove_directories(lastDir);
    lastDir = std::string(dir);
  }
  double memoryHit = 0;
  for (int i = 0; i < repeat; ++i) {
    Runtime runtime{lastDir};
    diskHit.push_back(millisecondsOf([&] {
      if (auto kernel = runtime.compile((*text)->getBuffer(), spec, block);
          !kernel)
        fail(kernel.takeError());
    }));
    if (runtime.statistics().diskHits != 1)
      fail(llvm::createStringError("the disk cache was not hit"));
    memoryHit = millisecondsOf([&] {
      if (auto kernel = runtime.compile((*text)->getBuffer(), spec, block);
          !kernel)
        fail(kernel.takeError());
    });
  }
  llvm::sys::fs::remove_directories(lastDir);
  llvm::outs() << spec << ": JIT compile " << llvm::format("%.1f", median(cold))
               << " ms, disk-cache hit " << llvm::format("%.2f", median(diskHit))
               << " ms, memory-cache hit " << llvm::format("%.4f", memoryHit)
               << " ms (medians of " << repeat << ")\n";
  return 0;
}
