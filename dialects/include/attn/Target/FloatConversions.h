//===- FloatConversions.h - f32 <-> bf16/f16 on the host ---------*- C++
//-*-===//
//
// The conversions of docs/spec.md §2 (v3) for host code (the runtime's
// .npy I/O, attnc run, the Python module): round to nearest even, overflow
// to +-inf, NaN to a quiet NaN (bf16 0x7fc0 as torch; f16 0x7e00 with the
// sign), subnormals kept. Bit for bit what kernels compute
// (attn-expand-float-conversions and F16C), checked against independent
// references by LowPrecisionTest.cpp. No F16C, no LLVM beyond the
// element-type table's header.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TARGET_FLOATCONVERSIONS_H
#define ATTN_TARGET_FLOATCONVERSIONS_H

#include "attn/Target/ElementType.h"

#include <cstdint>
#include <cstring>

namespace mlir::attn {

inline uint32_t floatBits(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  return bits;
}

inline float floatFromBits(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof(x));
  return x;
}

inline float widenBf16(uint16_t bits) {
  return floatFromBits(uint32_t(bits) << 16);
}

inline uint16_t narrowToBf16(float x) {
  uint32_t bits = floatBits(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return 0x7fc0;
  return uint16_t((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

inline float widenF16(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exponent = h & 0x7c00u, mantissa = h & 0x03ffu;
  if (exponent == 0) // zero and subnormals: mantissa * 2^-24, exact
    return floatFromBits(sign | floatBits(float(mantissa) * 0x1p-24f));
  if (exponent == 0x7c00u)
    return floatFromBits(sign | 0x7f800000u | (mantissa << 13));
  return floatFromBits(sign | (((h & 0x7fffu) + ((127u - 15u) << 10)) << 13));
}

inline uint16_t narrowToF16(float x) {
  // Giesen's float_to_half_fast3_rtne, as the kernels' expansion.
  uint32_t bits = floatBits(x);
  uint32_t sign = bits & 0x80000000u, f = bits ^ sign;
  uint32_t out;
  if (f >= (127u + 16u) << 23) {
    out = f > 0x7f800000u ? 0x7e00u : 0x7c00u;
  } else if (f < 113u << 23) {
    constexpr uint32_t magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
    out = floatBits(floatFromBits(f) + floatFromBits(magic)) - magic;
  } else {
    uint32_t odd = (f >> 13) & 1u;
    out = (f - ((127u - 15u) << 23) + 0xfffu + odd) >> 13;
  }
  return uint16_t(out | (sign >> 16));
}

/// `x` rounded to `type`'s bits, `type` bf16 or f16.
inline uint16_t narrowTo(ElementType type, float x) {
  return type == ElementType::BF16 ? narrowToBf16(x) : narrowToF16(x);
}

/// The value of `bits` of `type`, bf16 or f16 (exact).
inline float widenFrom(ElementType type, uint16_t bits) {
  return type == ElementType::BF16 ? widenBf16(bits) : widenF16(bits);
}

} // namespace mlir::attn

#endif // ATTN_TARGET_FLOATCONVERSIONS_H
