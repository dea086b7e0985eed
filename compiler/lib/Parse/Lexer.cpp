//===- Lexer.cpp - Lexer of the .attn language ----------------------------===//

#include "attnc/Parse/Lexer.h"

#include "attnc/Support/Diagnostics.h"

#include "llvm/ADT/StringSwitch.h"

#include <cstdio>

using namespace attnc;
using llvm::StringRef;

namespace {
bool isIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isIdentChar(char c) { return isIdentStart(c) || isDigit(c); }
bool isBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/// Bytes that may start a token or be skipped; the rest are invalid.
bool startsSomething(char c) {
  return isIdentStart(c) || isDigit(c) || isBlank(c) ||
         StringRef("\n#()[]{},:=;-").contains(c);
}
} // namespace

Lexer::Lexer(DiagnosticEngine &diag, unsigned bufferId) : diag(diag) {
  StringRef buffer = diag.getSourceMgr().getMemoryBuffer(bufferId)->getBuffer();
  cur = buffer.begin();
  end = buffer.end();
}

Lexer::Lexer(DiagnosticEngine &diag, StringRef buffer)
    : diag(diag), cur(buffer.begin()), end(buffer.end()) {}

Token Lexer::make(TokenKind kind, const char *begin) const {
  return Token{kind, StringRef(begin, cur - begin)};
}

Token Lexer::lex() {
  while (cur != end) {
    const char *begin = cur;
    char c = *cur++;
    switch (c) {
    case ' ':
    case '\t':
    case '\r':
      continue;
    case '#':
      // Comments run to the end of the line and may hold any bytes.
      while (cur != end && *cur != '\n')
        ++cur;
      continue;
    case '\n':
      return make(TokenKind::Newline, begin);
    case '(':
      return make(TokenKind::LParen, begin);
    case ')':
      return make(TokenKind::RParen, begin);
    case '[':
      return make(TokenKind::LBracket, begin);
    case ']':
      return make(TokenKind::RBracket, begin);
    case '{':
      return make(TokenKind::LBrace, begin);
    case '}':
      return make(TokenKind::RBrace, begin);
    case ',':
      return make(TokenKind::Comma, begin);
    case ':':
      return make(TokenKind::Colon, begin);
    case '=':
      return make(TokenKind::Equal, begin);
    case ';':
      return make(TokenKind::Semicolon, begin);
    case '-':
      return make(TokenKind::Minus, begin);
    default:
      if (isDigit(c))
        return lexNumber(begin);
      if (isIdentStart(c))
        return lexIdentifier(begin);
      return lexInvalid(begin);
    }
  }
  return Token{TokenKind::Eof, StringRef(end, 0)};
}

Token Lexer::lexIdentifier(const char *begin) {
  while (cur != end && isIdentChar(*cur))
    ++cur;
  StringRef text(begin, cur - begin);
  TokenKind kind = llvm::StringSwitch<TokenKind>(text)
                       .Case("block", TokenKind::KwBlock)
                       .Case("dim", TokenKind::KwDim)
                       .Case("input", TokenKind::KwInput)
                       .Case("param", TokenKind::KwParam)
                       .Case("state", TokenKind::KwState)
                       .Case("output", TokenKind::KwOutput)
                       .Case("true", TokenKind::KwTrue)
                       .Case("false", TokenKind::KwFalse)
                       .Default(TokenKind::Identifier);
  return make(kind, begin);
}

Token Lexer::lexNumber(const char *begin) {
  // digits ['.' digits] [('e'|'E') ['+'|'-'] digits]
  auto digits = [&] {
    const char *start = cur;
    while (cur != end && isDigit(*cur))
      ++cur;
    return cur != start;
  };
  digits();
  bool isFloat = false, wellFormed = true;
  if (cur != end && *cur == '.') {
    ++cur;
    digits();
    isFloat = true;
  }
  if (cur != end && (*cur == 'e' || *cur == 'E')) {
    ++cur;
    if (cur != end && (*cur == '+' || *cur == '-'))
      ++cur;
    wellFormed = digits();
    isFloat = true;
  }
  // A number glued to letters ("2x", "1e", "1.2.3") is one bad token.
  if (cur != end && (isIdentChar(*cur) || *cur == '.')) {
    while (cur != end && (isIdentChar(*cur) || *cur == '.'))
      ++cur;
    wellFormed = false;
  }
  if (!wellFormed) {
    Token bad = make(TokenKind::Error, begin);
    diag.error(bad.range(), "malformed number " + quoted(bad.spelling));
    return bad;
  }
  // No f32 needs more digits, and LLVM's decimal parser (APFloat) crashed
  // on literals of ~35,000 digits: longer ones are an error, not parsed.
  if (cur - begin > kMaxNumberLength) {
    Token bad = make(TokenKind::Error, begin);
    diag.error(llvm::SMRange(llvm::SMLoc::getFromPointer(begin),
                             llvm::SMLoc::getFromPointer(begin + 16)),
               "number literal of " + llvm::Twine(cur - begin) +
                   " characters; at most " + llvm::Twine(kMaxNumberLength) +
                   " are allowed");
    return bad;
  }
  return make(isFloat ? TokenKind::Float : TokenKind::Integer, begin);
}

Token Lexer::lexInvalid(const char *begin) {
  // One report for a run of bad bytes, not one per byte.
  while (cur != end && !startsSomething(*cur))
    ++cur;
  Token bad = make(TokenKind::Error, begin);
  unsigned char first = static_cast<unsigned char>(*begin);
  char hex[8];
  snprintf(hex, sizeof(hex), "0x%02X", first);
  if (first == 0)
    diag.error(bad.loc(), "NUL byte in source text");
  else if (first >= 0x80)
    diag.error(bad.loc(), llvm::Twine("non-ASCII byte ") + hex +
                              " in source text (only comments may contain "
                              "non-ASCII text)");
  else if (first < 0x20 || first == 0x7f)
    diag.error(bad.loc(), llvm::Twine("unexpected control character ") + hex);
  else
    diag.error(bad.loc(), "unexpected character '" + StringRef(begin, 1) + "'");
  return bad;
}
