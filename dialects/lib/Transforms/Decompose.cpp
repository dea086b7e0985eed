//===- Decompose.cpp - Composite attn ops into primitive attn ops ---------===//
//
// Each pattern follows the D2L PyTorch code of the composite op line by line
// (see Passes.td for the rewrites and docs/spec.md §2 for the semantics).
//
//===----------------------------------------------------------------------===//

#include "attn/Attention/RotateHalf.h"
#include "attn/IR/AttentionMask.h"
#include "attn/IR/AttnOps.h"
#include "attn/IR/Rope.h"
#include "attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/StringSwitch.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNDECOMPOSE
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

int64_t dimOf(Value value, unsigned dim) {
  return cast<RankedTensorType>(value.getType()).getDimSize(dim);
}

/// Broadcasts `input` into a new tensor of `shape`, adding the dims listed
/// in `addedDims` (linalg.broadcast semantics).
Value broadcast(PatternRewriter &rewriter, Location loc, Value input,
                ArrayRef<int64_t> shape, ArrayRef<int64_t> addedDims) {
  Type element = cast<RankedTensorType>(input.getType()).getElementType();
  Value init = tensor::EmptyOp::create(rewriter, loc, shape, element);
  return linalg::BroadcastOp::create(rewriter, loc, input, init, addedDims)
      ->getResult(0);
}

/// torch.repeat_interleave(validLens, heads, dim=0): [B] -> [B*H] or
/// [B, Tq] -> [B*H, Tq], so that row b*H + h (head h of batch b, the order
/// split_heads produces) gets batch b's lengths.
/// `x` rounded to `type` and widened back to its own type: a rounding
/// point inside a composite op (innerRoundingOf); `x` itself without one.
Value roundedThrough(PatternRewriter &rewriter, Location loc, Value x,
                     FloatType type) {
  if (!type)
    return x;
  Type wide = getElementTypeOrSelf(x.getType());
  Value narrow = CastOp::create(rewriter, loc, x, TypeAttr::get(type));
  return CastOp::create(rewriter, loc, narrow, TypeAttr::get(wide));
}

Value repeatPerHead(PatternRewriter &rewriter, Location loc, Value validLens,
                    int64_t heads) {
  auto type = cast<RankedTensorType>(validLens.getType());
  SmallVector<int64_t> shape = {type.getDimSize(0), heads};
  SmallVector<ReassociationIndices> groups = {{0, 1}};
  if (type.getRank() == 2) {
    shape.push_back(type.getDimSize(1));
    groups.push_back({2});
  }
  Value perHead = broadcast(rewriter, loc, validLens, shape, {1});
  return tensor::CollapseShapeOp::create(rewriter, loc, perHead, groups);
}

/// The lengths that make masked_softmax also apply the causal mask: the
/// end(i) = min(len, i + 1) of attn/IR/AttentionMask.h as a tensor (masking
/// j > i and j >= len by the same -1e6 replacement is masking j >= end(i)).
/// Returns i32[N, Tq].
Value causalValidLens(PatternRewriter &rewriter, Location loc, Value validLens,
                      int64_t n, int64_t tq) {
  // rowLens[i] = i + 1
  SmallVector<int32_t> rowLens;
  for (int64_t i = 0; i < tq; ++i)
    rowLens.push_back(static_cast<int32_t>(i + 1));
  auto rowType = RankedTensorType::get({tq}, rewriter.getI32Type());
  Value rows = arith::ConstantOp::create(
      rewriter, loc, DenseIntElementsAttr::get(rowType, ArrayRef(rowLens)));
  Value causal = broadcast(rewriter, loc, rows, {n, tq}, {0});
  if (!validLens)
    return causal;
  // A 1-D length applies to every query row.
  if (cast<RankedTensorType>(validLens.getType()).getRank() == 1)
    validLens = broadcast(rewriter, loc, validLens, {n, tq}, {1});
  return arith::MinSIOp::create(rewriter, loc, validLens, causal);
}

/// Whether attn-decompose fuses `op` (an attention op).
bool fuses(Operation *op, AttentionLowering lowering, int64_t fuseThreshold) {
  return attentionLoweringOf(op, lowering, fuseThreshold)->fused;
}

/// attn.fused_attention's `products` for the attention op `op`
/// (attentionProductsOf), or null.
TypeAttr productsAttr(Operation *op) {
  FloatType products = attentionProductsOf(op);
  return products ? TypeAttr::get(products) : TypeAttr();
}

/// 1/sqrt(d) rounded to f32, the factor of both attention lowerings.
FloatAttr attentionScale(PatternRewriter &rewriter, int64_t d) {
  return rewriter.getF32FloatAttr(
      static_cast<float>(1.0 / std::sqrt(static_cast<double>(d))));
}

