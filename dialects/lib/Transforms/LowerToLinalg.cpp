//===- LowerToLinalg.cpp - Primitive attn ops to linalg on tensors --------===//
//
// Lowers every primitive attn op to linalg/tensor/arith/math ops on tensors,
// with the exact semantics of docs/spec.md §2 (D2L's -1e6 replacement, biased
// variance, the float32 positional-encoding table). Composite ops must have
// been decomposed first (attn-decompose).
//
//===----------------------------------------------------------------------===//

#include "attn/Attention/SoftmaxExp.h"
#include "attn/IR/AttentionMask.h"
#include "attn/IR/AttnOps.h"
#include "attn/IR/AttnTypes.h"
#include "attn/IR/PositionalEncoding.h"
#include "attn/Target/KernelAbi.h"
#include "attn/Target/KernelStatus.h"
#include "attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNLOWERTOLINALG
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;
using utils::IteratorType;

namespace {

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

Value emptyLike(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                Type element) {
  return tensor::EmptyOp::create(b, loc, shape, element);
}

/// The type every op computes in (kComputeType, the element-type table):
/// statistics, tables and scalar constants, whatever the tensors' element
/// types, which come from the operands.
Type computeType(OpBuilder &b) { return attn::computeType(b.getContext()); }

Value computeConstant(OpBuilder &b, Location loc, float value) {
  return arith::ConstantOp::create(b, loc,
                                   b.getFloatAttr(computeType(b), value));
}

/// A fresh zero tensor of `element`s, for an accumulator. Not a
/// tensor.empty: CSE would merge identical fills, and the GEMMs
/// accumulating into one shared zero tensor then each got a copy of it (a
/// full extra buffer and a pass over memory per GEMM).
Value zeroFilled(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                 Type element) {
  Value empty = bufferization::AllocTensorOp::create(
      b, loc, RankedTensorType::get(shape, element), ValueRange());
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(element));
  return linalg::FillOp::create(b, loc, zero, empty).getResult(0);
}

/// A linalg.generic over the iteration space of `result` (all parallel)
/// whose inputs are read through `inputMaps`; `body` computes one element.
Value elementwise(OpBuilder &b, Location loc, RankedTensorType result,
                  ValueRange inputs, ArrayRef<AffineMap> inputMaps,
                  function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  unsigned rank = result.getRank();
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(b.getMultiDimIdentityMap(rank));
  SmallVector<IteratorType> iterators(rank, IteratorType::parallel);
  Value init = emptyLike(b, loc, result.getShape(), result.getElementType());
  return linalg::GenericOp::create(
             b, loc, TypeRange{result}, inputs, ValueRange{init}, maps,
             iterators,
             [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
               Value value = body(nested, nestedLoc, args.drop_back());
               linalg::YieldOp::create(nested, nestedLoc, value);
             })
      .getResult(0);
}

/// Elementwise over inputs of the result's own shape.
Value elementwiseSameShape(
    OpBuilder &b, Location loc, RankedTensorType result, ValueRange inputs,
    function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  SmallVector<AffineMap> maps(inputs.size(),
                              b.getMultiDimIdentityMap(result.getRank()));
  return elementwise(b, loc, result, inputs, maps, body);
}

/// Reduces `input` over its last axis: out[...] = combine(out[...], f(x)),
/// starting from `initValue`. `extra` are operands of the reduced shape that
/// `f` also reads (e.g. the row maximum).
Value reduceLastAxis(
    OpBuilder &b, Location loc, Value input, float initValue, ValueRange extra,
    function_ref<Value(OpBuilder &, Location, ValueRange, Value)> combine) {
  RankedTensorType type = tensorType(input);
  unsigned rank = type.getRank();
  AffineMap identity = b.getMultiDimIdentityMap(rank);
  AffineMap reduced = identity.dropResult(rank - 1);
  SmallVector<AffineMap> maps = {identity};
  maps.append(extra.size(), reduced);
  maps.push_back(reduced);
  SmallVector<IteratorType> iterators(rank, IteratorType::parallel);
  iterators.back() = IteratorType::reduction;
  Value init = emptyLike(b, loc, type.getShape().drop_back(), computeType(b));
  init =
      linalg::FillOp::create(b, loc, computeConstant(b, loc, initValue), init)
          .getResult(0);
  SmallVector<Value> inputs = {input};
  inputs.append(extra.begin(), extra.end());
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps,
             iterators,
             [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
               Value acc = args.back();
               Value value = combine(nested, nestedLoc, args.drop_back(), acc);
               linalg::YieldOp::create(nested, nestedLoc, value);
             })
      .getResult(0);
}

/// (d0, ..., dn) -> (dn): a [D] operand (gamma, beta) read along the last
/// axis of a rank-`rank` iteration space.
AffineMap lastAxisMap(OpBuilder &b, unsigned rank) {
  return AffineMap::get(rank, 0, b.getAffineDimExpr(rank - 1), b.getContext());
}

