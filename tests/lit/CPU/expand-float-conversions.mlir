// attn-expand-float-conversions: f32 -> bf16 becomes integer arithmetic on
// every CPU (same bits everywhere); f16 <-> f32 too where the CPU has no
// F16C, and stays arith.extf/truncf (vcvtph2ps/vcvtps2ph) where it has.
// The bits themselves are checked exhaustively by LowPrecisionTest.cpp.
// RUN: attn-opt %s --split-input-file --attn-expand-float-conversions | FileCheck %s

module attributes {dlti.target_system_spec = #dlti.target_system_spec<"CPU" = #dlti.target_device_spec<"arch" = "x86_64", "cpu" = "x86-64", "max_vector_op_width" = 128 : i64, "vector_registers" = 16 : i64, "fma" = false, "fma_units" = 0 : i64, "cache_line_size_in_bytes" = 64 : i64, "L1_cache_size_in_bytes" = 32768 : i64, "L2_cache_size_in_bytes" = 1048576 : i64, "features" = "sse2">>} {
  // CHECK-LABEL: func.func @no_f16c
  func.func @no_f16c(%x: vector<4xf32>, %h: vector<4xf16>, %s: f32)
      -> (vector<4xbf16>, vector<4xf16>, vector<4xf32>, f16) {
    // CHECK-NOT: arith.truncf
    // CHECK-NOT: arith.extf
    // CHECK: arith.bitcast {{.*}} : vector<4xf32> to vector<4xi32>
    // CHECK: arith.bitcast {{.*}} : vector<4xi16> to vector<4xbf16>
    %0 = arith.truncf %x : vector<4xf32> to vector<4xbf16>
    // CHECK: arith.bitcast {{.*}} : vector<4xi16> to vector<4xf16>
    %1 = arith.truncf %x : vector<4xf32> to vector<4xf16>
    // CHECK: arith.bitcast {{.*}} : vector<4xf16> to vector<4xi16>
    %2 = arith.extf %h : vector<4xf16> to vector<4xf32>
    // Scalars (the unvectorized -O0 path) too.
    // CHECK: arith.bitcast {{.*}} : i16 to f16
    %3 = arith.truncf %s : f32 to f16
    // CHECK-NOT: arith.truncf
    // CHECK-NOT: arith.extf
    return %0, %1, %2, %3 : vector<4xbf16>, vector<4xf16>, vector<4xf32>, f16
  }
}

// -----

module attributes {dlti.target_system_spec = #dlti.target_system_spec<"CPU" = #dlti.target_device_spec<"arch" = "x86_64", "cpu" = "x86-64-v3", "max_vector_op_width" = 256 : i64, "vector_registers" = 16 : i64, "fma" = true, "fma_units" = 2 : i64, "cache_line_size_in_bytes" = 64 : i64, "L1_cache_size_in_bytes" = 32768 : i64, "L2_cache_size_in_bytes" = 1048576 : i64, "features" = "avx,avx2,f16c,fma,sse2,sse4.1,sse4.2">>} {
  // CHECK-LABEL: func.func @f16c
  func.func @f16c(%x: vector<8xf32>, %h: vector<8xf16>)
      -> (vector<8xbf16>, vector<8xf16>, vector<8xf32>) {
    // bf16 is still expanded: no truncf to bf16 is left.
    // CHECK-NOT: arith.truncf {{.*}} to vector<8xbf16>
    // CHECK: arith.truncf %{{.*}} : vector<8xf32> to vector<8xf16>
    // CHECK: arith.extf %{{.*}} : vector<8xf16> to vector<8xf32>
    %0 = arith.truncf %x : vector<8xf32> to vector<8xbf16>
    %1 = arith.truncf %x : vector<8xf32> to vector<8xf16>
    %2 = arith.extf %h : vector<8xf16> to vector<8xf32>
    return %0, %1, %2 : vector<8xbf16>, vector<8xf16>, vector<8xf32>
  }
}
