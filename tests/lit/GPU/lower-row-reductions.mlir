// attn-gpu-lower-row-reductions: a reduction of the last dimension into an
// f32 output indexed by the others becomes a launch of a warp per output:
// lane l combines elements l, l + 32, ... from the combiner's identity, five
// xor shuffles (16 ... 1) combine the lanes, lane 0 of a warp with a row
// combines the total with the output and stores it. Rows shorter than a
// warp, other reductions and nested ones stay linalg.
// RUN: attn-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(attn-gpu-lower-row-reductions))' \
// RUN:   | FileCheck %s

// 64 rows of 768: 64 blocks of one warp (attn/Target/GpuTarget.h would
// leave multiprocessors idle with more warps per block).
// CHECK-LABEL: func.func @row_sum
// CHECK-SAME:    (%[[X:.*]]: memref<64x768xf32>, %[[SUM:.*]]: memref<64xf32>)
// CHECK-DAG:     %[[C32:.*]] = arith.constant 32 : index
// CHECK-DAG:     %[[C64:.*]] = arith.constant 64 : index
// CHECK:         gpu.launch async blocks({{.*}}) in (%{{.*}} = %[[C64]], {{.*}}) threads(%[[TX:[^,]*]], {{.*}}) in (%{{.*}} = %[[C32]],
// CHECK:           %[[LANE:.*]] = arith.remui %[[TX]]
// CHECK:           %[[ROW:.*]] = arith.addi
// CHECK:           %[[LIVE:.*]] = arith.cmpi ult, %[[ROW]]
// CHECK:           %[[SAFE:.*]] = arith.select %[[LIVE]], %[[ROW]]
// CHECK:           %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:           %[[PARTIAL:.*]] = scf.for %[[R:.*]] = %[[LANE]] to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (f32)
// CHECK:             %[[E:.*]] = memref.load %[[X]][%[[SAFE]], %[[R]]]
// CHECK:             %[[NEXT:.*]] = arith.addf %[[E]], %[[ACC]] : f32
// CHECK:             scf.yield %[[NEXT]]
// CHECK:           %[[O16:.*]] = arith.constant 16 : i32
// CHECK:           %[[S16:.*]], %{{.*}} = gpu.shuffle xor %[[PARTIAL]], %[[O16]]
// CHECK:           %[[P16:.*]] = arith.addf %[[S16]], %[[PARTIAL]]
// CHECK:           gpu.shuffle xor %[[P16]]
// CHECK-COUNT-3:   gpu.shuffle xor
// CHECK:           %[[TOTAL:.*]] = arith.addf
// CHECK:           %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]]
// CHECK:           %[[STORES:.*]] = arith.andi %[[LIVE]], %[[FIRST]]
// CHECK:           scf.if %[[STORES]]
// CHECK:             %[[OLD:.*]] = memref.load %[[SUM]][%[[SAFE]]]
// CHECK:             %[[NEW:.*]] = arith.addf %[[TOTAL]], %[[OLD]]
// CHECK:             memref.store %[[NEW]], %[[SUM]][%[[SAFE]]]
// CHECK:           gpu.terminator
// CHECK-NOT:     linalg.generic
func.func @row_sum(%x: memref<64x768xf32>, %sum: memref<64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                   affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<64x768xf32>) outs(%sum : memref<64xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.addf %in, %acc : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// Softmax's sum of exp(x - max) over [2, 3, 40]: the body is computed per
// element from both inputs (the maximum indexed like the output); the row
// is delinearized innermost fastest; 6 rows: 6 blocks of a warp.
// CHECK-LABEL: func.func @exp_sum
// CHECK-SAME:    (%[[X:.*]]: memref<2x3x40xf32>, %[[MAX:.*]]: memref<2x3xf32>, %[[SUM:.*]]: memref<2x3xf32>)
// CHECK-DAG:     %[[C6:.*]] = arith.constant 6 : index
// CHECK-DAG:     %[[C32:.*]] = arith.constant 32 : index
// CHECK:         gpu.launch async blocks({{.*}}) in (%{{.*}} = %[[C6]], {{.*}}) threads({{.*}}) in (%{{.*}} = %[[C32]],
// CHECK:           %[[SAFE:.*]] = arith.select
// CHECK:           %[[J:.*]] = arith.remui %[[SAFE]], %{{.*}} : index
// CHECK:           %[[I:.*]] = arith.divui %[[SAFE]], %{{.*}} : index
// CHECK:           scf.for %[[R:[^ ]*]] = {{.*}} -> (f32)
// CHECK:             %[[E:.*]] = memref.load %[[X]][%[[I]], %[[J]], %[[R]]]
// CHECK:             %[[M:.*]] = memref.load %[[MAX]][%[[I]], %[[J]]]
// CHECK:             %[[D:.*]] = arith.subf %[[E]], %[[M]]
// CHECK:             %[[P:.*]] = math.exp %[[D]]
// CHECK:             arith.addf %[[P]]
// CHECK-COUNT-5:   gpu.shuffle xor
// CHECK:           memref.store %{{.*}}, %[[SUM]][%[[I]], %[[J]]]
func.func @exp_sum(%x: memref<2x3x40xf32>, %max: memref<2x3xf32>, %sum: memref<2x3xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>,
                                   affine_map<(d0, d1, d2) -> (d0, d1)>,
                                   affine_map<(d0, d1, d2) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %max : memref<2x3x40xf32>, memref<2x3xf32>)
      outs(%sum : memref<2x3xf32>) {
  ^bb0(%in: f32, %m: f32, %acc: f32):
    %0 = arith.subf %in, %m : f32
    %1 = math.exp %0 : f32
    %2 = arith.addf %1, %acc : f32
    linalg.yield %2 : f32
  }
  return
}

