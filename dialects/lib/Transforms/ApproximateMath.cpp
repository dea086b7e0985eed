//===- ApproximateMath.cpp - Polynomial math, no libm ---------------------===//
//
// math.exp (softmax) has no x86 instruction: LLVM would call expf from libm
// for every lane. Upstream's polynomial approximation keeps it in vector
// registers and keeps kernels free of libm, so an object links with only a
// C compiler.
//
//===----------------------------------------------------------------------===//

#include "attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNAPPROXIMATEMATH
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

struct AttnApproximateMathPass
    : mlir::attn::impl::AttnApproximateMathBase<AttnApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    auto approximated = [](StringRef name) {
      return name == math::ExpOp::getOperationName();
    };
    populateMathF32ExpansionPatterns(patterns, approximated);
    populateMathPolynomialApproximationPatterns(patterns, approximated);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
