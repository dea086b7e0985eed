//===- CompileOptions.h - What a kernel is compiled for ---------*- C++ -*-===//
//
// The options of one compilation: target, lowering pipeline and code
// generation. Part of the public (installed) API: the runtime's Runtime.h
// takes them, so this header includes nothing but the standard library.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_CODEGEN_COMPILEOPTIONS_H
#define ATTNC_CODEGEN_COMPILEOPTIONS_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <functional>
#include <string>

namespace attnc {

/// What the code runs on: the host's kind of CPU, or an NVIDIA GPU through
/// NVPTX (with host code for the CPU that launches it).
enum class TargetKind { Cpu, Nvptx };

struct TargetOptions {
  TargetKind kind = TargetKind::Cpu;
  /// The LLVM target triple to compile for (`aarch64-linux-gnu`, ...);
  /// empty: this machine's. Kernels for another triple are compiled, never
  /// run here.
  std::string triple;
  /// An LLVM CPU name (`znver4`, `x86-64-v3`, ...) or `native` for the CPU
  /// this runs on, with its features (with another triple, `native` means
  /// LLVM's `generic` CPU of that triple). With TargetKind::Nvptx: the GPU's
  /// compute capability (`sm_90a`, `sm_80`, ...; `native` means `sm_90a`).
  std::string cpu = "native";
  /// -O level for LLVM's optimizer and code generator (0..3). 2 by default:
  /// the hot loops are vectorized by attnc already, and LLVM's -O3 unrolls
  /// them further into bigger code that takes longer to compile.
  unsigned optLevel = 2;
};

struct CpuPipelineOptions {
  /// Overrides of the GEMM register block (rows x columns of the output)
  /// that the target's schedule chooses (attn/Target/CpuTarget.h); 0: the
  /// schedule's.
  int64_t rowTile = 0;
  int64_t columnTile = 0;
  /// Off: linalg ops become scalar loops (a reference path, -O0), and
  /// attention is always decomposed.
  bool vectorize = true;
  /// attn-decompose's `attention` option: decomposed, fused or auto.
  std::string attention = "auto";
  /// Emit OpenMP parallel loops (GEMM blocks, attention batch entries) that
  /// run on attnc_rt's thread pool; the object then needs libattnc_rt.
  bool parallel = false;
  /// With `parallel`: loops of at least this much work run on threads,
  /// overriding the schedule's thresholds (CpuSchedule::parallelFlops and
  /// parallelElements); -1: the schedule's; 0: every loop (the tests that 1
  /// and 2 threads give the same bits, at the goldens' small sizes).
  int64_t parallelWork = -1;
  /// A test of the GPU target without a GPU: the loop nests are mapped to
  /// GPU launches as for --target=nvptx (attn-gpu-map-loops), then each
  /// launch runs as loops over its blocks and threads on this CPU
  /// (attn-gpu-emulate-launches). Fused attention is the GPU's kernel
  /// (attn-gpu-lower-fused-attention).
  bool gpuEmulation = false;
  /// --gpu-math=tf32: the GPU target's f32 GEMMs (and its emulation's) on
  /// tensor cores, their operands rounded to tf32 (docs/gpu.md).
  bool tf32 = false;
};

/// The code generator that builds a CPU kernel (docs/spec.md §4): attnc's MLIR
/// pipeline, or Halide (docs/halide.md), with the same ABI and header.
enum class Backend { Mlir, Halide };

/// --halide-schedule values: attnc's own schedules (attnc), or one of
/// Halide's autoschedulers.
constexpr const char *kHalideSchedules[] = {"attnc", "Adams2019",
                                            "Mullapudi2016", "Li2018"};

struct CompileOptions {
  TargetOptions target;
  CpuPipelineOptions pipeline;
  Backend backend = Backend::Mlir;
  /// With Backend::Halide: one of kHalideSchedules.
  std::string halideSchedule = "attnc";
  /// Print the IR after every pass to stderr (--print-ir-after-all).
  bool printIRAfterAll = false;
  /// Objects without `pipeline.parallel` keep their large temporaries in a
  /// cache of their own (libc-only objects). Runtime::defaultOptions turns
  /// it off: the JIT resolves malloc/free to attnc_rt's cache anyway, and
  /// the blocks a JIT-ed object holds are not freed when it is unloaded.
  bool objectBlockCache = true;
  /// Told the name of each stage as the compile enters it (attnc's progress
  /// report); not part of the fingerprint.
  std::function<void(llvm::StringRef stage)> onStage;

  void enterStage(llvm::StringRef stage) const {
    if (onStage)
      onStage(stage);
  }

  /// -O0 .. -O3: -O0 also turns off tiling/vectorization (scalar loops).
  void setOptLevel(unsigned level);
};

} // namespace attnc

#endif // ATTNC_CODEGEN_COMPILEOPTIONS_H
