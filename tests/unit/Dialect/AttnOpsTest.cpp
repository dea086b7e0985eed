//===- AttnOpsTest.cpp - Building and verifying attn ops through C++ ------===//

#include "attn/IR/AttnOps.h"
#include "attn/IR/AttnDialect.h"
#include "attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include "gtest/gtest.h"

#include <string>
#include <vector>

using namespace mlir;
using namespace mlir::attn;

namespace {

/// A function whose arguments have the given types, with a builder inside.
class AttnOpsTest : public ::testing::Test {
protected:
  AttnOpsTest() : builder(&context) {
    context.loadDialect<AttnDialect, func::FuncDialect, arith::ArithDialect,
                        linalg::LinalgDialect, tensor::TensorDialect>();
    module = ModuleOp::create(builder.getUnknownLoc());
    builder.setInsertionPointToEnd(module->getBody());
  }

  RankedTensorType f32(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, builder.getF32Type());
  }
  RankedTensorType i32(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, builder.getI32Type());
  }

  /// Starts `func.func @f(types...)` and returns its arguments.
  SmallVector<Value> beginFunction(ArrayRef<Type> types) {
    auto fn = func::FuncOp::create(builder, builder.getUnknownLoc(), "f",
                                   builder.getFunctionType(types, {}));
    Block *body = fn.addEntryBlock();
    builder.setInsertionPointToEnd(body);
    return SmallVector<Value>(body->getArguments());
  }

  /// Verifies `op` and returns the diagnostics it produced.
  std::vector<std::string> verifyMessages(Operation *op) {
    std::vector<std::string> messages;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      messages.push_back(diag.str());
      return success();
    });
    (void)verify(op);
    return messages;
  }

  MLIRContext context;
  OpBuilder builder;
  OwningOpRef<ModuleOp> module;
};

TEST_F(AttnOpsTest, BuilderInfersTheMultiheadAttentionResultType) {
  auto args = beginFunction({f32({2, 4, 100}), f32({100, 100}), i32({2})});
  auto op = MultiheadAttentionOp::create(
      builder, builder.getUnknownLoc(), args[0], args[0], args[0], args[1],
      args[1], args[1], args[1], args[2], Value(), Value(), Value(), Value(),
      Value(), Value(), Value(), builder.getI64IntegerAttr(5), IntegerAttr(),
      UnitAttr(), IntegerAttr(), UnitAttr(), FloatAttr(), UnitAttr());
  EXPECT_EQ(op.getResult().getType(), f32({2, 4, 100}));
  EXPECT_FALSE(op.getAttentionWeights());
  func::ReturnOp::create(builder, builder.getUnknownLoc());
  EXPECT_TRUE(succeeded(verify(*module)));
}

TEST_F(AttnOpsTest, BuilderInfersTheAttentionWeightsType) {
  auto args =
      beginFunction({f32({2, 4, 100}), f32({100, 100}), f32({2, 6, 100})});
  auto op = MultiheadAttentionOp::create(
      builder, builder.getUnknownLoc(), args[0], args[2], args[2], args[1],
      args[1], args[1], args[1], Value(), Value(), Value(), Value(), Value(),
      Value(), Value(), Value(), builder.getI64IntegerAttr(5), IntegerAttr(),
      UnitAttr(), IntegerAttr(), UnitAttr(), FloatAttr(),
      builder.getUnitAttr());
  ASSERT_TRUE(op.getAttentionWeights());
  // [B * heads, Tq, Tk]
  EXPECT_EQ(op.getAttentionWeights().getType(), f32({10, 4, 6}));
  auto attention =
      AttentionOp::create(builder, builder.getUnknownLoc(), args[2], args[0],
                          args[0], Value(), UnitAttr(), builder.getUnitAttr());
  EXPECT_EQ(attention.getAttentionWeights().getType(), f32({2, 6, 4}));
  func::ReturnOp::create(builder, builder.getUnknownLoc());
  EXPECT_TRUE(succeeded(verify(*module)));
}

TEST_F(AttnOpsTest, BuilderInfersTheGeluResultType) {
  auto args = beginFunction({f32({3, 1, 7}), f32({})});
  auto exact = GeluOp::create(builder, builder.getUnknownLoc(), args[0]);
  EXPECT_EQ(exact.getType(), f32({3, 1, 7}));
  EXPECT_FALSE(exact.getApproximate());
  auto tanhForm = GeluOp::create(builder, builder.getUnknownLoc(), args[1],
                                 builder.getUnitAttr());
  EXPECT_EQ(tanhForm.getType(), f32({}));
  EXPECT_TRUE(tanhForm.getApproximate());
  func::ReturnOp::create(builder, builder.getUnknownLoc());
  EXPECT_TRUE(succeeded(verify(*module)));
}

