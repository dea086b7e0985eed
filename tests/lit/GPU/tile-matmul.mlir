// attn-gpu-tile-matmul: a GEMM on buffers becomes one parallel iteration
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
