// attn-lower-fused-attention with products(bf16): q and k are rounded to
// bf16 (truncf, extf) as they are copied, v once per kv head, the weights
// before p @ v; without products nothing is rounded. (On an AMX target the
// whole loop is another: tests/lit/attnc/bf16-attention-isa.test.)
// RUN: attn-opt %s --pass-pipeline='builtin.module(func.func(attn-lower-fused-attention{row-block=2 key-block=4}))' | FileCheck %s

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