/// softmax over the last axis, max-subtracted like torch:
/// exp(x - max) / sum(exp(x - max)).
Value softmaxLastAxis(OpBuilder &b, Location loc, Value x) {
  RankedTensorType type = tensorType(x);
  unsigned rank = type.getRank();
  Value rowMax = reduceLastAxis(
      b, loc, x, -INFINITY, {},
      [](OpBuilder &b, Location loc, ValueRange args, Value acc) -> Value {
        return arith::MaximumFOp::create(b, loc, args[0], acc);
      });
  AffineMap identity = b.getMultiDimIdentityMap(rank);
  AffineMap reduced = identity.dropResult(rank - 1);
  Value shifted =
      elementwise(b, loc, type, {x, rowMax}, {identity, reduced},
                  [](OpBuilder &b, Location loc, ValueRange args) -> Value {
                    Value diff =
                        arith::SubFOp::create(b, loc, args[0], args[1]);
                    return softmaxExp(b, loc, diff);
                  });
  Value rowSum = reduceLastAxis(
      b, loc, shifted, 0.0f, {},
      [](OpBuilder &b, Location loc, ValueRange args, Value acc) -> Value {
        return arith::AddFOp::create(b, loc, args[0], acc);
      });
  return elementwise(b, loc, type, {shifted, rowSum}, {identity, reduced},
                     [](OpBuilder &b, Location loc, ValueRange args) -> Value {
                       return arith::DivFOp::create(b, loc, args[0], args[1]);
                     });
}

/// x @ w^T + b over the last axis of x (torch nn.Linear).
struct LowerLinear : OpRewritePattern<LinearOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LinearOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType xType = tensorType(op.getX());
    RankedTensorType resultType = op.getType();
    int64_t in = xType.getShape().back(), out = resultType.getShape().back();
    int64_t rows = xType.getNumElements() / in;
    // View x as a matrix [rows, in]; the result as [rows, out].
    Value x = op.getX();
    SmallVector<ReassociationIndices> groups;
    if (xType.getRank() == 1) {
      groups = {{0, 1}};
      x = tensor::ExpandShapeOp::create(
          rewriter, loc, RankedTensorType::get({1, in}, xType.getElementType()),
          x, groups);
    } else {
      ReassociationIndices leading;
      for (int64_t i = 0; i + 1 < xType.getRank(); ++i)
        leading.push_back(i);
      groups = {leading, {xType.getRank() - 1}};
      x = tensor::CollapseShapeOp::create(rewriter, loc, x, groups);
    }
    // w is [out, in]; the matmul reads it as [in, out].
    Value wT = linalg::TransposeOp::create(
                   rewriter, loc, op.getW(),
                   emptyLike(rewriter, loc, {in, out},
                             tensorType(op.getW()).getElementType()),
                   ArrayRef<int64_t>{1, 0})
                   .getResult()[0];
    // Start from the bias broadcast over rows (or zeros) and accumulate.
    // The accumulator is made in the result's shape and viewed as a matrix:
    // the result is then that buffer itself, which a kernel output can be
    // (no copy into the output argument).
    ArrayRef<int64_t> resultShape = resultType.getShape();
    Value init;
    if (Value bias = op.getB()) {
      Value empty =
          emptyLike(rewriter, loc, resultShape, resultType.getElementType());
      SmallVector<int64_t> leading;
      for (int64_t i = 0; i + 1 < resultType.getRank(); ++i)
        leading.push_back(i);
      init = linalg::BroadcastOp::create(rewriter, loc, bias, empty, leading)
                 .getResult()[0];
    } else {
      init =
          zeroFilled(rewriter, loc, resultShape, resultType.getElementType());
    }
    auto matrixType =
        RankedTensorType::get({rows, out}, resultType.getElementType());
    init = xType.getRank() == 1
               ? Value(tensor::ExpandShapeOp::create(rewriter, loc, matrixType,
                                                     init, groups))
               : Value(tensor::CollapseShapeOp::create(rewriter, loc, init,
                                                       groups));
    Value product = linalg::MatmulOp::create(rewriter, loc, ValueRange{x, wT},
                                             ValueRange{init})
                        .getResult(0);
    // Back to x's leading dims (a 1-D x was a single row).
    if (xType.getRank() == 1)
      rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(op, resultType,
                                                           product, groups);
    else
      rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(op, resultType,
                                                         product, groups);
    return success();
  }
};

/// Batched a @ b (or a @ b^T), torch.bmm.
struct LowerMatmul : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatmulOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value rhs = op.getB();
    if (op.getTransposeB()) {
      ArrayRef<int64_t> s = tensorType(rhs).getShape();
      rhs = linalg::TransposeOp::create(
                rewriter, loc, rhs,
                emptyLike(rewriter, loc, {s[0], s[2], s[1]},
                          tensorType(rhs).getElementType()),
                ArrayRef<int64_t>{0, 2, 1})
                .getResult()[0];
    }
    Value init = zeroFilled(rewriter, loc, op.getType().getShape(),
                            op.getType().getElementType());
    rewriter.replaceOp(
        op, linalg::BatchMatmulOp::create(
                rewriter, loc, ValueRange{op.getA(), rhs}, ValueRange{init})
                .getResult(0));
    return success();
  }
};

struct LowerScale : OpRewritePattern<ScaleOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScaleOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value factor = arith::ConstantOp::create(rewriter, loc, op.getFactorAttr());
    rewriter.replaceOp(
        op, elementwiseSameShape(
                rewriter, loc, op.getType(), {op.getX()},
                [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
                  return arith::MulFOp::create(b, loc, args[0], factor);
                }));
    return success();
  }
};

