//===- TensorCoreGemm.h - GEMMs of bf16/f16 operands on mma.sync -*- C++ -*-=//
//
// attn-compute-in-f32 widens a GEMM's bf16 (f16) operands into f32 buffers
// (docs/precision.md); on a GPU with tensor cores attn-gpu-tile-matmul reads
// the narrow buffers instead and multiplies them with warp-wide
// `nvgpu.mma.sync` m16n8k16 tiles, f32 accumulators, the products exact and
// the sums the tensor core's own (the result rounded once, as everywhere).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_GPU_TENSORCOREGEMM_H
#define ATTN_GPU_TENSORCOREGEMM_H

#include "attn/Target/GpuTarget.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"

#include <optional>

namespace mlir::attn {

/// A GEMM's f32 operands `a` [(B,) M, K] and `b` [(B,) K, N], whose values
/// are all of type `element` (rounded to it by the ops that wrote them),
/// and the bf16 (f16) buffers they are plain widenings of, where they are:
/// `narrowA`, `narrowB` (`bTransposed`: [(B,) N, K], the weight of a
/// `linear`), read by the tensor cores instead.
struct NarrowGemmOperands {
  Value a, b;
  Value narrowA, narrowB;
  bool bTransposed = false;
  Type element;
};

/// The operands of `gemm` (linalg.matmul / batch_matmul on buffers) for
/// the tensor cores, when each f32 operand was last written (before `gemm`,
/// in its block) by a generic that yields a widened bf16 (f16) value or a
/// transpose of such a buffer, both of the same type. A plain widening of a
/// buffer nothing writes before `gemm` (an input, a param) is its
/// narrowA/narrowB.
std::optional<NarrowGemmOperands> matchNarrowOperands(linalg::LinalgOp gemm);

/// C[b] += A[b] B[b] (C f32, [(B,) M, N]) as one launch of tensor-core
/// tiles (the file comment; the tile's sizes in attn/Target/GpuTarget.h).
void emitTensorCoreGemm(OpBuilder &b, Location loc,
                        const NarrowGemmOperands &operands, Value c,
                        bool batched, const GpuTensorCoreTile &tile);

/// Erases the widening (and transposing) ops behind `f32Buffer`, and their
/// buffers, when they are their buffers' only writers and nothing else
/// reads them.
void eraseUnreadWidening(Value f32Buffer);

/// `x` (f32) rounded to tf32 (10 mantissa bits, to nearest, ties away from
/// zero, as cvt.rna.tf32.f32), kept in an f32; NaN as it is.
Value roundedToTf32(OpBuilder &b, Location loc, Value x);

/// `memref[indices]`, or 0 of its element type where `inRange` is false
/// (null: always in range).
Value loadOrZero(OpBuilder &b, Location loc, Value memref,
                 ArrayRef<Value> indices, Value inRange);

/// The tile of C [(B,) M, N] that block `block` of a GEMM launch computes
/// (batch entries outermost, then tile rows, tile columns fastest): its
/// first row and column and its batch entry.
struct TileOfC {
  Value row0, col0, entry;
  bool batched;
  /// The indices of element (i, j) of the block's batch entry.
  SmallVector<Value> at(Value i, Value j) const;
};
TileOfC tileOfC(OpBuilder &b, Location loc, Value block, int64_t tilesM,
                int64_t tilesN, int64_t rows, int64_t cols, bool batched);

/// x < xBound where `checkX` and y < yBound where `checkY`, or null when
/// neither is checked.
Value bothBelow(OpBuilder &b, Location loc, Value x, int64_t xBound,
                bool checkX, Value y, int64_t yBound, bool checkY);

} // namespace mlir::attn

#endif // ATTN_GPU_TENSORCOREGEMM_H
