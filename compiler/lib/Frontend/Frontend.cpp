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
  std::unique_ptr<ast::Module> module = parser.parseModule();
  // Sema also runs after syntax errors: its errors in the statements that did
  // parse are independent and worth reporting in the same run.
  if (!diag.tooManyErrors())
    Sema(diag).check(*module);
  if (diag.hadErrors())
    return nullptr;
  return module;
}
