//===- Parser.h - Recursive-descent parser of .attn files -------*- C++ -*-===//
//
// Builds the AST of one file. Syntax errors are reported with their location
// and the parser recovers at the next statement, so independent errors in
// one file are all reported. Call nesting is limited (kMaxNesting), so deep
// input ends in an error, never in a stack overflow; skipping input during
// recovery is iterative.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_PARSE_PARSER_H
#define ATTNC_PARSE_PARSER_H

#include "attnc/Parse/AST.h"
#include "attnc/Parse/Lexer.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <memory>
#include <optional>

namespace attnc {

class DiagnosticEngine;

class Parser {
public:
  /// Deepest nesting of calls in one expression.
  static constexpr unsigned kMaxNesting = 256;

  Parser(Lexer &lexer, DiagnosticEngine &diag);

  /// Parses the whole file. Always returns a module (possibly partial); the
  /// DiagnosticEngine says whether there were errors. `onBlock` sees each
  /// block as soon as it is parsed (Sema then reports in file order).
  std::unique_ptr<ast::Module>
  parseModule(llvm::function_ref<void(ast::Block &)> onBlock = {});

private:
  // Token stream.
  void consume();
  const Token &peek();
  bool consumeIf(TokenKind kind);
  /// Skips newline tokens; true if there were any.
  bool skipNewlines();
  bool atStatementEnd() const;

  // Errors.
  /// Reports `message` at the current token unless the lexer already
  /// reported it (an Error token). Always returns false/null for chaining.
  void errorHere(const llvm::Twine &message);
  /// "expected <what>, found <current token>".
  void expected(const llvm::Twine &what);
  /// Skips to the end of the current statement, over nested brackets.
  void recoverStatement();

  // Grammar.
  std::unique_ptr<ast::Block> parseBlock();
  std::unique_ptr<ast::Stmt> parseStatement();
  std::unique_ptr<ast::Stmt> parseDim();
  /// `input`, `param` or `state` (`keyword`), the current token.
  std::unique_ptr<ast::Stmt> parseDecl(TokenKind keyword);
  /// At a name followed by a name: the statement keyword it misspells
  /// (reported), if it is close to one.
  std::optional<TokenKind> misspelledKeyword();
  /// The statement of `keyword`, the current token standing for it.
  std::unique_ptr<ast::Stmt> parseStatementAs(TokenKind keyword);
  std::unique_ptr<ast::Stmt> parseOutput();
  std::unique_ptr<ast::Stmt> parseAssign();
  std::optional<ast::TypeExpr> parseType();
  std::optional<ast::TypeExpr> parseShape();
  std::unique_ptr<ast::Expr> parseExpr(unsigned depth);
  std::unique_ptr<ast::Expr> parseNumber();
  std::unique_ptr<ast::Expr> parseCall(unsigned depth);
  std::optional<ast::Ident> parseIdent(const llvm::Twine &what);
  /// An Integer token (after an optional '-') as int64, range-checked.
  std::optional<int64_t> parseInteger(bool negative, llvm::SMRange range);

  Lexer &lexer;
  DiagnosticEngine &diag;
  Token tok;
  std::optional<Token> lookahead;
  /// End of the last consumed token (for statement ranges).
  llvm::SMLoc prevEnd;
  /// '(' and '[' opened and not yet closed by the statement being parsed.
  int openDelims = 0;
  /// Set when an error already left the parser at the start of the next
  /// statement: recovery must not skip it.
  bool resumeHere = false;
  /// The names the current statement defines, once known; recorded in the
  /// block if the statement fails (Sema then stays quiet about their uses).
  std::vector<ast::Ident> pendingNames;
};

} // namespace attnc

#endif // ATTNC_PARSE_PARSER_H
