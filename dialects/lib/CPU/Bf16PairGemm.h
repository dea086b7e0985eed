//===- Bf16PairGemm.h - A GEMM of bf16 operands read in k pairs -*- C++ -*-===//
//
// attn-bf16-pair-gemms rewrites a GEMM whose two operands are widened bf16
// tensors into a linalg.generic that sums k in pairs, the order of
// AVX512-BF16's vdpbf16ps:
//
//   C[m, n] = (C[m, n] + A[m, 2p+1] * B[2p+1, n]) + A[m, 2p] * B[2p, n]
//
// for p = 0, 1, ... (every product exact in f32, each sum rounded once), in
// one of three forms:
// - widened (CPUs without a bf16 instruction that pays): A and B widened to
//   f32 as for any GEMM, read as [M, K/2, 2] and [K/2, 2, N] at k = 2p+1,
//   then 2p; FMAs in that order;
// - slots (AVX512-BF16 without AMX): A read as bf16 [M, K/2, 2]; B from
//   [K/2, N] f32 slots that each hold the bf16 pair (B[2p, n], B[2p+1, n])
//   as bits, the low half the even k (the VNNI layout), made once per
//   params by NAME_prepare; vdpbf16ps, which sums in that order;
// - tiles (AMX; M and N multiples of 16, K of 32): the slots in 16-column
//   tiles,
//   [N/16, K/2, 16], so that each AMX tile of B is 1 KiB of consecutive
//   memory; tdpbf16ps, whose sums are its own (within a unit in the last
//   place of the others).
// attn-tile-and-vectorize turns each into register blocks (AMX tiles).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_CPU_BF16PAIRGEMM_H
#define ATTN_CPU_BF16PAIRGEMM_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Value.h"

#include <optional>

namespace mlir::attn {

enum class Bf16PairForm { Widened, Slots, Tiles };

/// The operands of a marked generic: `lhs` [M, K/2, 2] (bf16, f32 when
/// widened), `rhs` (widened [K/2, 2, N], slots [K/2, N], tiles
/// [N/16, K/2, 16], all f32), `out` [M, N] f32; rows M, columns N, pairs
/// K/2.
struct Bf16PairGemm {
  Value lhs, rhs, out;
  int64_t rows, columns, pairs;
  Bf16PairForm form;
};

/// The operands of `op` when it is a generic attn-bf16-pair-gemms made, with
/// static shapes (on tensors or buffers).
std::optional<Bf16PairGemm> matchBf16PairGemm(linalg::GenericOp op);

} // namespace mlir::attn

#endif // ATTN_CPU_BF16PAIRGEMM_H
