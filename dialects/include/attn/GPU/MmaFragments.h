//===- MmaFragments.h - Which lane holds what of a warp's mma ---*- C++ -*-===//
//
// `mma.sync.aligned.m16n8k16` (bf16, f16) and `.m16n8k8` (tf32) multiply a
// 16 x K tile of A by a K x 8 tile of B into a 16 x 8 tile of f32, the 32
// lanes of a warp each holding a fragment of every matrix (PTX ISA, "Matrix
// Fragments for mma.m16n8k16 with floating point type"; nvgpu.mma.sync's
// vector<4xPxT>, vector<2xPxT> and vector<2x2xf32> operands, P elements per
// 32-bit register: 2 for bf16/f16, 1 for tf32, K = 8 P). The one place of
// those layouts for the code that builds fragments (attn-gpu-tile-matmul)
// and the code that runs an mma on a CPU (attn-gpu-emulate-launches).
//
// With group = lane / 4 and pair = lane % 4:
// - A register r, element e: row group + 8 (r % 2), column
//   P pair + e + 4 P (r / 2);
// - B register r, element e: row (k) P pair + e + 4 P r, column group;
// - C/D element (i, j) of vector<2x2xf32>: row group + 8 i, column
//   2 pair + j.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_GPU_MMAFRAGMENTS_H
#define ATTN_GPU_MMAFRAGMENTS_H

#include <cstdint>

namespace mlir::attn::mma {

/// Rows of A (and C), columns of B (and C) of one mma.
constexpr int64_t kRows = 16;
constexpr int64_t kColumns = 8;
/// Registers of A's and B's fragments in each lane.
constexpr int64_t kRegistersA = 4;
constexpr int64_t kRegistersB = 2;

/// K of an mma whose registers hold `perRegister` elements (2: m16n8k16).
constexpr int64_t depthOf(int64_t perRegister) { return 8 * perRegister; }

constexpr int64_t groupOf(int64_t lane) { return lane / 4; }
constexpr int64_t pairOf(int64_t lane) { return lane % 4; }

/// A's row of register `r` at group 0 (add the lane's group).
constexpr int64_t rowOffsetA(int64_t r) { return 8 * (r % 2); }
/// A's column of register `r`, element 0, at pair 0 (add P x pair + e).
constexpr int64_t columnOffsetA(int64_t r, int64_t perRegister) {
  return 4 * perRegister * (r / 2);
}
/// B's row (k) of register `r`, element 0, at pair 0 (add P x pair + e).
constexpr int64_t rowOffsetB(int64_t r, int64_t perRegister) {
  return 4 * perRegister * r;
}
/// C's row of element (i, j) at group 0, its column at pair 0.
constexpr int64_t rowOffsetC(int64_t i) { return 8 * i; }
constexpr int64_t columnOffsetC(int64_t j) { return j; }

/// Where element (row, k) of A lives: lane, register and element.
struct Place {
  int64_t lane, reg, element;
};
constexpr Place placeInA(int64_t row, int64_t k, int64_t perRegister) {
  int64_t inQuarter = k % (4 * perRegister);
  return {4 * (row % 8) + inQuarter / perRegister,
          row / 8 + 2 * (k / (4 * perRegister)), inQuarter % perRegister};
}
/// Where element (k, column) of B lives.
constexpr Place placeInB(int64_t k, int64_t column, int64_t perRegister) {
  int64_t inQuarter = k % (4 * perRegister);
  return {4 * column + inQuarter / perRegister, k / (4 * perRegister),
          inQuarter % perRegister};
}

} // namespace mlir::attn::mma

#endif // ATTN_GPU_MMAFRAGMENTS_H
