//===- Lexer.h - Lexer of the .attn language --------------------*- C++ -*-===//
//
// Turns one SourceMgr buffer into tokens on demand. The lexer never stops on
// bad input: bytes that form no token (control characters, non-ASCII outside
// comments, NUL) are reported once per run and returned as one Error token.
// The end of the buffer, not a NUL byte, ends the input.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_PARSE_LEXER_H
#define ATTNC_PARSE_LEXER_H

#include "attnc/Parse/Token.h"

namespace attnc {

class DiagnosticEngine;

class Lexer {
public:
  /// The longest number literal accepted (docs/language.md).
  static constexpr long kMaxNumberLength = 256;

  Lexer(DiagnosticEngine &diag, unsigned bufferId);
  /// Lexes a whole string (tests, the fuzzer): `diag`'s SourceMgr must own it.
  Lexer(DiagnosticEngine &diag, llvm::StringRef buffer);

  /// The next token; Eof forever once the buffer is exhausted.
  Token lex();

private:
  Token make(TokenKind kind, const char *begin) const;
  Token lexNumber(const char *begin);
  Token lexIdentifier(const char *begin);
  Token lexInvalid(const char *begin);

  DiagnosticEngine &diag;
  const char *cur;
  const char *end;
};

} // namespace attnc

#endif // ATTNC_PARSE_LEXER_H
