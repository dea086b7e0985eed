// attn-lower-fused-attention: one flash-style loop nest, no [N, Tq, Tk]
// buffer; only a blocked transposed copy of the keys, the mean of v and
// small per-block scratch.
// RUN: attn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(attn-lower-fused-attention{row-block=2 key-block=4}))' | FileCheck %s

// N=2, Tq=3 (a 2-row block and a 1-row block), Tk=6 (a 4-key block and a
// 2-key leftover), d=4, dv=5 (vectors of 4 and 1: powers of two only).
// CHECK-LABEL: func.func @flash
// CHECK-SAME: (%[[Q:.*]]: memref<2x3x4xf32>, %[[K:.*]]: memref<2x6x4xf32>, %[[V:.*]]: memref<2x6x5xf32>, %[[VL:.*]]: memref<2xi32>, %[[O:.*]]: memref<2x3x5xf32>)
func.func @flash(%q: memref<2x3x4xf32>, %k: memref<2x6x4xf32>, %v: memref<2x6x5xf32>, %vl: memref<2xi32>, %o: memref<2x3x5xf32>) {
  // scratch: keys transposed in blocks of 4 keys, mean of the values,
  // running max and sum of a super-block of 8 register blocks of rows, one
  // register block's weights; nothing of size Tq x Tk
  // CHECK: %[[KT:.*]] = memref.alloc() : memref<2x4x4xf32>
  // CHECK: %[[MEAN:.*]] = memref.alloc() : memref<5xf32>
  // CHECK: %[[STATS:.*]] = memref.alloc() : memref<2x16xf32>
  // CHECK: %[[PROBS:.*]] = memref.alloc() : memref<2x4xf32>
  // CHECK: %[[QROWS:.*]] = memref.alloc() : memref<16x4xf32>
  // CHECK-NOT: memref.alloc
  // for each batch entry: kt[j / 4, c, j % 4] = k[n, j, c]
  // CHECK: scf.for %[[N:.*]] =
  // CHECK: memref.load %[[K]][%[[N]], %[[J:.*]], %[[C:.*]]]
  // CHECK: %[[JB:.*]] = arith.divui %[[J]], %{{.*}}
  // CHECK: %[[JL:.*]] = arith.remui %[[J]], %{{.*}}
  // CHECK: memref.store %{{.*}}, %[[KT]][%[[JB]], %[[C]], %[[JL]]]
  // the super-block's query rows are copied first (out may be q's buffer)
  // CHECK: memref.load %[[Q]]
  // CHECK: memref.store %{{.*}}, %[[QROWS]]
  // per row of the super-block (3 rows): max = lowest, sum = 0, out = 0,
  // and the longest length: valid_lens[n] clamped to Tk
  // CHECK: scf.for {{.*}} -> (index)
  // CHECK: memref.store {{.*}}, %[[STATS]]
  // CHECK: memref.load %[[VL]][%[[N]]]
  // CHECK: arith.minsi
  // key blocks up to the longest row only: ceil(maxLen / 4), at most 1
  // CHECK: arith.divui
  // CHECK: arith.minui
  // for each key block, each register block of 2 rows reads its max and sum
  // CHECK: scf.for
  // CHECK: scf.for
  // CHECK: memref.load %[[STATS]]
  // scores of 2 rows x 4 keys: an FMA per feature against a vector of keys
  // CHECK: scf.for {{.*}} -> (vector<4xf32>, vector<4xf32>)
  // CHECK: vector.load %[[KT]]{{.*}} vector<4xf32>
  // CHECK: memref.load %[[QROWS]]
  // CHECK: vector.fma
  // mask j >= len with D2L's -1e6
  // CHECK: %[[MASKED:.*]] = arith.constant -1.000000e+06 : f32
  // CHECK: %[[MASKEDV:.*]] = vector.broadcast %[[MASKED]] : f32 to vector<4xf32>
  // CHECK: arith.select %{{.*}}, %{{.*}}, %[[MASKEDV]] : vector<4xi1>, vector<4xf32>
  // online softmax: m' = max(m, max s), p = exp(s - m'), l = l*exp(m - m') + sum p
  // (a plain max: a NaN score reaches the output through exp anyway)
  // CHECK: vector.reduction <maxnumf>, %{{.*}} fastmath<nnan,nsz>
  // CHECK: arith.maxnumf %{{.*}}, %{{.*}} fastmath<nnan,nsz> : f32
  // CHECK: math.exp {{.*}} : vector<4xf32>
  // CHECK: math.exp {{.*}} : f32
  // CHECK: vector.reduction <add>
  // out = out * exp(m - m') + p @ v[block], 5 columns as 4 + 1: the
  // weights go through PROBS; the 2 rows x 2 chunks of out stay in
  // registers over a loop on the block's keys, which loads each weight and
  // each row of v once
  // CHECK: vector.store {{.*}}, %[[PROBS]]
  // CHECK: vector.load %[[O]]{{.*}} vector<4xf32>
  // CHECK: vector.load %[[O]]{{.*}} vector<1xf32>
  // CHECK: scf.for {{.*}} -> (vector<4xf32>, vector<4xf32>, vector<1xf32>, vector<1xf32>)
  // CHECK: memref.load %[[PROBS]]
  // CHECK: memref.load %[[PROBS]]
  // CHECK: vector.load %[[V]]{{.*}} vector<4xf32>
  // CHECK: vector.fma
  // CHECK: vector.load %[[V]]{{.*}} vector<1xf32>
  // CHECK: vector.fma
  // CHECK: vector.store {{.*}}, %[[O]]
  // and writes them back
  // CHECK: memref.store {{.*}}, %[[STATS]]
  // the 2 leftover keys, only if some row reaches them
  // CHECK: scf.if
  // CHECK: vector<2xf32>
  // finish: a row of length <= 0 is the mean of v; a row below -1e6 + 104 is
  // recomputed exactly; else divide by the sum
  // CHECK: arith.cmpi sle
  // CHECK: arith.cmpf olt, %{{.*}}, %{{.*}} : f32
  // CHECK: scf.if
  // CHECK: memref.load %[[MEAN]]
  // CHECK: arith.divf {{.*}} : vector<4xf32>
  // CHECK: memref.dealloc %[[KT]]
  // CHECK: memref.dealloc %[[MEAN]]
  // CHECK: memref.dealloc %[[STATS]]
  // CHECK: memref.dealloc %[[PROBS]]
  // CHECK-NOT: attn.fused_attention
  attn.fused_attention %q, %k, %v valid_lens(%vl) outs(%o) scale(0.5) : (memref<2x3x4xf32>, memref<2x6x4xf32>, memref<2x6x5xf32>, memref<2xi32>, memref<2x3x5xf32>) -> ()
  return
}

