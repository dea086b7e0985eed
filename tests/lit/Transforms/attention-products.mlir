// A multihead_attention or attention on bf16 takes bf16 operands into its
// two products (attentionProductsOf): q and k after rope, v and the softmax
// weights are rounded to bf16, as PyTorch's bf16 attention rounds them.
// The fused op carries it as products(bf16); the step-by-step path rounds
// q, k, v and the weights with casts. f16 and f32 attention compute their
// products in f32.
// RUN: attn-opt %s --attn-compute-in-f32 --attn-decompose="attention=fused" | FileCheck %s --check-prefix=FUSED
// RUN: attn-opt %s --attn-compute-in-f32 --attn-decompose="attention=decomposed" | FileCheck %s --check-prefix=STEPS
// RUN: attn-opt %s --attn-compute-in-f32 --attn-decompose="attention=fused" | attn-opt | FileCheck %s --check-prefix=FUSED

// FUSED-LABEL: func.func @mha_bf16
// FUSED: attn.fused_attention {{.*}} heads(2) scale({{.*}}) products(bf16)
// STEPS-LABEL: func.func @mha_bf16
// STEPS: %[[Q:.*]] = attn.split_heads
// STEPS: %[[K:.*]] = attn.split_heads
// STEPS: %[[V:.*]] = attn.split_heads
// STEPS: %[[QR:.*]] = attn.cast %[[Q]] to bf16
// STEPS-NEXT: %[[QW:.*]] = attn.cast %[[QR]] to f32
// STEPS-NEXT: %[[KR:.*]] = attn.cast %[[K]] to bf16
// STEPS-NEXT: %[[KW:.*]] = attn.cast %[[KR]] to f32
// STEPS-NEXT: %[[VR:.*]] = attn.cast %[[V]] to bf16
// STEPS-NEXT: %[[VW:.*]] = attn.cast %[[VR]] to f32
// STEPS: attn.matmul %[[QW]], %[[KW]] transpose_b
// STEPS: %[[P:.*]] = attn.softmax
// STEPS-NEXT: %[[PR:.*]] = attn.cast %[[P]] to bf16
// STEPS-NEXT: %[[PW:.*]] = attn.cast %[[PR]] to f32
// STEPS-NEXT: attn.matmul %[[PW]], %[[VW]]
func.func @mha_bf16(%x: tensor<2x4x8xbf16>, %w: tensor<8x8xbf16>) -> tensor<2x4x8xbf16> {
  %0 = attn.multihead_attention %x, %x, %x heads(2) weights(%w, %w, %w, %w) : (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<8x8xbf16>, tensor<8x8xbf16>, tensor<8x8xbf16>, tensor<8x8xbf16>) -> tensor<2x4x8xbf16>
  return %0 : tensor<2x4x8xbf16>
}

// FUSED-LABEL: func.func @attention_bf16
// FUSED: attn.fused_attention {{.*}} scale({{.*}}) products(bf16)
// STEPS-LABEL: func.func @attention_bf16
// STEPS: attn.masked_softmax
// STEPS-NEXT: attn.cast %{{.*}} to bf16
func.func @attention_bf16(%q: tensor<2x4x8xbf16>, %vl: tensor<2xi32>) -> tensor<2x4x8xbf16> {
  %0 = attn.attention %q, %q, %q valid_lens(%vl) : (tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2xi32>) -> tensor<2x4x8xbf16>
  return %0 : tensor<2x4x8xbf16>
}

// FUSED-LABEL: func.func @attention_f16
// FUSED-NOT: products
// FUSED: return
// STEPS-LABEL: func.func @attention_f16
// STEPS: attn.softmax
// STEPS-NEXT: attn.matmul
func.func @attention_f16(%q: tensor<2x4x8xf16>) -> tensor<2x4x8xf16> {
  %0 = attn.attention %q, %q, %q : (tensor<2x4x8xf16>, tensor<2x4x8xf16>, tensor<2x4x8xf16>) -> tensor<2x4x8xf16>
  return %0 : tensor<2x4x8xf16>
}
