//===- Bf16PairGemm.h - A GEMM of bf16 operands read in k pairs -*- C++ -*-===//
//
// attn-bf16-pair-gemms rewrites a GEMM whose two operands are widened bf16
// tensors into a linalg.generic that sums k in pairs, the order of
// AVX512-BF16's vdpbf16ps:
//
//   C[m, n] = (C[m, n] + A[m, 2p+1] * B[2p+1, n]) + A[m, 2p] * B[2p, n]
//
// for p = 0, 1, ... (every product exact in f32, each sum rounded once), in
// one of two forms:
// - slots (targets with the instruction): the generic reads A as bf16 and B
//   from `rhs`, [K/2, N] f32 slots that each hold the bf16 pair
//   (B[2p, n], B[2p+1, n]) as bits, the low half the even k (the VNNI
//   layout), made once per params by NAME_prepare;
// - widened (every other CPU): A and B widened to f32 as for any GEMM, B
//   [K, N]; the generic reads them at k = 2p+1, then 2p.
// attn-tile-and-vectorize turns either into register blocks (vdpbf16ps, or
// FMAs in the pair order): every CPU gets the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_CPU_BF16PAIRGEMM_H
#define ATTN_CPU_BF16PAIRGEMM_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Value.h"

#include <optional>

namespace mlir::attn {

/// The unit attribute that marks the generic.
constexpr llvm::StringLiteral kBf16PairGemmAttr = "attn.bf16_pair_gemm";

/// The operands of a marked generic: `lhs` [M, K/2, 2] (bf16 for slots,
/// else f32), `rhs` (slots [K/2, N], else [K/2, 2, N] f32), `out` [M, N]
/// f32; rows M, columns N, pairs K/2.
struct Bf16PairGemm {
  Value lhs, rhs, out;
  int64_t rows, columns, pairs;
  bool slots;
};

/// The operands of `op` when it is a generic attn-bf16-pair-gemms made, with
/// static shapes (on tensors or buffers).
std::optional<Bf16PairGemm> matchBf16PairGemm(linalg::GenericOp op);

} // namespace mlir::attn

#endif // ATTN_CPU_BF16PAIRGEMM_H
