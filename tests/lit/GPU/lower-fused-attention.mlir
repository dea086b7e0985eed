// attn-gpu-lower-fused-attention: one launch; a block per (entry x head,
// tile of query rows), a thread per row; the block copies each key tile and
// value tile into workgroup memory between barriers, walks the tiles below
// its longest row, and each thread takes the tile's keys its row sees; the
// row's length from valid_lens (clamped, causal); a row that is empty or
// needs an exact recompute is marked, not stored, and a second launch (a warp per row)
// walks every key of each marked row (D2L's -1e6 for the masked ones).
// RUN: attn-opt %s --pass-pipeline='builtin.module(func.func(attn-gpu-lower-fused-attention))' \
// RUN:   | FileCheck %s

// 2 batch entries x 2 heads of 16, 64 rows: 4 blocks of 64 threads, key
// tiles of 64.
// CHECK-LABEL: func.func @heads
// CHECK-SAME: (%[[Q:.*]]: memref<2x64x32xf32>, %[[K:.*]]: memref<2x64x32xf32>, %[[V:.*]]: memref<2x64x32xf32>, %[[VL:.*]]: memref<2xi32>, %[[O:.*]]: memref<2x64x32xf32>)
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG:     %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG:     %[[MARKS:.*]] = memref.alloc() : memref<256xi32>
// CHECK:         gpu.launch async blocks(%[[BLOCK:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C4]], {{.*}}) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C64]], {{.*}}) workgroup(%[[KT:.*]] : memref<64x16xf32, #gpu.address_space<workgroup>>, %[[VT:.*]] : memref<64x16xf32, #gpu.address_space<workgroup>>)
// the block's entry, head and first row, and the keys its last row sees
// CHECK:           %[[N:.*]] = arith.divui %[[BLOCK]], %{{.*}} : index
// CHECK:           %[[ROW0:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK:           %[[B:.*]] = arith.divui %[[N]], %{{.*}} : index
// CHECK:           %[[H:.*]] = arith.remui %[[N]], %{{.*}} : index
// CHECK:           %[[COL:.*]] = arith.muli %[[H]], %{{.*}} : index
// CHECK:           %[[VCOL0:.*]] = arith.muli %[[H]], %{{.*}} : index
// CHECK:           memref.load %[[VL]][%[[B]]] : memref<2xi32>
// CHECK:           arith.minsi
// CHECK:           %[[BLOCKLEN:.*]] = arith.minsi
// CHECK:           %[[NONNEG:.*]] = arith.maxsi %[[BLOCKLEN]], %{{.*}} : index
// CHECK:           %[[ROUNDED:.*]] = arith.addi %[[NONNEG]], %{{.*}} : index
// CHECK:           %[[TILES:.*]] = arith.divui %[[ROUNDED]], %[[C64]]{{.*}} : index
// the thread's row, its query row and its own length
// CHECK:           %[[OWN:.*]] = arith.addi %[[ROW0]], %{{.*}} : index
// CHECK:           %[[I:.*]] = arith.minsi %[[OWN]], %{{.*}} : index
// CHECK:           %[[QROW:.*]] = vector.load %[[Q]][%[[B]], %[[I]], %[[COL]]] : memref<2x64x32xf32>, vector<16xf32>
// CHECK:           memref.load %[[VL]][%[[B]]] : memref<2xi32>
// CHECK:           %[[CLAMPED:.*]] = arith.minsi %{{.*}}, %{{.*}} : index
// CHECK:           %[[LEN:.*]] = arith.minsi %[[CLAMPED]], %{{.*}} : index
// CHECK:           scf.for %[[TILE:.*]] = %{{.*}} to %[[TILES]] step %{{.*}} iter_args({{.*}}) -> (f32, f32, vector<16xf32>)
// CHECK:             %[[J0:.*]] = arith.muli %[[TILE]], %{{.*}} : index
// every thread copies a share of the key and value tiles
// CHECK:             scf.for
// CHECK:               arith.addi %[[T]], %{{.*}} : index
// CHECK:               %[[KV:.*]] = memref.load %[[K]][%[[B]], %{{.*}}, %{{.*}}] : memref<2x64x32xf32>
// CHECK:               memref.store %[[KV]], %[[KT]][%{{.*}}, %{{.*}}] : memref<64x16xf32, #gpu.address_space<workgroup>>
// CHECK:             scf.for
// CHECK:               %[[VV:.*]] = memref.load %[[V]][%[[B]], %{{.*}}, %{{.*}}] : memref<2x64x32xf32>
// CHECK:               memref.store %[[VV]], %[[VT]][%{{.*}}, %{{.*}}] : memref<64x16xf32, #gpu.address_space<workgroup>>
// CHECK:             gpu.barrier
// the row's keys of the tile: [j0, min(j0 + 64, len)), read from the tiles
// CHECK:             %[[END0:.*]] = arith.addi %[[J0]], %{{.*}} : index
// CHECK:             %[[END:.*]] = arith.minsi %[[END0]], %[[LEN]] : index
// CHECK:             scf.for %[[J:.*]] = %[[J0]] to %[[END]] step %{{.*}} iter_args({{.*}}) -> (f32, f32, vector<16xf32>)
// CHECK:               %[[JJ:.*]] = arith.subi %[[J]], %[[J0]] : index
// CHECK:               vector.load %[[KT]][%[[JJ]], %{{.*}}] : memref<64x16xf32, #gpu.address_space<workgroup>>, vector<8xf32>
// CHECK:               vector.reduction <add>, %{{.*}} fastmath<reassoc> : vector<8xf32> into f32
// CHECK:               math.exp
// CHECK:               math.exp
// CHECK:               vector.load %[[VT]][%[[JJ]], %{{.*}}] : memref<64x16xf32, #gpu.address_space<workgroup>>, vector<8xf32>
// CHECK:               vector.fma
// CHECK-NOT:           gpu.barrier
// CHECK:               scf.yield
// CHECK:             gpu.barrier
// CHECK:             scf.yield
// a row that is empty, or needs an exact recompute (its largest score below
// -1e6 + 104 while keys are masked: len < Tk; attn/IR/AttentionMask.h, the
// CPU's rule too) is marked, and stored only when not marked (rows past Tq
// store nothing)
// CHECK:           %[[EMPTY:.*]] = arith.cmpi sle, %[[LEN]], %{{.*}} : index
// CHECK:           %[[TINY:.*]] = arith.cmpf olt, %{{.*}}, %{{.*}} : f32
// CHECK:           %[[MASKED:.*]] = arith.cmpi slt, %[[LEN]], %[[C64]]{{.*}} : index
// CHECK:           %[[EXACT:.*]] = arith.andi %[[TINY]], %[[MASKED]] : i1
// CHECK:           %[[AGAIN:.*]] = arith.ori %[[EMPTY]], %[[EXACT]] : i1
// CHECK:           %[[MINE:.*]] = arith.cmpi ult, %[[OWN]], %{{.*}} : index
// CHECK:           scf.if %{{.*}} {
// CHECK:             %[[MARK:.*]] = arith.extui %[[AGAIN]] : i1 to i32
// CHECK:             memref.store %[[MARK]], %[[MARKS]][%{{.*}}] : memref<256xi32>
// CHECK:           arith.divf %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK-NOT:       gpu.barrier
// CHECK:           %[[KEEP:.*]] = arith.xori %[[AGAIN]], %{{.*}} : i1
// CHECK:           %[[STORE:.*]] = arith.andi %[[MINE]], %[[KEEP]] : i1
// CHECK:           scf.if %[[STORE]] {
// CHECK:             vector.store %{{.*}}, %[[O]][%[[B]], %[[I]], %{{.*}}] : memref<2x64x32xf32>, vector<16xf32>
// CHECK:           gpu.terminator
// the exact launch: a warp per (entry x head, row), every key of a marked
// row from global memory, D2L's -1e6 for the keys the row does not see
// CHECK:         gpu.launch async blocks({{.*}}) in (%{{.*}} = %c256{{[_0-9]*}}, {{.*}}) threads({{.*}}) in (%{{.*}} = %c32{{[_0-9]*}},
// CHECK:           memref.load %[[MARKS]]
// CHECK:           scf.for %[[JE:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}) -> (f32, f32, vector<1xf32>)
// CHECK:             memref.load %[[K]][%[[B2:.*]], %[[JE]], %{{.*}}] : memref<2x64x32xf32>
// CHECK-COUNT-5:     gpu.shuffle xor
// CHECK:             arith.cmpi slt, %[[JE]], %{{.*}} : index
// CHECK:             arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK:         memref.dealloc %[[MARKS]]
// CHECK-NOT:     attn.fused_attention
func.func @heads(%q: memref<2x64x32xf32>, %k: memref<2x64x32xf32>,
                 %v: memref<2x64x32xf32>, %vl: memref<2xi32>,
                 %o: memref<2x64x32xf32>) {
  attn.fused_attention %q, %k, %v valid_lens(%vl) outs(%o) causal heads(2)
      scale(2.500000e-01)
      : (memref<2x64x32xf32>, memref<2x64x32xf32>, memref<2x64x32xf32>,
         memref<2xi32>, memref<2x64x32xf32>) -> ()
  return
}

