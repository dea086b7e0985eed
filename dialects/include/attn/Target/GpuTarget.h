//===- GpuTarget.h - The GPU target description, its schedule --*- C++ -*-===//
//
// The one place where attnc's GPU code generation decides how many threads a
// launch gets: what it knows of a compute capability (the multiprocessors of
// its largest part, the warp, the block limit) and the block size derived
// from it for a loop nest of N iterations. The GPU is its own pipeline, not
// a variant of the CPU's schedule (attn/Target/CpuTarget.h).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TARGET_GPUTARGET_H
#define ATTN_TARGET_GPUTARGET_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace mlir::attn {

struct GpuTargetDescription {
  /// `sm_90a`, ... and its number (90).
  std::string chip = "sm_90a";
  int64_t computeCapability = 90;
  /// Multiprocessors of the chip's largest part (H100 SXM / H200: 132,
  /// A100: 108): a launch should give each a block or more.
  int64_t multiprocessors = 132;
  int64_t warpSize = 32;
  int64_t maxThreadsPerBlock = 1024;
  /// Threads per block of a launch with iterations to spare: 8 warps.
  int64_t preferredBlockSize = 256;

  /// `sm_90a: 132 multiprocessors, warps of 32`.
  std::string summary() const;
};

/// How a block of threads computes one tile of a GEMM through shared memory
/// (attn-gpu-tile-matmul): a `rows` x `cols` tile of C per block, walked
/// over k in steps of `depth` (a `depth` x `rows` slice of A, stored
/// transposed, and a `depth` x `cols` slice of B in shared memory); each
/// thread holds `threadRows` x `threadCols` accumulators in registers.
struct GpuGemmTile {
  int64_t rows = 64;
  int64_t cols = 64;
  int64_t depth = 16;
  int64_t threadRows = 4;
  int64_t threadCols = 4;
  /// Floats added to each row of A's shared slice so that the transposing
  /// stores of one warp fall in different banks (a multiple of 4: rows stay
  /// 16-byte aligned for vector loads).
  int64_t rowPadding = 4;

  int64_t threads() const { return (rows / threadRows) * (cols / threadCols); }
};

/// The shared-memory GEMM tile for `target`.
GpuGemmTile gemmTile(const GpuTargetDescription &target);

/// Whether an M x N GEMM (per batch entry) goes through shared-memory tiles;
/// a smaller one, which would leave most of a tile's threads idle, keeps one
/// register block per thread.
bool usesSharedMemoryGemm(const GpuTargetDescription &target, int64_t m,
                          int64_t n);

/// What attnc knows of `chip` (`sm_80`, `sm_90a`, ...); an unknown one gets
/// the defaults above.
GpuTargetDescription describeGpu(llvm::StringRef chip);

/// Threads per block for a loop nest of `iterations` threads: `maxBlock`
/// (a multiple of the warp; 0: the target's preferredBlockSize) unless that
/// would leave multiprocessors idle, then smaller, down to one warp, so that
/// the blocks cover every multiprocessor twice where the iterations allow.
int64_t threadsPerBlock(const GpuTargetDescription &target, int64_t iterations,
                        int64_t maxBlock = 0);

} // namespace mlir::attn

#endif // ATTN_TARGET_GPUTARGET_H