/// [N, A, X, Y] <-> [N * A, X, Y] and [N, A * X, Y]: the views between
/// query heads and their kv head's group (no copy: expand/collapse).
Value regroup(PatternRewriter &rewriter, Location loc, Value x, int64_t groups,
              int64_t perGroup, bool intoGroups) {
  auto type = cast<RankedTensorType>(x.getType());
  Type element = type.getElementType();
  ArrayRef<int64_t> s = type.getShape();
  // [G', R * X, Y] or [G' * R, X, Y] -> [G', R, X, Y] -> the other.
  int64_t rows = intoGroups ? s[1] : s[1] / perGroup;
  auto four = RankedTensorType::get({groups, perGroup, rows, s[2]}, element);
  SmallVector<ReassociationIndices> byHead = {{0, 1}, {2}, {3}};
  SmallVector<ReassociationIndices> byGroup = {{0}, {1, 2}, {3}};
  Value expanded = tensor::ExpandShapeOp::create(rewriter, loc, four, x,
                                                 intoGroups ? byHead : byGroup);
  return tensor::CollapseShapeOp::create(rewriter, loc, expanded,
                                         intoGroups ? byGroup : byHead);
}

/// A value of x's shape, element [n, i, j] = `element(x[n, i, j])` (the
/// body reads linalg.index 0..2 as it needs): one linalg.generic on x.
Value mapElements(PatternRewriter &rewriter, Location loc, Value x,
                  function_ref<Value(OpBuilder &, Location, Value)> element) {
  auto type = cast<RankedTensorType>(x.getType());
  MLIRContext *context = rewriter.getContext();
  SmallVector<AffineMap> maps = {
      AffineMap::getMultiDimIdentityMap(type.getRank(), context)};
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             rewriter, loc, TypeRange{type}, ValueRange{}, ValueRange{x}, maps,
             iterators,
             [&](OpBuilder &b, Location l, ValueRange args) {
               linalg::YieldOp::create(b, l,
                                       ValueRange{element(b, l, args[0])});
             })
      .getResult(0);
}

/// s[n, i, j] = -1e6 where key j is before query i's sliding window
/// (attn/IR/AttentionMask.h's begin(i)), D2L's replacement; the lengths
/// mask the rest.
Value maskOutsideWindow(PatternRewriter &rewriter, Location loc, Value scores,
                        int64_t window) {
  return mapElements(
      rewriter, loc, scores, [&](OpBuilder &b, Location l, Value score) {
        Value i = linalg::IndexOp::create(b, l, 1);
        Value j = linalg::IndexOp::create(b, l, 2);
        Value begin = visibleBegin(b, l, i, window);
        return maskScore(b, l, isKeyVisible(b, l, j, begin, Value()), score);
      });
}

/// The entry b = n / perEntry of split-head row n, and its cache position
/// pos[b] as an index (in a linalg.generic body).
Value cachePositionOf(OpBuilder &b, Location l, Value pos, int64_t perEntry) {
  Value n = linalg::IndexOp::create(b, l, 0);
  Value entry = arith::DivUIOp::create(
      b, l, n, arith::ConstantIndexOp::create(b, l, perEntry));
  return arith::IndexCastOp::create(
      b, l, b.getIndexType(), tensor::ExtractOp::create(b, l, pos, entry));
}

/// s[n, i, j] = -inf where key j is not visible from new token i of entry
/// b = n / heads at absolute position p = pos[b] + i: the causal mask with
/// that offset, and the sliding window (attn/IR/AttentionMask.h with row
/// p). Not D2L's -1e6: a token's rows are exactly the ones it sees (its
/// own among them, so the softmax has a finite max), the others weigh 0,
/// as in attn.decode_attention.
Value maskBeyondCache(PatternRewriter &rewriter, Location loc, Value scores,
                      Value pos, int64_t heads, std::optional<int64_t> window) {
  int64_t keys = cast<RankedTensorType>(scores.getType()).getDimSize(2);
  return mapElements(
      rewriter, loc, scores, [&](OpBuilder &b, Location l, Value score) {
        Value row =
            arith::AddIOp::create(b, l, cachePositionOf(b, l, pos, heads),
                                  linalg::IndexOp::create(b, l, 1));
        Value j = linalg::IndexOp::create(b, l, 2);
        Value end = visibleEnd(b, l, Value(), row, keys, true);
        Value begin = visibleBegin(b, l, row, window);
        Value minusInf = arith::ConstantOp::create(
            b, l,
            b.getFloatAttr(score.getType(),
                           -std::numeric_limits<double>::infinity()));
        return arith::SelectOp::create(b, l, isKeyVisible(b, l, j, begin, end),
                                       score, minusInf);
      });
}

/// v[n, j, :] = 0 for cache rows j >= pos[b] + newTokens of entry
/// b = n / kvHeads: rows no query sees, which may hold anything (NaN
/// included) while their weight is 0.
Value zeroRowsBeyondCache(PatternRewriter &rewriter, Location loc, Value v,
                          Value pos, int64_t kvHeads, int64_t newTokens) {
  return mapElements(
      rewriter, loc, v, [&](OpBuilder &b, Location l, Value x) -> Value {
        Value end = arith::AddIOp::create(
            b, l, cachePositionOf(b, l, pos, kvHeads),
            arith::ConstantIndexOp::create(b, l, newTokens));
        Value j = linalg::IndexOp::create(b, l, 1);
        Value kept =
            arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, j, end);
        Value zero =
            arith::ConstantOp::create(b, l, b.getZeroAttr(x.getType()));
        return arith::SelectOp::create(b, l, kept, x, zero);
      });
}

