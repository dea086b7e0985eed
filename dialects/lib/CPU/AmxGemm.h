//===- AmxGemm.h - bf16 pair GEMMs on AMX tiles -----------------*- C++ -*-===//
//
// attn-tile-and-vectorize's lowering of a bf16 pair GEMM of the tiles form
// (Bf16PairGemm.h) to the amx dialect: tdpbf16ps on 16 x 16 tiles of C.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_CPU_AMXGEMM_H
#define ATTN_CPU_AMXGEMM_H

#include "Bf16PairGemm.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::attn {

/// Asks Linux for AMX's tile state at the start of `func` (once: `granted`
/// holds the answer, an i1, after the first call) and makes `func` return
/// ATTNC_STATUS_UNSUPPORTED_CPU where it is refused; tile code must run
/// under `granted` (the first tile instruction faults without it).
void requestAmxTileStateOnce(OpBuilder &b, func::FuncOp func, Value &granted);

/// Replaces a bf16 pair GEMM of the tiles form by AMX blocks of 32 x 32
/// (2 x 2 tiles of C, with 2 of A and 2 of B: AMX's 8 tiles), 16 wide or
/// high at the edges; A first copied into tiles (packA). C's
/// initialization and activation stay the ops they are
/// (vectorized as strips). The function asks for the tile state once and
/// returns ATTNC_STATUS_UNSUPPORTED_CPU, its GEMMs skipped, when Linux
/// refuses it (`granted`: that answer, made on the first call).
LogicalResult lowerBf16PairGemmToAmx(RewriterBase &rewriter,
                                     linalg::GenericOp op,
                                     const Bf16PairGemm &gemm, bool parallel,
                                     int64_t parallelFlops, int64_t panelBytes,
                                     Value &granted);

} // namespace mlir::attn

#endif // ATTN_CPU_AMXGEMM_H
