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

struct AttnFuseElementwisePass
    : mlir::attn::impl::AttnFuseElementwiseBase<AttnFuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::ControlFusionFn onlyGenerics = [](OpOperand *fused) {
      Operation *producer = fused->get().getDefiningOp();
      return isa_and_nonnull<linalg::GenericOp>(producer) &&
             isa<linalg::GenericOp>(fused->getOwner());
    };
    linalg::populateElementwiseOpsFusionPatterns(patterns, onlyGenerics);
    linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