/// The cos and sin tables of the rotary embedding (attn/IR/Rope.h) for
/// `positions` rows and head dim d: two f32[positions, d / 2] constants.
std::pair<Value, Value> ropeConstants(PatternRewriter &rewriter, Location loc,
                                      int64_t positions, int64_t headDim,
                                      float base) {
  RopeTables tables = ropeTables(positions, headDim, base);
  auto type =
      RankedTensorType::get({positions, headDim / 2}, rewriter.getF32Type());
  auto constant = [&](ArrayRef<float> values) -> Value {
    return arith::ConstantOp::create(rewriter, loc,
                                     DenseElementsAttr::get(type, values));
  };
  return {constant(tables.cos), constant(tables.sin)};
}

/// Hugging Face Llama's apply_rotary_pos_emb on every head of the
/// projection x[B, T, heads * d], position = row t: viewed as
/// [B, T, heads, 2, d / 2], half s of each head is
/// x[s] * cos[t] -+ x[1 - s] * sin[t] (minus for s = 0: rotate_half's -x2).
/// With `offsets` (i32[B], a KV cache's positions) the position of row t
/// of entry b is offsets[b] + t, clamped to the tables' rows (a position
/// out of range is the kernel's error, reported by its status).
Value applyRope(PatternRewriter &rewriter, Location loc, Value x, int64_t heads,
                Value cos, Value sin, Value offsets = Value()) {
  auto type = cast<RankedTensorType>(x.getType());
  ArrayRef<int64_t> s = type.getShape();
  int64_t half = s[2] / heads / 2;
  Type f32 = type.getElementType();
  auto fiveD = RankedTensorType::get({s[0], s[1], heads, 2, half}, f32);
  SmallVector<ReassociationIndices> groups = {{0}, {1}, {2, 3, 4}};
  Value view = tensor::ExpandShapeOp::create(rewriter, loc, fiveD, x, groups);
  // The two halves of every head, [B, T, heads, d / 2] each (strided views).
  auto halfType = RankedTensorType::get({s[0], s[1], heads, half}, f32);
  auto halfOf = [&](int64_t which) -> Value {
    SmallVector<OpFoldResult> offsets = {
        rewriter.getIndexAttr(0), rewriter.getIndexAttr(0),
        rewriter.getIndexAttr(0), rewriter.getIndexAttr(which),
        rewriter.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes = {
        rewriter.getIndexAttr(s[0]), rewriter.getIndexAttr(s[1]),
        rewriter.getIndexAttr(heads), rewriter.getIndexAttr(1),
        rewriter.getIndexAttr(half)};
    SmallVector<OpFoldResult> strides(5, rewriter.getIndexAttr(1));
    return tensor::ExtractSliceOp::create(rewriter, loc, halfType, view,
                                          offsets, sizes, strides);
  };
  Value first = halfOf(0), second = halfOf(1);
  MLIRContext *context = rewriter.getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, context); };
  SmallVector<AffineMap> maps = {
      AffineMap::get(5, 0, {d(0), d(1), d(2), d(4)}, context),
      AffineMap::get(5, 0, {d(0), d(1), d(2), d(4)}, context)};
  SmallVector<Value> inputs = {first, second};
  if (offsets) {
    inputs.push_back(offsets);
    maps.push_back(AffineMap::get(5, 0, {d(0)}, context));
  } else {
    inputs.append({cos, sin});
    maps.append(2, AffineMap::get(5, 0, {d(1), d(4)}, context));
  }
  maps.push_back(AffineMap::getMultiDimIdentityMap(5, context));
  int64_t tableRows = dimOf(cos, 0);
  SmallVector<utils::IteratorType> iterators(5, utils::IteratorType::parallel);
  Value init = tensor::EmptyOp::create(rewriter, loc, fiveD.getShape(), f32);
  Value rotated =
      linalg::GenericOp::create(
          rewriter, loc, TypeRange{fiveD}, inputs, ValueRange{init}, maps,
          iterators,
          [&](OpBuilder &b, Location l, ValueRange operands) {
            SmallVector<Value, 4> args = {operands[0], operands[1]};
            if (offsets) {
              Value row = arith::AddIOp::create(
                  b, l,
                  arith::IndexCastOp::create(b, l, b.getIndexType(),
                                             operands[2]),
                  linalg::IndexOp::create(b, l, 1));
              row = arith::MaxSIOp::create(
                  b, l, row, arith::ConstantIndexOp::create(b, l, 0));
              row = arith::MinSIOp::create(
                  b, l, row,
                  arith::ConstantIndexOp::create(b, l, tableRows - 1));
              Value j = linalg::IndexOp::create(b, l, 4);
              args.push_back(
                  tensor::ExtractOp::create(b, l, cos, ValueRange{row, j}));
              args.push_back(
                  tensor::ExtractOp::create(b, l, sin, ValueRange{row, j}));
            } else {
              args.append({operands[2], operands[3]});
            }
            Value isFirst =
                arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                      linalg::IndexOp::create(b, l, 3),
                                      arith::ConstantIndexOp::create(b, l, 0));
            Value self =
                arith::SelectOp::create(b, l, isFirst, args[0], args[1]);
            Value other =
                arith::SelectOp::create(b, l, isFirst, args[1], args[0]);
            linalg::YieldOp::create(
                b, l,
                ValueRange{
                    rotateHalf(b, l, self, other, args[2], args[3], isFirst)});
          })
          .getResult(0);
  return tensor::CollapseShapeOp::create(rewriter, loc, type, rotated, groups);
}

