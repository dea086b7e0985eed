// attn-decompose of a multihead_attention with a KV cache (bf16 caches, GQA,
// rope, a window): the new rows rounded to the cache's type and written by
// attn.cache_update, then with decode-kernel=true (the CPU's) one
// attn.decode_attention over the updated caches as they are (no
// split_heads copy of a cache, no [B*H, T, L] scores); attention=decomposed
// or a target without the kernel (the GPU's) keep the step-by-step ops.
// RUN: attn-opt %s --attn-decompose="attention=auto decode-kernel=true" | FileCheck %s
// RUN: attn-opt %s --attn-decompose="attention=decomposed decode-kernel=true" | FileCheck %s --check-prefix=STEPS
// RUN: attn-opt %s --attn-decompose="attention=fused" | FileCheck %s --check-prefix=STEPS

// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[X:.*]]: tensor<2x1x32xf32>, %[[WQ:.*]]: tensor<32x32xf32>, %[[WKV:.*]]: tensor<16x32xf32>, %[[KC:.*]]: tensor<2x64x16xbf16>, %[[VC:.*]]: tensor<2x64x16xbf16>, %[[POS:.*]]: tensor<2xi32>)
// CHECK: %[[Q:.*]] = attn.linear %[[X]], %[[WQ]]
// CHECK: %[[K:.*]] = attn.linear %[[X]], %[[WKV]]
// CHECK: %[[V:.*]] = attn.linear %[[X]], %[[WKV]]
// CHECK: %[[K16:.*]] = attn.cast %{{.*}} to bf16 : tensor<2x1x16xf32>
// CHECK-NOT: attn.split_heads
// CHECK: %[[K2:.*]] = attn.cache_update %[[K16]] into %[[KC]] at %[[POS]]
// CHECK: %[[V16:.*]] = attn.cast %[[V]] to bf16
// CHECK: %[[V2:.*]] = attn.cache_update %[[V16]] into %[[VC]] at %[[POS]]
// CHECK: %[[INIT:.*]] = tensor.empty() : tensor<2x1x32xf32>
// CHECK: %[[O:.*]] = attn.decode_attention %{{.*}}, %[[K2]], %[[V2]] at %[[POS]] outs(%[[INIT]]) window(8) heads(4) kv_heads(2) scale(0.353553385) : (tensor<2x1x32xf32>, tensor<2x64x16xbf16>, tensor<2x64x16xbf16>, tensor<2xi32>, tensor<2x1x32xf32>) -> tensor<2x1x32xf32>
// CHECK-NOT: attn.split_heads
// CHECK: %[[Y:.*]] = attn.linear %[[O]], %[[WQ]]
// CHECK: return %[[Y]], %[[K2]], %[[V2]]

// STEPS-LABEL: func.func @step
// STEPS: attn.cache_update
// STEPS: attn.cache_update
// STEPS-NOT: attn.decode_attention
// STEPS: attn.split_heads
// STEPS: attn.matmul
// STEPS: attn.softmax
func.func @step(%x: tensor<2x1x32xf32>, %wq: tensor<32x32xf32>, %wkv: tensor<16x32xf32>, %kc: tensor<2x64x16xbf16>, %vc: tensor<2x64x16xbf16>, %pos: tensor<2xi32>) -> (tensor<2x1x32xf32>, tensor<2x64x16xbf16>, tensor<2x64x16xbf16>) {
  %y, %k2, %v2 = attn.multihead_attention %x, %x, %x heads(4) kv_heads(2) weights(%wq, %wkv, %wkv, %wq) cache(%kc, %vc, %pos) causal window(8) rope
      : (tensor<2x1x32xf32>, tensor<2x1x32xf32>, tensor<2x1x32xf32>, tensor<32x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<32x32xf32>, tensor<2x64x16xbf16>, tensor<2x64x16xbf16>, tensor<2xi32>) -> (tensor<2x1x32xf32>, tensor<2x64x16xbf16>, tensor<2x64x16xbf16>)
  return %y, %k2, %v2 : tensor<2x1x32xf32>, tensor<2x64x16xbf16>, tensor<2x64x16xbf16>
}
