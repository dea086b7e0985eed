//===- ApproximateMath.cpp - Polynomial math, no libm ---------------------===//
//
// math.exp (softmax), math.erf and math.tanh (gelu) have no x86 or NEON
// instruction: LLVM would call expf/erff/tanhf from libm for every lane.
// Upstream's polynomial approximations keep them in vector registers and keep
// kernels free of libm, so an object links with only a C compiler. (Their
// error, measured against double-precision erf/tanh on [-20, 20] when gelu
// was added: erf 2.4e-7, tanh 2.7e-7 absolute.)
//
//===----------------------------------------------------------------------===//

#include "attn/CPU/Passes.h"
#include "attn/Target/CpuTarget.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNAPPROXIMATEMATH
#include "attn/CPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

/// vector.fma as a multiply and an add, for targets without FMA (LLVM would
/// call libm's exact fmaf for every lane).
struct SplitVectorFma : OpRewritePattern<vector::FMAOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::FMAOp op,
                                PatternRewriter &rewriter) const override {
    Value product =
        arith::MulFOp::create(rewriter, op.getLoc(), op.getLhs(), op.getRhs());
    rewriter.replaceOpWithNewOp<arith::AddFOp>(op, product, op.getAcc());
    return success();
  }
};

/// math.floor on f32 without a rounding instruction: t = trunc(x) through
/// a conversion to i32, minus 1 where t > x; |x| >= 2^23 (integral already),
/// infinities and NaN are x itself.
struct FloorThroughConversion : OpRewritePattern<math::FloorOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::FloorOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!getElementTypeOrSelf(type).isF32())
      return failure();
    Location loc = op.getLoc();
    Type intType = rewriter.getI32Type();
    if (auto vector = dyn_cast<VectorType>(type))
      intType = vector.clone(rewriter.getI32Type());
    auto constant = [&](float value) -> Value {
      auto attr = rewriter.getF32FloatAttr(value);
      if (auto shaped = dyn_cast<ShapedType>(type))
        return arith::ConstantOp::create(
            rewriter, loc, DenseElementsAttr::get(shaped, attr.getValue()));
      return arith::ConstantOp::create(rewriter, loc, attr);
    };
    Value x = op.getOperand();
    Value truncated = arith::SIToFPOp::create(
        rewriter, loc, type,
        arith::FPToSIOp::create(rewriter, loc, intType, x));
    Value above = arith::CmpFOp::create(
        rewriter, loc, arith::CmpFPredicate::OGT, truncated, x);
    Value floor = arith::SelectOp::create(
        rewriter, loc, above,
        arith::SubFOp::create(rewriter, loc, truncated, constant(1.0f)),
        truncated);
    Value small = arith::CmpFOp::create(
        rewriter, loc, arith::CmpFPredicate::OLT,
        math::AbsFOp::create(rewriter, loc, x), constant(8388608.0f));
    rewriter.replaceOpWithNewOp<arith::SelectOp>(op, small, floor, x);
    return success();
  }
};

struct AttnApproximateMathPass
    : mlir::attn::impl::AttnApproximateMathBase<AttnApproximateMathPass> {
  void runOnOperation() override {
    FailureOr<attn::CpuTargetDescription> target =
        attn::cpuTargetOf(getOperation());
    if (failed(target))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    auto approximated = [](StringRef name) {
      return name == math::ExpOp::getOperationName() ||
             name == math::ErfOp::getOperationName() ||
             name == math::TanhOp::getOperationName();
    };
    populateMathF32ExpansionPatterns(patterns, approximated);
    populateMathPolynomialApproximationPatterns(patterns, approximated);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    // What the target has no instruction for would become a libm call per
    // lane (and a -lm at link time): FMA without FMA units, floor without
    // SSE4.1's roundps on x86.
    SmallVector<StringRef> expanded;
    RewritePatternSet lowering(&getContext());
    if (!target->fma) {
      expanded.push_back("fma");
      lowering.add<SplitVectorFma>(&getContext());
    }
    if (target->arch == "x86_64" && !target->hasFeature("sse4.1"))
      lowering.add<FloorThroughConversion>(&getContext());
    if (expanded.empty() && lowering.getNativePatterns().empty())
      return;
    math::populateExpansionPatterns(lowering, expanded);
    if (failed(applyPatternsGreedily(getOperation(), std::move(lowering))))
      signalPassFailure();
  }
};

} // namespace
