//===- ParserTest.cpp - Syntax of the .attn language ----------------------===//

#include "FrontendTestUtil.h"

#include "gtest/gtest.h"

using namespace attnc;
using namespace attnc::ast;

namespace {

TEST(ParserTest, BlockWithEveryStatementKind) {
  test::Run run("block b {\n"
                "  dim B = 2, T = 4\n"
                "  input X: f32[B, T, 8]\n"
                "  param W: f32[8, 8]; Y = linear(X, W)\n"
                "  output Y\n"
                "  state K: bf16[B, 16, 8]\n"
                "}\n");
  run.parse();
  ASSERT_EQ(run.numErrors(), 0u) << run.printed;
  ASSERT_EQ(run.module->blocks.size(), 1u);
  const Block &block = *run.module->blocks[0];
  EXPECT_EQ(block.name.name, "b");
  ASSERT_EQ(block.stmts.size(), 6u);
  auto *dims = llvm::dyn_cast<DimStmt>(block.stmts[0].get());
  ASSERT_TRUE(dims);
  ASSERT_EQ(dims->defs.size(), 2u);
  EXPECT_EQ(dims->defs[1].name.name, "T");
  EXPECT_EQ(dims->defs[1].value, 4);
  auto *decl = llvm::dyn_cast<DeclStmt>(block.stmts[1].get());
  ASSERT_TRUE(decl);
  EXPECT_EQ(decl->role, ArgumentRole::Input);
  ASSERT_EQ(decl->type.dims.size(), 3u);
  EXPECT_EQ(decl->type.dims[0].name, "B");
  EXPECT_EQ(decl->type.dims[2].value, 8);
  EXPECT_EQ(llvm::cast<DeclStmt>(block.stmts[2].get())->role,
            ArgumentRole::Param);
  auto *assign = llvm::dyn_cast<AssignStmt>(block.stmts[3].get());
  ASSERT_TRUE(assign);
  auto *call = llvm::dyn_cast<CallExpr>(assign->value.get());
  ASSERT_TRUE(call);
  EXPECT_EQ(call->callee.name, "linear");
  EXPECT_EQ(call->args.size(), 2u);
  EXPECT_TRUE(llvm::isa<OutputStmt>(block.stmts[4].get()));
  auto *state = llvm::dyn_cast<DeclStmt>(block.stmts[5].get());
  ASSERT_TRUE(state);
  EXPECT_EQ(state->role, ArgumentRole::State);
  EXPECT_EQ(state->name.name, "K");
  EXPECT_EQ(state->type.element.name, "bf16");
}

TEST(ParserTest, AStatementMayBindSeveralNames) {
  test::Run run("block b {\n  Y, A = attention(X, X, X, return_weights=true)"
                "\n}\n");
  run.parse();
  ASSERT_EQ(run.numErrors(), 0u) << run.printed;
  auto *assign = llvm::cast<AssignStmt>(run.module->blocks[0]->stmts[0].get());
  ASSERT_EQ(assign->names.size(), 2u);
  EXPECT_EQ(assign->names[0].name, "Y");
  EXPECT_EQ(assign->names[1].name, "A");
  auto [line, col] =
      run.sourceMgr.getLineAndColumn(assign->names[1].range.Start);
  EXPECT_EQ(line, 2u);
  EXPECT_EQ(col, 6u);
  EXPECT_TRUE(llvm::isa<CallExpr>(assign->value.get()));
}

TEST(ParserTest, NamesOfAFailedStatementAreBroken) {
  // Both names of a statement that does not parse are remembered, so
  // their uses are not reported as undefined.
  test::Run run("block b {\n  Y, A = attention(X,, X)\n}\n");
  run.parse();
  EXPECT_EQ(run.numErrors(), 1u) << run.printed;
  const Block &block = *run.module->blocks[0];
  ASSERT_EQ(block.brokenNames.size(), 2u);
  EXPECT_EQ(block.brokenNames[1].name, "A");
}

TEST(ParserTest, SourceRangesPointIntoTheBuffer) {
  test::Run run("block b {\n  Y = relu(X)\n}\n");
  run.parse();
  auto *assign = llvm::cast<AssignStmt>(run.module->blocks[0]->stmts[0].get());
  auto [line, col] =
      run.sourceMgr.getLineAndColumn(assign->value->getRange().Start);
  EXPECT_EQ(line, 2u);
  EXPECT_EQ(col, 7u);
  llvm::StringRef text(assign->value->getRange().Start.getPointer(),
                       assign->value->getRange().End.getPointer() -
                           assign->value->getRange().Start.getPointer());
  EXPECT_EQ(text, "relu(X)");
}

TEST(ParserTest, KeywordArgumentsAndLiterals) {
  test::Run run("block b {\n  Y = f(x, heads=-3, eps=1e-5, causal=true,\n"
                "        k=H, n=g(z),)\n}\n");
  run.parse();
  ASSERT_EQ(run.numErrors(), 0u) << run.printed;
  auto *call = llvm::cast<CallExpr>(
      llvm::cast<AssignStmt>(run.module->blocks[0]->stmts[0].get())
          ->value.get());
  ASSERT_EQ(call->args.size(), 6u);
  EXPECT_FALSE(call->args[0].isKeyword());
  EXPECT_EQ(call->args[1].keyword.name, "heads");
  EXPECT_EQ(llvm::cast<IntegerExpr>(call->args[1].value.get())->value, -3);
  EXPECT_DOUBLE_EQ(llvm::cast<FloatExpr>(call->args[2].value.get())->value,
                   1e-5);
  EXPECT_TRUE(llvm::cast<BoolExpr>(call->args[3].value.get())->value);
  EXPECT_TRUE(llvm::isa<NameExpr>(call->args[4].value.get()));
  EXPECT_TRUE(llvm::isa<CallExpr>(call->args[5].value.get()));
}

TEST(ParserTest, Int64Limits) {
  test::Run ok("block b {\n dim A = 9223372036854775807\n"
               " Y = f(p=-9223372036854775808)\n}\n");
  ok.parse();
  EXPECT_EQ(ok.numErrors(), 0u) << ok.printed;
  test::Run bad("block b {\n dim A = 9223372036854775808\n}\n");
  bad.parse();
  EXPECT_EQ(bad.first(), "2:10: integer '9223372036854775808' does not fit "
                         "in 64 bits (the largest is 9223372036854775807)");
}

TEST(ParserTest, FloatOutOfRange) {
  test::Run run("block b {\n Y = f(p=1e999)\n}\n");
  run.parse();
  EXPECT_EQ(run.first(), "2:10: number '1e999' is out of range");
}

TEST(ParserTest, RecoversAtTheNextStatement) {
  test::Run run("block b {\n"
                "  Y = relu(X))\n"   // stray ')'
                "  Z = ?\n"          // lexical error
                "  input Q f32[2]\n" // missing ':'
                "  output Y\n"
                "}\n");
  run.parse();
  EXPECT_EQ(run.numErrors(), 3u) << run.printed;
  EXPECT_EQ(run.first(), "2:14: expected the end of the statement (a newline "
                         "or ';'), found ')'");
  EXPECT_TRUE(run.module->blocks[0]->hadSyntaxErrors);
}

TEST(ParserTest, MissingCloseParenAtEndOfLine) {
  test::Run run("block b {\n  Y = relu(X\n  Z = relu(Y)\n  output Z\n}\n");
  run.parse();
  EXPECT_EQ(run.numErrors(), 1u) << run.printed;
  EXPECT_EQ(run.first(), "2:13: expected ',' or ')' after an argument of "
                         "'relu', found end of line");
  // The next line still parsed.
  EXPECT_EQ(run.module->blocks[0]->stmts.size(), 2u);
}

TEST(ParserTest, MissingCloseBraceAtEof) {
  test::Run run("block b {\n  output Y");
  run.parse();
  EXPECT_EQ(run.first(),
            "2:11: expected '}' to close block 'b', found end of file");
}

TEST(ParserTest, EmptyFileIsAnError) {
  test::Run run("# nothing here\n");
  run.parse();
  EXPECT_EQ(run.first(), "2:1: expected 'block' (a spec holds one or more "
                         "'block NAME { ... }'), found end of file");
}

TEST(ParserTest, DeepNestingIsAnErrorNotACrash) {
  std::string text = "block b {\n Y = ";
  for (int i = 0; i < 100000; ++i)
    text += "relu(";
  text += "X";
  for (int i = 0; i < 100000; ++i)
    text += ")";
  text += "\n output Y\n}\n";
  test::Run run(text);
  run.parse();
  EXPECT_EQ(run.numErrors(), 1u);
  EXPECT_NE(run.first().find("nested too deeply (more than 256 levels"),
            std::string::npos);
}

TEST(ParserTest, NestingAtTheLimitIsFine) {
  std::string text = "block b {\n Y = ";
  for (unsigned i = 0; i < Parser::kMaxNesting; ++i)
    text += "relu(";
  text += "X";
  for (unsigned i = 0; i < Parser::kMaxNesting; ++i)
    text += ")";
  text += "\n}\n";
  test::Run run(text);
  run.parse();
  EXPECT_EQ(run.numErrors(), 0u) << run.first();
}

TEST(ParserTest, ErrorCountIsCapped) {
  std::string text = "block b {\n";
  for (int i = 0; i < 1000; ++i)
    text += "  ) junk\n";
  text += "}\n";
  test::Run run(text);
  run.parse();
  EXPECT_EQ(run.errors().size(), DiagnosticEngine::kDefaultMaxErrors + 1);
  EXPECT_NE(run.printed.find("too many errors"), std::string::npos);
}

TEST(ParserTest, MultipleBlocksAndJunkBetween) {
  test::Run run(
      "block a {\n output X\n}\nnonsense (\nblock b {\n output Y\n}\n");
  run.parse();
  EXPECT_EQ(run.numErrors(), 1u);
  EXPECT_EQ(run.first(), "4:1: expected 'block', found 'nonsense'");
  ASSERT_EQ(run.module->blocks.size(), 2u);
  EXPECT_EQ(run.module->blocks[1]->name.name, "b");
}

TEST(ParserTest, LongLinesAreCutInTheEcho) {
  std::string text =
      "block b {\n Y = relu(X) " + std::string(100000, 'x') + "\n}\n";
  test::Run run(text);
  run.parse();
  EXPECT_EQ(run.numErrors(), 1u);
  EXPECT_LT(run.printed.size(), 2000u);
}

} // namespace
