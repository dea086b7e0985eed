// attn.decode_attention on buffers (DecodeEmitter.h): items (batch x kv
// heads) x chunks of decode-keys (256) cache rows, each reading only its
// visible rows [max(chunk start, window begin), min(chunk end, pos + T)) of
// k and then of v (bf16, widened), for all query rows of its kv head; a
// second loop reduces each row's chunks in order, from the window's chunk
// to the last chunk holding pos + T - 1. No loop runs to the cache length.
// RUN: attn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(attn-lower-fused-attention),canonicalize,cse)' | FileCheck %s
// RUN: attn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(attn-lower-fused-attention{parallel=true}),canonicalize,cse)' | FileCheck %s --check-prefix=THREADS

// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[Q:.*]]: memref<2x1x64xf32>, %[[K:.*]]: memref<2x600x32xbf16>, %[[V:.*]]: memref<2x600x32xbf16>, %[[POS:.*]]: memref<2xi32>, %[[OUT:.*]]: memref<2x1x64xf32>)
// CHECK-NOT: to %c600
// CHECK-DAG: %[[MAX:.*]] = memref.alloc() : memref<4x3x2xf32>
// CHECK-DAG: %[[SUM:.*]] = memref.alloc() : memref<4x3x2xf32>
// CHECK-DAG: %[[PART:.*]] = memref.alloc() : memref<4x3x2x16xf32>
// CHECK: scf.for %[[ITEM:.*]] = %c0 to %c12 step %c1 {
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
// CHECK:     %[[QS:.*]] = memref.alloc() : memref<2x16xf32>
// CHECK:     %[[SCORES:.*]] = memref.alloc() : memref<2x256xf32>
// The two query rows (of the kv head's two query heads) held in registers.
// CHECK:     %[[Q0:.*]] = vector.load %[[QS]][%c0, %c0]
// CHECK:     %[[Q1:.*]] = vector.load %[[QS]][%c1, %c0]
// Blocks of 16 keys: per row, each key's products a vector, summed by a
// tree of shuffles into the block's 16 scores, stored at once.
// CHECK:     %[[SPAN:.*]] = arith.subi %[[JE]], %[[JB]]
// CHECK:     %[[BLOCKS:.*]] = arith.divui %[[SPAN]], %c16
// CHECK:     %[[FULL:.*]] = arith.muli %[[BLOCKS]], %c16
// CHECK:     %[[TAIL:.*]] = arith.addi %[[JB]], %[[FULL]]
// CHECK:     scf.for %{{.*}} = %c0 to %[[BLOCKS]] step %c1 {
// CHECK:       %[[KEY16:.*]] = vector.load %[[K]][%{{.*}}] : memref<2x600x32xbf16>, vector<16xbf16>
// CHECK-NEXT:  %[[KEY:.*]] = arith.extf %[[KEY16]] : vector<16xbf16> to vector<16xf32>
// CHECK-NOT:   arith.truncf
// CHECK:       arith.mulf %[[Q0]], %[[KEY]]
// CHECK-COUNT-15: vector.load %[[K]]
// CHECK:       vector.shuffle
// CHECK:       %[[S0:.*]] = arith.mulf %{{.*}}, %cst{{.*}} : vector<16xf32>
// CHECK:       vector.store %[[S0]], %[[SCORES]][%c0, %{{.*}}] : memref<2x256xf32>, vector<16xf32>
// CHECK:       vector.store %{{.*}}, %[[SCORES]][%c1, %{{.*}}] : memref<2x256xf32>, vector<16xf32>
// The keys past the last whole block one at a time.
// CHECK:     scf.for %[[J:.*]] = %[[TAIL]] to %[[JE]] step %c1 {
// CHECK:       vector.load %[[K]][%{{.*}}, %[[J]], %{{.*}}] : memref<2x600x32xbf16>, vector<16xbf16>
// CHECK:       vector.reduction <add>
// CHECK:       memref.store %{{.*}}, %[[SCORES]][%c0,
// CHECK:       vector.reduction <add>
// CHECK:       memref.store %{{.*}}, %[[SCORES]][%c1,
// CHECK:     vector.reduction <maximumf>
// CHECK:     math.exp
// CHECK:     memref.store %{{.*}}, %[[MAX]][%[[N]], %[[C]], %{{.*}}]
// CHECK:     memref.store %{{.*}}, %[[SUM]][%[[N]], %[[C]], %{{.*}}]
// CHECK:     scf.for %[[J:.*]] = %[[JB]] to %[[JE]] step %c1 iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>) {
// CHECK:       vector.load %[[V]][%{{.*}}, %[[J]], %{{.*}}] : memref<2x600x32xbf16>, vector<16xbf16>
// CHECK-COUNT-2: vector.fma
// CHECK:     vector.store %{{.*}}, %[[PART]][%[[N]], %[[C]], %c0, %c0]
// CHECK:     vector.store %{{.*}}, %[[PART]][%[[N]], %[[C]], %c1, %c0]
// CHECK: scf.for %[[N2:.*]] = %c0 to %c4 step %c1 {
// CHECK:   scf.if
// CHECK:     %[[FIRST:.*]] = arith.divui %{{.*}}, %c256
// CHECK:     %[[LAST:.*]] = arith.divui %{{.*}}, %c256
// CHECK:     scf.for %[[R:.*]] = %c0 to %c2 step %c1 {
// CHECK:       scf.for %{{.*}} = %[[FIRST]] to %[[LAST]] step %c1 iter_args(%{{.*}} = %cst{{.*}}) -> (f32) {
// CHECK:         arith.maximumf
// CHECK:       scf.for %{{.*}} = %[[FIRST]] to %[[LAST]] step %c1 iter_args({{.*}}) -> (f32, vector<16xf32>) {
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

