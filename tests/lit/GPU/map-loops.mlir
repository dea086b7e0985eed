// attn-gpu-map-loops: each top-level loop nest becomes a launch with one
// thread per iteration (linearized, innermost dimension fastest, a guard
// for the last block); reductions stay sequential in the thread; a copy
// becomes a mapped loop; a loop with no parallel dimension runs in one
// thread; allocations, views, calls and scalar code stay on the host.
// RUN: attn-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(attn-gpu-map-loops))' \
// RUN:   | FileCheck %s
// RUN: attn-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(attn-gpu-map-loops{block-size=64}))' \
// RUN:   | FileCheck %s --check-prefix=SMALL

// 4 x 100 = 400 iterations: 13 blocks of 32 threads (256 would leave most
// of sm_90a's 132 multiprocessors idle).
// CHECK-LABEL: func.func @transpose
// CHECK-DAG:     %[[C13:.*]] = arith.constant 13 : index
// CHECK-DAG:     %[[C32:.*]] = arith.constant 32 : index
// CHECK:         gpu.launch async blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C13]], {{.*}} threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C32]],
// CHECK:           %[[BASE:.*]] = arith.muli %[[BX]], %{{.*}} : index
// CHECK:           %[[LINEAR:.*]] = arith.addi %[[BASE]], %[[TX]] : index
// CHECK:           %[[IN:.*]] = arith.cmpi ult, %[[LINEAR]], %{{.*}} : index
// CHECK:           scf.if %[[IN]] {
// CHECK:             %[[J:.*]] = arith.remui %[[LINEAR]], %{{.*}} : index
// CHECK:             %[[I:.*]] = arith.divui %[[LINEAR]], %{{.*}} : index
// CHECK:             memref.load %{{.*}}[{{.*}}] : memref<4x100xf32>
// CHECK:             memref.store
// CHECK:           gpu.terminator
// CHECK-NOT:     scf.parallel
func.func @transpose(%a: memref<4x100xf32>, %b: memref<100x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c100 = arith.constant 100 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c100) step (%c1, %c1) {
    %v = memref.load %a[%i, %j] : memref<4x100xf32>
    memref.store %v, %b[%j, %i] : memref<100x4xf32>
    scf.reduce
  }
  return
}

// -----

// A matmul: one thread per output element, its k loop inside the thread.
// CHECK-LABEL: func.func @matmul
// CHECK:         gpu.launch async
// CHECK:           scf.if
// CHECK:             scf.for
// CHECK:               arith.mulf
// CHECK:               arith.addf
func.func @matmul(%a: memref<8x16xf32>, %b: memref<16x32xf32>, %c: memref<8x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c32) step (%c1, %c1) {
    scf.for %k = %c0 to %c16 step %c1 {
      %x = memref.load %a[%i, %k] : memref<8x16xf32>
      %y = memref.load %b[%k, %j] : memref<16x32xf32>
      %z = memref.load %c[%i, %j] : memref<8x32xf32>
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %z, %p : f32
      memref.store %s, %c[%i, %j] : memref<8x32xf32>
    }
    scf.reduce
  }
  return
}

// -----

// A copy is a mapped loop nest; a reduction with no parallel dimension runs
// in one thread; the alloc, the view and the call stay on the host.
// CHECK-LABEL: func.func @host_code
// CHECK:         %[[ALLOC:.*]] = memref.alloc() : memref<6xf32>
// CHECK:         memref.collapse_shape
// CHECK:         gpu.launch async
// CHECK:           memref.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<2x3xf32>
// CHECK:           memref.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : memref<2x3xf32>
// CHECK:         gpu.launch async blocks({{.*}}) in (%{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}) threads({{.*}}) in (%{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}})
// CHECK:           scf.for
// CHECK:         call @other
// CHECK-NOT:     memref.copy
func.func private @other(memref<2x3xf32>)
func.func @host_code(%a: memref<2x3xf32>, %b: memref<2x3xf32>, %sum: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %alloc = memref.alloc() : memref<6xf32>
  %flat = memref.collapse_shape %a [[0, 1]] : memref<2x3xf32> into memref<6xf32>
  memref.copy %a, %b : memref<2x3xf32> to memref<2x3xf32>
  scf.for %i = %c0 to %c6 step %c1 {
    %v = memref.load %flat[%i] : memref<6xf32>
    %s = memref.load %sum[] : memref<f32>
    %t = arith.addf %s, %v : f32
    memref.store %t, %sum[] : memref<f32>
  }
  call @other(%b) : (memref<2x3xf32>) -> ()
  return
}

// -----

// 2^20 iterations: blocks of `block-size` threads (256 by default).
// CHECK-LABEL: func.func @large
// CHECK-DAG:     %[[C4096:.*]] = arith.constant 4096 : index
// CHECK-DAG:     %[[C256:.*]] = arith.constant 256 : index
// CHECK:         gpu.launch async blocks({{.*}}) in (%{{.*}} = %[[C4096]], {{.*}} threads({{.*}}) in (%{{.*}} = %[[C256]],
// SMALL-LABEL: func.func @large
// SMALL-DAG:     %[[C16384:.*]] = arith.constant 16384 : index
// SMALL-DAG:     %[[C64:.*]] = arith.constant 64 : index
// SMALL:         gpu.launch async blocks({{.*}}) in (%{{.*}} = %[[C16384]], {{.*}} threads({{.*}}) in (%{{.*}} = %[[C64]],
func.func @large(%a: memref<1024x1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1024 = arith.constant 1024 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c1024, %c1024) step (%c1, %c1) {
    %v = memref.load %a[%i, %j] : memref<1024x1024xf32>
    %w = arith.addf %v, %v : f32
    memref.store %w, %a[%i, %j] : memref<1024x1024xf32>
    scf.reduce
  }
  return
}