/// An operand of a broadcasting elementwise op (NumPy rules, checked by the
/// verifier) as a generic's input: its stretched size-1 axes dropped
/// (a rank-reducing slice, a view after bufferization) and a map that reads
/// it from the result's iteration space, skipping the axes it lacks.
std::pair<Value, AffineMap> broadcastInput(OpBuilder &b, Location loc,
                                           Value operand,
                                           RankedTensorType result) {
  RankedTensorType type = tensorType(operand);
  int64_t rank = result.getRank(), offset = rank - type.getRank();
  SmallVector<AffineExpr> reads;
  SmallVector<int64_t> kept;
  for (int64_t axis = 0; axis < type.getRank(); ++axis) {
    int64_t size = type.getDimSize(axis);
    if (size == 1 && result.getDimSize(axis + offset) != 1)
      continue;
    reads.push_back(b.getAffineDimExpr(axis + offset));
    kept.push_back(size);
  }
  AffineMap map = AffineMap::get(rank, 0, reads, b.getContext());
  if (static_cast<int64_t>(kept.size()) == type.getRank())
    return {operand, map};
  int64_t n = type.getRank();
  SmallVector<OpFoldResult> offsets(n, b.getIndexAttr(0)),
      strides(n, b.getIndexAttr(1)), sizes;
  for (int64_t size : type.getShape())
    sizes.push_back(b.getIndexAttr(size));
  auto reduced = RankedTensorType::get(kept, type.getElementType());
  Value slice = tensor::ExtractSliceOp::create(b, loc, reduced, operand,
                                               offsets, sizes, strides);
  return {slice, map};
}

/// attn.add, attn.mul, attn.sub: `combine` of two broadcast operands.
template <typename OpT, typename ArithOpT>
struct LowerBroadcastBinary : OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpT op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType result = op.getType();
    auto [a, aMap] = broadcastInput(rewriter, loc, op.getA(), result);
    auto [b, bMap] = broadcastInput(rewriter, loc, op.getB(), result);
    rewriter.replaceOp(
        op,
        elementwise(rewriter, loc, result, {a, b}, {aMap, bMap},
                    [](OpBuilder &b, Location loc, ValueRange args) -> Value {
                      return ArithOpT::create(b, loc, args[0], args[1]);
                    }));
    return success();
  }
};

using LowerAdd = LowerBroadcastBinary<AddOp, arith::AddFOp>;
using LowerMul = LowerBroadcastBinary<MulOp, arith::MulFOp>;
using LowerSub = LowerBroadcastBinary<SubOp, arith::SubFOp>;

/// 1 + exp(-x), the denominator of torch's sigmoid and silu kernels.
Value onePlusExpNeg(OpBuilder &b, Location loc, Value x) {
  Value neg = arith::NegFOp::create(b, loc, x);
  Value exp = math::ExpOp::create(b, loc, neg);
  return arith::AddFOp::create(b, loc, computeConstant(b, loc, 1.0f), exp);
}

/// A unary elementwise op whose body is `body(x)`.
template <typename OpT, Value (*body)(OpBuilder &, Location, Value)>
struct LowerUnary : OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpT op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, elementwiseSameShape(rewriter, op.getLoc(),
                                                op.getType(), {op.getX()},
                                                [](OpBuilder &b, Location loc,
                                                   ValueRange args) -> Value {
                                                  return body(b, loc, args[0]);
                                                }));
    return success();
  }
};

/// silu(x) = x / (1 + exp(-x)), as torch's CPU kernel.
Value siluBody(OpBuilder &b, Location loc, Value x) {
  return arith::DivFOp::create(b, loc, x, onePlusExpNeg(b, loc, x));
}
/// sigmoid(x) = 1 / (1 + exp(-x)), as torch's CPU kernel.
Value sigmoidBody(OpBuilder &b, Location loc, Value x) {
  return arith::DivFOp::create(b, loc, computeConstant(b, loc, 1.0f),
                               onePlusExpNeg(b, loc, x));
}
Value tanhBody(OpBuilder &b, Location loc, Value x) {
  return math::TanhOp::create(b, loc, x);
}

using LowerSilu = LowerUnary<SiluOp, siluBody>;
using LowerSigmoid = LowerUnary<SigmoidOp, sigmoidBody>;
using LowerTanh = LowerUnary<TanhOp, tanhBody>;

/// attn.cast: through f32 (bf16 and f16 widen exactly), then rounded to
/// the result's type.
struct LowerCast : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CastOp op,
                                PatternRewriter &rewriter) const override {
    auto result = cast<RankedTensorType>(op.getType());
    Type to = result.getElementType();
    rewriter.replaceOp(
        op, elementwiseSameShape(
                rewriter, op.getLoc(), result, {op.getX()},
                [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
                  Value value = args[0];
                  Type f32 = computeType(b);
                  if (value.getType() != f32)
                    value = arith::ExtFOp::create(b, loc, f32, value);
                  if (to != f32)
                    value = arith::TruncFOp::create(b, loc, to, value);
                  return value;
                }));
    return success();
  }
};

struct LowerRelu : OpRewritePattern<ReluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReluOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(
        op, elementwiseSameShape(
                rewriter, op.getLoc(), op.getType(), {op.getX()},
                [](OpBuilder &b, Location loc, ValueRange args) -> Value {
                  // maximumf propagates NaN, as torch.relu does.
                  return arith::MaximumFOp::create(
                      b, loc, args[0], computeConstant(b, loc, 0.0f));
                }));
    return success();
  }
};

