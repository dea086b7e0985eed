// attn-tile-and-vectorize: GEMMs become register blocks (rows x vector
// columns of C kept in registers across k), leftover rows and columns are
// smaller static blocks; elementwise ops and transposes that keep the
// innermost dimension become vector strips; row reductions one vector per
// row; the rest is left for scalar loops.
// RUN: attn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(attn-tile-and-vectorize{row-tile=8 column-tile=32}))' | FileCheck %s

// C[12, 40] += A[12, 5] B[5, 40]: blocks 8x32, 4x32 (leftover rows),
// 8x8 and 4x8 (leftover columns).
// CHECK-LABEL: func.func @matmul_blocks
// CHECK-SAME: (%[[A:.*]]: memref<12x5xf32>, %[[B:.*]]: memref<5x40xf32>, %[[C:.*]]: memref<12x40xf32>)
func.func @matmul_blocks(%a: memref<12x5xf32>, %b: memref<5x40xf32>, %c: memref<12x40xf32>) {
  // block (rows 0-7, columns 0-31): load the 8 rows of C into registers
  // The next row block's C lines are prefetched, a line (16 floats) at a
  // time, rows clamped into C (rows 8-11 here, 11 for the rest), then this
  // block's C is loaded.
  // CHECK-DAG: %[[R8:.*]] = arith.constant 8 : index
  // CHECK-DAG: %[[R11:.*]] = arith.constant 11 : index
  // CHECK-DAG: %[[L16:.*]] = arith.constant 16 : index
  // CHECK-DAG: %[[Z:.*]] = arith.constant 0 : index
  // CHECK: memref.prefetch %[[C]][%[[R8]], %[[Z]]], write, locality<3>, data : memref<12x40xf32>
  // CHECK-NEXT: memref.prefetch %[[C]][%[[R8]], %[[L16]]], write, locality<3>, data : memref<12x40xf32>
  // CHECK-COUNT-5: memref.prefetch %[[C]]
  // CHECK-NEXT: memref.prefetch %[[C]][%[[R11]], %[[L16]]], write
  // CHECK-COUNT-8: memref.prefetch %[[C]][%[[R11]]
  // CHECK: %[[C0:.*]] = vector.load %[[C]][%{{.*}}, %{{.*}}] : memref<12x40xf32>, vector<32xf32>
  // CHECK-COUNT-7: vector.load %[[C]]{{.*}} vector<32xf32>
  // for k: one vector of B, then per row a broadcast of A[m, k] and an FMA
  // CHECK: %[[ACC:.*]]:8 = scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[A0:.*]] = %[[C0]], {{.*}}) -> (vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>)
  // CHECK: %[[BROW:.*]] = vector.load %[[B]][%[[K]], %{{.*}}] : memref<5x40xf32>, vector<32xf32>
  // CHECK: %[[AMK:.*]] = memref.load %[[A]][%{{.*}}, %[[K]]] : memref<12x5xf32>
  // CHECK: %[[SPLAT:.*]] = vector.broadcast %[[AMK]] : f32 to vector<32xf32>
  // CHECK: vector.fma %[[SPLAT]], %[[BROW]], %[[A0]] : vector<32xf32>
  // CHECK-COUNT-7: vector.fma
  // CHECK: scf.yield
  // store the block back
  // CHECK-COUNT-8: vector.store %[[ACC]]#{{[0-7]}}, %[[C]]
  // leftover rows 8-11, full columns: a 4-row block
  // CHECK: scf.for {{.*}} -> (vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>)
  // leftover columns 32-39: 8-wide vectors, full rows then leftover rows
  // CHECK: scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
  // CHECK: scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
  // CHECK-NOT: linalg.matmul
  linalg.matmul ins(%a, %b : memref<12x5xf32>, memref<5x40xf32>) outs(%c : memref<12x40xf32>)
  return
}

// -----