/// D2L DotProductAttention.forward step by step on split heads: scores
/// q kᵀ, scaled, masked (lengths, causal, window) by -1e6, softmax, @ v.
/// q is [N, Tq, d] for N = B * heads; k and v have B * kvHeads entries,
/// and query entry b * heads + h uses kv entry b * kvHeads + h / (heads /
/// kvHeads): the query heads of a group are viewed as the rows of one
/// [B * kvHeads, (heads / kvHeads) * Tq, d] operand, so no kv head is
/// copied. `validLens` is per query entry ([N] or [N, Tq]). With
/// `cachePos` (i32[B]) k and v are KV caches and the mask is the cache's
/// (maskBeyondCache; no lengths, causal and window apply there). Returns
/// the output [N, Tq, dv] and the weights [N, Tq, Tk].
std::pair<Value, Value> decomposedAttention(
    PatternRewriter &rewriter, Location loc, Value q, Value k, Value v,
    Value validLens, bool causal, std::optional<int64_t> window, int64_t heads,
    int64_t kvHeads, FloatType products, Value cachePos = Value()) {
  int64_t n = dimOf(q, 0), tq = dimOf(q, 1), d = dimOf(q, 2);
  // products(bf16): the operands of both products rounded (the weights
  // below), as attn.fused_attention's kernels round them.
  q = roundedThrough(rewriter, loc, q, products);
  k = roundedThrough(rewriter, loc, k, products);
  v = roundedThrough(rewriter, loc, v, products);
  int64_t perGroup = heads / kvHeads;
  int64_t groups = n / perGroup;
  bool grouped = perGroup > 1;
  // Scores are multiplied by 1/sqrt(d) rounded to f32 in both paths.
  FloatAttr scale = attentionScale(rewriter, d);
  Value queries =
      grouped ? regroup(rewriter, loc, q, groups, perGroup, true) : q;
  Value scores = MatmulOp::create(rewriter, loc, queries, k,
                                  /*transpose_b=*/true);
  if (grouped)
    scores = regroup(rewriter, loc, scores, groups, perGroup, false);
  scores = ScaleOp::create(rewriter, loc, scores, scale);
  if (cachePos) {
    scores = maskBeyondCache(rewriter, loc, scores, cachePos, heads, window);
    v = zeroRowsBeyondCache(rewriter, loc, v, cachePos, kvHeads, tq);
    window = std::nullopt;
    causal = false;
  }
  if (std::optional<int64_t> hiding = hidingWindow(window, tq))
    scores = maskOutsideWindow(rewriter, loc, scores, *hiding);
  if (causal)
    validLens = causalValidLens(rewriter, loc, validLens, n, tq);
  Value weights =
      validLens
          ? Value(MaskedSoftmaxOp::create(rewriter, loc, scores, validLens))
          : Value(SoftmaxOp::create(rewriter, loc, scores));
  Value probabilities = roundedThrough(rewriter, loc, weights, products);
  if (grouped)
    probabilities =
        regroup(rewriter, loc, probabilities, groups, perGroup, true);
  Value output = MatmulOp::create(rewriter, loc, probabilities, v,
                                  /*transpose_b=*/false);
  if (grouped)
    output = regroup(rewriter, loc, output, groups, perGroup, false);
  return {output, weights};
}

/// Whether every entry of `pos` (i32[B]) is 0: an i1.
Value allAtStart(PatternRewriter &rewriter, Location loc, Value pos) {
  int64_t entries = cast<RankedTensorType>(pos.getType()).getDimSize(0);
  Value zero = arith::ConstantIntOp::create(rewriter, loc, 0, 32);
  auto loop = scf::ForOp::create(
      rewriter, loc, arith::ConstantIndexOp::create(rewriter, loc, 0),
      arith::ConstantIndexOp::create(rewriter, loc, entries),
      arith::ConstantIndexOp::create(rewriter, loc, 1),
      ValueRange{arith::ConstantIntOp::create(rewriter, loc, 1, 1)},
      [&](OpBuilder &b, Location l, Value entry, ValueRange all) {
        Value at = tensor::ExtractOp::create(b, l, pos, entry);
        Value start =
            arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, at, zero);
        scf::YieldOp::create(
            b, l, ValueRange{arith::AndIOp::create(b, l, all[0], start)});
      });
  return loop.getResult(0);
}