/// attn.gelu (semantics in AttnOps.td). The erf form is torch's formula as
/// torch's CPU kernel writes it, x * 0.5 * (1 + erf(x * M_SQRT1_2)). The tanh
/// form uses 0.5 * (1 + tanh(u)) = 1 / (1 + exp(-2u)), i.e.
/// x / (1 + exp(-2u)) with u = sqrt(2 / pi) * (x + 0.044715 * x^3): the same
/// function, but the CPU's exp approximation is within about an ulp where
/// its tanh approximation (near +-1, x around 4) is several, which doubled
/// the distance to torch. Below x = -10 or so exp(-2u) overflows to +inf and
/// x / inf is -0, as torch's formula gives once tanh(u) rounds to -1.
struct LowerGelu : OpRewritePattern<GeluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GeluOp op,
                                PatternRewriter &rewriter) const override {
    bool tanhForm = op.getApproximate();
    rewriter.replaceOp(
        op,
        elementwiseSameShape(
            rewriter, op.getLoc(), op.getType(), {op.getX()},
            [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
              Value x = args[0];
              auto mul = [&](Value lhs, Value rhs) -> Value {
                return arith::MulFOp::create(b, loc, lhs, rhs);
              };
              auto add = [&](Value lhs, Value rhs) -> Value {
                return arith::AddFOp::create(b, loc, lhs, rhs);
              };
              Value one = computeConstant(b, loc, 1.0f);
              if (!tanhForm) {
                Value scaled =
                    mul(x, computeConstant(b, loc, float(M_SQRT1_2)));
                Value erf = math::ErfOp::create(b, loc, scaled);
                return mul(mul(x, computeConstant(b, loc, 0.5f)),
                           add(one, erf));
              }
              // -2 sqrt(2 / pi): sqrt(2 / pi) as ATen's kGeluBeta
              // computes it, times -2 (exact in f32).
              float minusTwoBeta = -2.0f * float(M_SQRT2 * M_2_SQRTPI * 0.5);
              Value cube = mul(mul(x, x), x);
              Value minusTwoU =
                  mul(computeConstant(b, loc, minusTwoBeta),
                      add(x, mul(computeConstant(b, loc, 0.044715f), cube)));
              Value exp = math::ExpOp::create(b, loc, minusTwoU);
              return arith::DivFOp::create(b, loc, x, add(one, exp));
            }));
    return success();
  }
};

/// [B, T, H*d] -> [B, T, H, d] -> [B, H, T, d] -> [B*H, T, d].
struct LowerSplitHeads : OpRewritePattern<SplitHeadsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SplitHeadsOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ArrayRef<int64_t> s = tensorType(op.getX()).getShape();
    int64_t heads = op.getHeads(), d = s[2] / heads;
    Type element = tensorType(op.getX()).getElementType();
    Value split = tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get({s[0], s[1], heads, d}, element),
        op.getX(), SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
    Value transposed =
        linalg::TransposeOp::create(
            rewriter, loc, split,
            emptyLike(rewriter, loc, {s[0], heads, s[1], d}, element),
            ArrayRef<int64_t>{0, 2, 1, 3})
            .getResult()[0];
    rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(
        op, transposed, SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}});
    return success();
  }
};

/// [B*H, T, d] -> [B, H, T, d] -> [B, T, H, d] -> [B, T, H*d].
struct LowerMergeHeads : OpRewritePattern<MergeHeadsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MergeHeadsOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ArrayRef<int64_t> s = tensorType(op.getX()).getShape();
    int64_t heads = op.getHeads(), b = s[0] / heads;
    Type element = tensorType(op.getX()).getElementType();
    Value split = tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get({b, heads, s[1], s[2]}, element),
        op.getX(), SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}});
    Value transposed =
        linalg::TransposeOp::create(
            rewriter, loc, split,
            emptyLike(rewriter, loc, {b, s[1], heads, s[2]}, element),
            ArrayRef<int64_t>{0, 2, 1, 3})
            .getResult()[0];
    rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(
        op, transposed, SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
    return success();
  }
};

struct LowerSoftmax : OpRewritePattern<SoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SoftmaxOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, softmaxLastAxis(rewriter, op.getLoc(), op.getX()));
    return success();
  }
};

/// D2L masked_softmax: x[n, i, j] is replaced by -1e6 where j >= len(n, i),
/// then softmax. A row with len <= 0 has every entry replaced: uniform.
struct LowerMaskedSoftmax : OpRewritePattern<MaskedSoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MaskedSoftmaxOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    AffineExpr n, i, j;
    bindDims(ctx, n, i, j);
    AffineMap identity = AffineMap::get(3, 0, {n, i, j}, ctx);
    AffineMap lenMap = tensorType(op.getValidLens()).getRank() == 1
                           ? AffineMap::get(3, 0, {n}, ctx)
                           : AffineMap::get(3, 0, {n, i}, ctx);
    Value masked = elementwise(
        rewriter, loc, op.getType(), {op.getX(), op.getValidLens()},
        {identity, lenMap},
        [](OpBuilder &b, Location loc, ValueRange args) -> Value {
          Value key = linalg::IndexOp::create(b, loc, 2);
          Value len =
              arith::IndexCastOp::create(b, loc, b.getIndexType(), args[1]);
          return maskScore(b, loc, isKeyVisible(b, loc, key, Value(), len),
                           args[0]);
        });
    rewriter.replaceOp(op, softmaxLastAxis(rewriter, loc, masked));
    return success();
  }
};

/// D2L's table (attn/IR/PositionalEncoding.h) as a constant of `type`.
DenseElementsAttr positionalEncodingTable(RankedTensorType type) {
  std::vector<float> table = mlir::attn::positionalEncodingTable(
      type.getDimSize(0), type.getDimSize(1));
  return DenseElementsAttr::get(type, ArrayRef<float>(table));
}

