// attn.decode_attention on buffers (DecodeEmitter.h): items (batch x groups
// of kv heads) x chunks of decode-keys (256) cache rows, each reading only
// its visible rows [max(chunk start, window begin), min(chunk end, pos + T))
// of k and then of v (bf16, widened), the group's span of each row at once,
// for all query rows of the group; a second loop reduces each row's chunks
// in order, from the window's chunk to the last chunk holding pos + T - 1.
// No loop runs to the cache length.
// RUN: attn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(attn-lower-fused-attention),canonicalize,cse)' | FileCheck %s
// RUN: attn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(attn-lower-fused-attention{parallel=true}),canonicalize,cse)' | FileCheck %s --check-prefix=THREADS

// Both kv heads (2 x 2 query rows, d = 16) in one group: the scores of a
// chunk laid out key-major, 4 rows a key, 4 keys a vector of 16.
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[Q:.*]]: memref<2x1x64xf32>, %[[K:.*]]: memref<2x600x32xbf16>, %[[V:.*]]: memref<2x600x32xbf16>, %[[POS:.*]]: memref<2xi32>, %[[OUT:.*]]: memref<2x1x64xf32>)
// CHECK-NOT: to %c600
// CHECK-DAG: %[[KEYOF:.*]] = arith.constant dense<[0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]> : vector<16xindex>
// CHECK-DAG: %[[MAX:.*]] = memref.alloc() : memref<2x3x4xf32>
// CHECK-DAG: %[[SUM:.*]] = memref.alloc() : memref<2x3x4xf32>
// CHECK-DAG: %[[PART:.*]] = memref.alloc() : memref<2x3x4x16xf32>
// CHECK: scf.for %[[ITEM:.*]] = %c0 to %c6 step %c1 {
// CHECK:   %[[N:.*]] = arith.divui %[[ITEM]], %c3
// CHECK:   %[[C:.*]] = arith.remui %[[ITEM]], %c3
// CHECK:   %[[P:.*]] = memref.load %[[POS]]
// CHECK:   %[[END:.*]] = arith.addi %{{.*}}, %c1 : index
// CHECK:   %[[IN:.*]] = arith.cmpi sle, %[[END]], %c600
// CHECK:   %[[FROM:.*]] = arith.addi %{{.*}}, %c-299 : index
// CHECK:   %[[BEGIN:.*]] = arith.maxsi %[[FROM]], %c0
// CHECK:   %[[J0:.*]] = arith.muli %[[C]], %c256
// CHECK:   %[[JB:.*]] = arith.maxsi %[[J0]], %[[BEGIN]]
// CHECK:   %[[J1:.*]] = arith.addi %[[J0]], %c256
// CHECK:   %[[JE:.*]] = arith.minsi %[[J1]], %[[END]]
// CHECK:   scf.if
// [ja, ...): jb rounded down to a whole vector of 4 keys.
// CHECK:     %[[OFF:.*]] = arith.subi %[[JB]], %[[J0]]
// CHECK:     %[[QUADS:.*]] = arith.divui %[[OFF]], %c4
// CHECK:     %[[ROUNDED:.*]] = arith.muli %[[QUADS]], %c4
// CHECK:     %[[JA:.*]] = arith.addi %[[J0]], %[[ROUNDED]]
// CHECK:     %[[QS:.*]] = memref.alloc() : memref<4x16xf32>
// CHECK:     %[[SCORES:.*]] = memref.alloc() : memref<1024xf32>
// The four query rows held in registers.
// CHECK:     %[[Q0:.*]] = vector.load %[[QS]][%c0, %c0]
// CHECK:     %[[Q1:.*]] = vector.load %[[QS]][%c1, %c0]
// The row of each of the 4 keys (32 bf16: one line) asked into L2 16 rows
// ahead (decode-prefetch-keys, clamped into the cache), then its two heads
// loaded once (a key past je reads row je - 1),
// its products a vector per row, a tree of shuffles summing 4 keys x 4 rows
// into one vector of scores.
// CHECK:     scf.for %{{.*}} = %c0 to %{{.*}} step %c1 {
// CHECK:       %[[AHEAD:.*]] = arith.minsi %{{.*}}, %c599
// CHECK:       memref.prefetch %[[K]][%{{.*}}, %[[AHEAD]], %c0], read, locality<2>, data
// CHECK-COUNT-3: memref.prefetch %[[K]]
// CHECK-NOT:   memref.prefetch
// CHECK:       %[[LAST:.*]] = arith.subi %[[JE]], %c1
// CHECK:       %[[ROW:.*]] = arith.minsi %{{.*}}, %[[LAST]]
// CHECK:       %[[KEY16:.*]] = vector.load %[[K]][%{{.*}}, %[[ROW]], %c0] : memref<2x600x32xbf16>, vector<16xbf16>
// CHECK-NEXT:  %[[KEY:.*]] = arith.extf %[[KEY16]] : vector<16xbf16> to vector<16xf32>
// CHECK-NOT:   arith.truncf
// CHECK:       arith.mulf %[[Q0]], %[[KEY]]
// CHECK:       arith.mulf %[[Q1]], %[[KEY]]
// CHECK:       vector.load %[[K]][%{{.*}}, %[[ROW]], %c16] : memref<2x600x32xbf16>, vector<16xbf16>
// CHECK-COUNT-6: vector.load %[[K]]
// CHECK:       vector.shuffle
// CHECK:       %[[S:.*]] = arith.mulf %{{.*}}, %cst{{.*}} : vector<16xf32>
// The keys outside [jb, je) of a partial vector: -inf.
// CHECK:       %[[KEYS:.*]] = arith.addi %{{.*}}, %[[KEYOF]] : vector<16xindex>
// CHECK:       arith.cmpi slt, %[[KEYS]]
// CHECK:       arith.cmpi sge, %[[KEYS]]
// CHECK:       %[[MASKED:.*]] = arith.select %{{.*}}, %[[S]], %{{.*}} : vector<16xi1>, vector<16xf32>
// CHECK:       vector.store %[[MASKED]], %[[SCORES]][%{{.*}}] : memref<1024xf32>, vector<16xf32>
// Pass 2 across the vectors, then the 4 keys of a vector folded: each
// row's max; the weights in place; the sums folded the same way.
// CHECK:     scf.for {{.*}} -> (vector<16xf32>) {
// CHECK:       arith.maximumf %{{.*}} : vector<16xf32>
// CHECK:     arith.maximumf %{{.*}} : vector<8xf32>
// CHECK:     %[[ROWMAX:.*]] = arith.maximumf %{{.*}} : vector<4xf32>
// CHECK:     %[[SHIFT:.*]] = arith.select %{{.*}} : vector<4xi1>, vector<4xf32>
// CHECK:     %[[TILED:.*]] = vector.shuffle %[[SHIFT]], %[[SHIFT]] [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3]
// CHECK:     scf.for {{.*}} -> (vector<16xf32>) {
// CHECK:       arith.subf %{{.*}}, %[[TILED]]
// CHECK:       math.exp
// CHECK:     %[[ROWSUM:.*]] = arith.addf %{{.*}} : vector<4xf32>
// CHECK:     vector.store %[[ROWMAX]], %[[MAX]][%[[N]], %[[C]], %c0] : memref<2x3x4xf32>, vector<4xf32>
// CHECK:     vector.store %[[ROWSUM]], %[[SUM]][%[[N]], %[[C]], %c0] : memref<2x3x4xf32>, vector<4xf32>
// Pass 3: each value row's span once, the four rows' accumulators in
// registers.
// CHECK:     scf.for %[[J:.*]] = %[[JB]] to %[[JE]] step %c1 iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// CHECK:       vector.load %[[V]][%{{.*}}, %[[J]], %c0] : memref<2x600x32xbf16>, vector<16xbf16>
// CHECK-COUNT-2: vector.fma
// CHECK:       vector.load %[[V]][%{{.*}}, %[[J]], %c16] : memref<2x600x32xbf16>, vector<16xbf16>
// CHECK-COUNT-2: vector.fma
// CHECK:     vector.store %{{.*}}, %[[PART]][%[[N]], %[[C]], %c0, %c0]
// CHECK:     vector.store %{{.*}}, %[[PART]][%[[N]], %[[C]], %c3, %c0]
// CHECK: scf.for %[[N2:.*]] = %c0 to %c2 step %c1 {
// CHECK:   scf.if
// CHECK:     %[[FIRST:.*]] = arith.divui %{{.*}}, %c256
// CHECK:     %[[LASTC:.*]] = arith.divui %{{.*}}, %c256
// CHECK:     scf.for %[[R:.*]] = %c0 to %c4 step %c1 {
// CHECK:       scf.for %{{.*}} = %[[FIRST]] to %[[LASTC]] step %c1 iter_args(%{{.*}} = %cst{{.*}}) -> (f32) {
// CHECK:         arith.maximumf
// CHECK:       scf.for %{{.*}} = %[[FIRST]] to %[[LASTC]] step %c1 iter_args({{.*}}) -> (f32, vector<16xf32>) {
// CHECK:         math.exp
// CHECK:       arith.divf
// CHECK:       vector.store %{{.*}}, %[[OUT]]
// CHECK-DAG: memref.dealloc %[[MAX]]
// CHECK-DAG: memref.dealloc %[[PART]]
func.func @step(%q: memref<2x1x64xf32>, %k: memref<2x600x32xbf16>, %v: memref<2x600x32xbf16>, %pos: memref<2xi32>, %out: memref<2x1x64xf32>) {
  attn.decode_attention %q, %k, %v at %pos outs(%out) window(300) heads(4) kv_heads(2) scale(2.500000e-01)
      : (memref<2x1x64xf32>, memref<2x600x32xbf16>, memref<2x600x32xbf16>, memref<2xi32>, memref<2x1x64xf32>) -> ()
  return
}

