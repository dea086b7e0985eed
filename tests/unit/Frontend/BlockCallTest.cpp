//===- BlockCallTest.cpp - A block calling another block (Sema, MLIRGen) --===//
//
// docs/spec.md §2 "calling a block": inputs positionally (or by keyword),
// params by keyword, every argument checked against the callee's declared
// shape, the callee's outputs as the call's results; blocks checked callees
// first, a later-defined callee waited for, recursion and cycles rejected.
// MLIRGen: one function per block, a func.call per call.
//
//===----------------------------------------------------------------------===//

#include "FrontendTestUtil.h"

#include "attnc/Gen/MLIRGen.h"
#include "attnc/InitAttn.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include "gtest/gtest.h"

using namespace attnc;
using namespace attnc::ast;

namespace {

/// A callee `layer(X, vl, W=)`: an input of its own dims, lengths, a param.
const char *kLayer = "block layer {\n"
                     "  dim B = 2, T = 4, D = 8\n"
                     "  input X: f32[B, T, D]\n"
                     "  input vl: i32[B]\n"
                     "  param W: f32[D, D]\n"
                     "  Y = multihead_attention(X, X, X, heads=2, w_q=W, "
                     "w_k=W, w_v=W, w_o=W, valid_lens=vl)\n"
                     "  output Y\n"
                     "}\n";

/// `layer` and a caller whose body is `body` (lines 10 on).
std::string withCaller(llvm::StringRef body) {
  return std::string(kLayer) +
         "block top {\n"             // line 9
         "  input X: f32[2, 4, 8]\n" // 10
         "  input vl: i32[2]\n"      // 11
         "  param W1: f32[8, 8]\n"   // 12
         "  param W2: f32[8, 8]\n" + // 13
         body.str() +
         "}\n"; // 14 on
}

const AssignStmt &assignAt(const Block &block, size_t statement) {
  return *llvm::cast<AssignStmt>(block.stmts[statement].get());
}

TEST(BlockCallTest, BindsInputsByPositionAndParamsByKeyword) {
  test::Run run(withCaller("  H = layer(X, vl, W=W1)\n"
                           "  Z = layer(H, W=W2, vl=vl)\n"
                           "  output Z\n"));
  run.check();
  ASSERT_TRUE(run.module) << run.printed;
  const Block &layer = *run.module->blocks[0];
  const Block &top = *run.module->blocks[1];
  EXPECT_TRUE(layer.valid);
  ASSERT_EQ(layer.arguments.size(), 3u);
  EXPECT_TRUE(layer.arguments[2]->isParam());
  ASSERT_EQ(layer.outputShapes.size(), 1u);
  ASSERT_EQ(top.callees.size(), 1u);
  EXPECT_EQ(top.callees[0], &layer);

  const auto *second = llvm::cast<CallExpr>(assignAt(top, 5).value.get());
  EXPECT_EQ(second->block, &layer);
  EXPECT_EQ(second->op, nullptr);
  ASSERT_EQ(second->bound.size(), 3u);
  // In the callee's declaration order, whatever order they were given in.
  EXPECT_EQ(llvm::cast<NameExpr>(second->bound[0].tensor)->name, "H");
  EXPECT_EQ(llvm::cast<NameExpr>(second->bound[1].tensor)->name, "vl");
  EXPECT_EQ(llvm::cast<NameExpr>(second->bound[2].tensor)->name, "W2");
  ASSERT_EQ(second->results.size(), 1u);
  EXPECT_EQ(second->results[0].dims, (llvm::SmallVector<int64_t, 4>{2, 4, 8}));
}

TEST(BlockCallTest, ACalleeMayBeDefinedLater) {
  test::Run run("block top {\n"
                "  input X: f32[4]\n"
                "  Y = inner(X)\n"
                "  Z = relu(Y)\n"
                "  output Z\n"
                "}\n"
                "block inner {\n"
                "  dim N = 4\n"
                "  input A: f32[N]\n"
                "  B = relu(A)\n"
                "  output B\n"
                "}\n");
  run.check();
  ASSERT_TRUE(run.module) << run.printed;
  const auto *call =
      llvm::cast<CallExpr>(assignAt(*run.module->blocks[0], 1).value.get());
  EXPECT_EQ(call->block, run.module->blocks[1].get());
}

TEST(BlockCallTest, TwoOutputsNeedTwoNames) {
  test::Run run("block top {\n"
                "  input X: f32[4]\n"
                "  Y = inner(X)\n"
                "  output Y\n"
                "}\n"
                "block inner {\n"
                "  input A: f32[4]\n"
                "  B = relu(A)\n"
                "  output B, A\n"
                "}\n");
  run.check();
  EXPECT_EQ(run.numErrors(), 1u) << run.printed;
  EXPECT_EQ(run.first(),
            "3:3: block 'inner' has 2 results (its outputs B, A), but 1 name "
            "is bound; bind one name per output: B, A = inner(...)");
}

TEST(BlockCallTest, SeveralOutputsBindSeveralNames) {
  test::Run run("block top {\n"
                "  input X: f32[4]\n"
                "  Y, X2 = inner(X)\n"
                "  output Y, X2\n"
                "}\n"
                "block inner {\n"
                "  input A: f32[4]\n"
                "  B = relu(A)\n"
                "  output B, A\n"
                "}\n");
  run.check();
  ASSERT_TRUE(run.module) << run.printed;
  const auto *call =
      llvm::cast<CallExpr>(assignAt(*run.module->blocks[0], 1).value.get());
  EXPECT_EQ(call->results.size(), 2u);
  // Checked after its callee.
  EXPECT_TRUE(run.module->blocks[1]->checked);
  EXPECT_EQ(run.module->blocks[0]->callees.front(),
            run.module->blocks[1].get());
}

TEST(BlockCallTest, UnknownArgumentSuggestsTheClosest) {
  test::Run run(withCaller("  Z = layer(X, vll=vl, W=W1)\n  output Z\n"));
  run.check();
  EXPECT_EQ(run.first(), "14:16: block 'layer' has no input or param 'vll'; "
                         "did you mean 'vl'? (signature: layer(X, vl, W=))");
}

TEST(BlockCallTest, MissingArguments) {
  test::Run run(withCaller("  Z = layer(X, W=W1)\n  output Z\n"));
  run.check();
  EXPECT_EQ(run.first(), "14:7: the call of block 'layer' is missing its "
                         "input 'vl'; its signature is layer(X, vl, W=)");
  test::Run param(withCaller("  Z = layer(X, vl)\n  output Z\n"));
  param.check();
  EXPECT_EQ(param.first(), "14:7: the call of block 'layer' is missing its "
                           "param 'W=...'; its signature is layer(X, vl, W=)");
}

TEST(BlockCallTest, ParamsAreKeywordOnly) {
  test::Run run(withCaller("  Z = layer(X, vl, W1)\n  output Z\n"));
  run.check();
  EXPECT_EQ(run.first(),
            "14:20: block 'layer' takes 2 positional arguments (its inputs), "
            "got 3; its params are given by keyword (signature: layer(X, vl, "
            "W=))");
}

TEST(BlockCallTest, ShapeMismatchNamesTheDeclaredShape) {
  test::Run run(withCaller("  Z = layer(X, vl, W=X)\n"
                           "  V = layer(X, W=W1, vl=X)\n"
                           "  output Z, V, W2\n"));
  run.check();
  ASSERT_EQ(run.numErrors(), 2u) << run.printed;
  // A note points at the callee's declaration.
  EXPECT_EQ(run.errors()[0].message,
            "argument 'W' of block 'layer' must be f32[8, 8] (declared "
            "f32[D, D]), got f32[2, 4, 8]");
  EXPECT_EQ(run.errors()[1].message, "'W' is declared here");
  EXPECT_EQ(run.errors()[2].message,
            "argument 'vl' of block 'layer' must be i32[2] (declared "
            "i32[B]), got f32[2, 4, 8]");
}

TEST(BlockCallTest, RankAndDimMismatch) {
  test::Run run(withCaller("  Z = layer(W1, vl, W=W2)\n  output Z, X\n"));
  run.check();
  EXPECT_EQ(run.first(), "14:13: argument 'X' of block 'layer' must be "
                         "f32[2, 4, 8] (declared f32[B, T, D]), got f32[8, 8]");
}

TEST(BlockCallTest, ResultCount) {
  test::Run run(withCaller("  Z, A = layer(X, vl, W=W1)\n  output Z, A\n"));
  run.check();
  EXPECT_EQ(run.first(),
            "14:6: block 'layer' has one result (its output Y), but 2 names "
            "are bound; bind one name per output: Y = layer(...)");
}

TEST(BlockCallTest, ACallOfSeveralOutputsIsNoOperand) {
  test::Run run("block two {\n"
                "  input A: f32[4]\n"
                "  B = relu(A)\n"
                "  output B, A\n"
                "}\n"
                "block top {\n"
                "  input X: f32[4]\n"
                "  Y = relu(two(X))\n"
                "  output Y\n"
                "}\n");
  run.check();
  EXPECT_EQ(run.first(),
            "8:12: block 'two' has 2 results (its outputs B, A), so it "
            "cannot be used as argument 'x' of 'relu'; bind them first: B, "
            "A = two(...)");
}

TEST(BlockCallTest, CallingItselfIsAnError) {
  test::Run run("block a {\n"
                "  input X: f32[4]\n"
                "  Y = a(X)\n"
                "  output Y\n"
                "}\n");
  run.check();
  EXPECT_EQ(run.numErrors(), 1u) << run.printed;
  EXPECT_EQ(run.first(),
            "3:7: block 'a' calls itself; a block cannot be recursive");
}

TEST(BlockCallTest, ACycleThroughALaterBlockIsAnError) {
  test::Run run("block a {\n"
                "  input X: f32[4]\n"
                "  Y = b(X)\n"
                "  output Y\n"
                "}\n"
                "block b {\n"
                "  input X: f32[4]\n"
                "  Y = a(X)\n"
                "  output Y\n"
                "}\n");
  run.check();
  // Reported once, at the call that closes the cycle; the other call is
  // quiet (its callee failed).
  EXPECT_EQ(run.numErrors(), 1u) << run.printed;
  EXPECT_EQ(run.first(), "8:7: recursive call of block 'a' (b -> a -> b); "
                         "blocks cannot call each other in a cycle");
}

TEST(BlockCallTest, ABlockMayNotHaveAnOpName) {
  test::Run run("block softmax {\n  input X: f32[4]\n  output X\n}\n");
  run.check();
  EXPECT_EQ(run.first(), "1:7: block 'softmax' has the name of an op, so "
                         "calls of it would call the op; rename the block");
}

TEST(BlockCallTest, UnknownNamesSuggestBlocks) {
  test::Run run(withCaller("  Z = layr(X, vl, W=W1)\n  output Z\n"));
  run.check();
  EXPECT_EQ(run.first(), "14:7: unknown op 'layr'; did you mean 'layer'?");
}

TEST(BlockCallTest, ACalleeWithErrorsKeepsItsCallersQuiet) {
  test::Run run("block bad {\n"
                "  input X: f32[4]\n"
                "  Y = add(X, Q)\n"
                "  output Y\n"
                "}\n"
                "block top {\n"
                "  input X: f32[4]\n"
                "  Y = bad(X, nonsense=X)\n"
                "  output Y\n"
                "}\n");
  run.check();
  EXPECT_EQ(run.numErrors(), 1u) << run.printed;
  EXPECT_EQ(run.first(), "3:14: undefined name 'Q'");
}

TEST(BlockCallTest, DimsAreTheCallees) {
  // The caller's N is not the callee's N: shapes are compared as numbers.
  test::Run run("block inner {\n"
                "  dim N = 4\n"
                "  input A: f32[N]\n"
                "  B = relu(A)\n"
                "  output B\n"
                "}\n"
                "block top {\n"
                "  dim N = 2, M = 4\n"
                "  input X: f32[M]\n"
                "  input S: f32[N]\n"
                "  Y = inner(X)\n"
                "  Z = inner(S)\n"
                "  output Y, Z\n"
                "}\n");
  run.check();
  EXPECT_EQ(run.first(), "12:13: argument 'A' of block 'inner' must be "
                         "f32[4] (declared f32[N]), got f32[2]");
}

TEST(BlockCallTest, PositionalAfterKeywordAndGivenTwice) {
  test::Run run(withCaller("  Z = layer(X, W=W1, vl)\n"
                           "  V = layer(X, vl, X=X, W=W1)\n"
                           "  U = layer(X, vl, W=W1, W=W2)\n"
                           "  output Z, V, U\n"));
  run.check();
  ASSERT_GE(run.numErrors(), 3u) << run.printed;
  EXPECT_EQ(run.errors()[0].message,
            "positional argument after keyword argument 'W' in the call of "
            "block 'layer'");
  EXPECT_EQ(run.errors()[1].message,
            "input 'X' of block 'layer' is given both positionally and as a "
            "keyword");
  EXPECT_EQ(run.errors()[3].message,
            "keyword 'W' is given twice in the call of block 'layer'");
}

TEST(BlockCallTest, ArgumentsMustBeTensors) {
  test::Run run(withCaller("  Z = layer(X, vl, W=3)\n  output Z\n"));
  run.check();
  EXPECT_EQ(run.first(),
            "14:22: argument 'W' of block 'layer' must be a tensor, got '3'");
}

class BlockCallGenTest : public ::testing::Test {
protected:
  BlockCallGenTest() {
    mlir::DialectRegistry registry;
    registerAllDialects(registry);
    context.appendDialectRegistry(registry);
  }
  mlir::MLIRContext context;
};

TEST_F(BlockCallGenTest, OneFunctionPerCalleeAndACallPerSite) {
  test::Run run(withCaller("  H = layer(X, vl, W=W1)\n"
                           "  Z = layer(H, vl, W=W2)\n"
                           "  output Z\n"));
  run.check();
  ASSERT_TRUE(run.module) << run.printed;
  for (llvm::StringRef only : {"", "top"}) {
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlirGen(context, *run.module, run.sourceMgr, only);
    ASSERT_TRUE(succeeded(mlir::verify(*module)));
    auto functions = llvm::to_vector(module->getOps<mlir::func::FuncOp>());
    ASSERT_EQ(functions.size(), 2u);
    // The callee first; private when only the caller was asked for.
    EXPECT_EQ(functions[0].getSymName(), "layer");
    EXPECT_EQ(functions[0].isPrivate(), !only.empty());
    EXPECT_TRUE(functions[1].isPublic());
    llvm::SmallVector<mlir::func::CallOp> calls;
    functions[1].walk([&](mlir::func::CallOp call) { calls.push_back(call); });
    ASSERT_EQ(calls.size(), 2u);
    EXPECT_EQ(calls[0].getCallee(), "layer");
    EXPECT_EQ(calls[1].getOperand(0), calls[0].getResult(0));
    EXPECT_EQ(calls[1].getOperand(2), functions[1].getArgument(3));
  }
  // The callee alone.
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlirGen(context, *run.module, run.sourceMgr, "layer");
  EXPECT_EQ(llvm::range_size(module->getOps<mlir::func::FuncOp>()), 1u);
}

TEST_F(BlockCallGenTest, CalleesOfCalleesComeFirst) {
  test::Run run("block top {\n"
                "  input X: f32[4]\n"
                "  Y = mid(X)\n"
                "  Z = leaf(Y)\n"
                "  output Z\n"
                "}\n"
                "block mid {\n"
                "  input A: f32[4]\n"
                "  B = leaf(leaf(A))\n"
                "  output B\n"
                "}\n"
                "block leaf {\n"
                "  input A: f32[4]\n"
                "  B = relu(A)\n"
                "  output B\n"
                "}\n");
  run.check();
  ASSERT_TRUE(run.module) << run.printed;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlirGen(context, *run.module, run.sourceMgr, "top");
  ASSERT_TRUE(succeeded(mlir::verify(*module)));
  llvm::SmallVector<std::string> order;
  for (auto func : module->getOps<mlir::func::FuncOp>())
    order.push_back(func.getSymName().str());
  EXPECT_EQ(order, (llvm::SmallVector<std::string>{"leaf", "mid", "top"}));
}

} // namespace