/// D2L MultiHeadAttention.forward, with the v2 keywords (biases, kv_heads,
/// window, rope). When its attention is fused, one attn.fused_attention
/// with `heads` reads the projections and writes the merged heads in
/// place: no split_heads or merge_heads copies, kv heads read where they
/// are, rope applied where the kernel reads q and k. With return_weights
/// it is never fused: the weights are the inner attention's,
/// [B*H, Tq, Tk] in split_heads' order (row b*H + h).
struct DecomposeMultiheadAttention : OpRewritePattern<MultiheadAttentionOp> {
  DecomposeMultiheadAttention(MLIRContext *context, AttentionLowering lowering,
                              int64_t fuseThreshold, bool decodeKernel,
                              int64_t prefillFlashRows)
      : OpRewritePattern(context), lowering(lowering),
        fuseThreshold(fuseThreshold), decodeKernel(decodeKernel),
        prefillFlashRows(prefillFlashRows) {}

  LogicalResult matchAndRewrite(MultiheadAttentionOp op,
                                PatternRewriter &rewriter) const override {
    if (op.hasCache())
      return decomposeWithCache(
          op, rewriter,
          attentionLoweringOf(op, lowering, fuseThreshold, decodeKernel)->fused,
          prefillFlashRows);
    Location loc = op.getLoc();
    IntegerAttr heads = op.getHeadsAttr();
    int64_t numHeads = op.getHeads();
    int64_t kvHeads = op.getNumKvHeads();
    bool returnWeights = op.getReturnWeights();
    int64_t tq = dimOf(op.getQ(), 1), tk = dimOf(op.getK(), 1);
    int64_t headDim = dimOf(op.getWQ(), 0) / numHeads;
    std::optional<int64_t> window = hidingWindow(op.getSlidingWindow(), tq);
    auto project = [&](Value x, Value w, Value b) -> Value {
      return LinearOp::create(rewriter, loc, x, w, b);
    };
    if (fuses(op, lowering, fuseThreshold)) {
      Value q = project(op.getQ(), op.getWQ(), op.getBQ());
      Value k = project(op.getK(), op.getWK(), op.getBK());
      Value v = project(op.getV(), op.getWV(), op.getBV());
      Value ropeCos, ropeSin;
      if (op.getRope())
        std::tie(ropeCos, ropeSin) =
            ropeConstants(rewriter, loc, std::max(tq, tk), headDim,
                          op.getRopeBase().convertToFloat());
      auto type = cast<RankedTensorType>(v.getType());
      SmallVector<int64_t> shape = {dimOf(q, 0), tq,
                                    type.getDimSize(2) / kvHeads * numHeads};
      // The result can take q's place: row i of the output needs row i of
      // q only, and q is not used after (the kernel copies the rows it is
      // about to overwrite). Bufferization decides whether it is in place.
      Value init =
          cast<RankedTensorType>(q.getType()).getShape() == ArrayRef(shape)
              ? q
              : tensor::EmptyOp::create(rewriter, loc, shape,
                                        type.getElementType());
      IntegerAttr windowAttr =
          window ? rewriter.getI64IntegerAttr(*window) : IntegerAttr();
      IntegerAttr kvHeadsAttr = kvHeads != numHeads
                                    ? rewriter.getI64IntegerAttr(kvHeads)
                                    : IntegerAttr();
      Value output = FusedAttentionOp::create(
                         rewriter, loc, TypeRange{init.getType()}, q, k, v,
                         op.getValidLens(), ropeCos, ropeSin, init,
                         op.getCausalAttr(), windowAttr, heads, kvHeadsAttr,
                         attentionScale(rewriter, headDim), productsAttr(op))
                         .getResult()[0];
      output = roundedThrough(rewriter, loc, output, innerRoundingOf(op));
      rewriter.replaceOpWithNewOp<LinearOp>(op, output, op.getWO(), op.getBO());
      return success();
    }
    Value q = project(op.getQ(), op.getWQ(), op.getBQ());
    if (op.getRope()) {
      auto [cos, sin] = ropeConstants(rewriter, loc, tq, headDim,
                                      op.getRopeBase().convertToFloat());
      q = applyRope(rewriter, loc, q, numHeads, cos, sin);
    }
    q = SplitHeadsOp::create(rewriter, loc, q, heads);
    IntegerAttr kvHeadsAttr = rewriter.getI64IntegerAttr(kvHeads);
    Value k = project(op.getK(), op.getWK(), op.getBK());
    if (op.getRope()) {
      auto [cos, sin] = ropeConstants(rewriter, loc, tk, headDim,
                                      op.getRopeBase().convertToFloat());
      k = applyRope(rewriter, loc, k, kvHeads, cos, sin);
    }
    k = SplitHeadsOp::create(rewriter, loc, k, kvHeadsAttr);
    Value v = project(op.getV(), op.getWV(), op.getBV());
    v = SplitHeadsOp::create(rewriter, loc, v, kvHeadsAttr);
    Value validLens = op.getValidLens();
    if (validLens)
      validLens = repeatPerHead(rewriter, loc, validLens, numHeads);
    auto [attention, weights] =
        decomposedAttention(rewriter, loc, q, k, v, validLens, op.getCausal(),
                            window, numHeads, kvHeads, attentionProductsOf(op));
    Value concat = MergeHeadsOp::create(rewriter, loc, attention, heads);
    concat = roundedThrough(rewriter, loc, concat, innerRoundingOf(op));
    Value output =
        LinearOp::create(rewriter, loc, concat, op.getWO(), op.getBO());
    SmallVector<Value, 2> results = {output};
    if (returnWeights)
      results.push_back(weights);
    rewriter.replaceOp(op, results);
    return success();
  }

