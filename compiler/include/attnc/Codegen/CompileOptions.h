//===- CompileOptions.h - What a kernel is compiled for ---------*- C++ -*-===//
//
// The options of one compilation: target, lowering pipeline and code
// generation. Part of the public (installed) API: the runtime's Runtime.h
// takes them, so this header includes nothing but the standard library and
// llvm/ADT/StringRef.h (header-only).
//
// forEachCodeOption lists the fields that decide the code: the kernel
// cache's fingerprint and --print-schedule read that one list.
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
  /// The name of a CPU lowering registered with registerCpuLowering
  /// (Pipeline.h) to use instead of attnc's own (empty). The tests register
  /// one: the GPU target's kernels, each launch run as loops on this CPU
  /// (tests/lib/GpuEmulation).
  std::string lowering;
  /// --gpu-math=tf32: the GPU target's f32 GEMMs on tensor cores, their
  /// operands rounded to tf32 (docs/gpu.md).
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

/// The fields of CompileOptions that do not change the code compiled: a
/// debug dump and a progress report.
constexpr const char *kOptionsBesideTheCode[] = {"printIRAfterAll", "onStage"};

/// Calls `visit(name, value)` for every field of `options` that decides the
/// code compiled, in declaration order: the one list that the kernel cache's
/// fingerprint and --print-schedule read (describeCodeOptions). A field
/// added to these structs must be added here or to kOptionsBesideTheCode
/// (tests/unit/Codegen/CompileOptionsTest.cpp fails otherwise).
template <typename Visit>
void forEachCodeOption(const CompileOptions &options, Visit &&visit) {
  const TargetOptions &target = options.target;
  visit("target.kind", target.kind);
  visit("target.triple", target.triple);
  visit("target.cpu", target.cpu);
  visit("target.optLevel", target.optLevel);
  const CpuPipelineOptions &pipeline = options.pipeline;
  visit("pipeline.rowTile", pipeline.rowTile);
  visit("pipeline.columnTile", pipeline.columnTile);
  visit("pipeline.vectorize", pipeline.vectorize);
  visit("pipeline.attention", pipeline.attention);
  visit("pipeline.parallel", pipeline.parallel);
  visit("pipeline.parallelWork", pipeline.parallelWork);
  visit("pipeline.lowering", pipeline.lowering);
  visit("pipeline.tf32", pipeline.tf32);
  visit("backend", options.backend);
  visit("halideSchedule", options.halideSchedule);
  visit("objectBlockCache", options.objectBlockCache);
}

/// `name=value` for each field of forEachCodeOption, space-separated
/// (strings quoted): the cache key's options and --print-schedule's line.
std::string describeCodeOptions(const CompileOptions &options);

} // namespace attnc

#endif // ATTNC_CODEGEN_COMPILEOPTIONS_H
