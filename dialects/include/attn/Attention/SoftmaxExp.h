//===- SoftmaxExp.h - The softmax's exp, built in one place -----*- C++ -*-===//
//
// Every lowering of softmax and attention (the step-by-step softmax, the CPU
// and GPU flash loops, both decode kernels, the split-KV combine, the exact
// rows) builds its exp here, so the choice of how exp is computed is made
// once:
//
//   softmaxExp        math.exp, which each target lowers: the CPU by
//                     attn-approximate-math's polynomial (no libm), the GPU
//                     by libdevice's __nv_expf;
//   nonPositiveExp16  on AVX-512, for x <= 0 (a score minus its row's max):
//                     Cephes' expf polynomial scaled by 2^k with vscalefps,
//                     0 below ln(2^-126) (no subnormal for vcvtneps2bf16 to
//                     flush); a third of math.exp's instructions. The bf16
//                     weights of the AMX and vdpbf16ps flash loops.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_ATTENTION_SOFTMAXEXP_H
#define ATTN_ATTENTION_SOFTMAXEXP_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

namespace mlir::attn {

/// exp(x) of an f32 scalar or vector (math.exp).
Value softmaxExp(OpBuilder &b, Location loc, Value x);

/// exp(x) of a vector<16xf32> x <= 0 (or NaN) on AVX-512 (see above); NaN
/// stays NaN.
Value nonPositiveExp16(OpBuilder &b, Location loc, Value x);

} // namespace mlir::attn

#endif // ATTN_ATTENTION_SOFTMAXEXP_H