  /// With a KV cache: the T new tokens' keys and values projected (rotated
  /// at positions pos[b] + t), rounded to the cache's type and written at
  /// those rows (attn.cache_update, in place), then the queries attend over
  /// the updated cache: one attn.decode_attention (`fused`: each row's
  /// cache rows only, read where they are) or step by step over the whole
  /// cache with its mask.
  static LogicalResult decomposeWithCache(MultiheadAttentionOp op,
                                          PatternRewriter &rewriter, bool fused,
                                          int64_t prefillFlashRows) {
    Location loc = op.getLoc();
    IntegerAttr heads = op.getHeadsAttr();
    int64_t numHeads = op.getHeads();
    int64_t kvHeads = op.getNumKvHeads();
    int64_t headDim = dimOf(op.getWQ(), 0) / numHeads;
    int64_t cacheRows = dimOf(op.getCacheK(), 1);
    Value pos = op.getCachePos();
    Value q =
        LinearOp::create(rewriter, loc, op.getQ(), op.getWQ(), op.getBQ());
    Value k =
        LinearOp::create(rewriter, loc, op.getK(), op.getWK(), op.getBK());
    Value v =
        LinearOp::create(rewriter, loc, op.getV(), op.getWV(), op.getBV());
    if (op.getRope()) {
      auto [cos, sin] = ropeConstants(rewriter, loc, cacheRows, headDim,
                                      op.getRopeBase().convertToFloat());
      q = applyRope(rewriter, loc, q, numHeads, cos, sin, pos);
      k = applyRope(rewriter, loc, k, kvHeads, cos, sin, pos);
    }
    Type computed = getElementTypeOrSelf(q.getType());
    auto convert = [&](Value x, Type element) -> Value {
      if (getElementTypeOrSelf(x.getType()) == element)
        return x;
      return CastOp::create(rewriter, loc, x, TypeAttr::get(element));
    };
    auto store = [&](Value rows, Value cache) -> Value {
      Type element = getElementTypeOrSelf(cache.getType());
      return CacheUpdateOp::create(rewriter, loc, cache, convert(rows, element),
                                   pos);
    };
    Value newK = store(k, op.getCacheK());
    Value newV = store(v, op.getCacheV());
    if (fused) {
      auto type = cast<RankedTensorType>(q.getType());
      std::optional<int64_t> window = op.getSlidingWindow();
      IntegerAttr kvHeadsAttr = kvHeads != numHeads
                                    ? rewriter.getI64IntegerAttr(kvHeads)
                                    : IntegerAttr();
      // One destination for both kernels below: the if's result is then
      // that buffer, not one of an unknown layout (a copy through a call).
      Value init = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                           type.getElementType());
      auto decode = [&](OpBuilder &b) -> Value {
        return DecodeAttentionOp::create(
                   b, loc, TypeRange{type}, q, newK, newV, pos, init,
                   window ? b.getI64IntegerAttr(*window) : IntegerAttr(), heads,
                   kvHeadsAttr, attentionScale(rewriter, headDim),
                   productsAttr(op))
            .getResult()[0];
      };
      int64_t tokens = type.getDimSize(1);
      Value attention;
      if (prefillFlashRows > 0 && tokens >= prefillFlashRows) {
        // A prompt's prefill (every entry at position 0): the flash kernel
        // on the T rows just written, causal, masked keys weighing 0 as in
        // the decode kernel; the decode kernel otherwise.
        auto ifOp = scf::IfOp::create(rewriter, loc, TypeRange{type},
                                      allAtStart(rewriter, loc, pos),
                                      /*withElseRegion=*/true);
        OpBuilder::InsertionGuard guard(rewriter);
        rewriter.setInsertionPointToStart(ifOp.thenBlock());
        auto written = [&](Value cache) {
          auto cacheType = cast<RankedTensorType>(cache.getType());
          SmallVector<OpFoldResult> offsets(3, rewriter.getIndexAttr(0));
          SmallVector<OpFoldResult> sizes = {
              rewriter.getIndexAttr(cacheType.getDimSize(0)),
              rewriter.getIndexAttr(tokens),
              rewriter.getIndexAttr(cacheType.getDimSize(2))};
          SmallVector<OpFoldResult> strides(3, rewriter.getIndexAttr(1));
          return convert(tensor::ExtractSliceOp::create(
                             rewriter, loc, cache, offsets, sizes, strides),
                         computed);
        };
        std::optional<int64_t> hiding = hidingWindow(window, tokens);
        Value flash =
            FusedAttentionOp::create(
                rewriter, loc, TypeRange{type}, q, written(newK), written(newV),
                /*valid_lens=*/Value(), /*rope_cos=*/Value(),
                /*rope_sin=*/Value(), init, rewriter.getUnitAttr(),
                hiding ? rewriter.getI64IntegerAttr(*hiding) : IntegerAttr(),
                heads, kvHeadsAttr, attentionScale(rewriter, headDim),
                productsAttr(op), rewriter.getUnitAttr())
                .getResult()[0];
        scf::YieldOp::create(rewriter, loc, flash);
        rewriter.setInsertionPointToStart(ifOp.elseBlock());
        scf::YieldOp::create(rewriter, loc, decode(rewriter));
        attention = ifOp.getResult(0);
      } else {
        attention = decode(rewriter);
      }
      attention = roundedThrough(rewriter, loc, attention, innerRoundingOf(op));
      Value output =
          LinearOp::create(rewriter, loc, attention, op.getWO(), op.getBO());
      rewriter.replaceOp(op, ValueRange{output, newK, newV});
      return success();
    }
    IntegerAttr kvHeadsAttr = rewriter.getI64IntegerAttr(kvHeads);
    Value keys = SplitHeadsOp::create(rewriter, loc, convert(newK, computed),
                                      kvHeadsAttr);
    Value values = SplitHeadsOp::create(rewriter, loc, convert(newV, computed),
                                        kvHeadsAttr);
    q = SplitHeadsOp::create(rewriter, loc, q, heads);
    auto [attention, weights] = decomposedAttention(
        rewriter, loc, q, keys, values, /*validLens=*/Value(),
        /*causal=*/true, op.getSlidingWindow(), numHeads, kvHeads,
        attentionProductsOf(op), pos);
    Value concat = MergeHeadsOp::create(rewriter, loc, attention, heads);
    concat = roundedThrough(rewriter, loc, concat, innerRoundingOf(op));
    Value output =
        LinearOp::create(rewriter, loc, concat, op.getWO(), op.getBO());
    if (op.getReturnWeights())
      rewriter.replaceOp(op, ValueRange{output, weights, newK, newV});
    else
      rewriter.replaceOp(op, ValueRange{output, newK, newV});
    return success();
  }

  AttentionLowering lowering;
  int64_t fuseThreshold;
  bool decodeKernel;
  int64_t prefillFlashRows;
};

