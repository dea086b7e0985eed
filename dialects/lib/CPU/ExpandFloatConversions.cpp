//===- ExpandFloatConversions.cpp - f32 <-> bf16/f16 without libcalls -----===//
//
// attn-expand-float-conversions (semantics in Passes.td). bf16 through
// upstream's arith-expand patterns; f16 here, as the branch-free
// conversions of Giesen's half <-> float (round to nearest even), built from
// arith ops that work on scalars and vectors alike.
//
//===----------------------------------------------------------------------===//

#include "attn/CPU/Passes.h"
#include "attn/Target/CpuTarget.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cstring>

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNEXPANDFLOATCONVERSIONS
#include "attn/CPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

/// Integer and float constants of a scalar or vector shape like `like`'s.
struct Constants {
  OpBuilder &b;
  Location loc;
  Type like;

  Type typeOf(Type element) const {
    if (auto vector = dyn_cast<VectorType>(like))
      return vector.clone(element);
    return element;
  }
  Value i32(int64_t value) const {
    Type type = typeOf(b.getI32Type());
    return arith::ConstantOp::create(
        b, loc, type,
        isa<VectorType>(type)
            ? TypedAttr(DenseElementsAttr::get(
                  cast<ShapedType>(type),
                  b.getI32IntegerAttr(int32_t(value)).getValue()))
            : TypedAttr(b.getI32IntegerAttr(int32_t(value))));
  }
  Value f32Bits(uint32_t bits) const {
    Type type = typeOf(b.getF32Type());
    float value;
    std::memcpy(&value, &bits, sizeof(value));
    FloatAttr scalar = b.getF32FloatAttr(value);
    return arith::ConstantOp::create(
        b, loc, type,
        isa<VectorType>(type) ? TypedAttr(DenseElementsAttr::get(
                                    cast<ShapedType>(type), scalar.getValue()))
                              : TypedAttr(scalar));
  }
};

bool isF16ToF32(Type from, Type to) {
  return getElementTypeOrSelf(from).isF16() && getElementTypeOrSelf(to).isF32();
}

/// f16 -> f32, exactly: normal numbers rebias the exponent, subnormals are
/// their mantissa times 2^-24 (a float multiplication, exact), inf/NaN keep
/// their payload in the top mantissa bits.
struct ExpandExtF16 : OpRewritePattern<arith::ExtFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::ExtFOp op,
                                PatternRewriter &rewriter) const override {
    if (!isF16ToF32(op.getIn().getType(), op.getType()))
      return failure();
    Location loc = op.getLoc();
    Constants c{rewriter, loc, op.getType()};
    Type i16 = c.typeOf(rewriter.getI16Type()),
         i32 = c.typeOf(rewriter.getI32Type());
    Value h = arith::ExtUIOp::create(
        rewriter, loc, i32,
        arith::BitcastOp::create(rewriter, loc, i16, op.getIn()));
    auto band = [&](Value x, int64_t m) {
      return arith::AndIOp::create(rewriter, loc, x, c.i32(m));
    };
    auto shl = [&](Value x, int64_t n) {
      return arith::ShLIOp::create(rewriter, loc, x, c.i32(n));
    };
    Value sign = shl(band(h, 0x8000), 16);
    Value exponent = band(h, 0x7c00);
    Value mantissa = band(h, 0x03ff);
    // Normal: (exponent + (127 - 15) << 10) << 13 | mantissa << 13.
    Value normal = shl(arith::AddIOp::create(rewriter, loc, band(h, 0x7fff),
                                             c.i32((127 - 15) << 10)),
                       13);
    Value infNan = arith::OrIOp::create(rewriter, loc, c.i32(0x7f800000),
                                        shl(mantissa, 13));
    Value subnormal = arith::BitcastOp::create(
        rewriter, loc, i32,
        arith::MulFOp::create(
            rewriter, loc,
            arith::UIToFPOp::create(rewriter, loc,
                                    c.typeOf(rewriter.getF32Type()), mantissa),
            c.f32Bits(0x33800000))); // 2^-24
    auto eq = [&](Value x, int64_t v) {
      return arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq, x,
                                   c.i32(v));
    };
    Value magnitude = arith::SelectOp::create(
        rewriter, loc, eq(exponent, 0), subnormal,
        arith::SelectOp::create(rewriter, loc, eq(exponent, 0x7c00), infNan,
                                normal));
    Value bits = arith::OrIOp::create(rewriter, loc, sign, magnitude);
    rewriter.replaceOpWithNewOp<arith::BitcastOp>(op, op.getType(), bits);
    return success();
  }
};

