//===- RotateHalf.h - RoPE's rotation, written once -------------*- C++ -*-===//
//
// Hugging Face's rotate_half (attn/IR/Rope.h has the tables): element c of a
// head of d columns at position t becomes
//
//   x[c] cos[t, c] - x[c + d/2] sin[t, c]                 c <  d/2
//   x[c] cos[t, c - d/2] + x[c - d/2] sin[t, c - d/2]     c >= d/2
//
// Every kernel that rotates q or k builds it here: attn-decompose (the
// step-by-step attention and both decode kernels' cache rows), the CPU flash
// loops' copies of q and k, the GPU flash kernel's query rows, key tiles and
// exact rows. The table reads stay with the callers (their layouts); the
// values are f32 scalars or vectors of one shape, rounded by the callers
// where their products need it (after the rotation, as torch rounds).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_ATTENTION_ROTATEHALF_H
#define ATTN_ATTENTION_ROTATEHALF_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

#include <utility>

namespace mlir::attn {

/// Element(s) x rotated, given the partner d/2 away and the tables' cos and
/// sin at their position: x cos - partner sin in the first half
/// (`firstHalf` an i1, or a vector of i1 of x's shape), x cos + partner sin
/// in the second.
Value rotateHalf(OpBuilder &b, Location loc, Value x, Value partner, Value cos,
                 Value sin, Value firstHalf);

/// The same where the half is known.
Value rotateHalf(OpBuilder &b, Location loc, Value x, Value partner, Value cos,
                 Value sin, bool firstHalf);

/// Both halves of a head at once, (x1, x2) -> (x1 cos - x2 sin,
/// x2 cos + x1 sin).
std::pair<Value, Value> rotateHalves(OpBuilder &b, Location loc, Value x1,
                                     Value x2, Value cos, Value sin);

} // namespace mlir::attn

#endif // ATTN_ATTENTION_ROTATEHALF_H
