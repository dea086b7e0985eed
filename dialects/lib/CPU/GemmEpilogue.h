//===- GemmEpilogue.h - What a GEMM does besides accumulating --*- C++ -*-===//
//
// After bufferization a linear layer is three passes over its output C: a
// linalg.fill (zeros) or linalg.broadcast (the bias over rows) writes C, the
// linalg.matmul accumulates into it, and a ReLU linalg.generic may read it
// into another buffer. The GEMM's register blocks can start from zeros or
// the bias and store max(C, 0) where the ReLU wrote, saving those passes.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TRANSFORMS_GEMMEPILOGUE_H
#define ATTN_TRANSFORMS_GEMMEPILOGUE_H

#include "mlir/IR/Value.h"

namespace mlir {
class RewriterBase;
namespace linalg {
class MatmulOp;
} // namespace linalg

namespace attn {

struct GemmEpilogue {
  /// C starts as zeros (`zeroInit`) or as `bias` (1-D, one value per
  /// column) on every row, not as C's contents.
  bool zeroInit = false;
  Value bias;
  /// Where max(C, 0) goes (viewed in C's shape) instead of C, once the sum
  /// is complete; C then only holds partial sums.
  Value reluOutput;
};

/// Erases the fill or broadcast that initializes `matmul`'s accumulator and
/// the ReLU that reads its result, when nothing else reads or writes the
/// accumulator and they sit right next to the matmul, and returns what the
/// GEMM lowering must do instead. The ops are left alone otherwise.
GemmEpilogue foldGemmEpilogue(RewriterBase &rewriter, linalg::MatmulOp matmul);

} // namespace attn
} // namespace mlir

#endif // ATTN_TRANSFORMS_GEMMEPILOGUE_H
