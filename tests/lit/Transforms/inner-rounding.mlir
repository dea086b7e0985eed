// A multihead_attention or ffn on bf16/f16 rounds the input of its last GEMM
// to its type, as PyTorch's modules in that type do (innerRoundingOf):
// attn-compute-in-f32 records the type on the op it widens, attn-decompose
// rounds the merged heads before w_o (decomposed or fused attention) and
// the hidden layer before w2. Ops on f32 get no rounding.
// RUN: attn-opt %s --attn-compute-in-f32 | FileCheck %s --check-prefix=RECORD
// RUN: attn-opt %s --attn-compute-in-f32 --attn-decompose | FileCheck %s
// RUN: attn-opt %s --attn-compute-in-f32 --attn-decompose="attention=fused" | FileCheck %s --check-prefix=FUSED

// RECORD-LABEL: func.func @mha
// RECORD: attn.multihead_attention {{.*}}attn.inner_rounding = bf16{{.*}} -> tensor<2x4x8xf32>
// CHECK-LABEL: func.func @mha
// CHECK: %[[M:.*]] = attn.merge_heads
// CHECK-NEXT: %[[R:.*]] = attn.cast %[[M]] to bf16 : tensor<2x4x8xf32>
// CHECK-NEXT: %[[W:.*]] = attn.cast %[[R]] to f32 : tensor<2x4x8xbf16>
// CHECK-NEXT: attn.linear %[[W]], %{{.*}} : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
// FUSED-LABEL: func.func @mha
// FUSED: %[[A:.*]] = attn.fused_attention
// FUSED-NEXT: %[[R:.*]] = attn.cast %[[A]] to bf16 : tensor<2x4x8xf32>
// FUSED-NEXT: %[[W:.*]] = attn.cast %[[R]] to f32 : tensor<2x4x8xbf16>
// FUSED-NEXT: attn.linear %[[W]]
func.func @mha(%x: tensor<2x4x8xbf16>, %w: tensor<8x8xbf16>) -> tensor<2x4x8xbf16> {
  %0 = attn.multihead_attention %x, %x, %x heads(2) weights(%w, %w, %w, %w) : (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<8x8xbf16>, tensor<8x8xbf16>, tensor<8x8xbf16>, tensor<8x8xbf16>) -> tensor<2x4x8xbf16>
  return %0 : tensor<2x4x8xbf16>
}

// CHECK-LABEL: func.func @ffn
// CHECK: %[[H:.*]] = attn.relu
// CHECK-NEXT: %[[R:.*]] = attn.cast %[[H]] to f16 : tensor<1x3x16xf32>
// CHECK-NEXT: %[[W:.*]] = attn.cast %[[R]] to f32 : tensor<1x3x16xf16>
// CHECK-NEXT: attn.linear %[[W]]
func.func @ffn(%x: tensor<1x3x8xf16>, %w1: tensor<16x8xf16>, %b1: tensor<16xf16>, %w2: tensor<8x16xf16>, %b2: tensor<8xf16>) -> tensor<1x3x8xf16> {
  %0 = attn.ffn %x, %w1, %b1, %w2, %b2 : (tensor<1x3x8xf16>, tensor<16x8xf16>, tensor<16xf16>, tensor<8x16xf16>, tensor<8xf16>) -> tensor<1x3x8xf16>
  return %0 : tensor<1x3x8xf16>
}

// CHECK-LABEL: func.func @ffn_f32
// CHECK-NOT: attn.cast
// CHECK: return
func.func @ffn_f32(%x: tensor<1x3x8xf32>, %w1: tensor<16x8xf32>, %b1: tensor<16xf32>, %w2: tensor<8x16xf32>, %b2: tensor<8xf32>) -> tensor<1x3x8xf32> {
  %0 = attn.ffn %x, %w1, %b1, %w2, %b2 : (tensor<1x3x8xf32>, tensor<16x8xf32>, tensor<16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<1x3x8xf32>
  return %0 : tensor<1x3x8xf32>
}
