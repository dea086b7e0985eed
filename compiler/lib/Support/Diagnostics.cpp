//===- Diagnostics.cpp - Located errors of the .attn front end ------------===//

#include "attnc/Support/Diagnostics.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <vector>

using namespace attnc;
using llvm::SMLoc;
using llvm::SMRange;
using llvm::SourceMgr;
using llvm::StringRef;

namespace {
/// Longest source line echoed under a diagnostic; longer lines are cut so a
/// pathological file (one 10 MB line) does not turn each error into megabytes.
constexpr size_t kMaxShownLine = 512;
/// Longest piece of user text quoted inside a message.
constexpr size_t kMaxQuoted = 64;
} // namespace

DiagnosticEngine::DiagnosticEngine(SourceMgr &sourceMgr, llvm::raw_ostream &os,
                                   unsigned maxErrors)
    : sourceMgr(sourceMgr), os(os), maxErrors(maxErrors) {}

void DiagnosticEngine::error(SMLoc loc, const llvm::Twine &message,
                             llvm::ArrayRef<SMRange> ranges) {
  ++numErrors;
  if (numErrors > maxErrors) {
    if (numErrors == maxErrors + 1) {
      os << "error: too many errors emitted (" << maxErrors
         << "), stopping now\n";
      emitted.push_back({SourceMgr::DK_Error, 0, 0, "too many errors"});
    }
    return;
  }
  emit(SourceMgr::DK_Error, loc, message, ranges);
}

void DiagnosticEngine::note(SMLoc loc, const llvm::Twine &message,
                            llvm::ArrayRef<SMRange> ranges) {
  if (numErrors > maxErrors)
    return;
  emit(SourceMgr::DK_Note, loc, message, ranges);
}

void DiagnosticEngine::emit(SourceMgr::DiagKind kind, SMLoc loc,
                            const llvm::Twine &message,
                            llvm::ArrayRef<SMRange> ranges) {
  llvm::SMDiagnostic diag = sourceMgr.GetMessage(loc, kind, message, ranges);
  DiagnosticRecord record{kind, 0, 0, diag.getMessage().str()};
  if (diag.getLineNo() > 0) {
    record.line = diag.getLineNo();
    record.column = diag.getColumnNo() + 1;
  }
  emitted.push_back(record);

  StringRef line = diag.getLineContents();
  if (line.size() <= kMaxShownLine) {
    diag.print(/*ProgName=*/nullptr, os);
    return;
  }
  // Echo only the head of an over-long line; drop the caret line when the
  // column is past it (the FILE:LINE:COL header still says where).
  size_t column = std::max(diag.getColumnNo(), 0);
  StringRef shown =
      column < kMaxShownLine ? line.take_front(kMaxShownLine) : "";
  llvm::SmallVector<std::pair<unsigned, unsigned>, 2> shownRanges;
  for (auto [begin, end] : diag.getRanges())
    if (begin < shown.size())
      shownRanges.push_back(
          {begin,
           std::min<unsigned>(end, static_cast<unsigned>(shown.size()))});
  llvm::SMDiagnostic cut(sourceMgr, diag.getLoc(), diag.getFilename(),
                         diag.getLineNo(), diag.getColumnNo(), kind,
                         diag.getMessage(), shown, shownRanges);
  cut.print(/*ProgName=*/nullptr, os);
}

std::string attnc::quoted(StringRef text) {
  std::string out = "'";
  StringRef shown = text.take_front(kMaxQuoted);
  for (char c : shown) {
    unsigned char byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f) {
      out += c;
    } else {
      char hex[8];
      snprintf(hex, sizeof(hex), "\\x%02X", byte);
      out += hex;
    }
  }
  if (shown.size() < text.size())
    out += "...";
  out += "'";
  return out;
}

/// The optimal-string-alignment distance: insertions, deletions,
/// replacements and swaps of two neighbouring letters each count one
/// ('rleu' is one edit from 'relu', where Levenshtein counts two). Gives up
/// past `limit` (returns limit + 1).
static unsigned typoDistance(StringRef a, StringRef b, unsigned limit) {
  std::vector<unsigned> before(b.size() + 1), previous(b.size() + 1),
      current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    unsigned rowBest = current[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      unsigned cost = a[i - 1] == b[j - 1] ? 0 : 1;
      current[j] = std::min(
          {previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        current[j] = std::min(current[j], before[j - 2] + 1);
      rowBest = std::min(rowBest, current[j]);
    }
    if (rowBest > limit)
      return limit + 1;
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return std::min(previous[b.size()], limit + 1);
}

StringRef attnc::closestMatch(StringRef name,
                              llvm::ArrayRef<StringRef> candidates) {
  // Names are case-sensitive, and a name that differs only in case is the
  // likeliest mistake of all ('output y' for 'Y'), whatever its length.
  for (StringRef candidate : candidates)
    if (candidate != name && candidate.equals_insensitive(name))
      return candidate;
  // A typo is about a third of the name (one to three edits), and never the
  // whole name: 'Q' is not a typo of 'Y'.
  unsigned maxDistance = std::clamp<unsigned>((name.size() + 1) / 3, 1, 3);
  if (maxDistance >= name.size())
    maxDistance = name.size() - (name.empty() ? 0 : 1);
  if (maxDistance == 0)
    return {};
  StringRef best;
  unsigned bestDistance = maxDistance + 1;
  for (StringRef candidate : candidates) {
    size_t lengthGap = name.size() > candidate.size()
                           ? name.size() - candidate.size()
                           : candidate.size() - name.size();
    if (lengthGap > maxDistance || candidate == name)
      continue;
    unsigned distance = typoDistance(name, candidate, maxDistance);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

std::string attnc::didYouMean(StringRef name,
                              llvm::ArrayRef<StringRef> candidates) {
  StringRef best = closestMatch(name, candidates);
  if (best.empty())
    return "";
  return "; did you mean '" + best.str() + "'?";
}
