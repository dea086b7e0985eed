//===- Token.cpp - Tokens of the .attn language ---------------------------===//

#include "attnc/Parse/Token.h"

#include "attnc/Support/Diagnostics.h"

using namespace attnc;

llvm::StringRef attnc::describeTokenKind(TokenKind kind) {
  switch (kind) {
  case TokenKind::Eof:
    return "end of file";
  case TokenKind::Newline:
    return "end of line";
  case TokenKind::Identifier:
    return "a name";
  case TokenKind::Integer:
    return "an integer";
  case TokenKind::Float:
    return "a number";
  case TokenKind::LParen:
    return "'('";
  case TokenKind::RParen:
    return "')'";
  case TokenKind::LBracket:
    return "'['";
  case TokenKind::RBracket:
    return "']'";
  case TokenKind::LBrace:
    return "'{'";
  case TokenKind::RBrace:
    return "'}'";
  case TokenKind::Comma:
    return "','";
  case TokenKind::Colon:
    return "':'";
  case TokenKind::Equal:
    return "'='";
  case TokenKind::Semicolon:
    return "';'";
  case TokenKind::Minus:
    return "'-'";
  case TokenKind::KwBlock:
    return "'block'";
  case TokenKind::KwDim:
    return "'dim'";
  case TokenKind::KwInput:
    return "'input'";
  case TokenKind::KwParam:
    return "'param'";
  case TokenKind::KwState:
    return "'state'";
  case TokenKind::KwOutput:
    return "'output'";
  case TokenKind::KwTrue:
    return "'true'";
  case TokenKind::KwFalse:
    return "'false'";
  case TokenKind::Error:
    return "an invalid token";
  }
  return "a token";
}

std::string attnc::describeToken(const Token &token) {
  switch (token.kind) {
  case TokenKind::Eof:
  case TokenKind::Newline:
  case TokenKind::Error:
    return describeTokenKind(token.kind).str();
  default:
    return quoted(token.spelling);
  }
}
