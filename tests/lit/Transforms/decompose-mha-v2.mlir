// attn-decompose of multihead_attention's v2 keywords on the decomposed
// path (-O0, return_weights, small shapes): biases in the projections,
// grouped-query attention through views of the query heads as rows of
// their kv head's group (no kv head copied), the sliding window as a -1e6
// replacement of the scores before D2L's masked softmax, rope as
// Hugging Face's rotate_half on the projections.
// RUN: attn-opt %s --attn-decompose --split-input-file | FileCheck %s

// D2L MultiHeadAttention(bias=True): every projection takes its bias.
// CHECK-LABEL: func.func @biases
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8xf32>, %[[W:.*]]: tensor<8x8xf32>, %[[BQ:.*]]: tensor<8xf32>, %[[BK:.*]]: tensor<8xf32>, %[[BV:.*]]: tensor<8xf32>, %[[BO:.*]]: tensor<8xf32>)
func.func @biases(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>, %bq: tensor<8xf32>, %bk: tensor<8xf32>, %bv: tensor<8xf32>, %bo: tensor<8xf32>) -> tensor<2x4x8xf32> {
  // CHECK: attn.linear %[[X]], %[[W]], %[[BQ]]
  // CHECK: attn.linear %[[X]], %[[W]], %[[BK]]
  // CHECK: attn.linear %[[X]], %[[W]], %[[BV]]
  // CHECK: %[[C:.*]] = attn.merge_heads
  // CHECK: attn.linear %[[C]], %[[W]], %[[BO]]
  %0 = attn.multihead_attention %x, %x, %x heads(2) weights(%w, %w, %w, %w) b_q(%bq) b_k(%bk) b_v(%bv) b_o(%bo)
      : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return %0 : tensor<2x4x8xf32>
}

// -----

// A subset: the others stay without bias.
// CHECK-LABEL: func.func @bias_subset
// CHECK-SAME: %[[B:[^:]*]]: tensor<8xf32>
func.func @bias_subset(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  // CHECK: attn.linear %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  // CHECK: attn.linear %{{.*}}, %{{.*}}, %[[B]] :
  // CHECK: attn.linear %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  // CHECK: attn.merge_heads
  // CHECK: attn.linear %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %0 = attn.multihead_attention %x, %x, %x heads(2) weights(%w, %w, %w, %w) b_k(%b)
      : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return %0 : tensor<2x4x8xf32>
}

// -----

// kv_heads(2) of 4 query heads, head dim 4, B = 2: k and v are split into
// B * 2 kv heads; the query heads of a group are the rows of one operand
// ([B * 2, 2 * Tq, d]), so each kv head is read by its group's scores and
// output GEMMs as it is. The weights are viewed back per query head for the
// lengths ([B * 4]) and D2L's layout.
// CHECK-LABEL: func.func @grouped
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x16xf32>, %[[W:.*]]: tensor<16x16xf32>, %[[WKV:.*]]: tensor<8x16xf32>, %[[VL:.*]]: tensor<2xi32>)
func.func @grouped(%x: tensor<2x3x16xf32>, %w: tensor<16x16xf32>, %wkv: tensor<8x16xf32>, %vl: tensor<2xi32>) -> tensor<2x3x16xf32> {
  // CHECK: %[[QP:.*]] = attn.linear %[[X]], %[[W]] : (tensor<2x3x16xf32>, tensor<16x16xf32>) -> tensor<2x3x16xf32>
  // CHECK: %[[QH:.*]] = attn.split_heads %[[QP]] heads(4) : (tensor<2x3x16xf32>) -> tensor<8x3x4xf32>
  // CHECK: %[[KP:.*]] = attn.linear %[[X]], %[[WKV]] : (tensor<2x3x16xf32>, tensor<8x16xf32>) -> tensor<2x3x8xf32>
  // CHECK: %[[KH:.*]] = attn.split_heads %[[KP]] heads(2) : (tensor<2x3x8xf32>) -> tensor<4x3x4xf32>
  // CHECK: %[[VP:.*]] = attn.linear %[[X]], %[[WKV]]
  // CHECK: %[[VH:.*]] = attn.split_heads %[[VP]] heads(2) : (tensor<2x3x8xf32>) -> tensor<4x3x4xf32>
  // lengths per query head, as D2L repeats them
  // CHECK: %[[REP:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<2x4xi32> into tensor<8xi32>
  // CHECK: %[[QE:.*]] = tensor.expand_shape %[[QH]] {{\[\[}}0, 1], [2], [3]] output_shape [4, 2, 3, 4] : tensor<8x3x4xf32> into tensor<4x2x3x4xf32>
  // CHECK: %[[QG:.*]] = tensor.collapse_shape %[[QE]] {{\[\[}}0], [1, 2], [3]] : tensor<4x2x3x4xf32> into tensor<4x6x4xf32>
  // CHECK: %[[S:.*]] = attn.matmul %[[QG]], %[[KH]] transpose_b : (tensor<4x6x4xf32>, tensor<4x3x4xf32>) -> tensor<4x6x3xf32>
  // CHECK: %[[SE:.*]] = tensor.expand_shape %[[S]] {{\[\[}}0], [1, 2], [3]] output_shape [4, 2, 3, 3] : tensor<4x6x3xf32> into tensor<4x2x3x3xf32>
  // CHECK: %[[SH:.*]] = tensor.collapse_shape %[[SE]] {{\[\[}}0, 1], [2], [3]] : tensor<4x2x3x3xf32> into tensor<8x3x3xf32>
  // CHECK: %[[T:.*]] = attn.scale %[[SH]] factor(5.000000e-01) : tensor<8x3x3xf32>
  // CHECK: %[[P:.*]] = attn.masked_softmax %[[T]], %[[REP]] : (tensor<8x3x3xf32>, tensor<8xi32>) -> tensor<8x3x3xf32>
  // CHECK: %[[PE:.*]] = tensor.expand_shape %[[P]]
  // CHECK: %[[PG:.*]] = tensor.collapse_shape %[[PE]] {{.*}} into tensor<4x6x3xf32>
  // CHECK: %[[O:.*]] = attn.matmul %[[PG]], %[[VH]] : (tensor<4x6x3xf32>, tensor<4x3x4xf32>) -> tensor<4x6x4xf32>
  // CHECK: %[[OE:.*]] = tensor.expand_shape %[[O]]
  // CHECK: %[[OH:.*]] = tensor.collapse_shape %[[OE]] {{.*}} into tensor<8x3x4xf32>
  // CHECK: %[[C:.*]] = attn.merge_heads %[[OH]] heads(4) : (tensor<8x3x4xf32>) -> tensor<2x3x16xf32>
  // CHECK: attn.linear %[[C]], %[[W]]
  // no kv head is repeated
  // CHECK-NOT: linalg.broadcast
  %0 = attn.multihead_attention %x, %x, %x heads(4) kv_heads(2) weights(%w, %wkv, %wkv, %w) valid_lens(%vl)
      : (tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<16x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<2xi32>) -> tensor<2x3x16xf32>
  return %0 : tensor<2x3x16xf32>
}