/// f32 -> f16, rounded to nearest even: magnitudes at or past 65520 (which
/// round up past the largest half) become inf, NaN a quiet NaN (0x7e00);
/// subnormal results come from adding a magic number in float arithmetic,
/// whose rounding is the hardware's round to nearest even; normal ones by
/// rebiasing, with the rounding bias 0xfff plus the kept mantissa's lowest
/// bit.
struct ExpandTruncF16 : OpRewritePattern<arith::TruncFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::TruncFOp op,
                                PatternRewriter &rewriter) const override {
    if (!getElementTypeOrSelf(op.getType()).isF16() ||
        !getElementTypeOrSelf(op.getIn().getType()).isF32() ||
        op.getRoundingmodeAttr())
      return failure();
    Location loc = op.getLoc();
    Constants c{rewriter, loc, op.getIn().getType()};
    Type i32 = c.typeOf(rewriter.getI32Type()),
         f32 = c.typeOf(rewriter.getF32Type());
    Type i16 = c.typeOf(rewriter.getI16Type());
    Value bits = arith::BitcastOp::create(rewriter, loc, i32, op.getIn());
    Value sign = arith::AndIOp::create(rewriter, loc, bits, c.i32(0x80000000));
    Value f = arith::XOrIOp::create(rewriter, loc, bits, sign);
    auto cmp = [&](arith::CmpIPredicate p, Value x, int64_t v) {
      return arith::CmpIOp::create(rewriter, loc, p, x, c.i32(v));
    };
    constexpr int64_t f32Inf = 255 << 23, f16Max = (127 + 16) << 23;
    constexpr int64_t denormMagic = ((127 - 15) + (23 - 10) + 1) << 23;
    Value overflow = arith::SelectOp::create(
        rewriter, loc, cmp(arith::CmpIPredicate::ugt, f, f32Inf), c.i32(0x7e00),
        c.i32(0x7c00));
    Value magic = c.i32(denormMagic);
    Value sum = arith::AddFOp::create(
        rewriter, loc, arith::BitcastOp::create(rewriter, loc, f32, f),
        arith::BitcastOp::create(rewriter, loc, f32, magic));
    Value subnormal = arith::SubIOp::create(
        rewriter, loc, arith::BitcastOp::create(rewriter, loc, i32, sum),
        magic);
    Value odd = arith::AndIOp::create(
        rewriter, loc, arith::ShRUIOp::create(rewriter, loc, f, c.i32(13)),
        c.i32(1));
    Value rebiased = arith::AddIOp::create(
        rewriter, loc, f, c.i32(-(int64_t(127 - 15) << 23) + 0xfff));
    Value normal = arith::ShRUIOp::create(
        rewriter, loc, arith::AddIOp::create(rewriter, loc, rebiased, odd),
        c.i32(13));
    Value magnitude = arith::SelectOp::create(
        rewriter, loc, cmp(arith::CmpIPredicate::uge, f, f16Max), overflow,
        arith::SelectOp::create(rewriter, loc,
                                cmp(arith::CmpIPredicate::ult, f, 113 << 23),
                                subnormal, normal));
    Value half = arith::OrIOp::create(
        rewriter, loc, magnitude,
        arith::ShRUIOp::create(rewriter, loc, sign, c.i32(16)));
    rewriter.replaceOpWithNewOp<arith::BitcastOp>(
        op, op.getType(), arith::TruncIOp::create(rewriter, loc, i16, half));
    return success();
  }
};

struct AttnExpandFloatConversionsPass
    : mlir::attn::impl::AttnExpandFloatConversionsBase<
          AttnExpandFloatConversionsPass> {
  void runOnOperation() override {
    FailureOr<attn::CpuTargetDescription> target =
        attn::cpuTargetOf(getOperation());
    if (failed(target))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    arith::populateExpandBFloat16Patterns(patterns);
    // AArch64 converts f16 in hardware (fcvt); x86 with F16C does too.
    if (target->arch == "x86_64" && !target->hasFeature("f16c"))
      patterns.add<ExpandExtF16, ExpandTruncF16>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
