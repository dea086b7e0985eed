//===- GemmEpilogue.h - What a GEMM does besides accumulating --*- C++ -*-===//
//
// After bufferization a linear layer is three passes over its output C: a
// linalg.fill (zeros) or linalg.broadcast (the bias over rows) writes C, the
// linalg.matmul accumulates into it, and an activation (a linalg.generic
// computing relu, gelu, ... of C alone) may read it into another buffer.
// The GEMM's register blocks can start from zeros or the bias and store
// activation(C) where the activation wrote, saving those passes.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TRANSFORMS_GEMMEPILOGUE_H
#define ATTN_TRANSFORMS_GEMMEPILOGUE_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Value.h"

namespace mlir {
class OpBuilder;
class RewriterBase;

namespace attn {

struct GemmEpilogue {
  /// C starts as zeros (`zeroInit`) or as `bias` (1-D, one value per
  /// column) on every row, not as C's contents.
  bool zeroInit = false;
  Value bias;
  /// An elementwise linalg.generic of C alone (identity maps, a body of
  /// scalar arith/math ops on C's element) whose result goes to
  /// `activationOutput` (viewed in C's shape) instead of C, once the sum is
  /// complete; C then only holds partial sums. The GEMM lowering emits its
  /// body on the register blocks (applyActivation) and then erases it.
  linalg::GenericOp activation;
  Value activationOutput;
};

/// Erases the fill or broadcast that initializes `matmul`'s accumulator (its
/// one init), and finds the activation that reads its result, when nothing
/// else reads or writes the accumulator and they sit right next to the
/// matmul; returns what the GEMM lowering must do instead. The ops are left
/// alone otherwise. `matmul` is a linalg.matmul or a bf16 pair GEMM
/// (Bf16PairGemm.h).
GemmEpilogue foldGemmEpilogue(RewriterBase &rewriter, linalg::LinalgOp matmul);

/// The activation's body applied to every lane of `vector` (a vector of C's
/// elements): each scalar op is re-created on vectors of that length,
/// scalar constants become splats.
Value applyActivation(OpBuilder &b, Location loc, linalg::GenericOp activation,
                      Value vector);

} // namespace attn
} // namespace mlir

#endif // ATTN_TRANSFORMS_GEMMEPILOGUE_H
