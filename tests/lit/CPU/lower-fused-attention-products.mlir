// attn-lower-fused-attention with products(bf16): q and k are rounded to
// bf16 (truncf, extf) as they are copied, v once per kv head, the weights
// before p @ v; without products nothing is rounded. (On an AMX target the
// whole loop is another: tests/lit/attnc/bf16-attention-isa.test; on
// AVX512-BF16 without AMX, the last case.)
// RUN: attn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(attn-lower-fused-attention{row-block=2 key-block=4}))' | FileCheck %s
// RUN: attn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(attn-lower-fused-attention))' | FileCheck %s --check-prefix=DOT

// CHECK-LABEL: func.func @products
func.func @products(%q: memref<1x8x4xf32>, %k: memref<1x8x4xf32>, %v: memref<1x8x4xf32>, %o: memref<1x8x4xf32>) {
  // the keys, rounded as they are transposed
  // CHECK: %[[KX:.*]] = memref.load %{{.*}} : memref<1x8x4xf32>
  // CHECK: %[[KN:.*]] = arith.truncf %[[KX]] : f32 to bf16
  // CHECK: %[[KW:.*]] = arith.extf %[[KN]] : bf16 to f32
  // CHECK: memref.store %[[KW]]
  // the values, rounded once per head before the rows
  // CHECK: %[[VX:.*]] = vector.load %arg2{{.*}} : memref<1x8x4xf32>, vector<4xf32>
  // CHECK: %[[VN:.*]] = arith.truncf %[[VX]] : vector<4xf32> to vector<4xbf16>
  // CHECK: arith.extf %[[VN]] : vector<4xbf16> to vector<4xf32>
  // the weights, rounded before they are kept for p @ v
  // CHECK: math.exp
  // CHECK: %[[PN:.*]] = arith.truncf %{{.*}} : vector<4xf32> to vector<4xbf16>
  // CHECK: arith.extf %[[PN]] : vector<4xbf16> to vector<4xf32>
  attn.fused_attention %q, %k, %v outs(%o) scale(5.000000e-01) products(bf16) : (memref<1x8x4xf32>, memref<1x8x4xf32>, memref<1x8x4xf32>, memref<1x8x4xf32>) -> ()
  return
}

// CHECK-LABEL: func.func @f32
// CHECK-NOT: arith.truncf
// CHECK: return
func.func @f32(%q: memref<1x8x4xf32>, %k: memref<1x8x4xf32>, %v: memref<1x8x4xf32>, %o: memref<1x8x4xf32>) {
  attn.fused_attention %q, %k, %v outs(%o) scale(5.000000e-01) : (memref<1x8x4xf32>, memref<1x8x4xf32>, memref<1x8x4xf32>, memref<1x8x4xf32>) -> ()
  return
}

// -----

// On AVX512-BF16 without AMX (cooperlake, Zen 4), with d even and dv a
// multiple of 16, both products run on vdpbf16ps: the kv head's keys and
// values packed as bf16 pairs in f32 slots, the query rows and the weights
// kept as bf16, a k step per pair (of columns of q, of keys for p @ v).
module attributes {dlti.target_system_spec = #dlti.target_system_spec<"CPU" = #dlti.target_device_spec<"arch" = "x86_64", "cpu" = "cooperlake", "max_vector_op_width" = 512 : i64, "vector_registers" = 32 : i64, "fma" = true, "fma_units" = 2 : i64, "cache_line_size_in_bytes" = 64 : i64, "L1_cache_size_in_bytes" = 32768 : i64, "L2_cache_size_in_bytes" = 1048576 : i64, "features" = "avx2,avx512bf16,avx512f,avx512vl,fma">>} {
  // DOT-LABEL: func.func @pairs
  func.func @pairs(%q: memref<1x40x32xf32>, %k: memref<1x40x32xf32>, %v: memref<1x40x16xf32>, %o: memref<1x40x16xf32>) {
    // the keys as pairs of bf16 in f32 slots (blocks of 16 keys), the
    // values too (a row per pair of keys)
    // DOT-DAG: memref.alloc() {alignment = 64 : i64} : memref<3x16x16xf32>
    // DOT-DAG: memref.alloc() {alignment = 64 : i64} : memref<24x16xf32>
    // the query rows and a step's weights as bf16
    // DOT-DAG: memref.alloc() : memref<{{[0-9]+}}x32xbf16>
    // DOT-DAG: memref.alloc() : memref<{{[0-9]+}}x{{[0-9]+}}xbf16>
    // scores: a pair of q's columns against a register of key pairs
    // DOT: vector.bitcast %{{.*}} : vector<2xbf16> to vector<1xi32>
    // DOT: x86vector.avx512.dot %{{.*}}, %{{.*}}, %{{.*}} : vector<32xbf16> -> vector<16xf32>
    // the weights, rounded to bf16 as they are kept
    // DOT: math.exp
    // DOT: arith.truncf %{{.*}} : vector<{{[0-9]+}}xf32> to vector<{{[0-9]+}}xbf16>
    // p @ v: a pair of keys' weights against a register of value pairs
    // DOT: x86vector.avx512.dot %{{.*}}, %{{.*}}, %{{.*}} : vector<32xbf16> -> vector<16xf32>
    // DOT: return
    attn.fused_attention %q, %k, %v outs(%o) scale(5.000000e-01) products(bf16) : (memref<1x40x32xf32>, memref<1x40x32xf32>, memref<1x40x16xf32>, memref<1x40x16xf32>) -> ()
    return
  }
}