// A linear layer with bias and ReLU: the bias broadcast into C and the ReLU
// into another buffer become the register blocks' start and end. C (2 x 4 x
// 32, viewed as 8 x 32) starts from the bias vector, not from memory; the
// block stores max(C, 0) into the ReLU's output, viewed the same way.
// CHECK-LABEL: func.func @bias_and_relu
// CHECK-SAME: (%[[A:.*]]: memref<8x5xf32>, %[[B:.*]]: memref<5x32xf32>, %[[BIAS:.*]]: memref<32xf32>, %[[OUT:.*]]: memref<2x4x32xf32>)
// CHECK-NOT: linalg.broadcast
// CHECK: %[[OUT2:.*]] = memref.collapse_shape %[[OUT]] {{\[\[}}0, 1], [2]]
// CHECK: %[[START:.*]]:8 = scf.if %{{.*}} -> (vector<32xf32>
// CHECK: %[[BV:.*]] = vector.load %[[BIAS]][%{{.*}}] : memref<32xf32>, vector<32xf32>
// CHECK: scf.yield %[[BV]], %[[BV]],
// CHECK: } else {
// CHECK: vector.load %[[C:.*]][
// CHECK: scf.for {{.*}} iter_args
// CHECK: vector.fma
// CHECK: scf.if
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : vector<32xf32>
// CHECK: vector.store %{{.*}}, %[[OUT2]]
// CHECK: } else {
// CHECK: vector.store %{{.*}}, %[[C]]
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @bias_and_relu(%a: memref<8x5xf32>, %b: memref<5x32xf32>, %bias: memref<32xf32>, %out: memref<2x4x32xf32>) {
  %c = memref.alloc() : memref<2x4x32xf32>
  linalg.broadcast ins(%bias : memref<32xf32>) outs(%c : memref<2x4x32xf32>) dimensions = [0, 1]
  %c2 = memref.collapse_shape %c [[0, 1], [2]] : memref<2x4x32xf32> into memref<8x32xf32>
  linalg.matmul ins(%a, %b : memref<8x5xf32>, memref<5x32xf32>) outs(%c2 : memref<8x32xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> (i, j, k)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%c : memref<2x4x32xf32>) outs(%out : memref<2x4x32xf32>) {
  ^bb0(%in: f32, %o: f32):
    %zero = arith.constant 0.0 : f32
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  }
  memref.dealloc %c : memref<2x4x32xf32>
  return
}

// -----

// Any activation of C alone is an epilogue: here gelu as
// attn-lower-to-linalg builds it, with its constants hoisted out of the body
// by canonicalization. Each register block applies the body to its vectors
// of C (constants as splats, math.erf on vectors) and stores the result
// where the generic wrote.
// CHECK-LABEL: func.func @bias_and_gelu
// CHECK-SAME: (%[[A:.*]]: memref<8x5xf32>, %[[B:.*]]: memref<5x32xf32>, %[[BIAS:.*]]: memref<32xf32>, %[[OUT:.*]]: memref<8x32xf32>)
// CHECK-DAG: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : vector<32xf32>
// CHECK-DAG: %[[HALF:.*]] = arith.constant dense<5.000000e-01> : vector<32xf32>
// CHECK-DAG: %[[RSQRT2:.*]] = arith.constant dense<0.707106769> : vector<32xf32>
// CHECK-NOT: linalg.broadcast
// CHECK: %[[ACC:.*]]:8 = scf.for {{.*}} iter_args
// CHECK: vector.fma
// CHECK: scf.if
// CHECK: %[[SCALED:.*]] = arith.mulf %[[ACC]]#0, %[[RSQRT2]] : vector<32xf32>
// CHECK: %[[ERF:.*]] = math.erf %[[SCALED]] : vector<32xf32>
// CHECK: %[[HALFX:.*]] = arith.mulf %[[ACC]]#0, %[[HALF]] : vector<32xf32>
// CHECK: %[[SUM:.*]] = arith.addf %[[ERF]], %[[ONE]] : vector<32xf32>
// CHECK: %[[GELU:.*]] = arith.mulf %[[HALFX]], %[[SUM]] : vector<32xf32>
// CHECK: vector.store %[[GELU]], %[[OUT]]
// CHECK-COUNT-7: math.erf
// CHECK: } else {
// CHECK: vector.store
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @bias_and_gelu(%a: memref<8x5xf32>, %b: memref<5x32xf32>, %bias: memref<32xf32>, %out: memref<8x32xf32>) {
  %half = arith.constant 0.5 : f32
  %rsqrt2 = arith.constant 0.707106769 : f32
  %c = memref.alloc() : memref<8x32xf32>
  linalg.broadcast ins(%bias : memref<32xf32>) outs(%c : memref<8x32xf32>) dimensions = [0]
  linalg.matmul ins(%a, %b : memref<8x5xf32>, memref<5x32xf32>) outs(%c : memref<8x32xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<8x32xf32>) outs(%out : memref<8x32xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.mulf %in, %rsqrt2 : f32
    %e = math.erf %s : f32
    %h = arith.mulf %in, %half : f32
    %one = arith.constant 1.0 : f32
    %p = arith.addf %e, %one : f32
    %g = arith.mulf %h, %p : f32
    linalg.yield %g : f32
  }
  memref.dealloc %c : memref<8x32xf32>
  return
}