/// D2L DotProductAttention.forward, either step by step or as one
/// attn.fused_attention. With return_weights, always step by step: the
/// weights are the masked softmax it computes (D2L's attention_weights),
/// which the fused kernel never materializes.
struct DecomposeAttention : OpRewritePattern<AttentionOp> {
  DecomposeAttention(MLIRContext *context, AttentionLowering lowering,
                     int64_t fuseThreshold)
      : OpRewritePattern(context), lowering(lowering),
        fuseThreshold(fuseThreshold) {}

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value q = op.getQ();
    int64_t d = dimOf(q, 2);
    bool returnWeights = op.getReturnWeights();
    if (fuses(op, lowering, fuseThreshold)) {
      RankedTensorType type = op.getResult().getType();
      Value init = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                           type.getElementType());
      rewriter.replaceOpWithNewOp<FusedAttentionOp>(
          op, TypeRange{type}, q, op.getK(), op.getV(), op.getValidLens(),
          /*rope_cos=*/Value(), /*rope_sin=*/Value(), init, op.getCausalAttr(),
          /*window=*/nullptr, /*heads=*/nullptr, /*kv_heads=*/nullptr,
          attentionScale(rewriter, d), productsAttr(op));
      return success();
    }
    auto [output, weights] = decomposedAttention(
        rewriter, loc, q, op.getK(), op.getV(), op.getValidLens(),
        op.getCausal(), std::nullopt, /*heads=*/1, /*kvHeads=*/1,
        attentionProductsOf(op));
    SmallVector<Value, 2> results = {output};
    if (returnWeights)
      results.push_back(weights);
    rewriter.replaceOp(op, results);
    return success();
  }

  AttentionLowering lowering;
  int64_t fuseThreshold;
};

/// D2L AddNorm.forward: ln(dropout(Y) + X), dropout being the identity.
struct DecomposeAddNorm : OpRewritePattern<AddNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddNormOp op,
                                PatternRewriter &rewriter) const override {
    Value sum = AddOp::create(rewriter, op.getLoc(), op.getY(), op.getX());
    rewriter.replaceOpWithNewOp<LayerNormOp>(op, sum, op.getGamma(),
                                             op.getBeta(), op.getEpsAttr());
    return success();
  }
};

