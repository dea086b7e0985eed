//===- Progress.cpp - One line per compile stage on a slow compile --------===//

#include "Progress.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

using namespace attnc;

/// How long a compile runs before the report starts.
static constexpr std::chrono::milliseconds kQuietFor(1000);

Progress::Progress(Mode mode) : mode(mode) {
  if (mode == Mode::Auto && !llvm::sys::Process::StandardErrIsDisplayed())
    this->mode = Mode::Quiet;
  if (this->mode == Mode::Verbose)
    reporting = true;
  if (this->mode == Mode::Auto)
    watcher = std::thread([this] { watch(); });
}

Progress::~Progress() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wake.notify_all();
  if (watcher.joinable())
    watcher.join();
  if (reporting) {
    double seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    llvm::errs() << "attnc: done in " << llvm::format("%.1f", seconds)
                 << " s\n";
  }
}

void Progress::stage(llvm::StringRef name) {
  if (mode == Mode::Quiet)
    return;
  std::lock_guard<std::mutex> lock(mutex);
  current = name.str();
  currentPrinted = false;
  if (reporting)
    printCurrent();
}

void Progress::printCurrent() {
  if (current.empty() || currentPrinted)
    return;
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  llvm::errs() << "attnc: [" << llvm::format("%5.1f", seconds) << " s] "
               << current << "\n";
  currentPrinted = true;
}

void Progress::watch() {
  std::unique_lock<std::mutex> lock(mutex);
  if (wake.wait_until(lock, start + kQuietFor, [this] { return stopping; }))
    return;
  reporting = true;
  printCurrent();
}
