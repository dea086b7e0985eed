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
#include <optional>
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
  /// 32-bit registers of a block (of a multiprocessor: 64K from sm_50 on)
  /// and of a thread, at most: a block of more than 256 threads gets fewer
  /// than 255 registers each.
  int64_t registersPerBlock = 65536;
  int64_t maxRegistersPerThread = 255;
  /// Threads per block of a launch with iterations to spare: 8 warps.
  int64_t preferredBlockSize = 256;
  /// Blocks a multiprocessor holds at once, at most (32; 16 on sm_75,
  /// sm_86 and sm_87, 24 on sm_89).
  int64_t maxBlocksPerMultiprocessor = 32;

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

/// How a block computes one tile of a GEMM of two bf16 (f16) operands on
/// tensor cores (attn-gpu-tile-matmul): a `rows` x `cols` tile of C per
/// block of `warps()` warps, each warp a `warpRows` x `warpCols` part of it
/// as (warpRows / 16) x (warpCols / 8) m16n8k16 mma tiles (f32
/// accumulators in registers, attn/GPU/MmaFragments.h); k walked in slices
/// of `depth`, A's slice [rows][depth] and B's [cols][depth] (k innermost
/// in both, so that a register's two elements are neighbours) staged in
/// shared memory in the operands' type, each row `paddingBytes` longer. f32
/// operands (--gpu-math=tf32) take m16n8k8 tiles of tf32 instead, the same
/// tile otherwise.
struct GpuTensorCoreTile {
  int64_t rows = 64;
  int64_t cols = 64;
  int64_t depth = 32;
  int64_t warpRows = 32;
  int64_t warpCols = 32;
  /// Bytes added to each staged row: 4 words, so that a row is 4 words past
  /// a multiple of 32 (20 words of bf16, 36 of f32) and the 8 groups of a
  /// warp's fragment loads (rows g, words p) hit 32 different banks; rows
  /// stay 16-byte aligned.
  int64_t paddingBytes = 16;

  int64_t warps() const { return (rows / warpRows) * (cols / warpCols); }
};

/// How a block computes flash attention on tensor cores (attention with
/// bf16 products, attn-gpu-lower-fused-attention): `warps` warps of 16
/// query rows each, the keys in tiles of `keyRows` staged in shared memory
/// as bf16 -- keys [keyRows][dk + padding], values transposed
/// [dv][keyRows + padding], so that a register's two elements of either
/// product's B operand are neighbours -- head widths padded with zeros to
/// multiples of 16.
struct GpuMmaAttentionTile {
  int64_t warps = 4;
  int64_t keyRows = 64;
  int64_t padding = 8;

  int64_t queryRows() const { return 16 * warps; }
};

/// The tensor-core attention tile for heads of `keyWidth` and `valueWidth`
/// columns: keyRows halved (down to 16) until the staged tiles fit
/// kAttentionTileBytes; none when even 16 keys do not, or `target` has no
/// tensor cores.
std::optional<GpuMmaAttentionTile>
mmaAttentionTile(const GpuTargetDescription &target, int64_t keyWidth,
                 int64_t valueWidth);

/// Whether `target` has the m16n8k16 bf16/f16 mma (sm_80 and later).
bool hasTensorCoreMma(const GpuTargetDescription &target);

/// The tensor-core GEMM tile for `target`.
GpuTensorCoreTile tensorCoreTile(const GpuTargetDescription &target);

/// How a block of threads computes flash attention
/// (attn-gpu-lower-fused-attention): `queryRows` query rows of one batch
/// entry and head per block, each row split over `slices` neighbouring
/// threads of a warp (`sliceWidth` value columns and `share` query and key
/// columns each, their dot products' partial sums added with shuffles), the
/// keys walked in tiles of `keyRows`, each tile's keys and values staged in
/// shared memory once for all of the block's rows.
///
/// The slices of a row hold interleaved columns: slice s takes the chunks s,
/// s + slices, s + 2 slices, ... of `keyChunk` (`valueChunk`) columns of the
/// key (value) row. The slices read the same chunk index of the same key
/// row at the same time, so their addresses are neighbouring chunks, in
/// different banks of shared memory; contiguous shares would put them a
/// share apart (32 floats at head dim 128: the same banks, a 4-way bank
/// conflict on every load of a key or value).
struct GpuAttentionTile {
  int64_t queryRows;
  int64_t keyRows;
  int64_t slices;
  int64_t sliceWidth;
  int64_t share;
  int64_t keyChunk;
  int64_t valueChunk;

  int64_t threads() const { return queryRows * slices; }
};

