// The CPU passes tile by the schedule derived from the module's target
// description (a DLTI target device spec, attn/Target/CpuTarget.h), not by
// constants: the same matmul gets 6 x 16 register blocks of vector<16xf32>
// for 16 x 256-bit registers (AVX2: 12 ymm accumulators), 6 x 64 blocks for
// 32 x 512-bit (AVX-512: 24 zmm), 6 x 8 for SSE2 and 6 x 16 for NEON; a
// pass option overrides one field. No description: the 512-bit x 32 one.
// RUN: attn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(attn-tile-and-vectorize))' | FileCheck %s
// RUN: attn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(attn-tile-and-vectorize{row-tile=3}))' | FileCheck %s --check-prefix=OVERRIDE

// CHECK-LABEL: func.func @avx2
// 96 x 32 columns: two 16-wide column blocks, 6-row blocks of 2 ymm each.
// CHECK: scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-NOT: vector<32xf32>
// CHECK-NOT: vector<64xf32>
// OVERRIDE-LABEL: func.func @avx2
// OVERRIDE: scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>)
module attributes {dlti.target_system_spec = #dlti.target_system_spec<"CPU" = #dlti.target_device_spec<"arch" = "x86_64", "cpu" = "x86-64-v3", "max_vector_op_width" = 256 : i64, "vector_registers" = 16 : i64, "features" = "avx,avx2,fma">>} {
  func.func @avx2(%a: memref<96x8xf32>, %b: memref<8x32xf32>, %c: memref<96x32xf32>) {
    linalg.matmul ins(%a, %b : memref<96x8xf32>, memref<8x32xf32>) outs(%c : memref<96x32xf32>)
    return
  }
}

// -----

// CHECK-LABEL: func.func @avx512
// CHECK: scf.for {{.*}} -> (vector<64xf32>, vector<64xf32>, vector<64xf32>, vector<64xf32>, vector<64xf32>, vector<64xf32>)
module attributes {dlti.target_system_spec = #dlti.target_system_spec<"CPU" = #dlti.target_device_spec<"max_vector_op_width" = 512 : i64, "vector_registers" = 32 : i64>>} {
  func.func @avx512(%a: memref<96x8xf32>, %b: memref<8x128xf32>, %c: memref<96x128xf32>) {
    linalg.matmul ins(%a, %b : memref<96x8xf32>, memref<8x128xf32>) outs(%c : memref<96x128xf32>)
    return
  }
}

// -----

// CHECK-LABEL: func.func @sse2
// CHECK: scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-NOT: vector<16xf32>
module attributes {dlti.target_system_spec = #dlti.target_system_spec<"CPU" = #dlti.target_device_spec<"max_vector_op_width" = 128 : i64, "vector_registers" = 16 : i64, "fma" = false>>} {
  func.func @sse2(%a: memref<96x8xf32>, %b: memref<8x32xf32>, %c: memref<96x32xf32>) {
    linalg.matmul ins(%a, %b : memref<96x8xf32>, memref<8x32xf32>) outs(%c : memref<96x32xf32>)
    return
  }
}

// -----

// CHECK-LABEL: func.func @neon
// CHECK: scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
module attributes {dlti.target_system_spec = #dlti.target_system_spec<"CPU" = #dlti.target_device_spec<"arch" = "aarch64", "max_vector_op_width" = 128 : i64, "vector_registers" = 32 : i64, "features" = "neon">>} {
  func.func @neon(%a: memref<96x8xf32>, %b: memref<8x32xf32>, %c: memref<96x32xf32>) {
    linalg.matmul ins(%a, %b : memref<96x8xf32>, memref<8x32xf32>) outs(%c : memref<96x32xf32>)
    return
  }
}

// -----

// No description: the default (512-bit x 32 registers).
// CHECK-LABEL: func.func @default
// CHECK: scf.for {{.*}} -> (vector<64xf32>, vector<64xf32>, vector<64xf32>, vector<64xf32>, vector<64xf32>, vector<64xf32>)
func.func @default(%a: memref<96x8xf32>, %b: memref<8x128xf32>, %c: memref<96x128xf32>) {
  linalg.matmul ins(%a, %b : memref<96x8xf32>, memref<8x128xf32>) outs(%c : memref<96x128xf32>)
  return
}
