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

// A fused multi-head attention reads the projections and writes the merged
// heads in place: no split_heads, merge_heads or repeated lengths. Its
// result takes q's place (row i needs q's row i only).
// FUSED-LABEL: func.func @mha
// FUSED-SAME: (%[[X:.*]]: tensor<2x4x100xf32>, %[[WQ:.*]]: tensor<100x100xf32>, %[[WK:.*]]: tensor<100x100xf32>, %[[WV:.*]]: tensor<100x100xf32>, %[[WO:.*]]: tensor<100x100xf32>, %[[VL:.*]]: tensor<2x4xi32>)
// FUSED: %[[Q:.*]] = attn.linear %[[X]], %[[WQ]]
// FUSED: %[[K:.*]] = attn.linear %[[X]], %[[WK]]
// FUSED: %[[V:.*]] = attn.linear %[[X]], %[[WV]]
// scale 1/sqrt(100 / 5)
// FUSED: %[[O:.*]] = attn.fused_attention %[[Q]], %[[K]], %[[V]] valid_lens(%[[VL]]) outs(%[[Q]]) causal heads(5) scale(0.223606795) : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<2x4xi32>, tensor<2x4x100xf32>) -> tensor<2x4x100xf32>
// FUSED-NOT: split_heads
// FUSED-NOT: merge_heads
// FUSED: attn.linear %[[O]], %[[WO]]
// Tq * Tk = 16 is below the threshold: the heads are split as in D2L.
// AUTO-LABEL: func.func @mha
// AUTO: attn.split_heads
// AUTO-NOT: attn.fused_attention
// AUTO: attn.merge_heads
func.func @mha(%x: tensor<2x4x100xf32>, %wq: tensor<100x100xf32>, %wk: tensor<100x100xf32>, %wv: tensor<100x100xf32>, %wo: tensor<100x100xf32>, %vl: tensor<2x4xi32>) -> tensor<2x4x100xf32> {
  %0 = attn.multihead_attention %x, %x, %x heads(5) weights(%wq, %wk, %wv, %wo) valid_lens(%vl) causal
      : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<2x4xi32>) -> tensor<2x4x100xf32>
  return %0 : tensor<2x4x100xf32>
}

// An attention whose weights are returned is decomposed whatever the
// lowering: the fused kernel never builds the [N, Tq, Tk] weights.
// FUSED-LABEL: func.func @attention_weights
// FUSED-NOT: attn.fused_attention
// FUSED: %[[P:.*]] = attn.masked_softmax
// FUSED: %[[O:.*]] = attn.matmul %[[P]]
// FUSED: return %[[O]], %[[P]]
// AUTO-LABEL: func.func @attention_weights
// AUTO-NOT: attn.fused_attention
// AUTO: attn.masked_softmax
func.func @attention_weights(%q: tensor<10x4x20xf32>, %k: tensor<10x6x20xf32>, %v: tensor<10x6x8xf32>, %vl: tensor<10xi32>) -> (tensor<10x4x8xf32>, tensor<10x4x6xf32>) {
  %0, %1 = attn.attention %q, %k, %v valid_lens(%vl) causal return_weights : (tensor<10x4x20xf32>, tensor<10x6x20xf32>, tensor<10x6x8xf32>, tensor<10xi32>) -> (tensor<10x4x8xf32>, tensor<10x4x6xf32>)
  return %0, %1 : tensor<10x4x8xf32>, tensor<10x4x6xf32>
}

// The same for multi-head attention: split heads, D2L's attention, weights.
// FUSED-LABEL: func.func @mha_weights
// FUSED-NOT: attn.fused_attention
// FUSED: attn.split_heads
// FUSED: %[[P:.*]] = attn.masked_softmax %{{.*}}, %{{.*}} : (tensor<10x4x4xf32>, tensor<10x4xi32>)
// FUSED: attn.merge_heads
// FUSED: %[[Y:.*]] = attn.linear
// FUSED: return %[[Y]], %[[P]]
func.func @mha_weights(%x: tensor<2x4x100xf32>, %w: tensor<100x100xf32>, %vl: tensor<2x4xi32>) -> (tensor<2x4x100xf32>, tensor<10x4x4xf32>) {
  %0, %1 = attn.multihead_attention %x, %x, %x heads(5) weights(%w, %w, %w, %w) valid_lens(%vl) causal return_weights
      : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<2x4xi32>) -> (tensor<2x4x100xf32>, tensor<10x4x4xf32>)
  return %0, %1 : tensor<2x4x100xf32>, tensor<10x4x4xf32>
}
