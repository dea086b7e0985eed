// attn-decompose{attention=fused} of multihead_attention's v2 keywords: the
// biases go to the projections; kv_heads, the window and the rope tables go
// to the one attn.fused_attention, which reads the [B, T, G*d] kv
// projections as they are (no repeat_kv, no split or merge).
// RUN: attn-opt %s --attn-decompose="attention=fused" --split-input-file | FileCheck %s

// CHECK-LABEL: func.func @llama
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x32xf32>, %[[WQ:.*]]: tensor<32x32xf32>, %[[WKV:.*]]: tensor<16x32xf32>, %[[BQ:.*]]: tensor<32xf32>, %[[BKV:.*]]: tensor<16xf32>, %[[VL:.*]]: tensor<1xi32>)
func.func @llama(%x: tensor<1x8x32xf32>, %wq: tensor<32x32xf32>, %wkv: tensor<16x32xf32>, %bq: tensor<32xf32>, %bkv: tensor<16xf32>, %vl: tensor<1xi32>) -> tensor<1x8x32xf32> {
  // the tables of rope for max(Tq, Tk) = 8 positions, head dim 8: [8, 4]
  // CHECK-DAG: %[[SIN:.*]] = arith.constant dense<{{\[\[}}0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00], [0.841470957, {{.*}}]]> : tensor<8x4xf32>
  // CHECK-DAG: %[[COS:.*]] = arith.constant dense<{{\[\[}}1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00], [0.540302277, {{.*}}]]> : tensor<8x4xf32>
  // CHECK: %[[Q:.*]] = attn.linear %[[X]], %[[WQ]], %[[BQ]] : (tensor<1x8x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<1x8x32xf32>
  // CHECK: %[[K:.*]] = attn.linear %[[X]], %[[WKV]], %[[BKV]] : (tensor<1x8x32xf32>, tensor<16x32xf32>, tensor<16xf32>) -> tensor<1x8x16xf32>
  // CHECK: %[[V:.*]] = attn.linear %[[X]], %[[WKV]] : (tensor<1x8x32xf32>, tensor<16x32xf32>) -> tensor<1x8x16xf32>
  // the output [1, 8, 4 * 8] takes q's place
  // CHECK: %[[O:.*]] = attn.fused_attention %[[Q]], %[[K]], %[[V]] valid_lens(%[[VL]]) rope(%[[COS]], %[[SIN]]) outs(%[[Q]]) causal window(3) heads(4) kv_heads(2) scale(0.353553385) : (tensor<1x8x32xf32>, tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<1xi32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<1x8x32xf32>) -> tensor<1x8x32xf32>
  // CHECK-NOT: split_heads
  // CHECK-NOT: linalg.generic
  // CHECK: attn.linear %[[O]], %[[WQ]], %[[BQ]]
  %0 = attn.multihead_attention %x, %x, %x heads(4) kv_heads(2) weights(%wq, %wkv, %wkv, %wq) b_q(%bq) b_k(%bkv) b_o(%bq) valid_lens(%vl) causal window(3) rope
      : (tensor<1x8x32xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>, tensor<32x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<32x32xf32>, tensor<1xi32>, tensor<32xf32>, tensor<16xf32>, tensor<32xf32>) -> tensor<1x8x32xf32>
  return %0 : tensor<1x8x32xf32>
}

// -----

// Cross attention with rope: the tables cover max(Tq, Tk) = 6 positions.
// kv_heads equal to heads and a window of Tq keys or more are plain
// attention: neither is passed on.
// CHECK-LABEL: func.func @cross
func.func @cross(%q: tensor<2x4x8xf32>, %kv: tensor<2x6x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
  // CHECK: attn.fused_attention %{{.*}}, %{{.*}}, %{{.*}} rope(%{{.*}}, %{{.*}}) outs(%{{.*}}) causal heads(2) scale(5.000000e-01) : (tensor<2x4x8xf32>, tensor<2x6x8xf32>, tensor<2x6x8xf32>, tensor<6x2xf32>, tensor<6x2xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %0 = attn.multihead_attention %q, %kv, %kv heads(2) kv_heads(2) weights(%w, %w, %w, %w) causal window(4) rope
      : (tensor<2x4x8xf32>, tensor<2x6x8xf32>, tensor<2x6x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  return %0 : tensor<2x4x8xf32>
}