// -----

// Not activations of C alone, so they stay separate passes after the
// register blocks: a generic that also reads another buffer, one whose body
// depends on the element's index, one that reads its output's old value.
// CHECK-LABEL: func.func @not_epilogues
// CHECK: scf.for {{.*}} iter_args
// CHECK: vector.fma
// CHECK-NOT: arith.addf
// CHECK: arith.addf {{.*}} : vector<32xf32>
// CHECK-LABEL: func.func @index_body
// CHECK: vector.fma
// CHECK: vector.step : vector<32xindex>
// CHECK-LABEL: func.func @reads_output
// CHECK: vector.fma
// CHECK-NOT: arith.subf
// CHECK: arith.subf {{.*}} : vector<32xf32>
func.func @not_epilogues(%a: memref<8x5xf32>, %b: memref<5x32xf32>, %y: memref<8x32xf32>, %out: memref<8x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<8x32xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<8x32xf32>)
  linalg.matmul ins(%a, %b : memref<8x5xf32>, memref<5x32xf32>) outs(%c : memref<8x32xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%c, %y : memref<8x32xf32>, memref<8x32xf32>) outs(%out : memref<8x32xf32>) {
  ^bb0(%in: f32, %other: f32, %o: f32):
    %r = arith.addf %in, %other : f32
    linalg.yield %r : f32
  }
  memref.dealloc %c : memref<8x32xf32>
  return
}
func.func @index_body(%a: memref<8x5xf32>, %b: memref<5x32xf32>, %out: memref<8x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<8x32xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<8x32xf32>)
  linalg.matmul ins(%a, %b : memref<8x5xf32>, memref<5x32xf32>) outs(%c : memref<8x32xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<8x32xf32>) outs(%out : memref<8x32xf32>) {
  ^bb0(%in: f32, %o: f32):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i32
    %jf = arith.sitofp %ji : i32 to f32
    %r = arith.addf %in, %jf : f32
    linalg.yield %r : f32
  }
  memref.dealloc %c : memref<8x32xf32>
  return
}
func.func @reads_output(%a: memref<8x5xf32>, %b: memref<5x32xf32>, %out: memref<8x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<8x32xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<8x32xf32>)
  linalg.matmul ins(%a, %b : memref<8x5xf32>, memref<5x32xf32>) outs(%c : memref<8x32xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<8x32xf32>) outs(%out : memref<8x32xf32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.subf %o, %in : f32
    linalg.yield %r : f32
  }
  memref.dealloc %c : memref<8x32xf32>
  return
}

// -----

// A zero fill becomes zero accumulators; C is read after the GEMM, so a
// ReLU of it stays a separate pass.
// CHECK-LABEL: func.func @zero_init_c_read_later
// CHECK-NOT: linalg.fill
// CHECK: %[[Z:.*]] = arith.constant dense<0.000000e+00> : vector<32xf32>
// CHECK: scf.if %{{.*}} -> (vector<32xf32>
// CHECK-NEXT: scf.yield %[[Z]], %[[Z]],
// CHECK: scf.for
// CHECK-NOT: arith.maximumf
// CHECK: vector.store
// CHECK: arith.maximumf
func.func @zero_init_c_read_later(%a: memref<8x5xf32>, %b: memref<5x32xf32>, %out: memref<8x32xf32>, %copy: memref<8x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<8x32xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<8x32xf32>)
  linalg.matmul ins(%a, %b : memref<8x5xf32>, memref<5x32xf32>) outs(%c : memref<8x32xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<8x32xf32>) outs(%out : memref<8x32xf32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  }
  memref.copy %c, %copy : memref<8x32xf32> to memref<8x32xf32>
  memref.dealloc %c : memref<8x32xf32>
  return
}

// -----

// A batched matmul: a loop over the batch around the same blocks.
// CHECK-LABEL: func.func @batch_matmul
func.func @batch_matmul(%a: memref<3x8x4xf32>, %b: memref<3x4x64xf32>, %c: memref<3x8x64xf32>) {
  // CHECK: scf.for %[[N:.*]] = %{{.*}} to %{{.*}} step
  // CHECK: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step
  // CHECK: vector.load %{{.*}}[%[[N]], %{{.*}}, %[[J]]] : memref<3x8x64xf32>, vector<32xf32>
  // CHECK: vector.fma {{.*}} : vector<32xf32>
  // CHECK-NOT: linalg.batch_matmul
  linalg.batch_matmul ins(%a, %b : memref<3x8x4xf32>, memref<3x4x64xf32>) outs(%c : memref<3x8x64xf32>)
  return
}

