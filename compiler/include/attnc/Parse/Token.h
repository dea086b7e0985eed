//===- Token.h - Tokens of the .attn language -------------------*- C++ -*-===//

#ifndef ATTNC_PARSE_TOKEN_H
#define ATTNC_PARSE_TOKEN_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SMLoc.h"

namespace attnc {

enum class TokenKind {
  Eof,
  Newline,
  Identifier,
  Integer, // decimal digits; the parser converts (and range-checks) the value
  Float,   // digits with a '.' and/or an exponent
  LParen,
  RParen,
  LBracket,
  RBracket,
  LBrace,
  RBrace,
  Comma,
  Colon,
  Equal,
  Semicolon,
  Minus,
  KwBlock,
  KwDim,
  KwInput,
  KwParam,
  KwState,
  KwOutput,
  KwTrue,
  KwFalse,
  /// Bytes that form no token; the lexer has already reported them.
  Error,
};

/// A token is a kind and its spelling, a slice of the SourceMgr buffer (so
/// its address is its location).
struct Token {
  TokenKind kind = TokenKind::Eof;
  llvm::StringRef spelling;

  bool is(TokenKind k) const { return kind == k; }
  bool isNot(TokenKind k) const { return kind != k; }
  llvm::SMLoc loc() const {
    return llvm::SMLoc::getFromPointer(spelling.data());
  }
  llvm::SMLoc endLoc() const {
    return llvm::SMLoc::getFromPointer(spelling.data() + spelling.size());
  }
  llvm::SMRange range() const { return {loc(), endLoc()}; }
};

/// How a message names a token kind: "')'", "an identifier", "end of line".
llvm::StringRef describeTokenKind(TokenKind kind);

/// How a message names the token found: "'foo'", "end of line", "'('".
std::string describeToken(const Token &token);

} // namespace attnc

#endif // ATTNC_PARSE_TOKEN_H
