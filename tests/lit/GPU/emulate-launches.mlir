// attn-gpu-emulate-launches: a launch becomes loops over its blocks and
// threads (z, y, x), the ids the loop counters; cooperating threads are an
// error.
// RUN: attn-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(attn-gpu-emulate-launches))' \
// RUN:   | FileCheck %s

// CHECK-LABEL: func.func @launch
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG:     %[[C64:.*]] = arith.constant 64 : index
// CHECK:         scf.for %{{.*}} = %[[C0]] to %[[C1]] step %[[C1]]
// CHECK:           scf.for %{{.*}} = %[[C0]] to %[[C1]] step %[[C1]]
// CHECK:             scf.for %[[BX:.*]] = %[[C0]] to %[[C3]] step %[[C1]]
// CHECK:               scf.for
// CHECK:                 scf.for
// CHECK:                   scf.for %[[TX:.*]] = %[[C0]] to %[[C64]] step %[[C1]]
// CHECK:                     %[[BASE:.*]] = arith.muli %[[BX]], %[[C64]]
// CHECK:                     arith.addi %[[BASE]], %[[TX]]
// CHECK-NOT:     gpu.launch
func.func @launch(%a: memref<192xf32>) {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c64 = arith.constant 64 : index
  %t = gpu.launch async blocks(%bx, %by, %bz) in (%gx = %c3, %gy = %c1, %gz = %c1)
                        threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %base = arith.muli %bx, %sx : index
    %i = arith.addi %base, %tx : index
    %v = memref.load %a[%i] : memref<192xf32>
    %w = arith.addf %v, %v : f32
    memref.store %w, %a[%i] : memref<192xf32>
    gpu.terminator
  }
  return
}

// -----

func.func @barrier(%a: memref<64xf32>) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  // expected-error @below {{has threads that cooperate (barriers, shuffles, reductions); they cannot run one after another}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    gpu.barrier
    gpu.terminator
  }
  return
}
