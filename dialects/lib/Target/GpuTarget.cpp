//===- GpuTarget.cpp - The GPU target description and its schedule --------===//

#include "attn/Target/GpuTarget.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace mlir::attn;

std::string GpuTargetDescription::summary() const {
  return chip + ": " + std::to_string(multiprocessors) +
         " multiprocessors, warps of " + std::to_string(warpSize) +
         ", blocks of at most " + std::to_string(maxThreadsPerBlock);
}

GpuTargetDescription mlir::attn::describeGpu(llvm::StringRef chip) {
  GpuTargetDescription target;
  target.chip = chip.str();
  llvm::StringRef number = chip;
  number.consume_front("sm_");
  number.consume_back("a");
  number.consume_back("f");
  unsigned cc = 0;
  if (number.getAsInteger(10, cc))
    return target;
  target.computeCapability = cc;
  // The largest part of each capability (NVIDIA's data sheets): T4 40,
  // A100 108, A10/RTX 3090 84, L40/RTX 4090 128-144, H100 SXM/H200 132,
  // B200 148.
  if (cc >= 100)
    target.multiprocessors = 148;
  else if (cc >= 90)
    target.multiprocessors = 132;
  else if (cc == 89)
    target.multiprocessors = 128;
  else if (cc >= 86)
    target.multiprocessors = 84;
  else if (cc >= 80)
    target.multiprocessors = 108;
  else
    target.multiprocessors = 40;
  // NVIDIA's CUDA C++ Programming Guide, "Technical Specifications per
  // Compute Capability".
  if (cc == 75 || cc == 86 || cc == 87)
    target.maxBlocksPerMultiprocessor = 16;
  else if (cc == 89)
    target.maxBlocksPerMultiprocessor = 24;
  return target;
}

int64_t mlir::attn::threadsPerBlock(const GpuTargetDescription &target,
                                    int64_t iterations, int64_t maxBlock) {
  int64_t warp = target.warpSize;
  if (maxBlock <= 0)
    maxBlock = target.preferredBlockSize;
  int64_t wanted = llvm::divideCeil(iterations, 2 * target.multiprocessors);
  int64_t block = llvm::alignTo(std::max<int64_t>(wanted, 1), warp);
  return std::clamp<int64_t>(block, warp, maxBlock);
}

int64_t mlir::attn::warpPerRowMinLength(const GpuTargetDescription &target) {
  return target.warpSize;
}

bool mlir::attn::usesWarpPerRow(const GpuTargetDescription &target,
                                int64_t length) {
  return length >= warpPerRowMinLength(target);
}

int64_t mlir::attn::exactRowsPerWarp(const GpuTargetDescription &target,
                                     int64_t rows) {
  int64_t warps = target.multiprocessors * target.maxBlocksPerMultiprocessor;
  return std::max<int64_t>(1, llvm::divideCeil(rows, warps));
}

GpuDecodeTile mlir::attn::decodeTile(const GpuTargetDescription &target,
                                     int64_t batches, int64_t rows,
                                     int64_t cacheRows) {
  GpuDecodeTile tile;
  tile.warps = std::min(kDecodeWarps, rows);
  int64_t blocksPerChunk = batches * llvm::divideCeil(rows, tile.warps);
  int64_t chunks = llvm::divideCeil(
      kDecodeBlocksPerMultiprocessor * target.multiprocessors, blocksPerChunk);
  tile.chunkKeys = std::max<int64_t>(
      kDecodeMinChunkKeys,
      llvm::alignTo(llvm::divideCeil(cacheRows, chunks), target.warpSize));
  return tile;
}

GpuGemmTile mlir::attn::gemmTile(const GpuTargetDescription &) {
  return GpuGemmTile();
}

bool mlir::attn::hasTensorCoreMma(const GpuTargetDescription &target) {
  return target.computeCapability >= 80;
}

std::optional<GpuMmaAttentionTile>
mlir::attn::mmaAttentionTile(const GpuTargetDescription &target,
                             int64_t keyWidth, int64_t valueWidth) {
  if (!hasTensorCoreMma(target))
    return std::nullopt;
  GpuMmaAttentionTile tile;
  int64_t dk = llvm::alignTo(keyWidth, 16), dv = llvm::alignTo(valueWidth, 16);
  auto bytes = [&](int64_t keys) {
    return 2 * (keys * (dk + tile.padding) + dv * (keys + tile.padding));
  };
  while (tile.keyRows > 16 && bytes(tile.keyRows) > kAttentionTileBytes)
    tile.keyRows /= 2;
  if (bytes(tile.keyRows) > kAttentionTileBytes)
    return std::nullopt;
  return tile;
}

GpuTensorCoreTile mlir::attn::tensorCoreTile(const GpuTargetDescription &) {
  return GpuTensorCoreTile();
}

GpuAttentionTile mlir::attn::attentionTile(const GpuTargetDescription &target,
                                           int64_t queries, int64_t keys,
                                           int64_t keyWidth,
                                           int64_t valueWidth) {
  GpuAttentionTile tile;
  tile.slices = 1;
  int64_t widest = std::max<int64_t>(kAttentionRowFloats - keyWidth, 8);
  while (valueWidth / tile.slices > widest &&
         valueWidth % (2 * tile.slices) == 0 &&
         keyWidth % (2 * tile.slices) == 0 &&
         2 * tile.slices <= target.warpSize)
    tile.slices *= 2;
  tile.sliceWidth = valueWidth / tile.slices;
  tile.share = keyWidth / tile.slices;
  auto chunkOf = [](int64_t width) -> int64_t {
    for (int64_t chunk : {4, 2})
      if (width % chunk == 0)
        return chunk;
    return 1;
  };
  tile.keyChunk = chunkOf(tile.share);
  tile.valueChunk = chunkOf(tile.sliceWidth);
  int64_t rows = llvm::alignTo(std::max<int64_t>(queries, 1), target.warpSize);
  // Threads that may each use every register a thread can have.
  int64_t threads =
      std::min(target.maxThreadsPerBlock,
               target.registersPerBlock / (target.maxRegistersPerThread + 1));
  tile.queryRows = std::max<int64_t>(
      1, std::min({rows, kAttentionMaxQueryRows, threads / tile.slices}));
  int64_t rowBytes = (keyWidth + valueWidth) * 4;
  tile.keyRows =
      std::min<int64_t>(64, llvm::PowerOf2Ceil(std::max<int64_t>(keys, 1)));
  while (tile.keyRows > 0 && tile.keyRows * rowBytes > kAttentionTileBytes)
    tile.keyRows /= 2;
  return tile;
}

bool mlir::attn::usesSharedMemoryGemm(const GpuTargetDescription &target,
                                      int64_t m, int64_t n) {
  GpuGemmTile tile = gemmTile(target);
  // At least a quarter of a tile's rows and of its columns.
  return 4 * m >= tile.rows && 4 * n >= tile.cols;
}
