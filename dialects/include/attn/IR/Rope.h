//===- Rope.h - The rotary position embedding's tables ----------*- C++ -*-===//
//
// multihead_attention(..., rope=true[, rope_base=b]) rotates every head of
// the projected q and k the way Hugging Face Llama does
// (apply_rotary_pos_emb, rotate_half): for a head of dimension d and the
// row at position t,
//
//   x'[j]       = x[j]       * cos[t][j] - x[j + d/2] * sin[t][j]
//   x'[j + d/2] = x[j + d/2] * cos[t][j] + x[j]       * sin[t][j]
//
// for j < d/2. The tables are those of LlamaRotaryEmbedding, computed in
// float32 as torch computes them: inv_freq[j] = 1 / b^((2j) / d) (the
// exponent, the power and the quotient each rounded to f32), the angle
// t * inv_freq[j] rounded to f32, and its cosine and sine rounded to f32
// (within an ulp of torch's float32 cos and sin). Every lowering (the
// decomposed one and the fused kernels) reads these tables.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_IR_ROPE_H
#define ATTN_IR_ROPE_H

#include <cmath>
#include <cstdint>
#include <vector>

namespace mlir::attn {

struct RopeTables {
  /// [positions, d / 2], row-major.
  std::vector<float> cos, sin;
};

inline RopeTables ropeTables(int64_t positions, int64_t headDim, float base) {
  int64_t half = headDim / 2;
  std::vector<float> invFreq(half);
  for (int64_t j = 0; j < half; ++j) {
    float exponent = static_cast<float>(2 * j) / static_cast<float>(headDim);
    float power = static_cast<float>(
        std::pow(static_cast<double>(base), static_cast<double>(exponent)));
    invFreq[j] = 1.0f / power;
  }
  RopeTables tables;
  tables.cos.resize(positions * half);
  tables.sin.resize(positions * half);
  for (int64_t t = 0; t < positions; ++t)
    for (int64_t j = 0; j < half; ++j) {
      float angle = static_cast<float>(t) * invFreq[j];
      tables.cos[t * half + j] =
          static_cast<float>(std::cos(static_cast<double>(angle)));
      tables.sin[t * half + j] =
          static_cast<float>(std::sin(static_cast<double>(angle)));
    }
  return tables;
}

} // namespace mlir::attn

#endif // ATTN_IR_ROPE_H
