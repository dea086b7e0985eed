//===- Sema.h - Semantic checks of .attn files ------------------*- C++ -*-===//
//
// Resolves names and dims, binds call arguments to op parameters (OpTable),
// checks value kinds, and checks shapes and dtypes by calling the shared
// rules of attn/IR/AttnShapeRules.h, whose errors are mapped back to the
// source range of the argument at fault. Annotates the AST with every
// tensor's shape. A failed statement poisons its result, so one mistake is
// reported once, not again at every use.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_SEMA_SEMA_H
#define ATTNC_SEMA_SEMA_H

#include "attnc/Parse/AST.h"

#include "llvm/ADT/StringMap.h"

namespace attnc {

class DiagnosticEngine;

class Sema {
public:
  explicit Sema(DiagnosticEngine &diag) : diag(diag) {}

  /// Checks and annotates `module`; true when no error was found (in this
  /// call or before it, e.g. by the parser).
  bool check(ast::Module &module);

  /// Checks one block (blocks of one file go through one Sema, which also
  /// checks that their names are unique).
  void checkBlock(ast::Block &block);

private:
  void checkExportedSteps(const ast::Ident &name);

  DiagnosticEngine &diag;
  llvm::StringMap<llvm::SMRange> blockNames;
  /// Upper-cased block names (the header's macros), for clashes.
  llvm::StringMap<const ast::Ident *> blockMacros;
};

} // namespace attnc

#endif // ATTNC_SEMA_SEMA_H
