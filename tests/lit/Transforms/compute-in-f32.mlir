// attn-compute-in-f32: an op on bf16/f16 gets its low-precision operands
// widened and its low-precision results rounded back, one attn.cast each;
// a composite op as a whole; ops on f32 alone, casts and integer operands
// are left alone; a result going to one elementwise op is not rounded.
// RUN: attn-opt %s --attn-compute-in-f32 | FileCheck %s

// CHECK-LABEL: func.func @unary
func.func @unary(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  // CHECK: %[[W:.*]] = attn.cast %arg0 to f32 : tensor<4xbf16>
  // CHECK: %[[R:.*]] = attn.relu %[[W]] : tensor<4xf32>
  // CHECK: %[[B:.*]] = attn.cast %[[R]] to bf16 : tensor<4xf32>
  // CHECK: return %[[B]]
  %0 = attn.relu %x : tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// Weight-only: the f32 input stays, the weight is widened, the f32 result
// is not rounded.
// CHECK-LABEL: func.func @weight_only
func.func @weight_only(%x: tensor<2x8xf32>, %w: tensor<16x8xf16>) -> tensor<2x16xf32> {
  // CHECK: %[[W:.*]] = attn.cast %arg1 to f32 : tensor<16x8xf16>
  // CHECK: %[[Y:.*]] = attn.linear %arg0, %[[W]] : (tensor<2x8xf32>, tensor<16x8xf32>) -> tensor<2x16xf32>
  // CHECK-NOT: attn.cast
  // CHECK: return %[[Y]]
  %0 = attn.linear %x, %w : (tensor<2x8xf32>, tensor<16x8xf16>) -> tensor<2x16xf32>
  return %0 : tensor<2x16xf32>
}

// A composite op rounds only its result (and records the type its last
// GEMM's input is rounded to: inner-rounding.mlir); its lengths stay i32.
// CHECK-LABEL: func.func @composite
func.func @composite(%x: tensor<2x4x8xbf16>, %w: tensor<8x8xbf16>, %vl: tensor<2xi32>) -> tensor<2x4x8xbf16> {
  // CHECK-COUNT-2: attn.cast {{.*}} to f32 :
  // CHECK: attn.multihead_attention {{.*}} valid_lens(%arg2) {attn.inner_rounding = bf16} : ({{.*}}xf32>, {{.*}}tensor<2xi32>) -> tensor<2x4x8xf32>
  // CHECK-NEXT: attn.cast {{.*}} to bf16 : tensor<2x4x8xf32>
  %0 = attn.multihead_attention %x, %x, %x heads(2) weights(%w, %w, %w, %w) valid_lens(%vl) : (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<8x8xbf16>, tensor<8x8xbf16>, tensor<8x8xbf16>, tensor<8x8xbf16>, tensor<2xi32>) -> tensor<2x4x8xbf16>
  return %0 : tensor<2x4x8xbf16>
}

// CHECK-LABEL: func.func @untouched
func.func @untouched(%x: tensor<4xf32>, %h: tensor<4xbf16>) -> (tensor<4xf32>, tensor<4xf32>) {
  // CHECK-NEXT: attn.relu %arg0 : tensor<4xf32>
  // CHECK-NEXT: attn.cast %arg1 to f32 : tensor<4xbf16>
  // CHECK-NEXT: return
  %0 = attn.relu %x : tensor<4xf32>
  %1 = attn.cast %h to f32 : tensor<4xbf16>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// A result whose one use is an elementwise op goes to it in f32, its
// epilogue (keepsResultInF32): the residual add(x, linear(h, w)) rounds
// once. A result used twice, or by an op that is not elementwise, is
// rounded.
// CHECK-LABEL: func.func @epilogue
func.func @epilogue(%x: tensor<2x8xbf16>, %h: tensor<2x8xbf16>, %w: tensor<8x8xbf16>) -> (tensor<2x8xbf16>, tensor<2x8xbf16>) {
  // CHECK: %[[P:.*]] = attn.linear {{.*}} -> tensor<2x8xf32>
  // CHECK-NOT: attn.cast %[[P]]
  // CHECK: %[[S:.*]] = attn.add %{{.*}}, %[[P]] : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[SR:.*]] = attn.cast %[[S]] to bf16 : tensor<2x8xf32>
  // CHECK: %[[Q:.*]] = attn.linear {{.*}} -> tensor<2x8xf32>
  // CHECK-NEXT: %[[QR:.*]] = attn.cast %[[Q]] to bf16 : tensor<2x8xf32>
  // CHECK: attn.linear {{.*}} -> tensor<2x8xf32>
  // CHECK-NEXT: %[[OR:.*]] = attn.cast {{.*}} to bf16 : tensor<2x8xf32>
  // CHECK-NEXT: return %[[SR]], %[[OR]]
  %0 = attn.linear %h, %w : (tensor<2x8xbf16>, tensor<8x8xbf16>) -> tensor<2x8xbf16>
  %1 = attn.add %x, %0 : (tensor<2x8xbf16>, tensor<2x8xbf16>) -> tensor<2x8xbf16>
  %2 = attn.linear %1, %w : (tensor<2x8xbf16>, tensor<8x8xbf16>) -> tensor<2x8xbf16>
  %3 = attn.linear %2, %w : (tensor<2x8xbf16>, tensor<8x8xbf16>) -> tensor<2x8xbf16>
  return %1, %3 : tensor<2x8xbf16>, tensor<2x8xbf16>
}
