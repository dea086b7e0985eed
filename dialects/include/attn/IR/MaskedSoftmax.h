//===- MaskedSoftmax.h - The numbers of D2L's masked softmax ----*- C++ -*-===//
//
// The numbers every lowering of masked_softmax and attention shares: the
// decomposed one (attn-lower-to-linalg) and the flash loops of the CPU and
// the GPU (attn-lower-fused-attention, attn-gpu-lower-fused-attention).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_IR_MASKEDSOFTMAX_H
#define ATTN_IR_MASKEDSOFTMAX_H

namespace mlir::attn {

/// D2L's masked_softmax replaces the score of a masked key by this value
/// (not -inf: a row with no visible key is uniform, not NaN).
constexpr float kMaskedScore = -1e6f;

/// exp(x) is 0 in f32 for x below -kExpUnderflow: a masked key's weight
/// exp(kMaskedScore - m) vanishes, and skipping the key is exact, unless the
/// row's largest visible score m is below kMaskedScore + kExpUnderflow.
constexpr float kExpUnderflow = 104.0f;

} // namespace mlir::attn

#endif // ATTN_IR_MASKEDSOFTMAX_H