/// Query rows of an attention block and keys of its tiles, at most.
constexpr int64_t kAttentionMaxQueryRows = 128;
constexpr int64_t kAttentionMaxKeyRows = 64;

/// Shared memory one attention block stages its key and value tiles in, at
/// most: within the 48 KiB a kernel gets without opting in, so that several
/// blocks share a multiprocessor.
constexpr int64_t kAttentionTileBytes = 32 * 1024;

/// Floats one attention thread keeps in registers for its query row and
/// its accumulators together, at most (of the 255 registers a thread has:
/// the rest hold a key chunk, the softmax state and addresses). A head of
/// 64 keeps 64 + 64; one of 128 splits its row over four threads, 32 + 32
/// each (the rule still counts the whole query row, as when each slice
/// thread held it: whether fewer, wider slices are faster is for a GPU to
/// say).
constexpr int64_t kAttentionRowFloats = 160;

/// Bytes every workgroup (shared-memory) buffer is aligned to: the widest
/// access the kernels make of one, a 4-float `ld.shared.v4`
/// (attn-gpu-align-workgroup-memory).
constexpr int64_t kWorkgroupAlignment = 16;

/// The attention tile for `queries` query rows, `keys` keys and heads of
/// `keyWidth` key and `valueWidth` value columns: the rows halved (into 2,
/// 4, ... slices, each dividing both widths) until a value slice and the
/// query row fit kAttentionRowFloats (or a slice is 8 wide, or a row's
/// slices fill a warp), in chunks of the largest of 4, 2, 1 columns that
/// divides a slice's share; up to kAttentionMaxQueryRows rows (a whole
/// number of warps, fewer when there are fewer queries or when the block
/// would have too many threads for each to get all of its registers); up to
/// kAttentionMaxKeyRows keys (fewer when there are fewer), a power of two
/// whose f32 keys and values fit kAttentionTileBytes (0 when not even one
/// key row does).
GpuAttentionTile attentionTile(const GpuTargetDescription &target,
                               int64_t queries, int64_t keys, int64_t keyWidth,
                               int64_t valueWidth);

/// Rows (of batch entry x head, query) each warp of the attention's exact
/// launch checks, and recomputes when the main launch marked them, one
/// after another: enough rows that the launch has about as many one-warp
/// blocks as `target`'s multiprocessors hold at once
/// (maxBlocksPerMultiprocessor each), rather than a block per row, most of
/// which would only read a mark.
int64_t exactRowsPerWarp(const GpuTargetDescription &target, int64_t rows);

/// How a decode step's attention (attn.decode_attention,
/// attn-gpu-lower-decode-attention) is split: blocks of `warps` warps, a
/// warp per row (query head x new token), each block over one chunk of
/// `chunkKeys` cache rows; the chunks' partial results are combined in
/// chunk order by a launch of their own.
struct GpuDecodeTile {
  int64_t warps;
  int64_t chunkKeys;
};

/// The decode tile of `batches` entries of `rows` rows each (heads x new
/// tokens) over a cache of `cacheRows`: up to kDecodeWarps warps a block,
/// and chunks (a multiple of the warp size, at least kDecodeMinChunkKeys)
/// small enough that the launch has about kDecodeBlocksPerMultiprocessor
/// blocks per multiprocessor. Fixed by the shapes at compile time, so the
/// sums, combined in chunk order, are the same bits on every run.
constexpr int64_t kDecodeWarps = 4;
constexpr int64_t kDecodeMinChunkKeys = 64;
constexpr int64_t kDecodeBlocksPerMultiprocessor = 2;
GpuDecodeTile decodeTile(const GpuTargetDescription &target, int64_t batches,
                         int64_t rows, int64_t cacheRows);

/// The shared-memory GEMM tile for `target`.
GpuGemmTile gemmTile(const GpuTargetDescription &target);

/// Whether an M x N GEMM (per batch entry) goes through shared-memory tiles;
/// a smaller one, which would leave most of a tile's threads idle, keeps one
/// register block per thread.
bool usesSharedMemoryGemm(const GpuTargetDescription &target, int64_t m,
                          int64_t n);

/// The shortest row a row reduction (softmax's max and sum, layer norm's
/// mean and variance) gets a warp for (attn-gpu-lower-row-reductions): its
/// lanes read neighbouring elements and combine their partial results with
/// shuffles. A shorter row keeps one thread, which would otherwise leave
/// some of the warp's lanes without an element.
int64_t warpPerRowMinLength(const GpuTargetDescription &target);

/// Whether a row reduction of `length` elements per row gets a warp per
/// row (at least warpPerRowMinLength).
bool usesWarpPerRow(const GpuTargetDescription &target, int64_t length);

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
