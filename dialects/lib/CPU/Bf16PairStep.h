//===- Bf16PairStep.h - One k pair of a bf16 product, in registers -*- C++ -*-//
//
// The step shared by the bf16 pair GEMMs' register blocks and the flash
// attention's two products without AMX: acc += A[row, 2k+1] B[2k+1, .],
// then the even k (vdpbf16ps' order, Bf16PairGemm.h), for `rows` rows of
// A and the pieces of one row of B.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_CPU_BF16PAIRSTEP_H
#define ATTN_CPU_BF16PAIRSTEP_H

#include "attn/Target/CpuTarget.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

namespace mlir::attn {

/// One k step of pairs. `slots` are the pieces of B's row k (vectors of f32
/// slots, each the bits of a bf16 pair, the even k in the low half);
/// `lhsPairs` the rows' pairs of A as vector<1xi32>; `acc` the rows'
/// accumulators, acc[row * pieces + piece]. With `dot` vdpbf16ps (every
/// piece of 4, 8 or 16 lanes: AVX512-BF16, AVX512VL below 16) or bfdot
/// (pieces of 4 lanes: AArch64's BF16); with None, FMAs on the widened
/// halves, odd k first. Returns the new accumulators.
SmallVector<Value> emitPairStep(OpBuilder &b, Location loc,
                                CpuSchedule::Bf16Dot dot, ArrayRef<Value> slots,
                                ArrayRef<Value> lhsPairs, ValueRange acc);

} // namespace mlir::attn

#endif // ATTN_CPU_BF16PAIRSTEP_H