/// D2L PositionWiseFFN.forward: dense2(relu(dense1(X))).
struct DecomposeFfn : OpRewritePattern<FfnOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(FfnOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value hidden =
        LinearOp::create(rewriter, loc, op.getX(), op.getW1(), op.getB1());
    hidden = ReluOp::create(rewriter, loc, hidden);
    hidden = roundedThrough(rewriter, loc, hidden, innerRoundingOf(op));
    rewriter.replaceOpWithNewOp<LinearOp>(op, hidden, op.getW2(), op.getB2());
    return success();
  }
};

struct AttnDecomposePass
    : mlir::attn::impl::AttnDecomposeBase<AttnDecomposePass> {
  using AttnDecomposeBase::AttnDecomposeBase;

  void runOnOperation() override {
    std::optional<AttentionLowering> lowering =
        parseAttentionLowering(attentionLowering);
    if (!lowering) {
      getOperation()->emitError("attn-decompose: attention='")
          << attentionLowering << "' is not one of decomposed, fused, auto";
      return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    populateDecomposePatterns(patterns, *lowering, fuseThreshold, decodeKernel,
                              prefillFlashRows);
    // Only decompose: folding (dropout, scale by 1) is canonicalize's job.
    GreedyRewriteConfig config;
    config.enableFolding(false);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      signalPassFailure();
  }
};

} // namespace

void mlir::attn::populateDecomposePatterns(RewritePatternSet &patterns,
                                           AttentionLowering attention,
                                           int64_t fuseThreshold,
                                           bool decodeKernel,
                                           int64_t prefillFlashRows) {
  patterns.add<DecomposeAddNorm, DecomposeFfn>(patterns.getContext());
  patterns.add<DecomposeMultiheadAttention>(patterns.getContext(), attention,
                                            fuseThreshold, decodeKernel,
                                            prefillFlashRows);
  patterns.add<DecomposeAttention>(patterns.getContext(), attention,
                                   fuseThreshold);
}

std::optional<AttentionLowering>
mlir::attn::parseAttentionLowering(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<AttentionLowering>>(name)
      .Case("decomposed", AttentionLowering::Decomposed)
      .Case("fused", AttentionLowering::Fused)
      .Case("auto", AttentionLowering::Auto)
      .Default(std::nullopt);
}

std::optional<AttentionLoweringChoice>
mlir::attn::attentionLoweringOf(Operation *op, AttentionLowering lowering,
                                int64_t fuseThreshold, bool decodeKernel,
                                bool prefillFlash) {
  int64_t tq, tk;
  bool returnWeights;
  if (auto mha = dyn_cast<MultiheadAttentionOp>(op)) {
    // Not the flash kernels: their last key block multiplies the rows
    // past a row's end by a zero weight, and a cache's unwritten rows may
    // hold NaN (docs/language.md: rows past pos[b] + T may hold anything).
    // The decode kernel reads no row past a row's end.
    if (mha.hasCache()) {
      if (mha.getReturnWeights())
        return AttentionLoweringChoice{false,
                                       "return_weights needs the weights"};
      if (lowering == AttentionLowering::Decomposed)
        return AttentionLoweringChoice{false, "attention=decomposed"};
      if (decodeKernel && prefillFlash)
        return AttentionLoweringChoice{
            true, "a KV cache: the decode kernel, each row's cache rows "
                  "only, in fixed chunks of keys; a prompt's prefill of "
                  "prefill-flash-rows tokens or more: the flash kernel on "
                  "the rows it wrote"};
      if (decodeKernel)
        return AttentionLoweringChoice{
            true, "a KV cache: the decode kernel, each row's cache rows "
                  "only, in fixed chunks of keys"};
      return AttentionLoweringChoice{
          false, "a KV cache: step by step (this target has no decode "
                 "kernel), its rows past each position masked out of both "
                 "products"};
    }
    tq = dimOf(mha.getQ(), 1);
    tk = dimOf(mha.getK(), 1);
    returnWeights = mha.getReturnWeights();
  } else if (auto attention = dyn_cast<AttentionOp>(op)) {
    tq = dimOf(attention.getQ(), 1);
    tk = dimOf(attention.getK(), 1);
    returnWeights = attention.getReturnWeights();
  } else {
    return std::nullopt;
  }
  // The fused op computes no weights: a block that returns them gets them
  // from the decomposed softmax.
  if (returnWeights)
    return AttentionLoweringChoice{false, "return_weights needs the weights"};
  switch (lowering) {
  case AttentionLowering::Fused:
    return AttentionLoweringChoice{true, "attention=fused"};
  case AttentionLowering::Decomposed:
    return AttentionLoweringChoice{false, "attention=decomposed"};
  case AttentionLowering::Auto:
    break;
  }
  bool fused = tq * tk >= fuseThreshold;
  return AttentionLoweringChoice{
      fused,
      (llvm::Twine("auto: Tq x Tk = ") + llvm::Twine(tq) + " x " +
       llvm::Twine(tk) + (fused ? " >= " : " < ") + llvm::Twine(fuseThreshold))
          .str()};
}
