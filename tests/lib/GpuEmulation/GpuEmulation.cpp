//===- GpuEmulation.cpp - The GPU emulation's CPU lowering ----------------===//

#include "GpuEmulation.h"

#include "attnc/Codegen/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"

#include <mutex>

namespace attnc::test {
#define GEN_PASS_REGISTRATION
#include "GpuEmulationPasses.h.inc"
} // namespace attnc::test

using namespace attnc;

/// attnc's CPU stages around the GPU's kernels, each launch run as loops.
static void buildGpuEmulation(mlir::OpPassManager &pm,
                              const CpuPipelineOptions &options) {
  CpuBufferStages buffers;
  buffers.attention = cpuAttentionLowering(options);
  // The GPU's kernels read their params as the GPU's do: no pairs, nothing
  // prepared, and a prompt's prefill on the decode kernel.
  buffers.prefillFlash = false;
  buffers.bf16Pairs = false;
  buffers.hoistPrepare = false;
  addAttnToCpuBuffers(pm, buffers);
  GpuKernelStages kernels;
  kernels.tf32 = options.tf32;
  addGpuKernelLoops(pm, kernels);
  pm.addNestedPass<mlir::func::FuncOp>(test::createAttnGpuEmulateLaunches());
  // The launches' loops as they are: the GPU's tiles, not the CPU's.
  CpuPipelineOptions loops = options;
  loops.vectorize = false;
  addCpuLoopsToLLVM(pm, loops);
}

void test::registerGpuEmulation() {
  static std::once_flag once;
  std::call_once(once, [] {
    registerAttnGpuEmulationPasses();
    CpuLowering lowering;
    lowering.build = buildGpuEmulation;
    lowering.prefillFlash = false;
    registerCpuLowering(kGpuEmulation, std::move(lowering));
  });
}

void test::useGpuEmulation(CpuPipelineOptions &pipeline) {
  registerGpuEmulation();
  pipeline.lowering = kGpuEmulation;
}