// -----

// heads(2) on [B, T, 2 * d] projections: entry n is head n % 2 of batch
// entry n / 2, whose columns start at (n % 2) * d; lengths are the batch
// entry's.
// CHECK-LABEL: func.func @heads
// CHECK-SAME: (%[[Q:.*]]: memref<3x4x8xf32>, %[[VL:.*]]: memref<3xi32>, %[[O:.*]]: memref<3x4x8xf32>)
func.func @heads(%q: memref<3x4x8xf32>, %vl: memref<3xi32>, %o: memref<3x4x8xf32>) {
  // CHECK: %[[KT:.*]] = memref.alloc() : memref<1x4x4xf32>
  // six entries: 3 batch entries x 2 heads
  // CHECK: scf.for %[[N:.*]] = %{{.*}} to %c6 step
  // CHECK: %[[BATCH:.*]] = arith.divui %[[N]], %{{.*}} : index
  // CHECK: %[[HEAD:.*]] = arith.remui %[[N]], %{{.*}} : index
  // CHECK: %[[COL0:.*]] = arith.muli %[[HEAD]], %{{.*}} : index
  // keys: q's columns of this head
  // CHECK: %[[COL:.*]] = arith.addi %[[C:.*]], %[[COL0]] : index
  // CHECK: memref.load %[[Q]][%[[BATCH]], %{{.*}}, %[[COL]]]
  // lengths of the batch entry, not of the head
  // CHECK: memref.load %[[VL]][%[[BATCH]]]
  attn.fused_attention %q, %q, %q valid_lens(%vl) outs(%o) heads(2) scale(0.5) : (memref<3x4x8xf32>, memref<3x4x8xf32>, memref<3x4x8xf32>, memref<3xi32>, memref<3x4x8xf32>) -> ()
  return
}
