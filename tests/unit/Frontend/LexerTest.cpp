//===- LexerTest.cpp - Tokens of the .attn language -----------------------===//

#include "FrontendTestUtil.h"

#include "gtest/gtest.h"

using namespace attnc;

namespace {

struct Lexed {
  std::vector<TokenKind> kinds;
  std::vector<std::string> spellings;
  unsigned errors = 0;
};

Lexed lexAll(llvm::StringRef text) {
  test::Run run(text);
  Lexer lexer(run.diag, run.bufferId);
  Lexed out;
  for (unsigned i = 0; i < 100000; ++i) {
    Token tok = lexer.lex();
    out.kinds.push_back(tok.kind);
    out.spellings.push_back(tok.spelling.str());
    if (tok.is(TokenKind::Eof))
      break;
  }
  out.errors = run.numErrors();
  return out;
}

using K = TokenKind;

TEST(LexerTest, PunctuationKeywordsAndNames) {
  Lexed l = lexAll("block b { dim D = 4; input X: f32[D, 2] }\n");
  std::vector<K> expected = {
      K::KwBlock, K::Identifier, K::LBrace,    K::KwDim,      K::Identifier,
      K::Equal,   K::Integer,    K::Semicolon, K::KwInput,    K::Identifier,
      K::Colon,   K::Identifier, K::LBracket,  K::Identifier, K::Comma,
      K::Integer, K::RBracket,   K::RBrace,    K::Newline,    K::Eof};
  EXPECT_EQ(l.kinds, expected);
  EXPECT_EQ(l.errors, 0u);
}

TEST(LexerTest, CommentsRunToEndOfLineAndMayHoldAnyBytes) {
  Lexed l = lexAll("x # caf\xc3\xa9 \x01 ) (\ny");
  std::vector<K> expected = {K::Identifier, K::Newline, K::Identifier, K::Eof};
  EXPECT_EQ(l.kinds, expected);
  EXPECT_EQ(l.errors, 0u);
}

TEST(LexerTest, Numbers) {
  Lexed l = lexAll("0 42 1.5 1e-5 2.E3 7. -3");
  std::vector<K> expected = {K::Integer, K::Integer, K::Float,
                             K::Float,   K::Float,   K::Float,
                             K::Minus,   K::Integer, K::Eof};
  EXPECT_EQ(l.kinds, expected);
  EXPECT_EQ(l.spellings[3], "1e-5");
  EXPECT_EQ(l.errors, 0u);
}

TEST(LexerTest, MalformedNumbersAreOneErrorEach) {
  Lexed l = lexAll("2x 1e 1.2.3 3");
  std::vector<K> expected = {K::Error, K::Error, K::Error, K::Integer, K::Eof};
  EXPECT_EQ(l.kinds, expected);
  EXPECT_EQ(l.errors, 3u);
}

TEST(LexerTest, RunsOfInvalidBytesAreOneError) {
  Lexed l = lexAll("a @@@ b \xff\xfe c");
  std::vector<K> expected = {K::Identifier, K::Error,      K::Identifier,
                             K::Error,      K::Identifier, K::Eof};
  EXPECT_EQ(l.kinds, expected);
  EXPECT_EQ(l.errors, 2u);
}

TEST(LexerTest, NulIsAnErrorNotTheEnd) {
  std::string text("a\0b", 3);
  Lexed l = lexAll(text);
  std::vector<K> expected = {K::Identifier, K::Error, K::Identifier, K::Eof};
  EXPECT_EQ(l.kinds, expected);
  test::Run run(text);
  Lexer lexer(run.diag, run.bufferId);
  while (lexer.lex().isNot(K::Eof)) {
  }
  EXPECT_EQ(run.first(), "1:2: NUL byte in source text");
}

TEST(LexerTest, EofIsSticky) {
  test::Run run("");
  Lexer lexer(run.diag, run.bufferId);
  EXPECT_TRUE(lexer.lex().is(K::Eof));
  EXPECT_TRUE(lexer.lex().is(K::Eof));
}

TEST(LexerTest, CarriageReturnsAreBlank) {
  Lexed l = lexAll("a\r\nb");
  std::vector<K> expected = {K::Identifier, K::Newline, K::Identifier, K::Eof};
  EXPECT_EQ(l.kinds, expected);
}

TEST(LexerTest, HugeIdentifier) {
  std::string name(1 << 20, 'q');
  Lexed l = lexAll(name);
  ASSERT_EQ(l.kinds.size(), 2u);
  EXPECT_EQ(l.spellings[0].size(), name.size());
}

} // namespace