// -----

// The row maximum: -inf is where each lane starts, maximumf combines (the
// output's operand first, as in the body).
// CHECK-LABEL: func.func @row_max
// CHECK:         gpu.launch async
// CHECK:           %[[NEG:.*]] = arith.constant 0xFF800000 : f32
// CHECK:           scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[NEG]]) -> (f32)
// CHECK:             %[[E:.*]] = memref.load
// CHECK:             arith.maximumf %[[ACC]], %[[E]] : f32
// CHECK-COUNT-5:   arith.maximumf
// CHECK:           scf.if
// CHECK:             %[[OLD:.*]] = memref.load
// CHECK:             arith.maximumf %[[OLD]], %{{.*}} : f32
func.func @row_max(%x: memref<4x32xf32>, %max: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                   affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x32xf32>) outs(%max : memref<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.maximumf %acc, %in : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// What stays linalg (a thread per output after convert-linalg-to-parallel-
// loops): a row shorter than a warp, an i32 count, a reduction that is not
// the last dimension, one nested in a loop, a body that reads the output
// twice.
// CHECK-LABEL: func.func @stays
// CHECK-NOT:     gpu.launch
// CHECK-COUNT-5: linalg.generic
// CHECK-NOT:     gpu.launch
func.func @stays(%short: memref<8x31xf32>, %s: memref<8xf32>,
                 %ids: memref<8x64xi32>, %count: memref<8xi32>,
                 %x: memref<64x8xf32>, %cols: memref<8xf32>,
                 %rows: memref<8x64xf32>, %n: index) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                   affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%short : memref<8x31xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.addf %in, %acc : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                   affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%ids : memref<8x64xi32>) outs(%count : memref<8xi32>) {
  ^bb0(%in: i32, %acc: i32):
    %0 = arith.addi %in, %acc : i32
    linalg.yield %0 : i32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                   affine_map<(d0, d1) -> (d1)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<64x8xf32>) outs(%cols : memref<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.addf %in, %acc : f32
    linalg.yield %0 : f32
  }
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                     affine_map<(d0, d1) -> (d0)>],
                    iterator_types = ["parallel", "reduction"]}
        ins(%rows : memref<8x64xf32>) outs(%s : memref<8xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %0 = arith.addf %in, %acc : f32
      linalg.yield %0 : f32
    }
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                   affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%rows : memref<8x64xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.mulf %in, %acc : f32
    %1 = arith.addf %0, %acc : f32
    linalg.yield %1 : f32
  }
  return
}
