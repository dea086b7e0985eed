// attn-gpu-lower-fused-attention with multihead_attention's v2 keywords:
// query head h reads kv head h / (H / G) where it is (kv_heads), the
// thread's first pass starts at its window's first key (a causal window),
// and rope rotates the query row once and folds each key's rotation into
// its dot product (no rotated copy of k).
// RUN: attn-opt %s --pass-pipeline='builtin.module(func.func(attn-gpu-lower-fused-attention))' \
// RUN:   | FileCheck %s

// B=1, 4 query heads of dim 4 sharing 2 kv heads, T=6, window 2.
// CHECK-LABEL: func.func @v2
// CHECK-SAME: (%[[Q:.*]]: memref<1x6x16xf32>, %[[K:.*]]: memref<1x6x8xf32>, %[[V:.*]]: memref<1x6x8xf32>, %[[VL:.*]]: memref<1xi32>, %[[COS:.*]]: memref<6x2xf32>, %[[SIN:.*]]: memref<6x2xf32>, %[[O:.*]]: memref<1x6x16xf32>)
func.func @v2(%q: memref<1x6x16xf32>, %k: memref<1x6x8xf32>, %v: memref<1x6x8xf32>, %vl: memref<1xi32>, %c: memref<6x2xf32>, %s: memref<6x2xf32>, %o: memref<1x6x16xf32>) {
  // one thread per (batch x query head, row)
  // CHECK: scf.parallel (%[[N:.*]], %[[I:.*]], %{{.*}}) = ({{.*}}) to (%c4{{[_0-9]*}}, %c6{{[_0-9]*}}, %{{.*}})
  // CHECK: %[[B:.*]] = arith.divui %[[N]], %{{.*}} : index
  // CHECK: %[[H:.*]] = arith.remui %[[N]], %{{.*}} : index
  // CHECK: %[[G:.*]] = arith.divui %[[H]], %c2{{[_0-9]*}} : index
  // CHECK: %[[QCOL:.*]] = arith.muli %[[H]], %{{.*}} : index
  // CHECK: %[[KCOL:.*]] = arith.muli %[[G]], %{{.*}} : index
  // CHECK: %[[GV:.*]] = arith.muli %[[G]], %{{.*}} : index
  // CHECK: %[[VCOL:.*]] = arith.addi %[[GV]], %{{.*}} : index
  // CHECK: %[[HV:.*]] = arith.muli %[[H]], %{{.*}} : index
  // CHECK: %[[OCOL:.*]] = arith.addi %[[HV]], %{{.*}} : index
  // the query row, rotated: q * [cos, cos] + [q2, q1] * [-sin, sin]
  // CHECK: %[[QROW:.*]] = vector.load %[[Q]][%[[B]], %[[I]], %[[QCOL]]] : memref<1x6x16xf32>, vector<4xf32>
  // CHECK: %[[CH:.*]] = vector.load %[[COS]][%[[I]], %{{.*}}] : memref<6x2xf32>, vector<2xf32>
  // CHECK: %[[SH:.*]] = vector.load %[[SIN]][%[[I]], %{{.*}}] : memref<6x2xf32>, vector<2xf32>
  // CHECK: %[[CF:.*]] = vector.shuffle %[[CH]], %[[CH]] [0, 1, 0, 1]
  // CHECK: %[[NEG:.*]] = arith.negf %[[SH]] : vector<2xf32>
  // CHECK: %[[SF:.*]] = vector.shuffle %[[NEG]], %[[SH]] [0, 1, 2, 3]
  // CHECK: %[[SWAP:.*]] = vector.shuffle %[[QROW]], %[[QROW]] [2, 3, 0, 1]
  // CHECK: %[[QC:.*]] = arith.mulf %[[QROW]], %[[CF]] : vector<4xf32>
  // CHECK: %[[QS:.*]] = arith.mulf %[[SWAP]], %[[SF]] : vector<4xf32>
  // CHECK: %[[QR:.*]] = arith.addf %[[QC]], %[[QS]] : vector<4xf32>
  // CHECK: %[[Q1:.*]] = vector.shuffle %[[QR]], %[[QR]] [0, 1]
  // CHECK: %[[Q2:.*]] = vector.shuffle %[[QR]], %[[QR]] [2, 3]
  // the row's keys: [max(0, i + 1 - 2), min(len, i + 1))
  // CHECK: arith.minsi %{{.*}}, %{{.*}} : index
  // CHECK: %[[LEN:.*]] = arith.minsi %{{.*}}, %{{.*}} : index
  // CHECK: %[[LO:.*]] = arith.maxsi %{{.*}}, %{{.*}} : index
  // CHECK: scf.for %[[J:.*]] = %[[LO]] to %[[LEN]]
  // the kv head's key row in halves, the tables at position j:
  // cos (q1 k1 + q2 k2) + sin (q2 k1 - q1 k2)
  // CHECK: %[[K1:.*]] = vector.load %[[K]][%[[B]], %[[J]], %{{.*}}] : memref<1x6x8xf32>, vector<2xf32>
  // CHECK: %[[K2:.*]] = vector.load %[[K]][%[[B]], %[[J]], %{{.*}}] : memref<1x6x8xf32>, vector<2xf32>
  // CHECK: vector.load %[[COS]][%[[J]], %{{.*}}]
  // CHECK: vector.load %[[SIN]][%[[J]], %{{.*}}]
  // CHECK: arith.subf
  // CHECK: vector.reduction <add>, %{{.*}} fastmath<reassoc> : vector<2xf32> into f32
  // keys outside [lo, len) are D2L's -1e6
  // CHECK: %[[BELOW:.*]] = arith.cmpi slt, %[[J]], %[[LEN]] : index
  // CHECK: %[[ABOVE:.*]] = arith.cmpi sge, %[[J]], %[[LO]] : index
  // CHECK: arith.andi %[[BELOW]], %[[ABOVE]] : i1
  // CHECK: vector.load %[[V]][%[[B]], %[[J]], %[[VCOL]]] : memref<1x6x8xf32>, vector<4xf32>
  // a row that sees nothing (len <= lo) takes the pass over every key
  // CHECK: arith.cmpi sle, %[[LEN]], %[[LO]] : index
  // CHECK: vector.store %{{.*}}, %[[O]][%[[B]], %[[I]], %[[OCOL]]] : memref<1x6x16xf32>, vector<4xf32>
  // CHECK-NOT: attn.fused_attention
  attn.fused_attention %q, %k, %v valid_lens(%vl) rope(%c, %s) outs(%o) causal window(2) heads(4) kv_heads(2) scale(0.5)
      : (memref<1x6x16xf32>, memref<1x6x8xf32>, memref<1x6x8xf32>, memref<1xi32>, memref<6x2xf32>, memref<6x2xf32>, memref<1x6x16xf32>) -> ()
  return
}
