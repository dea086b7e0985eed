// attn-lower-fused-attention with multihead_attention's v2 keywords:
// kv_heads (a kv head's keys transposed once and shared by its group of
// query heads; v read where it is), rope (applied as the kernel copies the
// keys and the query rows it reads anyway: no pass over q or k in memory),
// a causal window (key blocks below the lowest row's window skipped, and a
// register block of rows skips a key block none of its rows sees).
// RUN: attn-opt %s --pass-pipeline='builtin.module(func.func(attn-lower-fused-attention{row-block=2 key-block=4}))' | FileCheck %s

// B=1, 4 query heads of dim 2 sharing 2 kv heads, T=6, window 2.
// CHECK-LABEL: func.func @v2
// CHECK-SAME: (%[[Q:.*]]: memref<1x6x8xf32>, %[[K:.*]]: memref<1x6x4xf32>, %[[V:.*]]: memref<1x6x4xf32>, %[[VL:.*]]: memref<1xi32>, %[[COS:.*]]: memref<6x1xf32>, %[[SIN:.*]]: memref<6x1xf32>, %[[O:.*]]: memref<1x6x8xf32>)
func.func @v2(%q: memref<1x6x8xf32>, %k: memref<1x6x4xf32>, %v: memref<1x6x4xf32>, %vl: memref<1xi32>, %c: memref<6x1xf32>, %s: memref<6x1xf32>, %o: memref<1x6x8xf32>) {
  // the keys of one kv head, transposed: [blocks, d, 4]
  // CHECK: %[[KT:.*]] = memref.alloc() : memref<2x2x4xf32>
  // CHECK: %[[MEAN:.*]] = memref.alloc() : memref<2xf32>
  // CHECK: %[[QROWS:.*]] = memref.alloc() : memref<16x2xf32>
  // CHECK-NOT: memref.alloc
  // one entry per (batch, kv head): B * G = 2
  // CHECK: %[[C2:.*]] = arith.constant 2 : index
  // CHECK: scf.for %[[N:.*]] = %{{.*}} to %[[C2]]
  // CHECK: %[[B:.*]] = arith.divui %[[N]], %{{.*}} : index
  // CHECK: %[[G:.*]] = arith.remui %[[N]], %{{.*}} : index
  // CHECK: %[[KCOL:.*]] = arith.muli %[[G]], %{{.*}} : index
  // CHECK: %[[VCOL:.*]] = arith.muli %[[G]], %{{.*}} : index
  // rope as the keys are transposed: x1 cos - x2 sin, x2 cos + x1 sin at
  // position j (x2 = element c + d/2)
  // CHECK: scf.for %[[J:.*]] =
  // CHECK: scf.for %[[C:.*]] =
  // CHECK: %[[X1:.*]] = memref.load %[[K]][%[[B]], %[[J]], %{{.*}}]
  // CHECK: %[[X2:.*]] = memref.load %[[K]][%[[B]], %[[J]], %{{.*}}]
  // CHECK: %[[CS:.*]] = memref.load %[[COS]][%[[J]], %[[C]]]
  // CHECK: %[[SN:.*]] = memref.load %[[SIN]][%[[J]], %[[C]]]
  // CHECK: %[[X1C:.*]] = arith.mulf %[[X1]], %[[CS]]
  // CHECK: %[[X2S:.*]] = arith.mulf %[[X2]], %[[SN]]
  // CHECK: %[[LOW:.*]] = arith.subf %[[X1C]], %[[X2S]]
  // CHECK: %[[X2C:.*]] = arith.mulf %[[X2]], %[[CS]]
  // CHECK: %[[X1S:.*]] = arith.mulf %[[X1]], %[[SN]]
  // CHECK: %[[HIGH:.*]] = arith.addf %[[X2C]], %[[X1S]]
  // CHECK: memref.store %[[LOW]], %[[KT]]
  // CHECK: memref.store %[[HIGH]], %[[KT]]
  // the mean of the kv head's values (rows that see no key)
  // CHECK: memref.load %[[V]][%[[B]], %{{.*}}, %{{.*}}]
  // then the group's 2 query heads, h = g * 2 + r, all with the same KT
  // CHECK: %[[FIRST:.*]] = arith.muli %[[G]], %{{.*}} : index
  // CHECK: scf.for %[[R:.*]] =
  // CHECK: %[[H:.*]] = arith.addi %[[FIRST]], %[[R]] : index
  // CHECK: %[[QCOL:.*]] = arith.muli %[[H]], %{{.*}} : index
  // CHECK: %[[OCOL:.*]] = arith.muli %[[H]], %{{.*}} : index
  // the super-block's query rows, rotated as they are copied
  // CHECK: memref.load %[[Q]]
  // CHECK: memref.load %[[COS]]
  // CHECK: memref.store %{{.*}}, %[[QROWS]]
  // CHECK: memref.store %{{.*}}, %[[QROWS]]
  // the first key block: that of the first row's window, max(0, i + 1 - 2) / 4
  // CHECK: %[[W:.*]] = arith.constant 2 : index
  // CHECK: %[[LO:.*]] = arith.subi %{{.*}}, %[[W]] : index
  // CHECK: %[[LO0:.*]] = arith.maxsi %[[LO]], %{{.*}} : index
  // CHECK: %[[FB:.*]] = arith.divui %[[LO0]], %{{.*}} : index
  // CHECK: %[[FBC:.*]] = arith.minui %[[FB]], %{{.*}} : index
  // CHECK: %[[FS:.*]] = arith.divui %[[FBC]], %{{.*}} : index
  // CHECK: scf.for %[[KB:.*]] = %[[FS]] to
  // a register block of rows skips a block none of its rows sees:
  // j0 < max(len) and j0 + 4 > lo of its first row
  // CHECK: %[[SEES:.*]] = arith.andi
  // CHECK: scf.if %[[SEES]]
  // keys outside [lo, len) are D2L's -1e6
  // CHECK: arith.cmpi slt, %{{.*}}, %{{.*}} : vector<4xi32>
  // CHECK: arith.cmpi sge, %{{.*}}, %{{.*}} : vector<4xi32>
  // CHECK: arith.andi %{{.*}}, %{{.*}} : vector<4xi1>
  // CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<4xi1>, vector<4xf32>
  // p @ v reads the kv head's columns, writes the query head's
  // CHECK: vector.load %[[O]][%[[B]], %{{.*}}, %{{.*}}] : memref<1x6x8xf32>, vector<2xf32>
  // CHECK: vector.load %[[V]][%[[B]], %{{.*}}, %{{.*}}] : memref<1x6x4xf32>, vector<2xf32>
  // a row sees nothing when len <= lo: the mean of v
  // CHECK: arith.cmpi sle, %{{.*}}, %{{.*}} : index
  // CHECK-NOT: attn.fused_attention
  attn.fused_attention %q, %k, %v valid_lens(%vl) rope(%c, %s) outs(%o) causal window(2) heads(4) kv_heads(2) scale(0.5)
      : (memref<1x6x8xf32>, memref<1x6x4xf32>, memref<1x6x4xf32>, memref<1xi32>, memref<6x1xf32>, memref<6x1xf32>, memref<1x6x8xf32>) -> ()
  return
}
