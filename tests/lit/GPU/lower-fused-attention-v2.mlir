// attn-gpu-lower-fused-attention with multihead_attention's v2 keywords:
// query head h reads kv head h / (H / G) where it is (kv_heads); the block
// walks the key tiles from its first row's window on and each thread its
// row's window within a tile (a causal window); rope rotates the query row
// once, and each key row as the block copies it into the key tile (the
// exact launch rotates each key element it reads instead).
// RUN: attn-opt %s --pass-pipeline='builtin.module(func.func(attn-gpu-lower-fused-attention))' \
// RUN:   | FileCheck %s

// B=1, 4 query heads of dim 4 sharing 2 kv heads, T=6, window 2.
// CHECK-LABEL: func.func @v2
// CHECK-SAME: (%[[Q:.*]]: memref<1x6x16xf32>, %[[K:.*]]: memref<1x6x8xf32>, %[[V:.*]]: memref<1x6x8xf32>, %[[VL:.*]]: memref<1xi32>, %[[COS:.*]]: memref<6x2xf32>, %[[SIN:.*]]: memref<6x2xf32>, %[[O:.*]]: memref<1x6x16xf32>)
func.func @v2(%q: memref<1x6x16xf32>, %k: memref<1x6x8xf32>, %v: memref<1x6x8xf32>, %vl: memref<1xi32>, %c: memref<6x2xf32>, %s: memref<6x2xf32>, %o: memref<1x6x16xf32>) {
  // a block per (batch x query head, 32 rows), a thread per row; tiles of
  // 8 keys (the 6 rounded up)
  // CHECK: gpu.launch async blocks(%[[BLOCK:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c4{{[_0-9]*}}, {{.*}}) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c32{{[_0-9]*}}, {{.*}}) workgroup(%[[KT:.*]] : memref<8x4xf32, #gpu.address_space<workgroup>>, %[[VT:.*]] : memref<8x4xf32, #gpu.address_space<workgroup>>)
  // CHECK: %[[N:.*]] = arith.divui %[[BLOCK]], %{{.*}} : index
  // CHECK: %[[ROW0:.*]] = arith.muli %{{.*}}, %{{.*}} : index
  // CHECK: %[[B:.*]] = arith.divui %[[N]], %{{.*}} : index
  // CHECK: %[[H:.*]] = arith.remui %[[N]], %{{.*}} : index
  // CHECK: %[[G:.*]] = arith.divui %[[H]], %c2{{[_0-9]*}} : index
  // CHECK: %[[QCOL:.*]] = arith.muli %[[H]], %{{.*}} : index
  // CHECK: %[[KCOL:.*]] = arith.muli %[[G]], %{{.*}} : index
  // CHECK: %[[VCOL0:.*]] = arith.muli %[[G]], %{{.*}} : index
  // the first tile: that of the block's first row's first key, row0 + 1 - 2
  // CHECK: %[[LO0B:.*]] = arith.subi %{{.*}}, %c2{{[_0-9]*}} : index
  // CHECK: %[[LO0:.*]] = arith.maxsi %[[LO0B]], %{{.*}} : index
  // CHECK: %[[FIRST:.*]] = arith.divui %[[LO0]], %c8{{[_0-9]*}} : index
  // CHECK: %[[LAST:.*]] = arith.divui %{{.*}}, %c8{{[_0-9]*}} : index
  // the query row, rotated by halves: [q1 cos - q2 sin, q2 cos + q1 sin]
  // CHECK: %[[I:.*]] = arith.minsi %{{.*}}, %{{.*}} : index
  // CHECK: %[[QROW:.*]] = vector.load %[[Q]][%[[B]], %[[I]], %[[QCOL]]] : memref<1x6x16xf32>, vector<4xf32>
  // CHECK: %[[CH:.*]] = vector.load %[[COS]][%[[I]], %{{.*}}] : memref<6x2xf32>, vector<2xf32>
  // CHECK: %[[SH:.*]] = vector.load %[[SIN]][%[[I]], %{{.*}}] : memref<6x2xf32>, vector<2xf32>
  // CHECK: %[[Q1:.*]] = vector.shuffle %[[QROW]], %[[QROW]] [0, 1]
  // CHECK: %[[Q2:.*]] = vector.shuffle %[[QROW]], %[[QROW]] [2, 3]
  // CHECK: %[[Q1C:.*]] = arith.mulf %[[Q1]], %[[CH]] : vector<2xf32>
  // CHECK: %[[Q2S:.*]] = arith.mulf %[[Q2]], %[[SH]] : vector<2xf32>
  // CHECK: %[[LOW:.*]] = arith.subf %[[Q1C]], %[[Q2S]] : vector<2xf32>
  // CHECK: %[[Q2C:.*]] = arith.mulf %[[Q2]], %[[CH]] : vector<2xf32>
  // CHECK: %[[Q1S:.*]] = arith.mulf %[[Q1]], %[[SH]] : vector<2xf32>
  // CHECK: %[[HIGH:.*]] = arith.addf %[[Q2C]], %[[Q1S]] : vector<2xf32>
  // CHECK: %[[QR:.*]] = vector.shuffle %[[LOW]], %[[HIGH]] [0, 1, 2, 3]
  // the row's keys: [max(0, i + 1 - 2), min(len, i + 1))
  // CHECK: %[[CLAMPED:.*]] = arith.minsi %{{.*}}, %{{.*}} : index
  // CHECK: %[[LEN:.*]] = arith.minsi %[[CLAMPED]], %{{.*}} : index
  // CHECK: %[[LO:.*]] = arith.maxsi %{{.*}}, %{{.*}} : index
  // CHECK: scf.for %[[TILE:.*]] = %[[FIRST]] to %[[LAST]]
  // CHECK: %[[J0:.*]] = arith.muli %[[TILE]], %{{.*}} : index
  // each key element rotated as it is copied: x[c] cos - x[c + 2] sin for
  // the first half, x[c] cos + x[c - 2] sin for the second (8 keys of 4
  // for 32 threads: one element each)
  // CHECK: %[[X:.*]] = memref.load %[[K]][%[[B]], %[[KEY:.*]], %{{.*}}] : memref<1x6x8xf32>
  // CHECK: %[[FIRSTHALF:.*]] = arith.cmpi ult, %{{.*}}, %c2{{[_0-9]*}} : index
  // CHECK: %[[PARTNER:.*]] = memref.load %[[K]][%[[B]], %[[KEY]], %{{.*}}] : memref<1x6x8xf32>
  // CHECK: %[[KC:.*]] = memref.load %[[COS]][%[[KEY]], %{{.*}}] : memref<6x2xf32>
  // CHECK: %[[KS:.*]] = memref.load %[[SIN]][%[[KEY]], %{{.*}}] : memref<6x2xf32>
  // CHECK: %[[NEGATED:.*]] = arith.negf %[[PARTNER]] : f32
  // CHECK: %[[SIGNED:.*]] = arith.select %[[FIRSTHALF]], %[[NEGATED]], %[[PARTNER]] : f32
  // CHECK: %[[XC:.*]] = arith.mulf %[[X]], %[[KC]] : f32
  // CHECK: %[[PS:.*]] = arith.mulf %[[SIGNED]], %[[KS]] : f32
  // CHECK: %[[ROTATED:.*]] = arith.addf %[[XC]], %[[PS]] : f32
  // CHECK: memref.store %[[ROTATED]], %[[KT]]
  // CHECK: memref.load %[[V]]
  // CHECK: memref.store %{{.*}}, %[[VT]]
  // CHECK: gpu.barrier
  // the row's keys of the tile: [max(j0, lo), min(j0 + 8, len))
  // CHECK: %[[FROM:.*]] = arith.maxsi %[[J0]], %[[LO]] : index
  // CHECK: %[[END0:.*]] = arith.addi %[[J0]], %{{.*}} : index
  // CHECK: %[[END:.*]] = arith.minsi %[[END0]], %[[LEN]] : index
  // CHECK: scf.for %{{.*}} = %[[FROM]] to %[[END]]
  // CHECK: vector.load %[[KT]]
  // CHECK: vector.load %[[VT]]
  // CHECK: gpu.barrier
  // a row that sees nothing (len <= lo) is marked, and stored only when not
  // CHECK: %[[EMPTY:.*]] = arith.cmpi sle, %[[LEN]], %[[LO]] : index
  // CHECK: %[[AGAIN:.*]] = arith.ori %[[EMPTY]], %{{.*}} : i1
  // CHECK: memref.store %{{.*}}, %[[MARKS:.*]][%{{.*}}] : memref<24xi32>
  // CHECK: arith.xori %[[AGAIN]], %{{.*}} : i1
  // CHECK: vector.store %{{.*}}, %[[O]][%[[B]], %[[I]], %{{.*}}] : memref<1x6x16xf32>, vector<4xf32>
  // CHECK: gpu.terminator
  // the exact launch: a warp per (batch x query head, row), the marked
  // row's every key, each key element rotated as the tiles' are, kv head
  // h / 2's columns
  // CHECK: gpu.launch async blocks({{.*}}) in (%{{.*}} = %c24{{[_0-9]*}}, {{.*}}) threads(%[[LANE:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c32{{[_0-9]*}},
  // CHECK: %[[EH:.*]] = arith.remui %{{.*}}, %c4{{[_0-9]*}} : index
  // CHECK: %[[EG:.*]] = arith.divui %[[EH]], %c2{{[_0-9]*}} : index
  // CHECK: memref.load %[[MARKS]]
  // CHECK: %[[WALK:.*]] = arith.select %{{.*}}, %c6{{[_0-9]*}}, %{{.*}} : index
  // CHECK: scf.for %[[J:.*]] = %{{.*}} to %[[WALK]]
  // CHECK: memref.load %[[K]][%{{.*}}, %[[J]], %{{.*}}] : memref<1x6x8xf32>
  // CHECK: memref.load %[[K]][%{{.*}}, %[[J]], %{{.*}}] : memref<1x6x8xf32>
  // CHECK: memref.load %[[COS]][%[[J]], %{{.*}}] : memref<6x2xf32>
  // CHECK: memref.load %[[SIN]][%[[J]], %{{.*}}] : memref<6x2xf32>
  // CHECK: arith.negf %{{.*}} : f32
  // CHECK-COUNT-5: gpu.shuffle xor
  // keys outside [lo, len) are D2L's -1e6
  // CHECK: %[[BELOW:.*]] = arith.cmpi slt, %[[J]], %{{.*}} : index
  // CHECK: %[[ABOVE:.*]] = arith.cmpi sge, %[[J]], %{{.*}} : index
  // CHECK: %[[SEES:.*]] = arith.andi %[[BELOW]], %[[ABOVE]] : i1
  // CHECK: arith.select %[[SEES]], %{{.*}}, %cst{{[_0-9]*}} : f32
  // CHECK: memref.load %[[V]][%{{.*}}, %[[J]], %{{.*}}] : memref<1x6x8xf32>
  // CHECK: memref.store %{{.*}}, %[[O]][%{{.*}}, %{{.*}}, %{{.*}}] : memref<1x6x16xf32>
  // CHECK: memref.dealloc %[[MARKS]]
  // CHECK-NOT: attn.fused_attention
  attn.fused_attention %q, %k, %v valid_lens(%vl) rope(%c, %s) outs(%o) causal window(2) heads(4) kv_heads(2) scale(0.5)
      : (memref<1x6x16xf32>, memref<1x6x8xf32>, memref<1x6x8xf32>, memref<1xi32>, memref<6x2xf32>, memref<6x2xf32>, memref<1x6x16xf32>) -> ()
  return
}
