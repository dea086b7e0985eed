//===- SemaTest.cpp - Semantic checks of the .attn language ---------------===//

#include "FrontendTestUtil.h"

#include "attnc/Sema/OpTable.h"

#include "gtest/gtest.h"

#include <fstream>
#include <set>
#include <string>

using namespace attnc;
using namespace attnc::ast;

namespace {

/// A block with the usual declarations and `body` as its statements.
std::string spec(llvm::StringRef body) {
  return ("block b {\n"
          "  dim B = 2, T = 4, D = 100, H = 5\n"
          "  input X: f32[B, T, D]\n"
          "  input vl: i32[B]\n"
          "  param W: f32[D, D]\n" +
          body + "}\n")
      .str();
}

TEST(SemaTest, InfersShapesOfNestedCalls) {
  test::Run run(spec("  Y = merge_heads(split_heads(linear(X, W), heads=H), "
                     "heads=H)\n"
                     "  Z = masked_softmax(matmul(Y, Y, transpose_b=true), "
                     "vl)\n"
                     "  output Y, Z\n"));
  run.check();
  ASSERT_TRUE(run.module) << run.printed;
  const Block &block = *run.module->blocks[0];
  auto *y = llvm::cast<AssignStmt>(block.stmts[4].get());
  ASSERT_TRUE(y->value->shape);
  EXPECT_EQ(y->value->shape->dims, (llvm::SmallVector<int64_t, 4>{2, 4, 100}));
  auto *z = llvm::cast<AssignStmt>(block.stmts[5].get());
  EXPECT_EQ(z->value->shape->dims, (llvm::SmallVector<int64_t, 4>{2, 4, 4}));
  auto *call = llvm::cast<CallExpr>(z->value.get());
  auto *scores = llvm::cast<CallExpr>(call->get("x").tensor);
  EXPECT_TRUE(scores->get("transpose_b").boolValue);
  ASSERT_EQ(block.outputs.size(), 2u);
  EXPECT_EQ(block.outputs[1]->name, "Z");
}

TEST(SemaTest, ReturnWeightsGivesASecondResult) {
  test::Run run(spec("  Y, A = multihead_attention(X, X, X, heads=H, w_q=W, "
                     "w_k=W, w_v=W, w_o=W, valid_lens=vl, "
                     "return_weights=true)\n"
                     "  Z, S = attention(X, X, X, return_weights=true)\n"
                     "  output Y, A, Z, S\n"));
  run.check();
  ASSERT_TRUE(run.module) << run.printed;
  const Block &block = *run.module->blocks[0];
  auto *mha = llvm::cast<CallExpr>(
      llvm::cast<AssignStmt>(block.stmts[4].get())->value.get());
  ASSERT_EQ(mha->results.size(), 2u);
  EXPECT_EQ(mha->results[0].dims, (llvm::SmallVector<int64_t, 4>{2, 4, 100}));
  // [B * heads, Tq, Tk]
  EXPECT_EQ(mha->results[1].dims, (llvm::SmallVector<int64_t, 4>{10, 4, 4}));
  auto *attention = llvm::cast<CallExpr>(
      llvm::cast<AssignStmt>(block.stmts[5].get())->value.get());
  ASSERT_EQ(attention->results.size(), 2u);
  EXPECT_EQ(attention->results[1].dims,
            (llvm::SmallVector<int64_t, 4>{2, 4, 4}));
  ASSERT_EQ(block.outputs.size(), 4u);
}

TEST(SemaTest, GeluKeepsTheShapeAndReadsApproximate) {
  test::Run run(spec("  Y = gelu(linear(X, W))\n"
                     "  Z = gelu(X, approximate=true)\n"
                     "  output Y, Z, vl\n"));
  run.check();
  ASSERT_TRUE(run.module) << run.printed;
  const Block &block = *run.module->blocks[0];
  auto *y = llvm::cast<CallExpr>(
      llvm::cast<AssignStmt>(block.stmts[4].get())->value.get());
  EXPECT_EQ(y->shape->dims, (llvm::SmallVector<int64_t, 4>{2, 4, 100}));
  // approximate defaults to false: torch's approximate='none'.
  EXPECT_FALSE(y->get("approximate").boolValue);
  auto *z = llvm::cast<CallExpr>(
      llvm::cast<AssignStmt>(block.stmts[5].get())->value.get());
  EXPECT_TRUE(z->get("approximate").boolValue);
  EXPECT_EQ(z->shape->dims, (llvm::SmallVector<int64_t, 4>{2, 4, 100}));

  test::Run wrong(spec("  Y = gelu(vl)\n  output Y, X, W\n"));
  wrong.check();
  EXPECT_EQ(wrong.first(),
            "6:12: 'x' must be an f32, bf16 or f16 tensor, got i32[2]");
}

TEST(SemaTest, DefaultsComeFromTheRules) {
  test::Run run("block b {\n"
                "  input X: f32[2, 4, 8]\n"
                "  param g: f32[8]\n"
                "  Y = positional_encoding(layer_norm(X, g, g))\n"
                "  output Y\n"
                "}\n");
  run.check();
  ASSERT_TRUE(run.module) << run.printed;
  auto *call = llvm::cast<CallExpr>(
      llvm::cast<AssignStmt>(run.module->blocks[0]->stmts[2].get())
          ->value.get());
  EXPECT_EQ(call->get("max_len").intValue, mlir::attn::rules::kDefaultMaxLen);
  EXPECT_EQ(call->get("max_len").source, nullptr);
  auto *norm = llvm::cast<CallExpr>(call->get("x").tensor);
  EXPECT_FLOAT_EQ(norm->get("eps").floatValue, mlir::attn::rules::kDefaultEps);
}

TEST(SemaTest, RuleErrorsPointAtTheArgument) {
  test::Run run(spec("  Y = multihead_attention(X, X, X, heads=7, w_q=W, "
                     "w_k=W, w_v=W, w_o=W, valid_lens=vl)\n  output Y\n"));
  run.check();
  EXPECT_FALSE(run.module);
  EXPECT_EQ(run.first(), "6:36: heads=7 does not divide the model dimension "
                         "100 (hidden size of 'w_q')");
}

TEST(SemaTest, RuleErrorsOnPositionalOperands) {
  test::Run run(spec("  Y = linear(X, vl)\n  output Y\n"));
  run.check();
  EXPECT_EQ(run.first(),
            "6:17: 'w' must be an f32, bf16 or f16 tensor, got i32[2]");
}

TEST(SemaTest, UnknownOpSuggestsTheClosest) {
  test::Run run(spec("  Y = sofmax(X)\n  output Y, vl, W\n"));
  run.check();
  EXPECT_EQ(run.first(), "6:7: unknown op 'sofmax'; did you mean 'softmax'?");
  // The failed call still used X: no "never used" error for it.
  EXPECT_EQ(run.numErrors(), 1u) << run.printed;
}

TEST(SemaTest, PoisonedValuesDoNotCascade) {
  test::Run run(spec("  A = relu(nope)\n  C = add(A, A)\n  E = softmax(C)\n"
                     "  output E, X, vl, W\n"));
  run.check();
  EXPECT_EQ(run.numErrors(), 1u) << run.printed;
  EXPECT_EQ(run.first(), "6:12: undefined name 'nope'");
}

TEST(SemaTest, KeywordErrors) {
  struct Case {
    const char *body;
    const char *message;
  } cases[] = {
      {"  Y = split_heads(X, heds=5)\n",
       "6:22: 'split_heads' has no argument 'heds'; did you mean 'heads'? "
       "(signature: split_heads(x, heads=...))"},
      {"  Y = split_heads(X, heads=5, heads=5)\n",
       "6:31: keyword 'heads' is given twice in the call to 'split_heads'"},
      {"  Y = split_heads(X)\n",
       "6:7: 'split_heads' is missing its required argument 'heads=...'; its "
       "signature is split_heads(x, heads=...)"},
      {"  Y = split_heads(X, heads=true)\n",
       "6:28: argument 'heads' of 'split_heads' must be an integer, got true"},
      {"  Y = split_heads(X, heads=X)\n",
       "6:28: argument 'heads' of 'split_heads' must be an integer, got the "
       "input 'X'"},
      {"  Y = attention(X, X, X, causal=1)\n",
       "6:33: argument 'causal' of 'attention' must be true or false, got '1'"},
      {"  Y = split_heads(heads=5, X)\n",
       "6:28: positional argument after keyword argument 'heads' in the call "
       "to 'split_heads'"},
      {"  Y = relu(3)\n",
       "6:12: argument 'x' of 'relu' must be a tensor, got '3'"},
      {"  Y = layer_norm(X, W, W, eps=1e-60)\n",
       "6:31: '1e-60' is too small for f32, it would become 0 (argument 'eps' "
       "of 'layer_norm')"},
  };
  for (const Case &c : cases) {
    test::Run run(spec(std::string(c.body) + "  output Y\n"));
    run.check();
    EXPECT_EQ(run.first(), c.message) << c.body;
  }
}

TEST(SemaTest, NameErrors) {
  struct Case {
    const char *body;
    const char *message;
  } cases[] = {
      {"  X = relu(X)\n", "6:3: redefinition of 'X'"},
      {"  Y = relu(Z)\n  Z = relu(X)\n",
       "6:12: 'Z' is used before its definition"},
      {"  Y = relu(Xx)\n", "6:12: undefined name 'Xx'; did you mean 'X'?"},
      {"  input Q: f32[B, Tq]\n",
       "6:19: undefined dim 'Tq'; did you mean 'T'?"},
      {"  input Q: f32[B, X]\n",
       "6:19: 'X' is an input, not a dim; tensor shapes take integers or dim "
       "names"},
      {"  input Q: f32[0]\n", "6:16: dimension sizes must be positive, got 0"},
      {"  input Q: f32[1048576, 1048576, 2]\n",
       "6:12: tensor type f32[1048576, 1048576, 2] is too large; at most 2^40 "
       "elements are supported"},
      {"  dim N = -1\n", "6:11: dim 'N' must be positive, got -1"},
      {"  Y = relu(B)\n",
       "6:12: argument 'x' of 'relu' must be a tensor, but 'B' is a dim (= 2)"},
  };
  for (const Case &c : cases) {
    test::Run run(spec(std::string(c.body) + "  output Y\n"));
    run.check();
    EXPECT_EQ(run.first(), c.message) << c.body;
  }
}

TEST(SemaTest, UnusedAndOutputs) {
  test::Run unused(spec("  Y = relu(X)\n  Z = relu(X)\n  output Y, vl\n"));
  unused.check();
  ASSERT_EQ(unused.errors().size(), 2u) << unused.printed;
  EXPECT_EQ(unused.first(), "5:9: param 'W' is never used");
  EXPECT_EQ(unused.errors()[1].message,
            "'Z' is computed but never used (pass it to an op or list it in "
            "'output')");

  test::Run none("block b {\n  input X: f32[2]\n}\n");
  none.check();
  EXPECT_EQ(none.first(), "1:7: block 'b' has no outputs; list its results "
                          "with 'output NAME'");

  test::Run dimOut(
      "block b {\n  dim N = 2\n  input X: f32[N]\n  output X, N\n}\n");
  dimOut.check();
  EXPECT_EQ(dimOut.first(), "4:13: 'N' is a dim, not a tensor; only tensors "
                            "can be outputs");
}

TEST(SemaTest, DuplicateBlocks) {
  test::Run run("block a {\n input X: f32[2]\n output X\n}\n"
                "block a {\n input X: f32[2]\n output X\n}\n");
  run.check();
  EXPECT_EQ(run.first(), "5:7: redefinition of block 'a'");
}

/// The ops docs/language.md's "Ops" table documents: each `name(` that
/// opens a code span in a row's first column.
std::set<std::string> documentedOps() {
  std::ifstream in(ATTNC_DOCS_DIR "/language.md");
  EXPECT_TRUE(in.good()) << ATTNC_DOCS_DIR "/language.md";
  std::set<std::string> ops;
  bool inOps = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0)
      inOps = line == "## Ops";
    if (!inOps || line.rfind("| `", 0) != 0)
      continue;
    std::string first = line.substr(1, line.find(" | ", 1));
    for (size_t open = first.find('`'); open != std::string::npos;) {
      size_t close = first.find('`', open + 1);
      size_t paren = first.find('(', open + 1);
      if (close == std::string::npos)
        break;
      if (paren < close)
        ops.insert(first.substr(open + 1, paren - open - 1));
      open = first.find('`', close + 1);
    }
  }
  return ops;
}

// The language's documentation is the list of its ops: the table (made from
// AttnOps.def) holds exactly the ops docs/language.md documents.
TEST(SemaTest, TheTableHoldsTheDocumentedOps) {
  std::set<std::string> inTable;
  for (const OpInfo &op : allOps())
    inTable.insert(op.name.str());
  std::set<std::string> documented = documentedOps();
  EXPECT_FALSE(documented.empty()) << "the Ops table was not found";
  EXPECT_EQ(inTable, documented);
  for (const std::string &name : documented)
    EXPECT_TRUE(lookupOp(name)) << name;
  EXPECT_EQ(lookupOp("linear")->signature(), "linear(x, w[, b])");
  EXPECT_EQ(lookupOp("gelu")->signature(), "gelu(x[, approximate=...])");
  EXPECT_EQ(lookupOp("rms_norm")->signature(), "rms_norm(x, gamma[, eps=...])");
  // Keyword-only tensors are spelt as keywords.
  EXPECT_NE(lookupOp("multihead_attention")->signature().find("[, b_q=...]"),
            std::string::npos);
}

} // namespace