// -----

// A chunk of 3 new tokens on threads: both kv heads' 12 rows (padded to
// 16 lanes) a vector per key, each lane's token its own mask (-inf past
// pos + t), the items as an scf.parallel (the reduction, little work, on
// one thread), and products(bf16): q, k, v and the weights rounded. The
// 12 rows x 4 pieces do not fit the registers: pass 3 keeps them in the
// partials, two value rows per load and store (each kv head's value row
// serves 6 query rows).
// THREADS-LABEL: func.func @prefill
// THREADS-DAG: %[[TOKEN:.*]] = arith.constant dense<[0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0]> : vector<16xindex>
// THREADS: scf.parallel (%{{.*}}) = (%c0) to (%c16) step (%c1) {
// THREADS:   memref.alloc() : memref<12x64xf32>
// THREADS:   memref.alloc() : memref<4096xf32>
// THREADS:   scf.for %[[R:.*]] = %c0 to %c12 step %c1 {
// THREADS:     %[[T:.*]] = arith.remui %[[R]], %c3
// THREADS:     arith.truncf %{{.*}} : vector<16xf32> to vector<16xbf16>
// THREADS:   scf.for
// THREADS:     arith.truncf
// THREADS:     %[[ROWPOS:.*]] = arith.addi %{{.*}}, %[[TOKEN]] : vector<16xindex>
// THREADS:     arith.cmpi slt, %{{.*}}, %{{.*}} : vector<16xindex>
// THREADS:     arith.select %{{.*}}, %{{.*}}, %cst{{.*}} : vector<16xi1>, vector<16xf32>
// THREADS:   scf.for %{{.*}} = %c0 to %{{.*}} step %c1 {
// THREADS:     scf.for %{{.*}} = %c0 to %c2 step %c1 {
// THREADS:       vector.load %{{.*}} : memref<2x2048x128xf32>, vector<16xf32>
// THREADS:       %[[ACC:.*]] = vector.load %{{.*}} : memref<2x8x12x64xf32>, vector<16xf32>
// THREADS:       %[[ONCE:.*]] = vector.fma %{{.*}}, %{{.*}}, %[[ACC]]
// THREADS:       %[[TWICE:.*]] = vector.fma %{{.*}}, %{{.*}}, %[[ONCE]]
// THREADS:       vector.store %[[TWICE]], %{{.*}} : memref<2x8x12x64xf32>, vector<16xf32>
// THREADS: scf.for %{{.*}} = %c0 to %c2 step %c1 {
func.func @prefill(%q: memref<2x3x256xf32>, %k: memref<2x2048x128xf32>, %v: memref<2x2048x128xf32>, %pos: memref<2xi32>, %out: memref<2x3x256xf32>) {
  attn.decode_attention %q, %k, %v at %pos outs(%out) heads(4) kv_heads(2) scale(1.250000e-01) products(bf16)
      : (memref<2x3x256xf32>, memref<2x2048x128xf32>, memref<2x2048x128xf32>, memref<2xi32>, memref<2x3x256xf32>) -> ()
  return
}

