//===- Pipeline.h - The attn -> LLVM dialect lowering pipeline --*- C++ -*-===//
//
// The one definition of how a kernel is lowered, used by attnc, the runtime
// and, as the registered pipeline `attn-to-llvm`, by attn-opt:
//
//   attn-decompose, attn-lower-to-linalg,          attn -> linalg on tensors
//   convert-elementwise-to-linalg
//   canonicalize, cse
//   attn-split-prepare                  NAME_prepare, NAME_prepared, NAME
//   attn-fuse-elementwise
//   attn-distinct-results               a value returned twice is copied
//   one-shot-bufferize, canonicalize, buffer-results-to-out-params,
//   attn-forward-call-outputs, deallocation
//   attn-lower-fused-attention                   flash-style attention
//   attn-tile-and-vectorize, attn-approximate-math  register tiles, vectors
//   convert-*-to-llvm (bare-pointer calling convention)
//
// The result is an LLVM-dialect module whose function NAME takes one plain
// pointer per input, param and output and returns the i32 kernel status;
// NAME_prepare(params..., packed) and NAME_prepared(args..., packed, outputs)
// are the same kernel in two steps, the first done once per params.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_CODEGEN_PIPELINE_H
#define ATTNC_CODEGEN_PIPELINE_H

#include "attnc/Codegen/CompileOptions.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <string>

namespace mlir {
class ModuleOp;
class OpPassManager;
} // namespace mlir

namespace attnc {

/// Appends the passes from attn ops to the LLVM dialect to `pm` (anchored on
/// builtin.module): attnc's, or the registered lowering that
/// `options.lowering` names (checkCpuLowering).
void buildCpuLoweringPipeline(mlir::OpPassManager &pm,
                              const CpuPipelineOptions &options);

//===----------------------------------------------------------------------===//
// Other CPU lowerings (the tests' GPU emulation), built from attnc's stages
//===----------------------------------------------------------------------===//

/// A lowering of attn ops to the LLVM dialect for the CPU other than
/// attnc's, registered under the name CpuPipelineOptions::lowering selects.
struct CpuLowering {
  /// Appends its passes to `pm` (anchored on builtin.module).
  std::function<void(mlir::OpPassManager &, const CpuPipelineOptions &)> build;
  /// Whether a prompt's prefill into a KV cache runs on the flash kernel
  /// (attn-decompose's prefill-flash-rows; otherwise the decode kernel).
  bool prefillFlash = true;
};

/// Registers the lowering called `name`; a name registered already keeps
/// its first lowering (so lookupCpuLowering's pointers stay valid).
/// Thread-safe.
void registerCpuLowering(llvm::StringRef name, CpuLowering lowering);

/// The lowering registered as `name`, or null.
const CpuLowering *lookupCpuLowering(llvm::StringRef name);

/// An error unless `options.lowering` is empty or a registered name.
llvm::Error checkCpuLowering(const CpuPipelineOptions &options);

/// The first stages of the CPU pipeline: attn -> linalg on tensors ->
/// buffers, the kernels split into NAME_prepare, NAME_prepared and NAME.
struct CpuBufferStages {
  /// attn-decompose's `attention` option (cpuAttentionLowering).
  std::string attention = "auto";
  /// A prompt's prefill into a KV cache on the flash kernel.
  bool prefillFlash = true;
  /// GEMMs of two bf16 operands on bf16 pairs (attn-bf16-pair-gemms).
  bool bf16Pairs = true;
  /// NAME_prepare transposes (packs) the weights once per bound params.
  bool hoistPrepare = true;
};
void addAttnToCpuBuffers(mlir::OpPassManager &pm,
                         const CpuBufferStages &stages);

/// The last stages of the CPU pipeline, from buffers: attnc's flash
/// attention, register tiles and vectors (with options.vectorize), the
/// approximate math, then the LLVM dialect.
void addCpuLoopsToLLVM(mlir::OpPassManager &pm,
                       const CpuPipelineOptions &options);

/// The GPU target's kernels as loop nests mapped to gpu.launch (on
/// buffers): attention, tiled GEMMs, row reductions, the rest mapped by
/// attn-gpu-map-loops. Shared by the NVPTX pipeline and the GPU emulation.
struct GpuKernelStages {
  /// The compute capability whose tiles and launch sizes are used.
  std::string chip = "sm_90a";
  /// f32 GEMMs on tensor cores in tf32.
  bool tf32 = false;
  /// Threads per block at most (0: the target's).
  int64_t blockSize = 0;
};
void addGpuKernelLoops(mlir::OpPassManager &pm, const GpuKernelStages &stages);

/// attn-decompose's `attention` option in the CPU pipeline: -O0 (no
/// vectorization) decomposes, whatever `options.attention` says.
std::string cpuAttentionLowering(const CpuPipelineOptions &options);

/// Whether the CPU pipeline runs a prompt's prefill into a KV cache on the
/// flash kernel (attn-decompose's prefill-flash-rows): attnc's does, a
/// registered lowering says (CpuLowering::prefillFlash).
bool cpuPrefillFlash(const CpuPipelineOptions &options);

/// --print-schedule's lines for the attention ops of `module` (attn level):
/// where each is, and what attn-decompose makes of it under `attention`
/// (and `decodeKernel`: whether the target has attn.decode_attention;
/// `prefillFlash`: whether a prompt's prefill runs the flash kernel).
std::string describeAttentionLowerings(mlir::ModuleOp module,
                                       const std::string &attention,
                                       bool decodeKernel, bool prefillFlash);

/// --print-schedule's lines for the rounding points of `module` (attn
/// level): each op whose result is bf16 or f16, where it is. Empty for a
/// module in f32.
std::string describeRoundingPoints(mlir::ModuleOp module);

/// Registers `attn-to-llvm` (with options row-tile, column-tile, vectorize)
/// for textual pipelines and attn-opt.
void registerCpuLoweringPipeline();

/// What the GPU lowering needs besides the attn module.
struct GpuPipelineOptions {
  /// Compute capability and PTX features (`sm_90a`, `+ptx80`).
  std::string chip = "sm_90a";
  std::string features = "+ptx80";
  /// NVVM optimization level of the device code.
  unsigned optLevel = 3;
  /// The CUDA toolkit (ptxas, libdevice): `gpu-module-to-binary` links
  /// libdevice from it and, with `fatbin`, assembles the PTX with ptxas.
  std::string toolkit;
  std::string libdevice;
  /// `isa` (PTX only) or `fatbin` (PTX and cubin).
  std::string format = "isa";
  /// Threads per block of the launches attn-gpu-map-loops makes, at most
  /// (0: the target's, attn/Target/GpuTarget.h).
  int64_t blockSize = 0;
  /// attn-decompose's `attention` option: decomposed, fused or auto (fused
  /// attention becomes attn-gpu-lower-fused-attention's kernel).
  std::string attention = "auto";
  /// f32 GEMMs on tensor cores in tf32 (--gpu-math=tf32).
  bool tf32 = false;
};

/// attn -> device code in a gpu.binary and host code in the LLVM dialect
/// that calls the `mgpu*` functions (provided by lib/ObjectCode/attnc_cuda.c).
void buildGpuLoweringPipeline(mlir::OpPassManager &pm,
                              const GpuPipelineOptions &options);

} // namespace attnc

#endif // ATTNC_CODEGEN_PIPELINE_H