/// positionalEncodingEntry's arithmetic as arith ops (f64 and i64).
struct ArithOps {
  using Float64 = Value;
  using Int64 = Value;
  OpBuilder &b;
  Location loc;
  Value constant(double c) {
    return arith::ConstantOp::create(b, loc, b.getF64FloatAttr(c));
  }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value roundToInt(Value x) {
    return arith::FPToSIOp::create(b, loc, b.getI64Type(), x);
  }
  Value addInt(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value andInt(Value x, int64_t mask) {
    return arith::AndIOp::create(
        b, loc, x, arith::ConstantIntOp::create(b, loc, mask, 64));
  }
  Value select(Value pick, Value x, Value y) {
    Value zero = arith::ConstantIntOp::create(b, loc, 0, 64);
    Value nonzero =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, pick, zero);
    return arith::SelectOp::create(b, loc, nonzero, x, y);
  }
};

/// x + P[:T]. A table of up to kMaxConstantTableElements is a constant;
/// a bigger one, or one read at each entry's `offset`, is computed where it
/// is added, from the position (the row index, plus offset[b]) and the
/// column index and a [D] constant of each column's divisor (the same
/// arithmetic as the table's, so the same bits).
struct LowerPositionalEncoding : OpRewritePattern<PositionalEncodingOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PositionalEncodingOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ArrayRef<int64_t> s = op.getType().getShape();
    MLIRContext *ctx = op.getContext();
    AffineExpr b, i, c;
    bindDims(ctx, b, i, c);
    AffineMap x = AffineMap::get(3, 0, {b, i, c}, ctx);
    Value offset = op.getOffset();
    if (!offset && !mlir::attn::positionalEncodingIsComputed(s[1], s[2])) {
      auto tableType =
          RankedTensorType::get({s[1], s[2]}, computeType(rewriter));
      Value table = arith::ConstantOp::create(
          rewriter, loc, positionalEncodingTable(tableType));
      rewriter.replaceOp(
          op, elementwise(rewriter, loc, op.getType(), {op.getX(), table},
                          {x, AffineMap::get(3, 0, {i, c}, ctx)},
                          [](OpBuilder &b, Location loc, ValueRange args) {
                            return arith::AddFOp::create(b, loc, args[0],
                                                         args[1])
                                .getResult();
                          }));
      return success();
    }
    std::vector<float> divisors =
        mlir::attn::positionalEncodingColumnDivisors(s[2]);
    auto divisorType = RankedTensorType::get({s[2]}, computeType(rewriter));
    Value divisor = arith::ConstantOp::create(
        rewriter, loc,
        DenseElementsAttr::get(divisorType, ArrayRef<float>(divisors)));
    SmallVector<Value> inputs = {op.getX(), divisor};
    SmallVector<AffineMap> maps = {x, AffineMap::get(3, 0, {c}, ctx)};
    if (offset) {
      inputs.push_back(offset);
      maps.push_back(AffineMap::get(3, 0, {b}, ctx));
    }
    rewriter.replaceOp(
        op,
        elementwise(
            rewriter, loc, op.getType(), inputs, maps,
            [](OpBuilder &b, Location loc, ValueRange args) {
              auto index = [&](unsigned dim) {
                Value v = linalg::IndexOp::create(b, loc, dim);
                return arith::IndexCastOp::create(b, loc, b.getI64Type(), v)
                    .getResult();
              };
              Value position = index(1);
              if (args.size() > 2)
                position = arith::AddIOp::create(
                    b, loc, position,
                    arith::ExtSIOp::create(b, loc, b.getI64Type(), args[2]));
              Value row =
                  arith::SIToFPOp::create(b, loc, computeType(b), position);
              Value angle =
                  arith::DivFOp::create(b, loc, row, args[1]).getResult();
              ArithOps ops{b, loc};
              Value odd = ops.andInt(index(2), 1);
              Value entry = mlir::attn::positionalEncodingEntry(
                  ops, arith::ExtFOp::create(b, loc, b.getF64Type(), angle),
                  odd);
              Value p = arith::TruncFOp::create(b, loc, computeType(b), entry);
              return arith::AddFOp::create(b, loc, args[0], p).getResult();
            }));
    return success();
  }
};

/// torch nn.LayerNorm over the last axis:
/// (x - mean) / sqrt(var + eps) * gamma + beta, var biased.
struct LowerLayerNorm : OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    unsigned rank = type.getRank();
    float width = static_cast<float>(type.getShape().back());
    Value sum = reduceLastAxis(
        rewriter, loc, op.getX(), 0.0f, {},
        [](OpBuilder &b, Location loc, ValueRange args, Value acc) -> Value {
          return arith::AddFOp::create(b, loc, args[0], acc);
        });
    AffineMap identity = rewriter.getMultiDimIdentityMap(rank);
    AffineMap reduced = identity.dropResult(rank - 1);
    AffineMap lastAxis = lastAxisMap(rewriter, rank);
    Value widthValue = computeConstant(rewriter, loc, width);
    // Dividing each term before summing would round differently from torch.
    Value squares = reduceLastAxis(
        rewriter, loc, op.getX(), 0.0f, {sum},
        [&](OpBuilder &b, Location loc, ValueRange args, Value acc) -> Value {
          Value mean = arith::DivFOp::create(b, loc, args[1], widthValue);
          Value centered = arith::SubFOp::create(b, loc, args[0], mean);
          Value square = arith::MulFOp::create(b, loc, centered, centered);
          return arith::AddFOp::create(b, loc, square, acc);
        });
    Value eps = arith::ConstantOp::create(rewriter, loc, op.getEpsAttr());
    rewriter.replaceOp(
        op,
        elementwise(
            rewriter, loc, type,
            {op.getX(), sum, squares, op.getGamma(), op.getBeta()},
            {identity, reduced, reduced, lastAxis, lastAxis},
            [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
              Value mean = arith::DivFOp::create(b, loc, args[1], widthValue);
              Value variance =
                  arith::DivFOp::create(b, loc, args[2], widthValue);
              Value stddev = math::SqrtOp::create(
                  b, loc, arith::AddFOp::create(b, loc, variance, eps));
              Value centered = arith::SubFOp::create(b, loc, args[0], mean);
              Value normed = arith::DivFOp::create(b, loc, centered, stddev);
              Value scaled = arith::MulFOp::create(b, loc, normed, args[3]);
              return arith::AddFOp::create(b, loc, scaled, args[4]);
            }));
    return success();
  }
};