// 2-D valid_lens: the block walks the keys its longest row sees, the
// largest of its rows' lengths (3 rows, each clamped to Tk).
// CHECK-LABEL: func.func @two_d_lengths
// CHECK:         gpu.launch async
// CHECK:           memref.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<1x3xi32>
// CHECK:           memref.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<1x3xi32>
// CHECK:           arith.maxsi
// CHECK:           memref.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<1x3xi32>
// CHECK:           %[[LONGEST:.*]] = arith.maxsi
// CHECK:           arith.maxsi %[[LONGEST]], %{{.*}} : index
func.func @two_d_lengths(%q: memref<1x3x8xf32>, %k: memref<1x100x8xf32>,
                         %v: memref<1x100x8xf32>, %vl: memref<1x3xi32>,
                         %o: memref<1x3x8xf32>) {
  attn.fused_attention %q, %k, %v valid_lens(%vl) outs(%o) scale(0.35)
      : (memref<1x3x8xf32>, memref<1x100x8xf32>, memref<1x100x8xf32>,
         memref<1x3xi32>, memref<1x3x8xf32>) -> ()
  return
}

// A head of 128 values: four threads per row (kAttentionRowFloats), each
// with 32 of the query row's columns and 32 of the output's, interleaved in
// chunks of 4 (slice s: columns 4 s + 16 c, so that the four read
// neighbouring chunks of a key row, in different banks); their partial
// dot products added by shuffles (xor 1, 2) inside the key loop, whose
// bounds are the block's, not the row's. 16 rows take a warp's worth (32
// rows, 128 threads); key tiles of its 16 keys. The rows to recompute are
// marked in a buffer; a row not marked is stored after a barrier (`out` may
// be `q`'s buffer), a marked one by a second launch of a warp per row
// (48 = 3 x 16) whose lanes share the dot product (5 shuffles), which the
// buffer's dealloc follows.
// CHECK-LABEL: func.func @wide_head
// CHECK:         %[[MARKS:.*]] = memref.alloc() : memref<48xi32>
// CHECK:         gpu.launch async blocks({{.*}}) in (%{{.*}} = %c3{{[_0-9]*}}, {{.*}}) threads({{.*}}) in (%{{.*}} = %c128{{[_0-9]*}}, {{.*}}) workgroup(%{{.*}} : memref<16x128xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<16x128xf32, #gpu.address_space<workgroup>>)
// CHECK:           %[[S:.*]] = arith.remui %{{.*}}, %c4{{[_0-9]*}} : index
// CHECK:           %[[OFFSET:.*]] = arith.muli %[[S]], %c4{{[_0-9]*}} : index
// CHECK:           %[[QC0:.*]] = arith.addi %[[OFFSET]], %c0{{[_0-9]*}} : index
// CHECK:           %[[QCOL0:.*]] = arith.addi %{{.*}}, %[[QC0]] : index
// CHECK:           vector.load %{{.*}}[%{{.*}}, %{{.*}}, %[[QCOL0]]] : memref<3x16x128xf32>, vector<4xf32>
// CHECK:           %[[QC1:.*]] = arith.addi %[[OFFSET]], %c16{{[_0-9]*}} : index
// CHECK:           %[[QCOL1:.*]] = arith.addi %{{.*}}, %[[QC1]] : index
// CHECK:           vector.load %{{.*}}[%{{.*}}, %{{.*}}, %[[QCOL1]]] : memref<3x16x128xf32>, vector<4xf32>
// CHECK:           scf.for {{.*}} -> (f32, f32, vector<32xf32>)
// CHECK:             gpu.barrier
// CHECK:             scf.for {{.*}} -> (f32, f32, vector<32xf32>)
// CHECK:               %[[KC0:.*]] = arith.addi %[[OFFSET]], %c0{{[_0-9]*}} : index
// CHECK:               vector.load %{{.*}}[%{{.*}}, %[[KC0]]] : memref<16x128xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK:               %[[KC1:.*]] = arith.addi %[[OFFSET]], %c16{{[_0-9]*}} : index
// CHECK:               vector.load %{{.*}}[%{{.*}}, %[[KC1]]] : memref<16x128xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK-COUNT-6:       vector.load %{{.*}} : memref<16x128xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK:               gpu.shuffle xor %{{.*}}, %c1_i32
// CHECK:               gpu.shuffle xor %{{.*}}, %c2_i32
// CHECK:           memref.store %{{.*}}, %[[MARKS]]
// CHECK:           gpu.barrier
// CHECK:           scf.if
// CHECK-COUNT-8:     vector.store %{{.*}} : memref<3x16x128xf32>, vector<4xf32>
// CHECK:         gpu.launch async blocks({{.*}}) in (%{{.*}} = %c48{{[_0-9]*}}, {{.*}}) threads({{.*}}) in (%{{.*}} = %c32{{[_0-9]*}},
// CHECK:           memref.load %[[MARKS]]
// CHECK:           scf.for {{.*}} -> (f32, f32, vector<4xf32>)
// CHECK-COUNT-5:     gpu.shuffle xor
// CHECK:           scf.if
// CHECK-COUNT-4:     memref.store %{{.*}} : memref<3x16x128xf32>
// CHECK:         memref.dealloc %[[MARKS]]
func.func @wide_head(%q: memref<3x16x128xf32>, %k: memref<3x16x128xf32>,
                     %v: memref<3x16x128xf32>, %o: memref<3x16x128xf32>) {
  attn.fused_attention %q, %k, %v outs(%o) scale(8.838835e-02)
      : (memref<3x16x128xf32>, memref<3x16x128xf32>, memref<3x16x128xf32>,
         memref<3x16x128xf32>) -> ()
  return
}
