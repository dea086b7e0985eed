//===- CpuTarget.h - The CPU target description and its schedule -*- C++
//-*-===//
//
// The one place where attnc's CPU code generation decides how to tile: a
// target description (vector width and registers, FMA, caches, features),
// filled from LLVM's subtarget for the chosen CPU (attnc/Codegen/
// TargetMachine.h, from the features for `native`, never the CPU's name) and
// attached to the module as a DLTI target device spec; and the schedule
// derived from it (deriveCpuSchedule), which every CPU pass reads
// (cpuScheduleOf). Pass options only override single fields of it.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TARGET_CPUTARGET_H
#define ATTN_TARGET_CPUTARGET_H

#include "attn/Target/ElementType.h"

#include "mlir/Support/LLVM.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
class Operation;
} // namespace mlir

namespace mlir::attn {

/// What the CPU schedules need to know of a machine.
struct CpuTargetDescription {
  /// LLVM's architecture name: x86_64, aarch64, ...
  std::string arch = "x86_64";
  /// The LLVM CPU the code is for (shown, never decided on).
  std::string cpu = "generic";
  /// Width of the widest vector register the code may use, and how many
  /// there are: 512 x 32 (AVX-512), 256 x 16 (AVX2), 128 x 16 (SSE2),
  /// 128 x 32 (NEON).
  int64_t vectorBits = 512;
  int64_t vectorRegisters = 32;
  /// Fused multiply-add instructions, and how many issue per cycle.
  bool fma = true;
  int64_t fmaUnits = 2;
  int64_t cacheLineBytes = 64;
  int64_t l1dBytes = 32 * 1024;
  int64_t l2BytesPerCore = 1024 * 1024;
  /// The ISA features that matter to attnc (avx2, avx512f, avx512bf16,
  /// fma, neon, ...), sorted. The default is x86-64-v4's.
  std::vector<std::string> features = {
      "avx",  "avx2", "avx512bw", "avx512dq", "avx512f", "avx512vl",
      "f16c", "fma",  "sse2",     "sse4.1",   "sse4.2"};

