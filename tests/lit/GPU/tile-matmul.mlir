// attn-gpu-tile-matmul: a small GEMM on buffers becomes one parallel iteration
// per R x C block of outputs (R, C the largest of 4, 2, 1 dividing M, N):
// its rows of C loaded as vectors, k walked with one vector load of B and R
// scalar loads of A into R x C FMAs, the block stored back.
// RUN: attn-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(attn-gpu-tile-matmul))' \
// RUN:   | FileCheck %s

// CHECK-LABEL: func.func @matmul
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG:     %[[C25:.*]] = arith.constant 25 : index
// CHECK:         scf.parallel (%[[I:.*]], %[[J:.*]]) = (%{{.*}}, %{{.*}}) to (%[[C2]], %[[C25]])
// CHECK:           %[[ROW:.*]] = arith.muli %[[I]], %{{.*}} : index
// CHECK:           %[[COL:.*]] = arith.muli %[[J]], %{{.*}} : index
// CHECK-COUNT-4:   vector.load %{{.*}}[%{{.*}}, %[[COL]]] : memref<8x100xf32>, vector<4xf32>
// CHECK:           scf.for %[[K:.*]] = {{.*}} iter_args({{.*}}) -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>)
// CHECK:             vector.load %{{.*}}[%[[K]], %[[COL]]] : memref<64x100xf32>, vector<4xf32>
// CHECK-COUNT-4:     vector.fma
// CHECK:             scf.yield
// CHECK-COUNT-4:   vector.store %{{.*}}, %{{.*}}[%{{.*}}, %[[COL]]] : memref<8x100xf32>, vector<4xf32>
// CHECK-NOT:     linalg.matmul
func.func @matmul(%a: memref<8x64xf32>, %b: memref<64x100xf32>, %c: memref<8x100xf32>) {
  linalg.matmul ins(%a, %b : memref<8x64xf32>, memref<64x100xf32>)
                outs(%c : memref<8x100xf32>)
  return
}

// -----

// Odd sizes: blocks of 1 x 2 (M = 3, N = 10), the batch outermost.
// CHECK-LABEL: func.func @batch_matmul
// CHECK-DAG:     %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG:     %[[C5:.*]] = arith.constant 5 : index
// CHECK-DAG:     %[[C7:.*]] = arith.constant 7 : index
// CHECK:         scf.parallel (%[[N:.*]], %{{.*}}, %{{.*}}) = ({{.*}}) to (%[[C7]], %[[C3]], %[[C5]])
// CHECK:           vector.load %{{.*}}[%[[N]], %{{.*}}, %{{.*}}] : memref<7x3x10xf32>, vector<2xf32>
// CHECK:           scf.for
// CHECK:             memref.load %{{.*}}[%[[N]], %{{.*}}, %{{.*}}] : memref<7x3x5xf32>
// CHECK:             vector.fma {{.*}} : vector<2xf32>
func.func @batch_matmul(%a: memref<7x3x5xf32>, %b: memref<7x5x10xf32>, %c: memref<7x3x10xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<7x3x5xf32>, memref<7x5x10xf32>)
                      outs(%c : memref<7x3x10xf32>)
  return
}

// -----

// A B whose rows are strided is left to the one-output-per-thread loops.
// CHECK-LABEL: func.func @strided
// CHECK:         linalg.matmul
func.func @strided(%a: memref<4x4xf32>, %b: memref<4x4xf32, strided<[1, 4]>>, %c: memref<4x4xf32>) {
  linalg.matmul ins(%a, %b : memref<4x4xf32>, memref<4x4xf32, strided<[1, 4]>>)
                outs(%c : memref<4x4xf32>)
  return
}

// -----

// Large enough for the shared-memory tile (64 x 64 outputs per block of 256
// threads, k in slices of 16): a launch of its own, 2 x 3 blocks for
// M = 100, N = 130; 5 k-slices for K = 70. A's slice is stored transposed
// with padded rows; elements past M, N or K load as 0 and are not stored.
// CHECK-LABEL: func.func @shared_tiles
// CHECK-DAG:     %[[C6:.*]] = arith.constant 6 : index
// CHECK-DAG:     %[[C256:.*]] = arith.constant 256 : index
// CHECK:         gpu.launch async blocks({{.*}}) in ({{.*}} = %[[C6]], {{.*}}) threads({{.*}}) in ({{.*}} = %[[C256]],
// CHECK-SAME:      workgroup(%[[AS:[a-z0-9]+]] : memref<16x68xf32, #gpu.address_space<workgroup>>, %[[BS:[a-z0-9]+]] : memref<16x64xf32, #gpu.address_space<workgroup>>)
// CHECK:           %[[C5:.*]] = arith.constant 5 : index
// CHECK:           scf.for %{{.*}} = %{{.*}} to %[[C5]] {{.*}} iter_args({{.*}}) -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>)
// CHECK:             scf.if {{.*}} -> (f32)
// CHECK:             memref.store %{{.*}}, %[[AS]]
// CHECK:             scf.if {{.*}} -> (f32)
// CHECK:             memref.store %{{.*}}, %[[BS]]
// CHECK:             gpu.barrier
// CHECK:             scf.for
// CHECK:               vector.load %[[AS]]{{.*}} : memref<16x68xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK:               vector.load %[[BS]]{{.*}} : memref<16x64xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK-COUNT-4:       vector.fma
// CHECK:             gpu.barrier
// CHECK:           scf.if
// CHECK:             memref.load %{{.*}} : memref<100x130xf32>
// CHECK:             arith.addf
// CHECK:             memref.store %{{.*}} : memref<100x130xf32>
// CHECK:           gpu.terminator
// CHECK-NOT:     linalg.matmul
func.func @shared_tiles(%a: memref<100x70xf32>, %b: memref<70x130xf32>, %c: memref<100x130xf32>) {
  linalg.matmul ins(%a, %b : memref<100x70xf32>, memref<70x130xf32>)
                outs(%c : memref<100x130xf32>)
  return
}

// -----

// Sizes that are multiples of the tile need no range checks; the batch
// entry is the slowest part of the block id (3 x 2 x 1 blocks).
// CHECK-LABEL: func.func @shared_tiles_batched
// CHECK-DAG:     %[[C6:.*]] = arith.constant 6 : index
// CHECK:         gpu.launch async blocks({{.*}}) in ({{.*}} = %[[C6]], {{.*}})
// CHECK-NOT:       scf.if
// CHECK:           gpu.terminator
func.func @shared_tiles_batched(%a: memref<3x128x32xf32>, %b: memref<3x32x64xf32>, %c: memref<3x128x64xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<3x128x32xf32>, memref<3x32x64xf32>)
                      outs(%c : memref<3x128x64xf32>)
  return
}

// -----

// Inside a loop (not host code) a GEMM keeps the register blocks.
// CHECK-LABEL: func.func @nested
// CHECK-NOT:     gpu.launch
// CHECK:         scf.parallel
func.func @nested(%a: memref<128x64xf32>, %b: memref<64x64xf32>, %c: memref<128x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.for %i = %c0 to %c2 step %c1 {
    linalg.matmul ins(%a, %b : memref<128x64xf32>, memref<64x64xf32>)
                  outs(%c : memref<128x64xf32>)
  }
  return
}