/// Llama's RMSNorm over the last axis:
/// gamma * (x * (1 / sqrt(sum(x * x) / D + eps))).
struct LowerRmsNorm : OpRewritePattern<RmsNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RmsNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    unsigned rank = type.getRank();
    Value squares = reduceLastAxis(
        rewriter, loc, op.getX(), 0.0f, {},
        [](OpBuilder &b, Location loc, ValueRange args, Value acc) -> Value {
          Value square = arith::MulFOp::create(b, loc, args[0], args[0]);
          return arith::AddFOp::create(b, loc, square, acc);
        });
    AffineMap identity = rewriter.getMultiDimIdentityMap(rank);
    AffineMap reduced = identity.dropResult(rank - 1);
    AffineMap lastAxis = lastAxisMap(rewriter, rank);
    Value width = computeConstant(rewriter, loc,
                                  static_cast<float>(type.getShape().back()));
    Value eps = arith::ConstantOp::create(rewriter, loc, op.getEpsAttr());
    rewriter.replaceOp(
        op,
        elementwise(rewriter, loc, type, {op.getX(), squares, op.getGamma()},
                    {identity, reduced, lastAxis},
                    [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
                      Value mean =
                          arith::DivFOp::create(b, loc, args[1], width);
                      Value root = math::SqrtOp::create(
                          b, loc, arith::AddFOp::create(b, loc, mean, eps));
                      Value inverse = arith::DivFOp::create(
                          b, loc, computeConstant(b, loc, 1.0f), root);
                      Value normed =
                          arith::MulFOp::create(b, loc, args[0], inverse);
                      return arith::MulFOp::create(b, loc, args[2], normed);
                    }));
    return success();
  }
};

/// Clamps an id into [0, V) so that no id can read out of bounds; ids that
/// needed clamping are reported through the kernel status instead.
Value clampedIndex(OpBuilder &b, Location loc, Value id, int64_t vocab) {
  Value zero = arith::ConstantIntOp::create(b, loc, 0, 32);
  Value last = arith::ConstantIntOp::create(b, loc, vocab - 1, 32);
  Value clamped = arith::MaxSIOp::create(
      b, loc, zero, arith::MinSIOp::create(b, loc, id, last));
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), clamped);
}

struct LowerEmbedding : OpRewritePattern<EmbeddingOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(EmbeddingOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    unsigned rank = type.getRank();
    Value table = op.getTable();
    int64_t vocab = tensorType(table).getDimSize(0);
    AffineMap idsMap =
        rewriter.getMultiDimIdentityMap(rank).dropResult(rank - 1);
    rewriter.replaceOp(
        op, elementwise(rewriter, loc, type, {op.getIds()}, {idsMap},
                        [&](OpBuilder &b, Location loc, ValueRange args) {
                          Value row = clampedIndex(b, loc, args[0], vocab);
                          Value col = linalg::IndexOp::create(b, loc, rank - 1);
                          return tensor::ExtractOp::create(b, loc, table,
                                                           ValueRange{row, col})
                              .getResult();
                        }));
    return success();
  }
};

struct LowerDropout : OpRewritePattern<DropoutOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DropoutOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, op.getX());
    return success();
  }
};

/// Number of ids outside [0, vocab), as an i32 scalar.
Value countBadIds(OpBuilder &b, Location loc, Value ids, int64_t vocab) {
  RankedTensorType type = tensorType(ids);
  unsigned rank = type.getRank();
  Type i32 = b.getI32Type();
  Value zero = arith::ConstantIntOp::create(b, loc, 0, 32);
  Value init = linalg::FillOp::create(
                   b, loc, zero, emptyLike(b, loc, ArrayRef<int64_t>{}, i32))
                   .getResult(0);
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(rank),
                                 AffineMap::get(rank, 0, {}, b.getContext())};
  SmallVector<IteratorType> iterators(rank, IteratorType::reduction);
  Value count =
      linalg::GenericOp::create(
          b, loc, TypeRange{init.getType()}, ValueRange{ids}, ValueRange{init},
          maps, iterators,
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            Value id = args[0];
            Value low = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::slt,
                                              id, zero);
            Value high = arith::CmpIOp::create(
                nb, nl, arith::CmpIPredicate::sge, id,
                arith::ConstantIntOp::create(nb, nl, vocab, 32));
            Value bad = arith::OrIOp::create(nb, nl, low, high);
            Value one = arith::ExtUIOp::create(nb, nl, nb.getI32Type(), bad);
            linalg::YieldOp::create(
                nb, nl,
                arith::AddIOp::create(nb, nl, args[1], one).getResult());
          })
          .getResult(0);
  return tensor::ExtractOp::create(b, loc, count, ValueRange{});
}

