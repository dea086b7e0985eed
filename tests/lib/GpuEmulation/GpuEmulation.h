//===- GpuEmulation.h - The GPU target's kernels run on the CPU -*- C++ -*-===//
//
// A test of the GPU target without a GPU, linked into the tests and attn-opt
// (never into attnc or the runtime): the loop nests are mapped to GPU
// launches as for --target=nvptx (attnc::addGpuKernelLoops, the NVPTX
// pipeline's own stages), then each launch runs as loops over its blocks and
// threads on this CPU (attn-gpu-emulate-launches), inside attnc's CPU
// pipeline (its buffer and LLVM stages). The end-to-end tests' gpu_emulation
// variants compare those kernels with the goldens.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TEST_GPUEMULATION_H
#define ATTNC_TEST_GPUEMULATION_H

#include "attnc/Codegen/CompileOptions.h"

#include "mlir/Pass/Pass.h"

#include <memory>

namespace attnc::test {

#define GEN_PASS_DECL
#include "GpuEmulationPasses.h.inc"

/// The name of the CPU lowering (CpuPipelineOptions::lowering).
constexpr const char kGpuEmulation[] = "gpu-emulation";

/// Registers attn-gpu-emulate-launches (for textual pipelines) and the CPU
/// lowering kGpuEmulation. Idempotent.
void registerGpuEmulation();

/// Sets `pipeline` to lower with the GPU emulation (registering it): the
/// GPU's kernels, scalar loops (its own tiles), attention as
/// `pipeline.attention` says, tf32 GEMMs with `pipeline.tf32`.
void useGpuEmulation(CpuPipelineOptions &pipeline);

} // namespace attnc::test

#endif // ATTNC_TEST_GPUEMULATION_H
