//===- PositionalEncoding.h - D2L's positional-encoding table ---*- C++ -*-===//
//
// The first `rows` rows of D2L's PositionalEncoding table for `width`
// features, computed as torch computes it in float32:
//   X = arange(max_len)[:, None] / pow(10000, arange(0, D, 2) / D)
//   P[:, 0::2] = sin(X), P[:, 1::2] = cos(X)
// Each float32 operation is rounded as torch rounds it; sin and cos of the
// float32 argument are evaluated in double and rounded once. Every backend
// (the MLIR lowering, Halide) reads this table.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_IR_POSITIONALENCODING_H
#define ATTN_IR_POSITIONALENCODING_H

#include <cmath>
#include <cstdint>
#include <vector>

namespace mlir::attn {

/// [rows, width], row-major; `width` is even.
inline std::vector<float> positionalEncodingTable(int64_t rows, int64_t width) {
  std::vector<float> table(rows * width);
  for (int64_t j = 0; 2 * j < width; ++j) {
    float exponent = static_cast<float>(2 * j) / static_cast<float>(width);
    float divisor =
        static_cast<float>(std::pow(10000.0, static_cast<double>(exponent)));
    for (int64_t i = 0; i < rows; ++i) {
      float angle = static_cast<float>(i) / divisor;
      table[i * width + 2 * j] = static_cast<float>(std::sin(double(angle)));
      table[i * width + 2 * j + 1] =
          static_cast<float>(std::cos(double(angle)));
    }
  }
  return table;
}

} // namespace mlir::attn

#endif // ATTN_IR_POSITIONALENCODING_H
