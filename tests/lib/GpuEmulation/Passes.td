//===- Passes.td - The GPU emulation's pass (tests only) ---*- tablegen -*-===//
//
// A test of the GPU target's kernels without a GPU: not part of attnc, linked
// into the tests and attn-opt (GpuEmulation.h).
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TEST_GPUEMULATION_PASSES_TD
#define ATTNC_TEST_GPUEMULATION_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnGpuEmulateLaunches
    : Pass<"attn-gpu-emulate-launches", "::mlir::func::FuncOp"> {
  let summary = "Run each gpu.launch as loops on the CPU (a test of the GPU "
                "mapping without a GPU)";
  let description = [{
    Replaces every `gpu.launch` by `scf.for` loops over its blocks and
    threads around its body, with `gpu.block_id`, `gpu.thread_id`,
    `gpu.block_dim` and `gpu.grid_dim` replaced by the loop counters and the
    launch sizes. The kernels attn-gpu-map-loops makes have no barrier, no
    shared memory and no warp operation, so running their threads one after
    another computes what the GPU computes: the CPU back end can then check
    the mapping (indices, guards, one-thread runs) against the goldens.
    Barriers, workgroup memory, `gpu.shuffle` and `nvgpu.mma.sync` are run
    too: each stretch of a block between barriers (or shuffles, or mmas) is
    a loop over its threads, values that cross one kept per thread; an mma
    gives each thread its elements of D, the products of the A and B
    elements its warp's lanes hold (attn/GPU/MmaFragments.h) added to C in
    k order; a barrier, shuffle or mma under
    control flow that is not uniform in the block, `gpu.subgroup_reduce`
    and `gpu.all_reduce` are located errors.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
  ];
}

#endif // ATTNC_TEST_GPUEMULATION_PASSES_TD
