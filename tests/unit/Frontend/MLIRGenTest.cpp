//===- MLIRGenTest.cpp - attn IR from checked .attn ASTs ------------------===//

#include "FrontendTestUtil.h"

#include "attnc/Gen/MLIRGen.h"
#include "attnc/InitAttn.h"

#include "attn/IR/AttnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include "gtest/gtest.h"

using namespace attnc;

namespace {

class MLIRGenTest : public ::testing::Test {
protected:
  MLIRGenTest() {
    mlir::DialectRegistry registry;
    registerAllDialects(registry);
    context.appendDialectRegistry(registry);
  }
  mlir::MLIRContext context;
};

TEST_F(MLIRGenTest, OneFunctionPerBlockWithArgumentsInOrder) {
  test::Run run("block first {\n"
                "  input X: f32[2, 4, 8]\n"
                "  input vl: i32[2]\n"
                "  param W: f32[8, 8]\n"
                "  Y = attention(linear(X, W), X, X, valid_lens=vl, "
                "causal=true)\n"
                "  output Y, X\n"
                "}\n"
                "block second {\n"
                "  input ids: i32[3]\n"
                "  param table: f32[10, 4]\n"
                "  E = dropout(embedding(ids, table), p=0.1)\n"
                "  output E\n"
                "}\n");
  run.check();
  ASSERT_TRUE(run.module) << run.printed;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlirGen(context, *run.module, run.sourceMgr);
  ASSERT_TRUE(succeeded(mlir::verify(*module)));

  auto first = module->lookupSymbol<mlir::func::FuncOp>("first");
  ASSERT_TRUE(first);
  mlir::FunctionType type = first.getFunctionType();
  ASSERT_EQ(type.getNumInputs(), 3u);
  EXPECT_TRUE(llvm::isa<mlir::RankedTensorType>(type.getInput(1)));
  EXPECT_TRUE(llvm::cast<mlir::RankedTensorType>(type.getInput(1))
                  .getElementType()
                  .isInteger(32));
  ASSERT_EQ(type.getNumResults(), 2u);

  mlir::attn::AttentionOp attention;
  first.walk([&](mlir::attn::AttentionOp op) { attention = op; });
  ASSERT_TRUE(attention);
  EXPECT_TRUE(attention.getCausal());
  EXPECT_TRUE(attention.getValidLens());
  auto loc = llvm::dyn_cast<mlir::FileLineColLoc>(attention.getLoc());
  ASSERT_TRUE(loc);
  EXPECT_EQ(loc.getFilename().getValue(), "test.attn");
  EXPECT_EQ(loc.getLine(), 5u);
  EXPECT_EQ(loc.getColumn(), 7u);

  EXPECT_TRUE(module->lookupSymbol<mlir::func::FuncOp>("second"));
}

TEST_F(MLIRGenTest, TwoNamesBindTheTwoResults) {
  test::Run run("block b {\n"
                "  input X: f32[2, 4, 8]\n"
                "  Y, A = attention(X, X, X, return_weights=true)\n"
                "  S = softmax(A)\n"
                "  output S, Y\n"
                "}\n");
  run.check();
  ASSERT_TRUE(run.module) << run.printed;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlirGen(context, *run.module, run.sourceMgr);
  ASSERT_TRUE(succeeded(mlir::verify(*module)));
  auto func = module->lookupSymbol<mlir::func::FuncOp>("b");
  mlir::attn::AttentionOp attention;
  func.walk([&](mlir::attn::AttentionOp op) { attention = op; });
  ASSERT_TRUE(attention);
  EXPECT_TRUE(attention.getReturnWeights());
  mlir::Value weights = attention.getAttentionWeights();
  ASSERT_TRUE(weights);
  // A feeds the softmax, Y is the second output.
  ASSERT_TRUE(weights.hasOneUse());
  EXPECT_TRUE(llvm::isa<mlir::attn::SoftmaxOp>(*weights.getUsers().begin()));
  auto ret =
      llvm::cast<mlir::func::ReturnOp>(func.getBody().front().getTerminator());
  EXPECT_EQ(ret.getOperand(1), attention.getResult());
}

TEST_F(MLIRGenTest, GeluCarriesApproximate) {
  test::Run run("block b {\n"
                "  input X: f32[3, 5]\n"
                "  Y = gelu(X)\n"
                "  Z = gelu(Y, approximate=true)\n"
                "  output Z\n"
                "}\n");
  run.check();
  ASSERT_TRUE(run.module) << run.printed;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlirGen(context, *run.module, run.sourceMgr);
  ASSERT_TRUE(succeeded(mlir::verify(*module)));
  llvm::SmallVector<mlir::attn::GeluOp> gelus;
  module->walk([&](mlir::attn::GeluOp op) { gelus.push_back(op); });
  ASSERT_EQ(gelus.size(), 2u);
  EXPECT_FALSE(gelus[0].getApproximate());
  EXPECT_TRUE(gelus[1].getApproximate());
  EXPECT_EQ(gelus[1].getX(), gelus[0].getResult());
  EXPECT_EQ(gelus[1].getType(), gelus[0].getX().getType());
}

TEST_F(MLIRGenTest, OnlyTheSelectedBlock) {
  test::Run run("block a {\n input X: f32[2]\n output X\n}\n"
                "block b {\n input X: f32[2]\n Y = relu(X)\n output Y\n}\n");
  run.check();
  ASSERT_TRUE(run.module) << run.printed;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlirGen(context, *run.module, run.sourceMgr, "b");
  EXPECT_FALSE(module->lookupSymbol("a"));
  EXPECT_TRUE(module->lookupSymbol("b"));
}

} // namespace
