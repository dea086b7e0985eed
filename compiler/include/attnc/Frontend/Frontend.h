//===- Frontend.h - Parse and check a .attn file ----------------*- C++ -*-===//
//
// The front end in one call (lexer, parser, Sema), MLIR-free so that the
// fuzzer and the unit tests run it without an MLIRContext.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_FRONTEND_FRONTEND_H
#define ATTNC_FRONTEND_FRONTEND_H

#include "attnc/Parse/AST.h"

#include <memory>

namespace attnc {

class DiagnosticEngine;

/// Parses and checks buffer `bufferId` of `diag`'s SourceMgr. Returns the
/// annotated module, or null when any error was reported.
std::unique_ptr<ast::Module> parseAndCheck(DiagnosticEngine &diag,
                                           unsigned bufferId);

} // namespace attnc

#endif // ATTNC_FRONTEND_FRONTEND_H
