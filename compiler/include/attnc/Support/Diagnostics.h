//===- Diagnostics.h - Located errors of the .attn front end ----*- C++ -*-===//
//
// Every front-end error goes through a DiagnosticEngine: it prints
// `FILE:LINE:COL: error: MESSAGE`, the source line and a caret (through
// llvm::SourceMgr), counts errors, and stops printing after a cap so that a
// garbage file cannot flood the terminal. It also keeps a record of each
// diagnostic so that unit tests can check line, column and text.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_SUPPORT_DIAGNOSTICS_H
#define ATTNC_SUPPORT_DIAGNOSTICS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/SMLoc.h"
#include "llvm/Support/SourceMgr.h"

#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace attnc {

/// One emitted diagnostic, as tests see it (line and column are 1-based).
struct DiagnosticRecord {
  llvm::SourceMgr::DiagKind kind;
  unsigned line = 0;
  unsigned column = 0;
  std::string message;
};

class DiagnosticEngine {
public:
  /// Errors past `maxErrors` are dropped after one "too many errors" line.
  static constexpr unsigned kDefaultMaxErrors = 20;

  DiagnosticEngine(llvm::SourceMgr &sourceMgr, llvm::raw_ostream &os,
                   unsigned maxErrors = kDefaultMaxErrors);

  /// Reports an error at `loc`, underlining `ranges`.
  void error(llvm::SMLoc loc, const llvm::Twine &message,
             llvm::ArrayRef<llvm::SMRange> ranges = {});
  void error(llvm::SMRange range, const llvm::Twine &message) {
    error(range.Start, message, range);
  }
  /// A note attached to the previous error (dropped with it past the cap).
  void note(llvm::SMLoc loc, const llvm::Twine &message,
            llvm::ArrayRef<llvm::SMRange> ranges = {});

  unsigned errorCount() const { return numErrors; }
  bool hadErrors() const { return numErrors != 0; }
  /// True once the cap was hit: callers stop working as soon as they can.
  bool tooManyErrors() const { return numErrors > maxErrors; }

  const std::vector<DiagnosticRecord> &records() const { return emitted; }
  llvm::SourceMgr &getSourceMgr() { return sourceMgr; }

private:
  void emit(llvm::SourceMgr::DiagKind kind, llvm::SMLoc loc,
            const llvm::Twine &message, llvm::ArrayRef<llvm::SMRange> ranges);

  llvm::SourceMgr &sourceMgr;
  llvm::raw_ostream &os;
  unsigned maxErrors;
  unsigned numErrors = 0;
  std::vector<DiagnosticRecord> emitted;
};

/// Quotes user text for a message, shortened if it is very long (a 10 MB
/// identifier must not become a 10 MB message).
std::string quoted(llvm::StringRef text);

/// The candidate closest to `name` by edit distance, if one is close enough
/// to be a plausible typo; empty otherwise.
llvm::StringRef closestMatch(llvm::StringRef name,
                             llvm::ArrayRef<llvm::StringRef> candidates);

/// "; did you mean 'x'?" for the closest candidate, or "".
std::string didYouMean(llvm::StringRef name,
                       llvm::ArrayRef<llvm::StringRef> candidates);

} // namespace attnc

#endif // ATTNC_SUPPORT_DIAGNOSTICS_H
