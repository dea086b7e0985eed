// The passes' parallel-work option: with parallel, loops of less work than
// the schedule's thresholds (parallel-flops, parallel-elements) stay on one
// thread; parallel-work=0 splits every loop that can be split (the tests of
// the same bits on 1 and 2 threads compile the goldens so).
// RUN: attn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(attn-tile-and-vectorize{parallel=true}))' | FileCheck %s --check-prefix=SCHEDULE
// RUN: attn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(attn-tile-and-vectorize{parallel=true parallel-work=0}))' | FileCheck %s --check-prefix=EVERY
// RUN: attn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(attn-lower-fused-attention{parallel=true}))' | FileCheck %s --check-prefix=SCHEDULE
// RUN: attn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(attn-lower-fused-attention{parallel=true parallel-work=0}))' | FileCheck %s --check-prefix=EVERY-FLASH

// 2 x 96 x 32 x 4 flops, far below the schedule's 2^20.
// SCHEDULE-LABEL: func.func @small_gemm
// SCHEDULE-NOT: scf.parallel
// EVERY-LABEL: func.func @small_gemm
// EVERY: scf.parallel
func.func @small_gemm(%a: memref<96x4xf32>, %b: memref<4x32xf32>, %c: memref<96x32xf32>) {
  linalg.matmul ins(%a, %b : memref<96x4xf32>, memref<4x32xf32>) outs(%c : memref<96x32xf32>)
  return
}

// -----

// SCHEDULE-LABEL: func.func @small_attention
// SCHEDULE-NOT: scf.parallel
// EVERY-FLASH-LABEL: func.func @small_attention
// EVERY-FLASH: scf.parallel
func.func @small_attention(%q: memref<2x3x4xf32>, %k: memref<2x6x4xf32>, %v: memref<2x6x4xf32>, %vl: memref<2xi32>, %o: memref<2x3x4xf32>) {
  attn.fused_attention %q, %k, %v valid_lens(%vl) outs(%o) scale(0.5)
      : (memref<2x3x4xf32>, memref<2x6x4xf32>, memref<2x6x4xf32>, memref<2xi32>, memref<2x3x4xf32>) -> ()
  return
}
