//===- Parser.cpp - Recursive-descent parser of .attn files ---------------===//

#include "attnc/Parse/Parser.h"

#include "attnc/Support/Diagnostics.h"
#include "llvm/ADT/SmallVector.h"

#include <cmath>
#include <limits>

using namespace attnc;
using namespace attnc::ast;
using llvm::SMLoc;
using llvm::SMRange;
using mlir::attn::abi::nameOf;

Parser::Parser(Lexer &lexer, DiagnosticEngine &diag)
    : lexer(lexer), diag(diag) {
  tok = lexer.lex();
  prevEnd = tok.loc();
}

//===----------------------------------------------------------------------===//
// Token stream
//===----------------------------------------------------------------------===//

void Parser::consume() {
  if (tok.is(TokenKind::Eof))
    return;
  if (tok.is(TokenKind::LParen) || tok.is(TokenKind::LBracket))
    ++openDelims;
  else if (tok.is(TokenKind::RParen) || tok.is(TokenKind::RBracket))
    --openDelims;
  if (tok.isNot(TokenKind::Newline))
    prevEnd = tok.endLoc();
  if (lookahead) {
    tok = *lookahead;
    lookahead.reset();
  } else {
    tok = lexer.lex();
  }
}

const Token &Parser::peek() {
  if (!lookahead)
    lookahead = tok.is(TokenKind::Eof) ? tok : lexer.lex();
  return *lookahead;
}

bool Parser::consumeIf(TokenKind kind) {
  if (tok.isNot(kind))
    return false;
  consume();
  return true;
}

bool Parser::skipNewlines() {
  bool skipped = false;
  while (tok.is(TokenKind::Newline)) {
    consume();
    skipped = true;
  }
  return skipped;
}

bool Parser::atStatementEnd() const {
  return tok.is(TokenKind::Newline) || tok.is(TokenKind::Semicolon) ||
         tok.is(TokenKind::RBrace) || tok.is(TokenKind::Eof);
}

//===----------------------------------------------------------------------===//
// Errors and recovery
//===----------------------------------------------------------------------===//

void Parser::errorHere(const llvm::Twine &message) {
  if (tok.isNot(TokenKind::Error))
    diag.error(tok.loc(), message, tok.range());
}

void Parser::expected(const llvm::Twine &what) {
  errorHere("expected " + what + ", found " + describeToken(tok));
}

static bool startsStatement(TokenKind kind) {
  return kind == TokenKind::KwDim || kind == TokenKind::KwInput ||
         kind == TokenKind::KwParam || kind == TokenKind::KwState ||
         kind == TokenKind::KwOutput;
}

void Parser::recoverStatement() {
  if (resumeHere) {
    resumeHere = false;
    openDelims = 0;
    return;
  }
  // Brackets left open by the failed statement must close before a newline
  // ends it, but a statement keyword on the next line always starts afresh
  // (an unclosed '(' must not swallow the rest of the block).
  int depth = openDelims;
  while (!tok.is(TokenKind::Eof) && !tok.is(TokenKind::RBrace) &&
         !tok.is(TokenKind::KwBlock)) {
    if ((tok.is(TokenKind::Newline) || tok.is(TokenKind::Semicolon)) &&
        depth <= 0)
      break;
    bool newline = tok.is(TokenKind::Newline);
    if (tok.is(TokenKind::LParen) || tok.is(TokenKind::LBracket))
      ++depth;
    else if (tok.is(TokenKind::RParen) || tok.is(TokenKind::RBracket))
      --depth;
    consume();
    if (newline && startsStatement(tok.kind))
      break;
  }
  openDelims = 0;
}

//===----------------------------------------------------------------------===//
// Blocks
//===----------------------------------------------------------------------===//

std::unique_ptr<Module>
Parser::parseModule(llvm::function_ref<void(Block &)> onBlock) {
  auto module = std::make_unique<Module>();
  while (!diag.tooManyErrors()) {
    while (tok.is(TokenKind::Newline) || tok.is(TokenKind::Semicolon))
      consume();
    if (tok.is(TokenKind::Eof))
      break;
    if (tok.is(TokenKind::KwBlock)) {
      if (auto block = parseBlock()) {
        if (onBlock)
          onBlock(*block);
        module->blocks.push_back(std::move(block));
      }
      continue;
    }
    expected("'block'");
    // Skip everything up to the next block.
    while (!tok.is(TokenKind::Eof) && !tok.is(TokenKind::KwBlock))
      consume();
  }
  if (module->blocks.empty() && !diag.hadErrors())
    expected("'block' (a spec holds one or more 'block NAME { ... }')");
  return module;
}