// -----

// A bf16 cache as products(bf16) operands on a CPU with AVX512-BF16, and a
// long chunk of 64 new tokens: a kv head's 64 rows are a group of their
// own, a slice of each cache row. Pass 1 takes each (key, row)'s products
// on vdpbf16ps, the query rows as bf16 (qs is bf16), the key's slice loaded
// as 32 bf16 (d = 64: two per key); each key first asks for its slice 16
// rows ahead (two lines of 64 bf16 at columns 0 and 32 of the head), and
// so does each value row of pass 3, whose blocks of rows keep their
// accumulators in registers.
// CHECK-LABEL: func.func @bf16_pairs
// CHECK-DAG: %[[LAST:.*]] = arith.constant 599 : index
// CHECK: %[[QS:.*]] = memref.alloc() : memref<64x64xbf16>
// CHECK: arith.truncf %{{.*}} : vector<16xf32> to vector<16xbf16>
// CHECK: %[[AHEAD:.*]] = arith.minsi %{{.*}}, %[[LAST]] : index
// CHECK: memref.prefetch %{{.*}}[%{{.*}}, %[[AHEAD]], %{{.*}}], read, locality<2>, data : memref<1x600x128xbf16>
// CHECK: memref.prefetch %{{.*}}[%{{.*}}, %[[AHEAD]], %{{.*}}], read, locality<2>, data : memref<1x600x128xbf16>
// CHECK: %[[KP:.*]] = vector.load %{{.*}} : memref<1x600x128xbf16>, vector<32xbf16>
// CHECK: %[[QP:.*]] = vector.load %[[QS]][%c0, %c0] : memref<64x64xbf16>, vector<32xbf16>
// CHECK: x86vector.avx512.dot %{{.*}}, %[[QP]], %[[KP]] : vector<32xbf16> -> vector<16xf32>
// CHECK: vector.shuffle
// CHECK: memref.prefetch %{{.*}} : memref<1x600x128xbf16>
// CHECK: vector.fma
module attributes {dlti.target_system_spec = #dlti.target_system_spec<"CPU" = #dlti.target_device_spec<"arch" = "x86_64", "cpu" = "cooperlake", "max_vector_op_width" = 512 : i64, "vector_registers" = 32 : i64, "fma" = true, "fma_units" = 2 : i64, "cache_line_size_in_bytes" = 64 : i64, "L1_cache_size_in_bytes" = 32768 : i64, "L2_cache_size_in_bytes" = 1048576 : i64, "features" = "avx2,avx512bf16,avx512f,avx512vl,fma">>} {
  func.func @bf16_pairs(%q: memref<1x64x128xf32>, %k: memref<1x600x128xbf16>, %v: memref<1x600x128xbf16>, %pos: memref<1xi32>, %out: memref<1x64x128xf32>) {
    attn.decode_attention %q, %k, %v at %pos outs(%out) heads(2) kv_heads(2) scale(1.250000e-01) products(bf16)
        : (memref<1x64x128xf32>, memref<1x600x128xbf16>, memref<1x600x128xbf16>, memref<1xi32>, memref<1x64x128xf32>) -> ()
    return
  }
}