// -----

// Elementwise: strips of 32 along the innermost dimension.
// CHECK-LABEL: func.func @elementwise_strips
func.func @elementwise_strips(%x: memref<4x64xf32>, %y: memref<4x64xf32>) {
  // CHECK: scf.for
  // CHECK: scf.for
  // CHECK: %[[V:.*]] = vector.load {{.*}} vector<32xf32>
  // CHECK: %[[R:.*]] = arith.maximumf %[[V]], %{{.*}} : vector<32xf32>
  // CHECK: vector.store %[[R]]
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x64xf32>) outs(%y : memref<4x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %zero = arith.constant 0.0 : f32
    %0 = arith.maximumf %in, %zero : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// A reduction over the innermost dimension: one row per vector, reduced by
// vector.reduction.
// CHECK-LABEL: func.func @row_reduction
func.func @row_reduction(%x: memref<4x768xf32>, %s: memref<4xf32>) {
  // CHECK: scf.for
  // CHECK: %[[ROW:.*]] = vector.load {{.*}} vector<768xf32>
  // CHECK: vector.reduction <add>, %[[ROW]], %{{.*}} : vector<768xf32> into f32
  // CHECK-NOT: linalg.generic
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x768xf32>) outs(%s : memref<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// split_heads' transpose keeps the innermost dimension: contiguous strips.
// CHECK-LABEL: func.func @heads_transpose
func.func @heads_transpose(%x: memref<2x4x3x8xf32>, %y: memref<2x3x4x8xf32>) {
  // CHECK: %[[V:.*]] = vector.load {{.*}} vector<8xf32>
  // CHECK: vector.store %[[V]]
  // CHECK-NOT: linalg.transpose
  linalg.transpose ins(%x : memref<2x4x3x8xf32>) outs(%y : memref<2x3x4x8xf32>) permutation = [0, 2, 1, 3]
  return
}

// -----

// Left alone: reductions over an outer dimension, rows longer than 1024,
// transposes of the innermost dimension.
// CHECK-LABEL: func.func @left_alone
func.func @left_alone(%x: memref<4x64xf32>, %c: memref<64xf32>, %long: memref<2x2048xf32>, %s: memref<2xf32>, %t: memref<64x4xf32>) {
  // CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<4x64xf32>) outs(%c : memref<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  }
  // CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%long : memref<2x2048xf32>) outs(%s : memref<2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  }
  // CHECK: linalg.transpose
  linalg.transpose ins(%x : memref<4x64xf32>) outs(%t : memref<64x4xf32>) permutation = [1, 0]
  return
}

// -----

// Enough row blocks (64 rows: 8 blocks of 8, at least gemm-pack-row-blocks
// = 4) read each slice of B: it is copied once into a contiguous buffer
// (B's rows are 128 floats apart, its slice's rows would share L1 sets),
// and every register block reads B from the copy.
// CHECK-LABEL: func.func @matmul_packs_b
// CHECK-SAME: (%[[A:.*]]: memref<64x8xf32>, %[[B:.*]]: memref<8x128xf32>, %[[C:.*]]: memref<64x128xf32>)
// CHECK: %[[P:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8x32xf32>
// CHECK: scf.for %[[KK:.*]] =
// CHECK: %[[ROW:.*]] = vector.load %[[B]][%{{.*}}, %{{.*}}] : memref<8x128xf32>, vector<32xf32>
// CHECK: vector.store %[[ROW]], %[[P]][%[[KK]], %{{.*}}] : memref<8x32xf32>, vector<32xf32>
// CHECK: scf.for {{.*}} -> (vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>)
// CHECK: vector.load %[[P]][%{{.*}}, %{{.*}}] : memref<8x32xf32>, vector<32xf32>
// CHECK-NOT: vector.load %[[B]]
// CHECK: memref.dealloc %[[P]]
func.func @matmul_packs_b(%a: memref<64x8xf32>, %b: memref<8x128xf32>, %c: memref<64x128xf32>) {
  linalg.matmul ins(%a, %b : memref<64x8xf32>, memref<8x128xf32>) outs(%c : memref<64x128xf32>)
  return
}

// -----

// A GEMM of fewer rows than a register block's (a decode step's
// projection) is bound by reading B once: its k steps in chunks of
// gemv-chunk-steps (64; 160 = 2 x 64 + 32, the last one shorter) split over
// threads, each reading its rows of B at once into partial sums of its own,
// 4 rows (gemv-block-steps) per load and store of a block of them, the
// 32 lines of each of the 4 rows 16 steps (gemv-prefetch-steps) ahead
// asked into L2 first (clamped into B); the blocks wider (1 row of 8 x 32 columns, as many
// accumulators as an 8 x 32 block). Then C's start plus the partials in
// chunk order. 3 rows: 2 x 32.
// CHECK-LABEL: func.func @one_row
// CHECK-SAME: (%[[A:.*]]: memref<1x160xf32>, %[[B:.*]]: memref<160x512xf32>, %[[C:.*]]: memref<1x512xf32>)
// CHECK: %[[P:.*]] = memref.alloc() {alignment = 64 : i64} : memref<3x1x512xf32>
// CHECK: scf.for %[[CHUNK:.*]] = %c0 to %c3 step %c1 {
// CHECK:   %[[K0:.*]] = arith.muli %[[CHUNK]], %c64
// CHECK:   %[[FULL:.*]] = arith.cmpi ult, %[[CHUNK]], %c2
// CHECK:   scf.if %[[FULL]] {
// CHECK:     %[[PC:.*]] = memref.subview %[[P]][%[[CHUNK]], 0, 0] [1, 1, 512] [1, 1, 1]
// CHECK:     scf.for %[[S:.*]] = %c0 to %c64 step %c4 {
// CHECK:       %[[KB:.*]] = arith.addi %[[K0]], %[[S]]
// CHECK:       %[[AHEAD:.*]] = arith.addi %[[KB]], %c16
// CHECK:       %[[CLAMPED:.*]] = arith.minsi %[[AHEAD]], %c159
// CHECK:       memref.prefetch %[[B]][%[[CLAMPED]], %c0], read, locality<2>, data
// CHECK-COUNT-127: memref.prefetch %[[B]]
// CHECK-NOT:   memref.prefetch
// CHECK:       %[[FIRST:.*]] = arith.cmpi eq, %[[KB]], %[[K0]]
// CHECK:       scf.if %[[FIRST]] -> (vector<256xf32>) {
// CHECK:       } else {
// CHECK:         vector.load %[[PC]][%c0, %c0] {{.*}}, vector<256xf32>
// CHECK:       scf.for {{.*}} -> (vector<256xf32>)
// CHECK:         vector.load %[[B]]
// CHECK:         vector.fma {{.*}} : vector<256xf32>
// CHECK:       vector.store %{{.*}}, %[[PC]][%c0, %c0] {{.*}}, vector<256xf32>
// CHECK:       vector.store %{{.*}}, %[[PC]][%c0, %c256] {{.*}}, vector<256xf32>
// CHECK:   } else {
// CHECK:     scf.for %{{.*}} = %c0 to %c32 step %c4 {
// CHECK: scf.for %[[N:.*]] = %c0 to %c512 step %c16 {
// CHECK:   %[[START:.*]] = vector.load %[[C]][%c0, %[[N]]] : memref<1x512xf32>, vector<16xf32>
// CHECK:   %[[SUM:.*]] = scf.for %[[I:.*]] = %c0 to %c3 step %c1 iter_args(%[[ACC:.*]] = %[[START]])
// CHECK:     %[[PART:.*]] = vector.load %[[P]][%[[I]], %c0, %[[N]]]
// CHECK:     arith.addf %[[ACC]], %[[PART]]
// CHECK:   vector.store %[[SUM]], %[[C]][%c0, %[[N]]]
// CHECK: memref.dealloc %[[P]]
// CHECK-NOT: vector<32xf32>
// CHECK-LABEL: func.func @three_rows
// CHECK: scf.for {{.*}} -> (vector<64xf32>, vector<64xf32>, vector<64xf32>)
func.func @one_row(%a: memref<1x160xf32>, %b: memref<160x512xf32>, %c: memref<1x512xf32>) {
  linalg.matmul ins(%a, %b : memref<1x160xf32>, memref<160x512xf32>) outs(%c : memref<1x512xf32>)
  return
}
func.func @three_rows(%a: memref<3x16xf32>, %b: memref<16x128xf32>, %c: memref<3x128xf32>) {
  linalg.matmul ins(%a, %b : memref<3x16xf32>, memref<16x128xf32>) outs(%c : memref<3x128xf32>)
  return
}