std::unique_ptr<Block> Parser::parseBlock() {
  SMLoc start = tok.loc();
  consume(); // 'block'
  auto block = std::make_unique<Block>();
  std::optional<Ident> name = parseIdent("a block name after 'block'");
  if (!name || tok.isNot(TokenKind::LBrace)) {
    if (name)
      expected("'{' after the block name");
    while (!tok.is(TokenKind::Eof) && !tok.is(TokenKind::KwBlock))
      consume();
    return nullptr;
  }
  block->name = std::move(*name);
  SMLoc brace = tok.loc();
  consume();

  while (!diag.tooManyErrors()) {
    while (tok.is(TokenKind::Newline) || tok.is(TokenKind::Semicolon))
      consume();
    if (consumeIf(TokenKind::RBrace))
      break;
    if (tok.is(TokenKind::Eof) || tok.is(TokenKind::KwBlock)) {
      diag.error(tok.is(TokenKind::Eof) ? prevEnd : tok.loc(),
                 "expected '}' to close block " + quoted(block->name.name) +
                     ", found " + describeToken(tok));
      diag.note(brace, "block " + quoted(block->name.name) + " opened here");
      block->hadSyntaxErrors = true;
      break;
    }
    pendingNames.clear();
    std::unique_ptr<Stmt> stmt = parseStatement();
    if (stmt && !atStatementEnd()) {
      expected("the end of the statement (a newline or ';')");
      stmt.reset();
    }
    if (!stmt) {
      block->hadSyntaxErrors = true;
      for (Ident &name : pendingNames)
        block->brokenNames.push_back(std::move(name));
      recoverStatement();
      continue;
    }
    block->stmts.push_back(std::move(stmt));
  }
  block->range = {start, prevEnd};
  return block;
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

std::unique_ptr<Stmt> Parser::parseStatement() {
  openDelims = 0;
  switch (tok.kind) {
  case TokenKind::KwDim:
    return parseDim();
  case TokenKind::KwInput:
  case TokenKind::KwParam:
  case TokenKind::KwState:
    return parseDecl(tok.kind);
  case TokenKind::KwOutput:
    return parseOutput();
  case TokenKind::Identifier:
    if (peek().is(TokenKind::Equal) || peek().is(TokenKind::Comma))
      return parseAssign();
    if (peek().is(TokenKind::LParen)) {
      errorHere("the result of " + quoted(tok.spelling) +
                " must be assigned to a name: NAME = op(...)");
      return nullptr;
    }
    if (peek().is(TokenKind::Identifier))
      if (std::optional<TokenKind> keyword = misspelledKeyword())
        return parseStatementAs(*keyword);
    {
      std::string name = quoted(tok.spelling);
      consume();
      expected("'=' after " + name);
      return nullptr;
    }
  default:
    expected(
        "a statement (dim, input, param, state, output or NAME = op(...))");
    return nullptr;
  }
}

std::optional<TokenKind> Parser::misspelledKeyword() {
  // Only where a keyword would fit: a name followed by another name
  // ('inptu X: ...', 'ouput Y', 'dimm B = 2') cannot start an assignment.
  static constexpr std::pair<llvm::StringRef, TokenKind> kKeywords[] = {
      {"dim", TokenKind::KwDim},
      {"input", TokenKind::KwInput},
      {"param", TokenKind::KwParam},
      {"state", TokenKind::KwState},
      {"output", TokenKind::KwOutput}};
  llvm::SmallVector<llvm::StringRef> names;
  for (const auto &[name, kind] : kKeywords)
    names.push_back(name);
  llvm::StringRef best = closestMatch(tok.spelling, names);
  for (const auto &[name, kind] : kKeywords)
    if (!best.empty() && name == best) {
      errorHere("unknown keyword " + quoted(tok.spelling) + "; did you mean '" +
                name + "'?");
      return kind;
    }
  return std::nullopt;
}

std::unique_ptr<Stmt> Parser::parseStatementAs(TokenKind keyword) {
  // Parse the rest as the keyword's statement, so that its names are
  // declared and the one typo gives one error, not one per use.
  switch (keyword) {
  case TokenKind::KwDim:
    return parseDim();
  case TokenKind::KwInput:
  case TokenKind::KwParam:
  case TokenKind::KwState:
    return parseDecl(keyword);
  default:
    return parseOutput();
  }
}

std::optional<Ident> Parser::parseIdent(const llvm::Twine &what) {
  if (tok.isNot(TokenKind::Identifier)) {
    expected(what);
    return std::nullopt;
  }
  Ident ident{tok.spelling.str(), tok.range()};
  consume();
  return ident;
}

std::optional<int64_t> Parser::parseInteger(bool negative, SMRange range) {
  uint64_t magnitude = 0;
  constexpr uint64_t kMax = std::numeric_limits<int64_t>::max();
  llvm::StringRef digits = tok.spelling;
  bool overflow = digits.getAsInteger(10, magnitude) ||
                  magnitude > kMax + (negative ? 1 : 0);
  consume();
  if (overflow) {
    diag.error(range,
               "integer " +
                   quoted(llvm::StringRef(range.Start.getPointer(),
                                          range.End.getPointer() -
                                              range.Start.getPointer())) +
                   " does not fit in 64 bits (the largest is " +
                   llvm::Twine(static_cast<int64_t>(kMax)) + ")");
    return std::nullopt;
  }
  if (!negative)
    return static_cast<int64_t>(magnitude);
  // -2^63 has no positive counterpart: negate in unsigned arithmetic.
  return static_cast<int64_t>(~magnitude + 1);
}

std::unique_ptr<Stmt> Parser::parseDim() {
  SMLoc start = tok.loc();
  consume(); // 'dim'
  std::vector<DimStmt::Def> defs;
  while (true) {
    std::optional<Ident> name = parseIdent("a dim name");
    if (!name)
      return nullptr;
    pendingNames = {*name};
    if (!consumeIf(TokenKind::Equal)) {
      expected("'=' after dim " + quoted(name->name));
      return nullptr;
    }
    SMLoc valueStart = tok.loc();
    bool negative = consumeIf(TokenKind::Minus);
    if (tok.isNot(TokenKind::Integer)) {
      expected("an integer value for dim " + quoted(name->name));
      return nullptr;
    }
    std::optional<int64_t> value =
        parseInteger(negative, {valueStart, tok.endLoc()});
    if (!value)
      return nullptr;
    defs.push_back({std::move(*name), *value, {valueStart, prevEnd}});
    if (!consumeIf(TokenKind::Comma))
      break;
    skipNewlines();
  }
  return std::make_unique<DimStmt>(std::move(defs), SMRange{start, prevEnd});
}

std::unique_ptr<Stmt> Parser::parseDecl(TokenKind keyword) {
  SMLoc start = tok.loc();
  ArgumentRole role = keyword == TokenKind::KwParam   ? ArgumentRole::Param
                      : keyword == TokenKind::KwState ? ArgumentRole::State
                                                      : ArgumentRole::Input;
  consume();
  std::optional<Ident> name = parseIdent("a name after '" + nameOf(role) + "'");
  if (!name)
    return nullptr;
  pendingNames = {*name};
  if (!consumeIf(TokenKind::Colon)) {
    expected("':' and a type after " + quoted(name->name));
    return nullptr;
  }
  std::optional<TypeExpr> type = parseType();
  if (!type)
    return nullptr;
  return std::make_unique<DeclStmt>(role, std::move(*name), std::move(*type),
                                    SMRange{start, prevEnd});
}

std::optional<TypeExpr> Parser::parseType() {
  // A shape never spans lines, so a failed one leaves no bracket open for
  // recovery to match.
  int delimsBefore = openDelims;
  std::optional<TypeExpr> type = parseShape();
  if (!type)
    openDelims = delimsBefore;
  return type;
}

std::optional<TypeExpr> Parser::parseShape() {
  TypeExpr type;
  SMLoc start = tok.loc();
  std::optional<Ident> element =
      parseIdent("a tensor type such as f32[B, T, D]");
  if (!element)
    return std::nullopt;
  type.element = std::move(*element);
  if (!consumeIf(TokenKind::LBracket)) {
    expected("'[' and the dimensions of the " + quoted(type.element.name) +
             " tensor");
    return std::nullopt;
  }
  while (tok.isNot(TokenKind::RBracket)) {
    TypeExpr::DimRef dim;
    dim.range = tok.range();
    if (tok.is(TokenKind::Identifier)) {
      dim.name = tok.spelling.str();
      consume();
    } else if (tok.is(TokenKind::Integer)) {
      std::optional<int64_t> value = parseInteger(false, tok.range());
      if (!value)
        return std::nullopt;
      dim.value = *value;
    } else {
      expected("a dimension (an integer or a dim name)");
      return std::nullopt;
    }
    type.dims.push_back(std::move(dim));
    if (consumeIf(TokenKind::Comma))
      continue;
    if (tok.isNot(TokenKind::RBracket)) {
      expected("',' or ']' in the tensor shape");
      return std::nullopt;
    }
  }
  consume(); // ']'
  type.range = {start, prevEnd};
  return type;
}

std::unique_ptr<Stmt> Parser::parseOutput() {
  SMLoc start = tok.loc();
  consume(); // 'output'
  std::vector<Ident> names;
  while (true) {
    std::optional<Ident> name = parseIdent("the name of an output");
    if (!name)
      return nullptr;
    names.push_back(std::move(*name));
    if (!consumeIf(TokenKind::Comma))
      break;
    skipNewlines();
  }
  return std::make_unique<OutputStmt>(std::move(names),
                                      SMRange{start, prevEnd});
}

std::unique_ptr<Stmt> Parser::parseAssign() {
  SMLoc start = tok.loc();
  pendingNames = {Ident{tok.spelling.str(), tok.range()}};
  consume(); // name
  // `Y, A = op(...)`: one name per result; Sema checks the count.
  while (consumeIf(TokenKind::Comma)) {
    std::optional<Ident> name =
        parseIdent("a name after ',' (NAME, NAME = op(...))");
    if (!name)
      return nullptr;
    pendingNames.push_back(std::move(*name));
  }
  if (!consumeIf(TokenKind::Equal)) {
    expected("'=' after " + quoted(pendingNames.back().name));
    return nullptr;
  }
  std::unique_ptr<Expr> value = parseExpr(0);
  if (!value)
    return nullptr;
  return std::make_unique<AssignStmt>(pendingNames, std::move(value),
                                      SMRange{start, prevEnd});
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

std::unique_ptr<Expr> Parser::parseExpr(unsigned depth) {
  switch (tok.kind) {
  case TokenKind::Identifier: {
    if (peek().is(TokenKind::LParen))
      return parseCall(depth);
    auto name = std::make_unique<NameExpr>(tok.spelling.str(), tok.range());
    consume();
    return name;
  }
  case TokenKind::Integer:
  case TokenKind::Float:
  case TokenKind::Minus:
    return parseNumber();
  case TokenKind::KwTrue:
  case TokenKind::KwFalse: {
    auto value =
        std::make_unique<BoolExpr>(tok.is(TokenKind::KwTrue), tok.range());
    consume();
    return value;
  }
  default:
    expected("an expression (a name, a number, true, false or an op call)");
    return nullptr;
  }
}

std::unique_ptr<Expr> Parser::parseNumber() {
  SMLoc start = tok.loc();
  bool negative = consumeIf(TokenKind::Minus);
  if (tok.is(TokenKind::Integer)) {
    std::optional<int64_t> value =
        parseInteger(negative, {start, tok.endLoc()});
    if (!value)
      return nullptr;
    return std::make_unique<IntegerExpr>(*value, SMRange{start, prevEnd});
  }
  if (tok.isNot(TokenKind::Float)) {
    expected("a number after '-'");
    return nullptr;
  }
  double value = 0;
  // getAsDouble accepts an overflowing literal as inf; reject that below.
  bool bad = tok.spelling.getAsDouble(value) || !std::isfinite(value);
  SMRange range{start, tok.endLoc()};
  consume();
  if (bad) {
    diag.error(range, "number " +
                          quoted(llvm::StringRef(start.getPointer(),
                                                 prevEnd.getPointer() -
                                                     start.getPointer())) +
                          " is out of range");
    return nullptr;
  }
  return std::make_unique<FloatExpr>(negative ? -value : value, range);
}

std::unique_ptr<Expr> Parser::parseCall(unsigned depth) {
  if (depth >= kMaxNesting) {
    errorHere("expression is nested too deeply (more than " +
              llvm::Twine(kMaxNesting) + " levels of calls)");
    return nullptr;
  }
  SMLoc start = tok.loc();
  Ident callee{tok.spelling.str(), tok.range()};
  consume(); // name
  consume(); // '('
  std::vector<Argument> args;
  skipNewlines();
  while (tok.isNot(TokenKind::RParen)) {
    Argument arg;
    if (tok.is(TokenKind::Identifier) && peek().is(TokenKind::Equal)) {
      arg.keyword = {tok.spelling.str(), tok.range()};
      consume(); // keyword
      consume(); // '='
      skipNewlines();
    }
    arg.value = parseExpr(depth + 1);
    if (!arg.value)
      return nullptr;
    args.push_back(std::move(arg));
    bool lineEnded = skipNewlines();
    if (consumeIf(TokenKind::Comma)) {
      skipNewlines();
      continue;
    }
    if (tok.isNot(TokenKind::RParen)) {
      if (lineEnded) {
        // Most likely a ')' missing at the end of the line: say so there,
        // and resume parsing with the next line as a new statement.
        diag.error(prevEnd, "expected ',' or ')' after an argument of " +
                                quoted(callee.name) + ", found end of line");
        resumeHere = true;
      } else {
        expected("',' or ')' after an argument of " + quoted(callee.name));
      }
      return nullptr;
    }
  }
  consume(); // ')'
  return std::make_unique<CallExpr>(std::move(callee), std::move(args),
                                    SMRange{start, prevEnd});
}