// A chunk of 3 new tokens on threads: each token's own mask (-inf past
// pos + t), the items as an scf.parallel (the reduction, little work,
// on one thread), and
// products(bf16): q, k, v and the weights rounded.
// THREADS-LABEL: func.func @prefill
// THREADS: scf.parallel (%{{.*}}) = (%c0) to (%c32) step (%c1) {
// THREADS:   arith.truncf %{{.*}} : vector<16xf32> to vector<16xbf16>
// THREADS:   scf.for %[[J:.*]] = %{{[0-9]+}} to %{{[0-9]+}} step %c1 {
// THREADS:     arith.truncf
// THREADS:     scf.for %[[R:.*]] = %c0 to %c6 step %c1 {
// THREADS:       %[[T:.*]] = arith.remui %[[R]], %c3
// THREADS:       arith.cmpi
// THREADS:       arith.select %{{.*}}, %{{.*}}, %cst
// THREADS: scf.for %{{.*}} = %c0 to %c4 step %c1 {
func.func @prefill(%q: memref<2x3x256xf32>, %k: memref<2x2048x128xf32>, %v: memref<2x2048x128xf32>, %pos: memref<2xi32>, %out: memref<2x3x256xf32>) {
  attn.decode_attention %q, %k, %v at %pos outs(%out) heads(4) kv_heads(2) scale(1.250000e-01) products(bf16)
      : (memref<2x3x256xf32>, memref<2x2048x128xf32>, memref<2x2048x128xf32>, memref<2xi32>, memref<2x3x256xf32>) -> ()
  return
}

// -----

// A bf16 cache as products(bf16) operands on a CPU with AVX512-BF16: pass
// 1's blocks of 16 keys take each key's products on vdpbf16ps, the query
// row as bf16 pairs (two f32 pieces shuffled together and truncated), the
// key row loaded as 32 bf16 (d = 64: two per key); the tail keys stay FMAs.
// Each block of keys first asks for the rows 16 keys ahead (each row's
// 128 bytes: two lines of 64 bf16 at columns 0 and 32, clamped into the
// cache), and so does each value row of pass 3.
// CHECK-LABEL: func.func @bf16_pairs
// CHECK-DAG: %[[LAST:.*]] = arith.constant 599 : index
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK: %[[AHEAD:.*]] = arith.minsi %{{.*}}, %[[LAST]] : index
// CHECK: memref.prefetch %{{.*}}[%{{.*}}, %[[AHEAD]], %{{.*}}], read, locality<3>, data : memref<1x600x64xbf16>
// CHECK: memref.prefetch %{{.*}}[%{{.*}}, %[[AHEAD]], %[[C32]]], read, locality<3>, data : memref<1x600x64xbf16>
// CHECK: %[[QP:.*]] = arith.truncf %{{.*}} : vector<32xf32> to vector<32xbf16>
// CHECK: %[[K:.*]] = vector.load %{{.*}} : memref<1x600x64xbf16>, vector<32xbf16>
// CHECK: x86vector.avx512.dot %{{.*}}, %[[QP]], %[[K]] : vector<32xbf16> -> vector<16xf32>
// CHECK: vector.shuffle
// CHECK-NOT: x86vector.avx512.dot
// CHECK: vector.fma
// CHECK: memref.prefetch %{{.*}} : memref<1x600x64xbf16>
// CHECK: vector.fma
module attributes {dlti.target_system_spec = #dlti.target_system_spec<"CPU" = #dlti.target_device_spec<"arch" = "x86_64", "cpu" = "cooperlake", "max_vector_op_width" = 512 : i64, "vector_registers" = 32 : i64, "fma" = true, "fma_units" = 2 : i64, "cache_line_size_in_bytes" = 64 : i64, "L1_cache_size_in_bytes" = 32768 : i64, "L2_cache_size_in_bytes" = 1048576 : i64, "features" = "avx2,avx512bf16,avx512f,avx512vl,fma">>} {
  func.func @bf16_pairs(%q: memref<1x1x64xf32>, %k: memref<1x600x64xbf16>, %v: memref<1x600x64xbf16>, %pos: memref<1xi32>, %out: memref<1x1x64xf32>) {
    attn.decode_attention %q, %k, %v at %pos outs(%out) heads(1) scale(1.250000e-01) products(bf16)
        : (memref<1x1x64xf32>, memref<1x600x64xbf16>, memref<1x600x64xbf16>, memref<1xi32>, memref<1x1x64xf32>) -> ()
    return
  }
}
