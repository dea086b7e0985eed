//===- FuseElementwise.cpp - Fuse elementwise generics, keep GEMMs named --===//
//
// Upstream's elementwise fusion also folds transposes and broadcasts into a
// matmul, which turns it into a linalg.generic with permuted maps: the
// register-block GEMM lowering no longer recognizes it and the GEMM runs as
// scalar loops. This pass fuses only linalg.generic producers into
// linalg.generic consumers, so elementwise chains (scale, mask, exp, the
// positional-encoding add) become one pass over memory and the named
// matmuls stay named.
//
// Each fusion clones the producer's body into a new consumer, so fusing a
// chain of n ops without a bound costs O(n^2); a fused body stops growing at
// kMaxFusedBodyOps ops (a long chain becomes several passes over memory),
// which keeps the pass linear in the chain's length.
//
//===----------------------------------------------------------------------===//

#include "attn/Transforms/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNFUSEELEMENTWISE
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

/// The most ops (terminator excluded) a fused generic's body may hold.
constexpr int64_t kMaxFusedBodyOps = 64;

int64_t bodyOps(linalg::GenericOp op) {
  return static_cast<int64_t>(op.getBody()->getOperations().size()) - 1;
}

struct AttnFuseElementwisePass
    : mlir::attn::impl::AttnFuseElementwiseBase<AttnFuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::ControlFusionFn onlyGenerics = [](OpOperand *fused) {
      auto producer = fused->get().getDefiningOp<linalg::GenericOp>();
      auto consumer = dyn_cast<linalg::GenericOp>(fused->getOwner());
      return producer && consumer &&
             bodyOps(producer) + bodyOps(consumer) <= kMaxFusedBodyOps;
    };
    linalg::populateElementwiseOpsFusionPatterns(patterns, onlyGenerics);
    linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
