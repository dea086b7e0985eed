//===- Decompose.cpp - Composite attn ops into primitive attn ops ---------===//
//
// Each pattern follows the D2L PyTorch code of the composite op line by line
// (see Passes.td for the rewrites and SPEC §2 for the semantics).
//
//===----------------------------------------------------------------------===//

#include "attn/IR/AttnOps.h"
#include "attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/StringSwitch.h"

#include <cmath>

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

/// The lengths that make masked_softmax also apply the causal mask:
/// masking j > i and j >= len by the same -1e6 replacement is masking
/// j >= min(len, i + 1). Returns i32[N, Tq].
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

/// Whether attention over Tq x Tk scores is lowered as one fused op.
bool fusesAttention(AttentionLowering lowering, int64_t fuseThreshold,
                    int64_t tq, int64_t tk) {
  return lowering == AttentionLowering::Fused ||
         (lowering == AttentionLowering::Auto && tq * tk >= fuseThreshold);
}

/// 1/sqrt(d) rounded to f32, the factor of both attention lowerings.
FloatAttr attentionScale(PatternRewriter &rewriter, int64_t d) {
  return rewriter.getF32FloatAttr(
      static_cast<float>(1.0 / std::sqrt(static_cast<double>(d))));
}

/// D2L MultiHeadAttention.forward (bias=False). When its attention is
/// fused, one attn.fused_attention with `heads` reads the projections and
/// writes the merged heads in place: no split_heads or merge_heads copies.
/// With return_weights it is never fused: the weights are the inner
/// attention's, [B*H, Tq, Tk] in split_heads' order (row b*H + h).
struct DecomposeMultiheadAttention : OpRewritePattern<MultiheadAttentionOp> {
  DecomposeMultiheadAttention(MLIRContext *context, AttentionLowering lowering,
                              int64_t fuseThreshold)
      : OpRewritePattern(context), lowering(lowering),
        fuseThreshold(fuseThreshold) {}

  LogicalResult matchAndRewrite(MultiheadAttentionOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    IntegerAttr heads = op.getHeadsAttr();
    bool returnWeights = op.getReturnWeights();
    if (!returnWeights &&
        fusesAttention(lowering, fuseThreshold, dimOf(op.getQ(), 1),
                       dimOf(op.getK(), 1))) {
      auto project = [&](Value x, Value w) -> Value {
        return LinearOp::create(rewriter, loc, x, w, Value());
      };
      Value q = project(op.getQ(), op.getWQ());
      Value k = project(op.getK(), op.getWK());
      Value v = project(op.getV(), op.getWV());
      auto type = cast<RankedTensorType>(v.getType());
      SmallVector<int64_t> shape(type.getShape());
      shape[1] = dimOf(q, 1);
      // The result can take q's place: row i of the output needs row i of
      // q only, and q is not used after (the kernel copies the rows it is
      // about to overwrite). Bufferization decides whether it is in place.
      Value init =
          cast<RankedTensorType>(q.getType()).getShape() == ArrayRef(shape)
              ? q
              : tensor::EmptyOp::create(rewriter, loc, shape,
                                        type.getElementType());
      Value output = FusedAttentionOp::create(
                         rewriter, loc, TypeRange{init.getType()}, q, k, v,
                         op.getValidLens(), init, op.getCausalAttr(), heads,
                         attentionScale(rewriter, dimOf(q, 2) / heads.getInt()))
                         .getResult()[0];
      rewriter.replaceOpWithNewOp<LinearOp>(op, output, op.getWO(), Value());
      return success();
    }
    auto projectAndSplit = [&](Value x, Value w) -> Value {
      Value projected = LinearOp::create(rewriter, loc, x, w, Value());
      return SplitHeadsOp::create(rewriter, loc, projected, heads);
    };
    Value q = projectAndSplit(op.getQ(), op.getWQ());
    Value k = projectAndSplit(op.getK(), op.getWK());
    Value v = projectAndSplit(op.getV(), op.getWV());
    Value validLens = op.getValidLens();
    if (validLens)
      validLens = repeatPerHead(rewriter, loc, validLens, heads.getInt());
    auto attention =
        AttentionOp::create(rewriter, loc, q, k, v, validLens,
                            op.getCausalAttr(), op.getReturnWeightsAttr());
    Value concat =
        MergeHeadsOp::create(rewriter, loc, attention.getResult(), heads);
    Value output = LinearOp::create(rewriter, loc, concat, op.getWO(), Value());
    SmallVector<Value, 2> results = {output};
    if (returnWeights)
      results.push_back(attention.getAttentionWeights());
    rewriter.replaceOp(op, results);
    return success();
  }

  AttentionLowering lowering;
  int64_t fuseThreshold;
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
    int64_t n = dimOf(q, 0), tq = dimOf(q, 1), d = dimOf(q, 2);
    int64_t tk = dimOf(op.getK(), 1);
    // Scores are multiplied by 1/sqrt(d) rounded to f32 in both paths.
    FloatAttr scale = attentionScale(rewriter, d);
    bool returnWeights = op.getReturnWeights();
    if (!returnWeights && fusesAttention(lowering, fuseThreshold, tq, tk)) {
      RankedTensorType type = op.getResult().getType();
      Value init = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                           type.getElementType());
      rewriter.replaceOpWithNewOp<FusedAttentionOp>(
          op, TypeRange{type}, q, op.getK(), op.getV(), op.getValidLens(), init,
          op.getCausalAttr(), /*heads=*/nullptr, scale);
      return success();
    }
    Value scores = MatmulOp::create(rewriter, loc, q, op.getK(),
                                    /*transpose_b=*/true);
    scores = ScaleOp::create(rewriter, loc, scores, scale);
    Value validLens = op.getValidLens();
    if (op.getCausal())
      validLens = causalValidLens(rewriter, loc, validLens, n, tq);
    Value weights =
        validLens
            ? Value(MaskedSoftmaxOp::create(rewriter, loc, scores, validLens))
            : Value(SoftmaxOp::create(rewriter, loc, scores));
    Value output = MatmulOp::create(rewriter, loc, weights, op.getV(),
                                    /*transpose_b=*/false);
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
    rewriter.replaceOpWithNewOp<LinearOp>(op, hidden, op.getW2(), op.getB2());
    return success();
  }
};

struct AttnDecomposePass
    : mlir::attn::impl::AttnDecomposeBase<AttnDecomposePass> {
  using AttnDecomposeBase::AttnDecomposeBase;

  void runOnOperation() override {
    std::optional<AttentionLowering> lowering =
        llvm::StringSwitch<std::optional<AttentionLowering>>(attentionLowering)
            .Case("decomposed", AttentionLowering::Decomposed)
            .Case("fused", AttentionLowering::Fused)
            .Case("auto", AttentionLowering::Auto)
            .Default(std::nullopt);
    if (!lowering) {
      getOperation()->emitError("attn-decompose: attention='")
          << attentionLowering << "' is not one of decomposed, fused, auto";
      return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    populateDecomposePatterns(patterns, *lowering, fuseThreshold);
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
                                           int64_t fuseThreshold) {
  patterns.add<DecomposeAddNorm, DecomposeFfn>(patterns.getContext());
  patterns.add<DecomposeMultiheadAttention, DecomposeAttention>(
      patterns.getContext(), attention, fuseThreshold);
}
