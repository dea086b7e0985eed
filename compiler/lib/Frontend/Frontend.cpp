//===- Frontend.cpp - Parse and check a .attn file ------------------------===//

#include "attnc/Frontend/Frontend.h"

#include "attnc/Parse/Lexer.h"
#include "attnc/Parse/Parser.h"
#include "attnc/Sema/Sema.h"
#include "attnc/Support/Diagnostics.h"

using namespace attnc;

std::unique_ptr<ast::Module> attnc::parseAndCheck(DiagnosticEngine &diag,
                                                  unsigned bufferId) {
  Lexer lexer(diag, bufferId);
  Parser parser(lexer, diag);
  Sema sema(diag);
  // A block may call one defined later: Sema knows every block's name first.
  sema.declareBlockNames(
      diag.getSourceMgr().getMemoryBuffer(bufferId)->getBuffer());
  // Each block is checked as soon as it is parsed, so errors come out in file
  // order. Sema also runs after syntax errors: its errors in the statements
  // that did parse are independent and worth reporting in the same run.
  std::unique_ptr<ast::Module> module =
      parser.parseModule([&](ast::Block &block) {
        if (!diag.tooManyErrors())
          sema.checkBlock(block);
      });
  if (!diag.tooManyErrors())
    sema.finish();
  if (diag.hadErrors())
    return nullptr;
  return module;
}
