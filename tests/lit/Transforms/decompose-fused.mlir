// attn-decompose with attention=fused (or auto above the threshold) turns
// attention into one attn.fused_attention writing into a tensor.empty.
// RUN: attn-opt %s --attn-decompose="attention=fused" | FileCheck %s --check-prefix=FUSED
// RUN: attn-opt %s --attn-decompose="attention=auto fuse-threshold=24" | FileCheck %s --check-prefix=AUTO
// RUN: not attn-opt %s --attn-decompose="attention=flash" 2>&1 | FileCheck %s --check-prefix=BAD

// FUSED-LABEL: func.func @attention
// FUSED-SAME: (%[[Q:.*]]: tensor<10x4x20xf32>, %[[K:.*]]: tensor<10x6x20xf32>, %[[V:.*]]: tensor<10x6x8xf32>, %[[VL:.*]]: tensor<10xi32>)
// the result's destination
// FUSED: %[[INIT:.*]] = tensor.empty() : tensor<10x4x8xf32>
// scale 1/sqrt(20), the same f32 as the decomposed path's attn.scale
// FUSED: %[[O:.*]] = attn.fused_attention %[[Q]], %[[K]], %[[V]] valid_lens(%[[VL]]) outs(%[[INIT]]) causal scale(0.223606795)
// FUSED-NOT: attn.matmul
// FUSED: return %[[O]]
// auto: Tq * Tk = 24 reaches the threshold
// AUTO: attn.fused_attention
// BAD: attn-decompose: attention='flash' is not one of decomposed, fused, auto
func.func @attention(%q: tensor<10x4x20xf32>, %k: tensor<10x6x20xf32>, %v: tensor<10x6x8xf32>, %vl: tensor<10xi32>) -> tensor<10x4x8xf32> {
  %0 = attn.attention %q, %k, %v valid_lens(%vl) causal : (tensor<10x4x20xf32>, tensor<10x6x20xf32>, tensor<10x6x8xf32>, tensor<10xi32>) -> tensor<10x4x8xf32>
  return %0 : tensor<10x4x8xf32>
}

// Below the threshold, auto decomposes.
// AUTO-LABEL: func.func @small
// AUTO-NOT: attn.fused_attention
// AUTO: attn.matmul
func.func @small(%q: tensor<2x4x5xf32>) -> tensor<2x4x5xf32> {
  %0 = attn.attention %q, %q, %q : (tensor<2x4x5xf32>, tensor<2x4x5xf32>, tensor<2x4x5xf32>) -> tensor<2x4x5xf32>
  return %0 : tensor<2x4x5xf32>
}