  /// Lanes of `type` in one vector register.
  int64_t lanes(ElementType type) const {
    return vectorBits / (8 * bytesOf(type));
  }
  bool hasFeature(llvm::StringRef name) const;
  /// `x86_64 znver4: 512-bit x 32 vector registers, fma x 2, ...`.
  std::string summary() const;
};

/// Every tiling and blocking choice of the CPU passes.
struct CpuSchedule {
  /// f32 lanes of one vector register.
  int64_t vectorLanes = 16;
  /// attn-tile-and-vectorize: register blocks of C (rows x columns, the
  /// columns a multiple of vectorLanes), k per slice.
  int64_t gemmRows = 6;
  int64_t gemmColumns = 64;
  int64_t gemmDepth = 256;
  /// A GEMM copies each slice of B under a column block into a contiguous
  /// buffer when at least this many row blocks read it (0: never).
  int64_t gemmPackRowBlocks = 4;
  /// A GEMM of fewer rows than a register block (a decode step's
  /// projections) is bound by reading B once: it reads B in chunks of this
  /// many k steps, each chunk's rows as one stream into partial sums of
  /// its own (the unit of its split over threads), a register block
  /// covering gemvBlockSteps rows of B between its loads and stores of C.
  int64_t gemvChunkSteps = 64;
  int64_t gemvBlockSteps = 4;
  /// ... and prefetches B's rows this many k steps ahead; 0: none.
  int64_t gemvPrefetchSteps = 16;
  /// Elements per vector strip of elementwise ops.
  int64_t stripElements = 64;
  /// Longest row reduced in one vector (longer ones stay scalar loops).
  int64_t maxVectorRow = 1024;
  /// Square blocks of the weight transposes (a cache line of floats).
  int64_t transposeBlock = 16;
  /// attn-lower-fused-attention: query rows per register block, keys per
  /// block (a vector of keyBlock lanes per row), accumulators of p @ v,
  /// lanes of an output chunk, register blocks per sweep over the keys.
  int64_t attentionRows = 6;
  int64_t attentionKeys = 64;
  int64_t attentionAccumulators = 24;
  int64_t attentionChunkLanes = 16;
  int64_t attentionRowBlocksPerSweep = 8;
  /// Key blocks per step of the online softmax: each step rescales the
  /// output rows and reduces the maxima and sums once.
  int64_t attentionSoftmaxBlocks = 1;
  /// attn.decode_attention: keys per chunk, the unit of its split over
  /// threads (fixed at compile time, so any number of threads gives the
  /// same bits).
  int64_t decodeKeys = 256;
  /// attn.decode_attention: kv heads are taken together, as many as keep
  /// their query rows (heads per kv head x new tokens) within this many,
  /// so that each pass reads a span of every cache row, not one head's
  /// slice at the row's stride.
  int64_t decodeRows = 64;
  /// attn.decode_attention: where a group of kv heads is part of a cache
  /// row, its passes prefetch the group's span this many rows ahead; 0:
  /// none.
  int64_t decodePrefetchKeys = 16;
  /// Loops of less work than this stay on one thread.
  int64_t parallelFlops = int64_t(1) << 20;
  int64_t parallelElements = int64_t(1) << 18;
  /// The passes' `parallel-work` option: `work` >= 0 replaces both
  /// thresholds (0 splits every loop that can be split: tests of the same
  /// bits on any number of threads); -1 keeps the schedule's.
  void overrideParallelWork(int64_t work) {
    if (work >= 0)
      parallelFlops = parallelElements = work;
  }
  /// Alignment of packed params, in floats (a cache line).
  int64_t packedAlignmentFloats = 16;
  /// GEMM: floats between the prefetches of the next register block's C
  /// rows (one per cache line of its columns).
  int64_t prefetchStrideFloats = 16;
  /// The instruction of the bf16 pair GEMMs' k steps (attn-bf16-pair-gemms)
  /// rather than FMAs on widened pairs: AVX512-BF16's vdpbf16ps (the same
  /// sums in the same order), or Arm's bfdot (BF16 extension: its own
  /// rounding of the pair's sum, docs/precision.md).
  enum class Bf16Dot { None, Vdpbf16ps, Bfdot };
  Bf16Dot bf16Dot = Bf16Dot::None;
  /// bf16 pair GEMMs whose N is a multiple of 16 on AMX tiles (tdpbf16ps),
  /// their weights packed in 16-column tiles of pairs.
  bool bf16Amx = false;
  /// An AMX GEMM takes A in chunks of rows whose tiles fit in this many
  /// bytes (half the L2), each read by every column block from L2.
  int64_t amxPanelBytes = 512 * 1024;
  /// A bf16 pair GEMM of fewer rows than this (a decode step's
  /// projections) is bound by reading B, not by its k steps: B stays bf16
  /// pairs in f32 slots (half the bytes of widened pairs) even where the k
  /// step widens them for FMAs.
  int64_t memoryBoundRows = 8;

  /// One `name = value` per line.
  std::string format() const;
};

/// The schedule for `target`.
CpuSchedule deriveCpuSchedule(const CpuTargetDescription &target);

/// The DLTI device id under which the description is attached.
constexpr llvm::StringLiteral kCpuDeviceId = "CPU";

/// Attaches `target` to `module` as
/// `dlti.target_system_spec = #dlti.target_system_spec<"CPU" = ...>`.
void attachCpuTarget(ModuleOp module, const CpuTargetDescription &target);

/// The description attached to `op`'s enclosing module (or `op` itself);
/// without one, the default description (512-bit x 32 registers). A
/// malformed entry is an error at the module.
FailureOr<CpuTargetDescription> cpuTargetOf(Operation *op);

/// deriveCpuSchedule(cpuTargetOf(op)).
FailureOr<CpuSchedule> cpuScheduleOf(Operation *op);

} // namespace mlir::attn

#endif // ATTN_TARGET_CPUTARGET_H