TEST_F(AttnOpsTest, VerifierReportsHeadsThatDoNotDivide) {
  auto args = beginFunction({f32({2, 4, 100}), f32({100, 100})});
  // Built with an explicit result type: the inferring builder would refuse.
  auto op = MultiheadAttentionOp::create(
      builder, builder.getUnknownLoc(), f32({2, 4, 100}), TypeRange(), args[0],
      args[0], args[0], args[1], args[1], args[1], args[1], Value(), Value(),
      Value(), Value(), Value(), Value(), Value(), Value(),
      builder.getI64IntegerAttr(7), IntegerAttr(), UnitAttr(), IntegerAttr(),
      UnitAttr(), FloatAttr(), UnitAttr());
  std::vector<std::string> messages = verifyMessages(op);
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0],
            "'attn.multihead_attention' op heads=7 does not divide the model "
            "dimension 100 (hidden size of 'w_q')");
}

TEST_F(AttnOpsTest, VerifierRejectsAWrongResultType) {
  auto args = beginFunction({f32({2, 4, 100}), f32({50, 100})});
  auto op = LinearOp::create(builder, builder.getUnknownLoc(), f32({2, 4, 51}),
                             args[0], args[1], Value());
  std::vector<std::string> messages = verifyMessages(op);
  // MLIR follows this with "failed to infer returned types".
  ASSERT_FALSE(messages.empty());
  EXPECT_NE(messages[0].find("inferred type(s) 'tensor<2x4x50xf32>' are "
                             "incompatible with return type(s)"),
            std::string::npos)
      << messages[0];
}

TEST_F(AttnOpsTest, InferenceFailsCleanlyOnBadOperands) {
  auto args = beginFunction({f32({2, 4, 99})});
  SmallVector<Type> inferred;
  PositionalEncodingOp::Adaptor adaptor(ValueRange(args),
                                        builder.getDictionaryAttr({}));
  std::vector<std::string> messages;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    messages.push_back(diag.str());
    return success();
  });
  EXPECT_TRUE(failed(PositionalEncodingOp::inferReturnTypes(
      &context, builder.getUnknownLoc(), adaptor, inferred)));
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0], "'attn.positional_encoding' op positional encoding "
                         "needs an even model dimension D, got 99 "
                         "(f32[2, 4, 99])");
}

TEST_F(AttnOpsTest, DropoutFoldsToItsInput) {
  auto args = beginFunction({f32({3, 4})});
  auto op = DropoutOp::create(builder, builder.getUnknownLoc(), args[0],
                              builder.getF32FloatAttr(0.5f));
  SmallVector<OpFoldResult> folded;
  ASSERT_TRUE(succeeded(op->fold(folded)));
  ASSERT_EQ(folded.size(), 1u);
  EXPECT_EQ(dyn_cast<Value>(folded[0]), args[0]);
}

TEST_F(AttnOpsTest, DecomposeLeavesOnlyPrimitives) {
  auto args = beginFunction({f32({2, 4, 8}), f32({8, 8}), f32({8}),
                             f32({16, 8}), f32({16}), f32({8, 16})});
  Location loc = builder.getUnknownLoc();
  Value attention =
      MultiheadAttentionOp::create(
          builder, loc, args[0], args[0], args[0], args[1], args[1], args[1],
          args[1], Value(), Value(), Value(), Value(), Value(), Value(),
          Value(), Value(), builder.getI64IntegerAttr(2), IntegerAttr(),
          builder.getUnitAttr(), IntegerAttr(), UnitAttr(), FloatAttr(),
          UnitAttr())
          .getResult();
  Value normed = AddNormOp::create(builder, loc, args[0], attention, args[2],
                                   args[2], builder.getF32FloatAttr(1e-5f));
  FfnOp::create(builder, loc, normed, args[3], args[4], args[5], args[2]);
  func::ReturnOp::create(builder, loc);
  ASSERT_TRUE(succeeded(verify(*module)));

  PassManager pm(&context);
  pm.addPass(createAttnDecompose());
  ASSERT_TRUE(succeeded(pm.run(*module)));
  ASSERT_TRUE(succeeded(verify(*module)));
  module->walk([](Operation *op) {
    EXPECT_FALSE((isa<MultiheadAttentionOp, AttentionOp, AddNormOp, FfnOp>(op)))
        << "composite op left: " << op->getName().getStringRef().str();
  });
}

} // namespace