// -----

// Eight heads of 64 (no GQA): 32 vectors of query rows, more than the
// registers, in one group of eight kv heads of one row each. Pass 3 keeps
// the accumulators in the partials and reads one value row at a time (one
// sequential stream): each accumulator loaded, one FMA, stored.
// CHECK-LABEL: func.func @mha_rows_in_memory
// CHECK-SAME: (%{{.*}}: memref<1x1x512xf32>, %{{.*}}: memref<1x600x512xf32>, %[[V:.*]]: memref<1x600x512xf32>,
// CHECK:       %[[PART:.*]] = memref.alloc() : memref<1x3x8x64xf32>
// CHECK:       vector.store %{{.*}}, %[[PART]][%{{.*}}, %{{.*}}, %{{.*}}, %c48]
// CHECK-NEXT:  }
// CHECK-NEXT:  scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %c1 {
// CHECK:         memref.prefetch %[[V]]
// CHECK:         scf.for %[[H:.*]] = %c0 to %c8 step %c1 {
// CHECK:           %[[VAL:.*]] = vector.load %[[V]][%{{.*}}, %[[J]], %{{.*}}] : memref<1x600x512xf32>, vector<16xf32>
// CHECK-COUNT-3:   vector.load %[[V]][%{{.*}}, %[[J]], %{{.*}}]
// CHECK-NOT:       vector.load %[[V]]
// CHECK:           %[[ACC:.*]] = vector.load %[[PART]][%{{.*}}, %{{.*}}, %[[H]], %c0]
// CHECK-NEXT:      %[[W:.*]] = vector.broadcast
// CHECK-NEXT:      %[[NEW:.*]] = vector.fma %[[W]], %[[VAL]], %[[ACC]] : vector<16xf32>
// CHECK-NEXT:      vector.store %[[NEW]], %[[PART]][%{{.*}}, %{{.*}}, %[[H]], %c0]
// CHECK-COUNT-3:   vector.fma
// CHECK-NOT:       vector.fma
// CHECK:         }
// CHECK-NEXT:  }
func.func @mha_rows_in_memory(%q: memref<1x1x512xf32>, %k: memref<1x600x512xf32>, %v: memref<1x600x512xf32>, %pos: memref<1xi32>, %out: memref<1x1x512xf32>) {
  attn.decode_attention %q, %k, %v at %pos outs(%out) heads(8) scale(1.250000e-01)
      : (memref<1x1x512xf32>, memref<1x600x512xf32>, memref<1x600x512xf32>, memref<1xi32>, memref<1x1x512xf32>) -> ()
  return
}
