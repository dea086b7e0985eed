// attn-decompose of a multihead_attention with a KV cache (bf16 caches, GQA,
// rope, a window): the new rows rounded to the cache's type and written by
// attn.cache_update, then with decode-kernel=true (the CPU's) one
// attn.decode_attention over the updated caches as they are (no
// split_heads copy of a cache, no [B*H, T, L] scores); attention=decomposed
// keeps the step-by-step ops, as return_weights does (its weights, over the
// cache's rows, are the masked softmax's).
// RUN: attn-opt %s --attn-decompose="attention=auto decode-kernel=true" | FileCheck %s
// RUN: attn-opt %s --attn-decompose="attention=decomposed decode-kernel=true" | FileCheck %s --check-prefix=STEPS
// RUN: attn-opt %s --attn-decompose="attention=fused" | FileCheck %s --check-prefix=STEPS
// RUN: attn-opt %s --attn-decompose="attention=auto decode-kernel=true prefill-flash-rows=0" | FileCheck %s --check-prefix=NOFLASH

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

// A call adding prefill-flash-rows (64) tokens or more: when every entry is
// at position 0 (a prompt's prefill) the flash kernel runs on the T rows
// just written (causal, exclusive: masked keys weigh 0, as in the decode
// kernel), else the decode kernel; one destination for both.
// CHECK-LABEL: func.func @prompt
// CHECK: %[[K2:.*]] = attn.cache_update
// CHECK: %[[V2:.*]] = attn.cache_update
// CHECK: %[[INIT:.*]] = tensor.empty() : tensor<2x64x32xf32>
// CHECK: %[[ALL:.*]] = scf.for {{.*}} -> (i1)
// CHECK:   tensor.extract %{{.*}}[%{{.*}}] : tensor<2xi32>
// CHECK:   arith.cmpi eq
// CHECK:   arith.andi
// CHECK: %[[O:.*]] = scf.if %[[ALL]] -> (tensor<2x64x32xf32>)
// CHECK:   %[[KS:.*]] = tensor.extract_slice %[[K2]][0, 0, 0] [2, 64, 16] [1, 1, 1] : tensor<2x128x16xbf16> to tensor<2x64x16xbf16>
// CHECK:   %[[KF:.*]] = attn.cast %[[KS]] to f32
// CHECK:   %[[VS:.*]] = tensor.extract_slice %[[V2]][0, 0, 0] [2, 64, 16] [1, 1, 1]
// CHECK:   %[[VF:.*]] = attn.cast %[[VS]] to f32
// CHECK:   attn.fused_attention %{{.*}}, %[[KF]], %[[VF]] outs(%[[INIT]]) causal exclusive heads(4) kv_heads(2) scale(0.353553385)
// CHECK: } else {
// CHECK:   attn.decode_attention %{{.*}}, %[[K2]], %[[V2]] at %{{.*}} outs(%[[INIT]])
// CHECK: attn.linear %[[O]]
// NOFLASH-LABEL: func.func @prompt
// NOFLASH-NOT: attn.fused_attention
// NOFLASH: attn.decode_attention
func.func @prompt(%x: tensor<2x64x32xf32>, %wq: tensor<32x32xf32>, %wkv: tensor<16x32xf32>, %kc: tensor<2x128x16xbf16>, %vc: tensor<2x128x16xbf16>, %pos: tensor<2xi32>) -> (tensor<2x64x32xf32>, tensor<2x128x16xbf16>, tensor<2x128x16xbf16>) {
  %y, %k2, %v2 = attn.multihead_attention %x, %x, %x heads(4) kv_heads(2) weights(%wq, %wkv, %wkv, %wq) cache(%kc, %vc, %pos) causal rope
      : (tensor<2x64x32xf32>, tensor<2x64x32xf32>, tensor<2x64x32xf32>, tensor<32x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<32x32xf32>, tensor<2x128x16xbf16>, tensor<2x128x16xbf16>, tensor<2xi32>) -> (tensor<2x64x32xf32>, tensor<2x128x16xbf16>, tensor<2x128x16xbf16>)
  return %y, %k2, %v2 : tensor<2x64x32xf32>, tensor<2x128x16xbf16>, tensor<2x128x16xbf16>
}

// return_weights: the step-by-step ops whatever the option, the weights
// [B * heads, T, L] the second result.
// CHECK-LABEL: func.func @weights
// CHECK-NOT:     attn.decode_attention
// CHECK:         %[[W:.*]] = attn.softmax %{{.*}} : tensor<8x1x64xf32>
// CHECK:         return %{{.*}}, %[[W]], %{{.*}}, %{{.*}} : tensor<2x1x32xf32>, tensor<8x1x64xf32>, tensor<2x64x16xbf16>, tensor<2x64x16xbf16>
// STEPS-LABEL: func.func @weights
// STEPS:         %[[W:.*]] = attn.softmax %{{.*}} : tensor<8x1x64xf32>
// STEPS:         return %{{.*}}, %[[W]], %{{.*}}, %{{.*}}
func.func @weights(%x: tensor<2x1x32xf32>, %wq: tensor<32x32xf32>, %wkv: tensor<16x32xf32>, %kc: tensor<2x64x16xbf16>, %vc: tensor<2x64x16xbf16>, %pos: tensor<2xi32>) -> (tensor<2x1x32xf32>, tensor<8x1x64xf32>, tensor<2x64x16xbf16>, tensor<2x64x16xbf16>) {
  %y, %a, %k2, %v2 = attn.multihead_attention %x, %x, %x heads(4) kv_heads(2) weights(%wq, %wkv, %wkv, %wq) cache(%kc, %vc, %pos) causal return_weights
      : (tensor<2x1x32xf32>, tensor<2x1x32xf32>, tensor<2x1x32xf32>, tensor<32x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<32x32xf32>, tensor<2x64x16xbf16>, tensor<2x64x16xbf16>, tensor<2xi32>) -> (tensor<2x1x32xf32>, tensor<8x1x64xf32>, tensor<2x64x16xbf16>, tensor<2x64x16xbf16>)
  return %y, %a, %k2, %v2 : tensor<2x1x32xf32>, tensor<8x1x64xf32>, tensor<2x64x16xbf16>, tensor<2x64x16xbf16>
}
