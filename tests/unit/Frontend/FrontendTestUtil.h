//===- FrontendTestUtil.h - Run the .attn front end on a string -*- C++ -*-===//

#ifndef ATTNC_TESTS_UNIT_FRONTEND_FRONTENDTESTUTIL_H
#define ATTNC_TESTS_UNIT_FRONTEND_FRONTENDTESTUTIL_H

#include "attnc/Frontend/Frontend.h"
#include "attnc/Parse/Lexer.h"
#include "attnc/Parse/Parser.h"
#include "attnc/Support/Diagnostics.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>

namespace attnc::test {

/// One source text with its SourceMgr, printed diagnostics and result.
struct Run {
  explicit Run(llvm::StringRef text) {
    bufferId = sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(text, "test.attn"), llvm::SMLoc());
  }

  /// Parser only.
  Run &parse() {
    Lexer lexer(diag, bufferId);
    Parser parser(lexer, diag);
    module = parser.parseModule();
    return *this;
  }
  /// Parser and Sema.
  Run &check() {
    module = parseAndCheck(diag, bufferId);
    return *this;
  }

  const std::vector<DiagnosticRecord> &errors() const { return diag.records(); }
  /// The first diagnostic, as "LINE:COL: MESSAGE".
  std::string first() const {
    if (diag.records().empty())
      return "<no diagnostic>";
    const DiagnosticRecord &r = diag.records().front();
    return std::to_string(r.line) + ":" + std::to_string(r.column) + ": " +
           r.message;
  }
  unsigned numErrors() const { return diag.errorCount(); }

  llvm::SourceMgr sourceMgr;
  unsigned bufferId = 0;
  std::string printed;
  llvm::raw_string_ostream os{printed};
  DiagnosticEngine diag{sourceMgr, os};
  std::unique_ptr<ast::Module> module;
};

} // namespace attnc::test

#endif // ATTNC_TESTS_UNIT_FRONTEND_FRONTENDTESTUTIL_H