// -----

// kv_heads equal to heads is plain multi-head attention: no regrouping.
// CHECK-LABEL: func.func @kv_heads_all
func.func @kv_heads_all(%x: tensor<2x3x16xf32>, %w: tensor<16x16xf32>) -> tensor<2x3x16xf32> {
  // CHECK-NOT: tensor.expand_shape
  // CHECK: attn.matmul %{{.*}}, %{{.*}} transpose_b : (tensor<8x3x4xf32>, tensor<8x3x4xf32>) -> tensor<8x3x3xf32>
  %0 = attn.multihead_attention %x, %x, %x heads(4) kv_heads(4) weights(%w, %w, %w, %w)
      : (tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<2x3x16xf32>
  return %0 : tensor<2x3x16xf32>
}

// -----

// A causal window of 2 keys: scores of keys before begin(i) = max(0, i - 1)
// (attn/IR/AttentionMask.h) are replaced by -1e6 (from the indices, no mask
// tensor), then the causal lengths min(vl, i + 1) mask the rest, as every
// mask here: a row that sees nothing is uniform.
// The weights returned are that softmax.
// CHECK-LABEL: func.func @window
// CHECK-SAME: %[[VL:[^:]*]]: tensor<1xi32>
func.func @window(%x: tensor<1x5x8xf32>, %w: tensor<8x8xf32>, %vl: tensor<1xi32>) -> (tensor<1x5x8xf32>, tensor<2x5x5xf32>) {
  // CHECK-DAG: %[[MASKED:.*]] = arith.constant -1.000000e+06 : f32
  // CHECK-DAG: %[[W2:.*]] = arith.constant 2 : index
  // CHECK: %[[T:.*]] = attn.scale
  // CHECK: %[[WIN:.*]] = linalg.generic {{.*}} outs(%[[T]] : tensor<2x5x5xf32>)
  // CHECK: %[[I:.*]] = linalg.index 1 : index
  // CHECK: %[[J:.*]] = linalg.index 2 : index
  // begin(i) = max(0, i + 1 - 2); visible: j >= begin(i)
  // CHECK: %[[I1:.*]] = arith.addi %[[I]], %{{.*}} : index
  // CHECK: %[[IW:.*]] = arith.subi %[[I1]], %[[W2]] : index
  // CHECK: %[[BEGIN:.*]] = arith.maxsi %[[IW]], %{{.*}} : index
  // CHECK: %[[VIS:.*]] = arith.cmpi sge, %[[J]], %[[BEGIN]] : index
  // CHECK: arith.select %[[VIS]], %{{.*}}, %[[MASKED]] : f32
  // CHECK: %[[MIN:.*]] = arith.minsi
  // CHECK: %[[P:.*]] = attn.masked_softmax %[[WIN]], %[[MIN]] : (tensor<2x5x5xf32>, tensor<2x5xi32>) -> tensor<2x5x5xf32>
  // CHECK: %[[Y:.*]] = attn.linear
  // CHECK: return %[[Y]], %[[P]]
  %y, %a = attn.multihead_attention %x, %x, %x heads(2) weights(%w, %w, %w, %w) valid_lens(%vl) causal window(2) return_weights
      : (tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<1xi32>) -> (tensor<1x5x8xf32>, tensor<2x5x5xf32>)
  return %y, %a : tensor<1x5x8xf32>, tensor<2x5x5xf32>
}

// -----

// A window of Tq keys or more hides nothing causal does not: no mask.
// CHECK-LABEL: func.func @wide_window
func.func @wide_window(%x: tensor<1x5x8xf32>, %w: tensor<8x8xf32>) -> tensor<1x5x8xf32> {
  // CHECK-NOT: linalg.generic
  // CHECK: attn.masked_softmax
  %0 = attn.multihead_attention %x, %x, %x heads(2) weights(%w, %w, %w, %w) causal window(5)
      : (tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<1x5x8xf32>
  return %0 : tensor<1x5x8xf32>
}

// -----

// rope on q (3 positions) and k (4 positions), head dim 4: each projection
// is viewed as [B, T, heads, 2, d/2], and half s of each head becomes
// x[s] cos -+ x[1 - s] sin with the f32 tables of Hugging Face Llama
// (row t: cos(t inv_freq), inv_freq = [1, 0.01] for d = 4, base 10000).
// CHECK-LABEL: func.func @rope
// CHECK-SAME: (%[[Q:.*]]: tensor<1x3x8xf32>, %[[K:.*]]: tensor<1x4x8xf32>, %[[W:.*]]: tensor<8x8xf32>)
func.func @rope(%q: tensor<1x3x8xf32>, %k: tensor<1x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<1x3x8xf32> {
  // CHECK-DAG: %[[SINQ:.*]] = arith.constant dense<{{\[\[}}0.000000e+00, 0.000000e+00], [0.841470957, 0.00999983306], [0.909297406, 0.0199986659]]> : tensor<3x2xf32>
  // CHECK-DAG: %[[COSQ:.*]] = arith.constant dense<{{\[\[}}1.000000e+00, 1.000000e+00], [0.540302277, 0.999949991], [-0.416146845, 9.998000e-01]]> : tensor<3x2xf32>
  // CHECK: %[[QP:.*]] = attn.linear %[[Q]], %[[W]]
  // CHECK: %[[QV:.*]] = tensor.expand_shape %[[QP]] {{\[\[}}0], [1], [2, 3, 4]] output_shape [1, 3, 2, 2, 2] : tensor<1x3x8xf32> into tensor<1x3x2x2x2xf32>
  // CHECK: %[[X1:.*]] = tensor.extract_slice %[[QV]][0, 0, 0, 0, 0] [1, 3, 2, 1, 2] [1, 1, 1, 1, 1] : tensor<1x3x2x2x2xf32> to tensor<1x3x2x2xf32>
  // CHECK: %[[X2:.*]] = tensor.extract_slice %[[QV]][0, 0, 0, 1, 0] [1, 3, 2, 1, 2] [1, 1, 1, 1, 1] : tensor<1x3x2x2x2xf32> to tensor<1x3x2x2xf32>
  // CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[X1]], %[[X2]], %[[COSQ]], %[[SINQ]] : {{.*}}) outs(%{{.*}} : tensor<1x3x2x2x2xf32>)
  // CHECK: %[[S:.*]] = linalg.index 3 : index
  // CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[S]], %{{.*}} : index
  // rotate_half: x cos + partner sin, the first half's partner negated
  // CHECK: %[[NEG:.*]] = arith.negf
  // CHECK: %[[SIGNED:.*]] = arith.select %[[FIRST]], %[[NEG]]
  // CHECK: %[[XC:.*]] = arith.mulf
  // CHECK: %[[PS:.*]] = arith.mulf %[[SIGNED]]
  // CHECK: arith.addf %[[XC]], %[[PS]]
  // CHECK: %[[QR:.*]] = tensor.collapse_shape %[[R]] {{\[\[}}0], [1], [2, 3, 4]] : tensor<1x3x2x2x2xf32> into tensor<1x3x8xf32>
  // CHECK: attn.split_heads %[[QR]] heads(2)
  // k's tables have its 4 positions
  // CHECK: %[[KP:.*]] = attn.linear %[[K]], %[[W]]
  // CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>)
  // v is not rotated
  // CHECK: %[[VP:.*]] = attn.linear %[[K]], %[[W]]
  // CHECK-NEXT: attn.split_heads %[[VP]] heads(2)
  %0 = attn.multihead_attention %q, %k, %k heads(2) weights(%w, %w, %w, %w) rope
      : (tensor<1x3x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<1x3x8xf32>
  return %0 : tensor<1x3x8xf32>
}
