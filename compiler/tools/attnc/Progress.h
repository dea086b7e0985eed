//===- Progress.h - One line per compile stage on a slow compile -*- C++
//-*-===//
//
// `attnc SPEC` says what it is doing once a compile has taken more than
// about a second and stderr is a terminal: one line per stage from then on
// (the stage that was running at that second, then each one that starts),
// and the total at the end. Quiet otherwise, and with --quiet; -v prints
// every stage with its start time whatever stderr is.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TOOLS_ATTNC_PROGRESS_H
#define ATTNC_TOOLS_ATTNC_PROGRESS_H

#include "llvm/ADT/StringRef.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace attnc {

class Progress {
public:
  enum class Mode {
    Quiet,   // never print
    Auto,    // after about a second, when stderr is a terminal
    Verbose, // every stage, from the start
  };

  explicit Progress(Mode mode);
  /// Prints the total when anything was printed.
  ~Progress();
  Progress(const Progress &) = delete;
  Progress &operator=(const Progress &) = delete;

  /// The compile enters `stage` ("lowering to the LLVM dialect", ...).
  void stage(llvm::StringRef name);

private:
  using Clock = std::chrono::steady_clock;
  /// Prints the current stage if it has not been printed (lock held).
  void printCurrent();
  void watch();

  Mode mode;
  Clock::time_point start = Clock::now();
  std::mutex mutex;
  std::condition_variable wake;
  std::string current;
  bool currentPrinted = false;
  /// A line was printed: from now on every stage is.
  bool reporting = false;
  bool stopping = false;
  std::thread watcher;
};

} // namespace attnc

#endif // ATTNC_TOOLS_ATTNC_PROGRESS_H