/// Number of cache positions p of `op` with p < 0 or p + T > L, as an i32
/// scalar: the positions outside [0, L - T].
Value countBadPositions(OpBuilder &b, Location loc, CacheUpdateOp op) {
  int64_t rows = tensorType(op.getCache()).getDimSize(1);
  int64_t newRows = tensorType(op.getRows()).getDimSize(1);
  return countBadIds(b, loc, op.getPos(), rows - newRows + 1);
}

/// attn.cache_update: when every position is in range, each entry's rows
/// inserted at its position (into the cache itself: in place for a state
/// argument); else the cache unchanged, no row of any entry written.
struct LowerCacheUpdate : OpRewritePattern<CacheUpdateOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CacheUpdateOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType cacheType = tensorType(op.getCache());
    ArrayRef<int64_t> rowsShape = tensorType(op.getRows()).getShape();
    Value bad = countBadPositions(rewriter, loc, op);
    Value ok = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::eq, bad,
        arith::ConstantIntOp::create(rewriter, loc, 0, 32));
    auto guarded = scf::IfOp::create(rewriter, loc, TypeRange{cacheType}, ok,
                                     /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(guarded.thenBlock());
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    auto loop = scf::ForOp::create(
        rewriter, loc, zero,
        arith::ConstantIndexOp::create(rewriter, loc, rowsShape[0]),
        arith::ConstantIndexOp::create(rewriter, loc, 1),
        ValueRange{op.getCache()},
        [&](OpBuilder &b, Location l, Value entry, ValueRange cache) {
          Value at = arith::IndexCastOp::create(
              b, l, b.getIndexType(),
              tensor::ExtractOp::create(b, l, op.getPos(), entry));
          SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1),
                                             b.getIndexAttr(rowsShape[1]),
                                             b.getIndexAttr(rowsShape[2])};
          SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
          Value rows = tensor::ExtractSliceOp::create(
              b, l, op.getRows(),
              ArrayRef<OpFoldResult>{entry, b.getIndexAttr(0),
                                     b.getIndexAttr(0)},
              sizes, strides);
          Value updated = tensor::InsertSliceOp::create(
              b, l, rows, cache[0],
              ArrayRef<OpFoldResult>{entry, at, b.getIndexAttr(0)}, sizes,
              strides);
          scf::YieldOp::create(b, l, updated);
        });
    scf::YieldOp::create(rewriter, loc, loop.getResults());
    rewriter.setInsertionPointToStart(guarded.elseBlock());
    scf::YieldOp::create(rewriter, loc, op.getCache());
    rewriter.replaceOp(op, guarded.getResults());
    return success();
  }
};

