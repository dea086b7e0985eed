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
#include <initializer_list>
#include <iterator>
#include <vector>

namespace mlir::attn {

/// Tables of more elements than this are computed by the kernel from
/// indices (positionalEncodingEntry) instead of being embedded in the object:
/// a [262144, 1024] table is a 1 GB constant.
constexpr int64_t kMaxConstantTableElements = int64_t(1) << 20;

/// The divisor of feature pair `j` (columns 2j and 2j+1) for `width`
/// features: pow(10000, float(2j) / float(width)) rounded to float.
inline float positionalEncodingDivisor(int64_t j, int64_t width) {
  float exponent = static_cast<float>(2 * j) / static_cast<float>(width);
  return static_cast<float>(std::pow(10000.0, static_cast<double>(exponent)));
}

/// Whether the kernel computes a [rows, width] table (positionalEncodingEntry)
/// rather than reading it from a constant.
inline bool positionalEncodingIsComputed(int64_t rows, int64_t width) {
  return rows * width > kMaxConstantTableElements;
}

/// The divisor of each of `width` columns (columns 2j and 2j+1 share
/// pair j's): what a computed table divides the row index by.
inline std::vector<float> positionalEncodingColumnDivisors(int64_t width) {
  std::vector<float> divisors(width);
  for (int64_t column = 0; column < width; ++column)
    divisors[column] = positionalEncodingDivisor(column / 2, width);
  return divisors;
}

/// [rows, width], row-major; `width` is even.
inline std::vector<float> positionalEncodingTable(int64_t rows, int64_t width) {
  std::vector<float> table(rows * width);
  for (int64_t j = 0; 2 * j < width; ++j) {
    float divisor = positionalEncodingDivisor(j, width);
    for (int64_t i = 0; i < rows; ++i) {
      float angle = static_cast<float>(i) / divisor;
      table[i * width + 2 * j] = static_cast<float>(std::sin(double(angle)));
      table[i * width + 2 * j + 1] =
          static_cast<float>(std::cos(double(angle)));
    }
  }
  return table;
}

/// sin(angle) (`odd` zero) or cos(angle) (`odd` one) in double, from
/// arithmetic alone (no libm: kernels call none), for the float32 angles of
/// the table above: Cody-Waite reduction by pi/2 split into parts of at most
/// 14 bits (each product with the quadrant count exact while |angle| <
/// 2^39, beyond every table of at most 2^40 elements), then fdlibm's sin and
/// cos kernels on [-pi/4, pi/4]. The error is far below a float's half ulp,
/// so rounding the result to float gives the table's entry (but for ties
/// within ~2^-40 of a rounding boundary). `Ops` builds the arithmetic:
/// doubles for a check, arith ops in a kernel. It provides Float64 and
/// Int64 value types and constant, add, sub, mul, roundToInt (a double
/// holding an integer -> Int64), addInt, andInt (with a constant) and
/// select (a nonzero Int64 picks the first value).
template <typename Ops>
typename Ops::Float64 positionalEncodingEntry(Ops &ops,
                                              typename Ops::Float64 angle,
                                              typename Ops::Int64 odd) {
  using F = typename Ops::Float64;
  // Round to nearest: adding and subtracting 1.5 * 2^52 leaves an integer
  // (exact for |x| < 2^51).
  const double kRoundMagic = 0x1.8p52;
  F quarters = ops.mul(angle, ops.constant(0x1.45f306dc9c883p-1)); // 2/pi
  F k = ops.sub(ops.add(quarters, ops.constant(kRoundMagic)),
                ops.constant(kRoundMagic));
  F r = angle;
  for (double part : {0x1.9218p+0, 0x1.ed5p-14, 0x1.10bp-30, 0x1.184p-44,
                      0x1.a62p-58, 0x1.8cc51701b839ap-72})
    r = ops.sub(r, ops.mul(k, ops.constant(part)));
  F z = ops.mul(r, r);
  auto horner = [&](std::initializer_list<double> coefficients) {
    F acc = ops.constant(*std::rbegin(coefficients));
    for (auto c = std::rbegin(coefficients) + 1; c != std::rend(coefficients);
         ++c)
      acc = ops.add(ops.constant(*c), ops.mul(z, acc));
    return acc;
  };
  // fdlibm's __kernel_sin and __kernel_cos.
  F sinPoly = horner({-1.66666666666666324348e-01, 8.33333333332248946124e-03,
                      -1.98412698298579493134e-04, 2.75573137070700676789e-06,
                      -2.50507602534068634195e-08, 1.58969099521155010221e-10});
  F sinR = ops.add(r, ops.mul(ops.mul(r, z), sinPoly));
  F cosPoly = horner({4.16666666666666019037e-02, -1.38888888888741095749e-03,
                      2.48015872894767294178e-05, -2.75573143513906633035e-07,
                      2.08757232129817482790e-09, -1.13596475577881948265e-11});
  F cosR = ops.add(ops.sub(ops.constant(1.0), ops.mul(ops.constant(0.5), z)),
                   ops.mul(ops.mul(z, z), cosPoly));
  // cos(x) = sin(x + pi/2): one more quarter turn. Quarter q of a turn:
  // sin is sinR, cosR, -sinR, -cosR for q = 0, 1, 2, 3.
  auto q = ops.addInt(ops.roundToInt(k), odd);
  F value = ops.select(ops.andInt(q, 1), cosR, sinR);
  return ops.select(ops.andInt(q, 2), ops.mul(value, ops.constant(-1.0)),
                    value);
}

/// positionalEncodingEntry's Ops on plain doubles (what a test compares
/// with the table).
struct DoubleOps {
  using Float64 = double;
  using Int64 = int64_t;
  double constant(double c) { return c; }
  double add(double a, double b) { return a + b; }
  double sub(double a, double b) { return a - b; }
  double mul(double a, double b) { return a * b; }
  int64_t roundToInt(double a) { return static_cast<int64_t>(a); }
  int64_t addInt(int64_t a, int64_t b) { return a + b; }
  int64_t andInt(int64_t a, int64_t mask) { return a & mask; }
  double select(int64_t pick, double a, double b) { return pick ? a : b; }
};

} // namespace mlir::attn

#endif // ATTN_IR_POSITIONALENCODING_H