/// Appends the kernel status to `func`'s results: 0, 1 when an embedding
/// id was out of range (or a called block failed so), and
/// ATTNC_STATUS_CACHE_POSITION when a cache position or a
/// positional_encoding offset was, here or in a called block (first): then
/// no cache is written. Built before the embeddings and caches are lowered.
void addKernelStatus(func::FuncOp func) {
  if (func.isExternal())
    return;
  OpBuilder b(func.getContext());
  Block &entry = func.getBody().front();
  // The counts of bad positions and of other failures, each computed where
  // its op is, summed at the return (which they all dominate).
  SmallVector<Value> badPositions, failures;
  // The sum of `terms` (i32) at the builder's point; null when none.
  auto sum = [&](ArrayRef<Value> terms, Location loc) -> Value {
    Value total;
    for (Value term : terms)
      total =
          total ? arith::AddIOp::create(b, loc, total, term).getResult() : term;
    return total;
  };
  // positional_encoding's offset: positions offset[b] .. offset[b] + T - 1
  // must be rows of D2L's table. Counted at the function's entry, so that
  // every cache write below can depend on them (an offset is an i32
  // argument: no op makes i32 values).
  b.setInsertionPointToStart(&entry);
  func.walk([&](PositionalEncodingOp op) {
    if (!op.getOffset())
      return;
    assert(llvm::isa<BlockArgument>(op.getOffset()) &&
           "positional_encoding's offset is an argument");
    int64_t rows = op.getType().getDimSize(1);
    badPositions.push_back(
        countBadIds(b, op.getLoc(), op.getOffset(),
                    static_cast<int64_t>(op.getMaxLen()) - rows + 1));
  });
  Value badOffsets = sum(badPositions, func.getLoc());
  // A call of another kernel of the module (a block calling a block) gets
  // that kernel's status too: its position status is this one's (and the
  // cache writes after it write nothing), any other failure is a 1.
  SmallVector<func::CallOp> calls;
  func.walk([&](func::CallOp call) {
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    if (callee && !callee.isExternal())
      calls.push_back(call);
  });
  SmallVector<std::pair<Operation *, Value>> callPositions;
  for (func::CallOp call : calls) {
    b.setInsertionPoint(call);
    SmallVector<Type> types(call.getResultTypes());
    types.push_back(b.getI32Type());
    auto withStatus = func::CallOp::create(b, call.getLoc(), call.getCallee(),
                                           types, call.getOperands());
    call.replaceAllUsesWith(withStatus.getResults().drop_back());
    call.erase();
    b.setInsertionPointAfter(withStatus);
    Location loc = withStatus.getLoc();
    Value code = withStatus.getResults().back();
    auto is = [&](arith::CmpIPredicate predicate, int32_t value) -> Value {
      return arith::CmpIOp::create(
          b, loc, predicate, code,
          arith::ConstantIntOp::create(b, loc, value, 32));
    };
    Value position = is(arith::CmpIPredicate::eq, ATTNC_STATUS_CACHE_POSITION);
    Value other = arith::AndIOp::create(
        b, loc, is(arith::CmpIPredicate::ne, 0),
        is(arith::CmpIPredicate::ne, ATTNC_STATUS_CACHE_POSITION));
    Value badPosition =
        arith::ExtUIOp::create(b, loc, b.getI32Type(), position);
    callPositions.push_back({withStatus, badPosition});
    badPositions.push_back(badPosition);
    failures.push_back(arith::ExtUIOp::create(b, loc, b.getI32Type(), other));
  }
  DominanceInfo dominance(func);
  func.walk([&](CacheUpdateOp op) {
    b.setInsertionPoint(op);
    badPositions.push_back(countBadPositions(b, op.getLoc(), op));
    // "Nothing written" holds for a bad offset too, and for a call before
    // this write that failed so: the cache's positions become -1 then (out
    // of range: the update writes no row).
    SmallVector<Value> before;
    if (badOffsets)
      before.push_back(badOffsets);
    for (auto [call, bad] : callPositions)
      if (dominance.properlyDominates(call, op))
        before.push_back(bad);
    Value badBefore = sum(before, op.getLoc());
    if (badBefore)
      op.getPosMutable().assign(elementwiseSameShape(
          b, op.getLoc(), tensorType(op.getPos()), ValueRange{op.getPos()},
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            Value zero = arith::ConstantIntOp::create(nb, nl, 0, 32);
            Value anyBad = arith::CmpIOp::create(
                nb, nl, arith::CmpIPredicate::ne, badBefore, zero);
            return arith::SelectOp::create(
                       nb, nl, anyBad,
                       arith::ConstantIntOp::create(nb, nl, -1, 32), args[0])
                .getResult();
          }));
  });
  func.walk([&](EmbeddingOp op) {
    b.setInsertionPoint(op);
    failures.push_back(countBadIds(b, op.getLoc(), op.getIds(),
                                   tensorType(op.getTable()).getDimSize(0)));
  });
  func.walk([&](func::ReturnOp ret) {
    b.setInsertionPoint(ret);
    Location loc = ret.getLoc();
    Value zero = arith::ConstantIntOp::create(b, loc, 0, 32);
    Value result = zero;
    if (Value status = sum(failures, loc)) {
      Value failed =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, status, zero);
      result = arith::ExtUIOp::create(b, loc, b.getI32Type(), failed);
    }
    if (Value bad = sum(badPositions, loc)) {
      Value failed =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, bad, zero);
      result = arith::SelectOp::create(
          b, loc, failed,
          arith::ConstantIntOp::create(b, loc, ATTNC_STATUS_CACHE_POSITION, 32),
          result);
    }
    ret.getOperandsMutable().append(result);
  });
  SmallVector<Type> results(func.getResultTypes());
  results.push_back(b.getI32Type());
  func.setType(
      FunctionType::get(func.getContext(), entry.getArgumentTypes(), results));
}

/// A `state` argument: updated in place, so writable.
bool isState(func::FuncOp func, unsigned i) {
  auto role = func.getArgAttrOfType<StringAttr>(i, AttnDialect::kRoleAttr);
  return role && abi::roleNamed(role.getValue()) == abi::ArgumentRole::State;
}

/// Inputs and params are only read (docs/spec.md §5: `const` buffers):
/// bufferization must copy rather than write into them, even where a
/// canonicalized op would accumulate into one (a bias broadcast to its own
/// shape folds away).
void markArgumentsReadOnly(func::FuncOp func) {
  if (func.isExternal())
    return;
  auto readOnly = BoolAttr::get(func.getContext(), false);
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (isa<TensorType>(func.getArgument(i).getType()) && !isState(func, i))
      func.setArgAttr(i, bufferization::BufferizationDialect::kWritableAttrName,
                      readOnly);
}

struct AttnLowerToLinalgPass
    : mlir::attn::impl::AttnLowerToLinalgBase<AttnLowerToLinalgPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto func : module.getOps<func::FuncOp>()) {
      addKernelStatus(func);
      markArgumentsReadOnly(func);
    }

    RewritePatternSet patterns(&getContext());
    populateLowerToLinalgPatterns(patterns);
    if (failed(applyPatternsGreedily(module, std::move(patterns))))
      return signalPassFailure();

    WalkResult leftover = module.walk([](Operation *op) {
      // fused_attention and decode_attention stay: they bufferize and have
      // their own lowerings.
      if (isa<AttnDialect>(op->getDialect()) &&
          !isa<FusedAttentionOp, DecodeAttentionOp>(op)) {
        op->emitOpError("is a composite op; run attn-decompose before "
                        "attn-lower-to-linalg");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (leftover.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

void mlir::attn::populateLowerToLinalgPatterns(RewritePatternSet &patterns) {
  patterns
      .add<LowerCast, LowerLinear, LowerMatmul, LowerScale, LowerAdd, LowerMul,
           LowerSub, LowerSilu, LowerSigmoid, LowerTanh, LowerRmsNorm,
           LowerRelu, LowerGelu, LowerSplitHeads, LowerMergeHeads, LowerSoftmax,
           LowerMaskedSoftmax, LowerPositionalEncoding, LowerLayerNorm,
           LowerEmbedding, LowerDropout, LowerCacheUpdate>(
          patterns.getContext());
}
