// attn-decompose rewrites the composite ops into primitives, step by step as
// the D2L PyTorch code computes them.
// RUN: attn-opt %s --attn-decompose --split-input-file | FileCheck %s

// D2L DotProductAttention with 1-D valid_lens, cross-attention (Tq=4, Tk=6).
// CHECK-LABEL: func.func @attention_valid_lens
// CHECK-SAME: (%[[Q:.*]]: tensor<10x4x20xf32>, %[[K:.*]]: tensor<10x6x20xf32>, %[[V:.*]]: tensor<10x6x8xf32>, %[[VL:.*]]: tensor<10xi32>)
func.func @attention_valid_lens(%q: tensor<10x4x20xf32>, %k: tensor<10x6x20xf32>, %v: tensor<10x6x8xf32>, %vl: tensor<10xi32>) -> tensor<10x4x8xf32> {
  // scores = bmm(queries, keys.transpose(1, 2))
  // CHECK: %[[S:.*]] = attn.matmul %[[Q]], %[[K]] transpose_b : (tensor<10x4x20xf32>, tensor<10x6x20xf32>) -> tensor<10x4x6xf32>
  // scores / sqrt(d), d = 20: 1/sqrt(20) = 0.2236068
  // CHECK: %[[T:.*]] = attn.scale %[[S]] factor(0.223606795) : tensor<10x4x6xf32>
  // attention_weights = masked_softmax(scores, valid_lens)
  // CHECK: %[[P:.*]] = attn.masked_softmax %[[T]], %[[VL]] : (tensor<10x4x6xf32>, tensor<10xi32>) -> tensor<10x4x6xf32>
  // bmm(attention_weights, values)
  // CHECK: %[[O:.*]] = attn.matmul %[[P]], %[[V]] : (tensor<10x4x6xf32>, tensor<10x6x8xf32>) -> tensor<10x4x8xf32>
  // CHECK: return %[[O]]
  %0 = attn.attention %q, %k, %v valid_lens(%vl) : (tensor<10x4x20xf32>, tensor<10x6x20xf32>, tensor<10x6x8xf32>, tensor<10xi32>) -> tensor<10x4x8xf32>
  return %0 : tensor<10x4x8xf32>
}

// -----

// Without valid_lens D2L's masked_softmax is a plain softmax.
// CHECK-LABEL: func.func @attention_unmasked
func.func @attention_unmasked(%q: tensor<3x5x16xf32>) -> tensor<3x5x16xf32> {
  // CHECK: %[[S:.*]] = attn.matmul %{{.*}}, %{{.*}} transpose_b
  // 1/sqrt(16) = 0.25
  // CHECK: %[[T:.*]] = attn.scale %[[S]] factor(2.500000e-01)
  // CHECK-NOT: masked_softmax
  // CHECK: %[[P:.*]] = attn.softmax %[[T]] : tensor<3x5x5xf32>
  // CHECK: attn.matmul %[[P]], %{{.*}} : (tensor<3x5x5xf32>, tensor<3x5x16xf32>) -> tensor<3x5x16xf32>
  %0 = attn.attention %q, %q, %q : (tensor<3x5x16xf32>, tensor<3x5x16xf32>, tensor<3x5x16xf32>) -> tensor<3x5x16xf32>
  return %0 : tensor<3x5x16xf32>
}

// -----

// Causal masking with 1-D lengths: mask j >= min(valid_len, i + 1).
// CHECK-LABEL: func.func @attention_causal
// CHECK-SAME: %[[VL:[^:]*]]: tensor<2xi32>
func.func @attention_causal(%q: tensor<2x3x4xf32>, %vl: tensor<2xi32>) -> tensor<2x3x4xf32> {
  // row i may see keys j <= i: lengths i + 1
  // CHECK-DAG: %[[ROWS:.*]] = arith.constant dense<[1, 2, 3]> : tensor<3xi32>
  // CHECK: %[[S:.*]] = attn.matmul
  // CHECK: %[[T:.*]] = attn.scale %[[S]] factor(5.000000e-01)
  // the same i + 1 for every batch entry
  // CHECK: %[[E1:.*]] = tensor.empty() : tensor<2x3xi32>
  // CHECK: %[[CAUSAL:.*]] = linalg.broadcast ins(%[[ROWS]] : tensor<3xi32>) outs(%[[E1]] : tensor<2x3xi32>) dimensions = [0]
  // each batch entry's valid_len for every query row
  // CHECK: %[[E2:.*]] = tensor.empty() : tensor<2x3xi32>
  // CHECK: %[[LENS:.*]] = linalg.broadcast ins(%[[VL]] : tensor<2xi32>) outs(%[[E2]] : tensor<2x3xi32>) dimensions = [1]
  // both masks replace by -1e6: one 2-D length min(valid_len, i + 1)
  // CHECK: %[[MIN:.*]] = arith.minsi %[[LENS]], %[[CAUSAL]] : tensor<2x3xi32>
  // CHECK: %[[P:.*]] = attn.masked_softmax %[[T]], %[[MIN]] : (tensor<2x3x3xf32>, tensor<2x3xi32>) -> tensor<2x3x3xf32>
  // CHECK: attn.matmul %[[P]]
  %0 = attn.attention %q, %q, %q valid_lens(%vl) causal : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2xi32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// Causal masking alone: the lengths are i + 1.
// CHECK-LABEL: func.func @attention_causal_only
func.func @attention_causal_only(%q: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  // CHECK: %[[ROWS:.*]] = arith.constant dense<[1, 2, 3]> : tensor<3xi32>
  // CHECK: %[[CAUSAL:.*]] = linalg.broadcast ins(%[[ROWS]] : tensor<3xi32>) outs(%{{.*}} : tensor<2x3xi32>) dimensions = [0]
  // CHECK-NOT: arith.minsi
  // CHECK: attn.masked_softmax %{{.*}}, %[[CAUSAL]] : (tensor<2x3x3xf32>, tensor<2x3xi32>)
  %0 = attn.attention %q, %q, %q causal : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// Causal masking with 2-D lengths: min taken elementwise, no broadcast of vl.
// CHECK-LABEL: func.func @attention_causal_2d
// CHECK-SAME: %[[VL:[^:]*]]: tensor<2x3xi32>
func.func @attention_causal_2d(%q: tensor<2x3x4xf32>, %vl: tensor<2x3xi32>) -> tensor<2x3x4xf32> {
  // CHECK: %[[CAUSAL:.*]] = linalg.broadcast
  // CHECK-NOT: linalg.broadcast
  // CHECK: %[[MIN:.*]] = arith.minsi %[[VL]], %[[CAUSAL]] : tensor<2x3xi32>
  // CHECK: attn.masked_softmax %{{.*}}, %[[MIN]]
  %0 = attn.attention %q, %q, %q valid_lens(%vl) causal : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3xi32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// D2L MultiHeadAttention (bias=False), the book's case: B=2, T=4, D=100, 5 heads.
// CHECK-LABEL: func.func @multihead_attention
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x100xf32>, %[[WQ:.*]]: tensor<100x100xf32>, %[[WK:.*]]: tensor<100x100xf32>, %[[WV:.*]]: tensor<100x100xf32>, %[[WO:.*]]: tensor<100x100xf32>, %[[VL:.*]]: tensor<2xi32>)
func.func @multihead_attention(%x: tensor<2x4x100xf32>, %wq: tensor<100x100xf32>, %wk: tensor<100x100xf32>, %wv: tensor<100x100xf32>, %wo: tensor<100x100xf32>, %vl: tensor<2xi32>) -> tensor<2x4x100xf32> {
  // queries = transpose_qkv(W_q(queries))
  // CHECK: %[[QP:.*]] = attn.linear %[[X]], %[[WQ]] : (tensor<2x4x100xf32>, tensor<100x100xf32>) -> tensor<2x4x100xf32>
  // CHECK: %[[QH:.*]] = attn.split_heads %[[QP]] heads(5) : (tensor<2x4x100xf32>) -> tensor<10x4x20xf32>
  // keys = transpose_qkv(W_k(keys))
  // CHECK: %[[KP:.*]] = attn.linear %[[X]], %[[WK]]
  // CHECK: %[[KH:.*]] = attn.split_heads %[[KP]] heads(5)
  // values = transpose_qkv(W_v(values))
  // CHECK: %[[VP:.*]] = attn.linear %[[X]], %[[WV]]
  // CHECK: %[[VH:.*]] = attn.split_heads %[[VP]] heads(5)
  // valid_lens = repeat_interleave(valid_lens, repeats=num_heads, dim=0)
  // CHECK: %[[E:.*]] = tensor.empty() : tensor<2x5xi32>
  // CHECK: %[[B:.*]] = linalg.broadcast ins(%[[VL]] : tensor<2xi32>) outs(%[[E]] : tensor<2x5xi32>) dimensions = [1]
  // CHECK: %[[REP:.*]] = tensor.collapse_shape %[[B]] {{\[\[}}0, 1]] : tensor<2x5xi32> into tensor<10xi32>
  // output = attention(queries, keys, values, valid_lens), decomposed too
  // CHECK: %[[S:.*]] = attn.matmul %[[QH]], %[[KH]] transpose_b : (tensor<10x4x20xf32>, tensor<10x4x20xf32>) -> tensor<10x4x4xf32>
  // CHECK: %[[T:.*]] = attn.scale %[[S]]
  // CHECK: %[[P:.*]] = attn.masked_softmax %[[T]], %[[REP]] : (tensor<10x4x4xf32>, tensor<10xi32>) -> tensor<10x4x4xf32>
  // CHECK: %[[O:.*]] = attn.matmul %[[P]], %[[VH]]
  // output_concat = transpose_output(output)
  // CHECK: %[[C:.*]] = attn.merge_heads %[[O]] heads(5) : (tensor<10x4x20xf32>) -> tensor<2x4x100xf32>
  // W_o(output_concat)
  // CHECK: %[[Y:.*]] = attn.linear %[[C]], %[[WO]] : (tensor<2x4x100xf32>, tensor<100x100xf32>) -> tensor<2x4x100xf32>
  // CHECK: return %[[Y]]
  %0 = attn.multihead_attention %x, %x, %x heads(5) weights(%wq, %wk, %wv, %wo) valid_lens(%vl)
      : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<2xi32>) -> tensor<2x4x100xf32>
  return %0 : tensor<2x4x100xf32>
}

// -----

// 2-D valid_lens [B, Tq] are repeated per head as [B*H, Tq].
// CHECK-LABEL: func.func @multihead_attention_2d_lens
// CHECK-SAME: %[[VL:[^:]*]]: tensor<2x4xi32>
func.func @multihead_attention_2d_lens(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>, %vl: tensor<2x4xi32>) -> tensor<2x4x8xf32> {
  // CHECK: %[[B:.*]] = linalg.broadcast ins(%[[VL]] : tensor<2x4xi32>) outs(%{{.*}} : tensor<2x2x4xi32>) dimensions = [1]
  // CHECK: %[[REP:.*]] = tensor.collapse_shape %[[B]] {{\[\[}}0, 1], [2]] : tensor<2x2x4xi32> into tensor<4x4xi32>
  // CHECK: attn.masked_softmax %{{.*}}, %[[REP]] : (tensor<4x4x4xf32>, tensor<4x4xi32>)
  %0 = attn.multihead_attention %x, %x, %x heads(2) weights(%w, %w, %w, %w) valid_lens(%vl)
      : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
  return %0 : tensor<2x4x8xf32>
}

// -----

// return_weights: the second result is the masked softmax the attention
// multiplies v with (D2L's self.attention_weights), causal mask included.
// CHECK-LABEL: func.func @attention_return_weights
// CHECK-SAME: (%[[Q:.*]]: tensor<2x3x4xf32>, %[[K:.*]]: tensor<2x5x4xf32>, %[[VL:.*]]: tensor<2xi32>)
func.func @attention_return_weights(%q: tensor<2x3x4xf32>, %k: tensor<2x5x4xf32>, %vl: tensor<2xi32>) -> (tensor<2x3x4xf32>, tensor<2x3x5xf32>) {
  // CHECK: %[[S:.*]] = attn.matmul %[[Q]], %[[K]] transpose_b
  // CHECK: %[[T:.*]] = attn.scale %[[S]] factor(5.000000e-01)
  // CHECK: %[[MIN:.*]] = arith.minsi
  // attention_weights = masked_softmax(scores, min(valid_lens, i + 1))
  // CHECK: %[[P:.*]] = attn.masked_softmax %[[T]], %[[MIN]] : (tensor<2x3x5xf32>, tensor<2x3xi32>) -> tensor<2x3x5xf32>
  // CHECK: %[[O:.*]] = attn.matmul %[[P]], %[[K]] : (tensor<2x3x5xf32>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32>
  // CHECK: return %[[O]], %[[P]]
  %y, %a = attn.attention %q, %k, %k valid_lens(%vl) causal return_weights : (tensor<2x3x4xf32>, tensor<2x5x4xf32>, tensor<2x5x4xf32>, tensor<2xi32>) -> (tensor<2x3x4xf32>, tensor<2x3x5xf32>)
  return %y, %a : tensor<2x3x4xf32>, tensor<2x3x5xf32>
}

// -----

// Unmasked weights are a plain softmax.
// CHECK-LABEL: func.func @attention_return_weights_unmasked
func.func @attention_return_weights_unmasked(%q: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x3xf32>) {
  // CHECK: %[[P:.*]] = attn.softmax %{{.*}} : tensor<2x3x3xf32>
  // CHECK: %[[O:.*]] = attn.matmul %[[P]]
  // CHECK: return %[[O]], %[[P]]
  %y, %a = attn.attention %q, %q, %q return_weights : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x3xf32>)
  return %y, %a : tensor<2x3x4xf32>, tensor<2x3x3xf32>
}

// -----

// return_weights of MultiHeadAttention: the weights of its attention over
// the split heads, [B*H, Tq, Tk] with row b*H + h (head-major per batch
// entry, as repeat_interleave repeats the lengths).
// CHECK-LABEL: func.func @multihead_attention_return_weights
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x100xf32>, %[[W:.*]]: tensor<100x100xf32>, %[[VL:.*]]: tensor<2xi32>)
func.func @multihead_attention_return_weights(%x: tensor<2x4x100xf32>, %w: tensor<100x100xf32>, %vl: tensor<2xi32>) -> (tensor<2x4x100xf32>, tensor<10x4x4xf32>) {
  // CHECK: %[[QH:.*]] = attn.split_heads %{{.*}} heads(5) : (tensor<2x4x100xf32>) -> tensor<10x4x20xf32>
  // CHECK: %[[KH:.*]] = attn.split_heads
  // CHECK: %[[VH:.*]] = attn.split_heads
  // CHECK: %[[REP:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<2x5xi32> into tensor<10xi32>
  // CHECK: %[[S:.*]] = attn.matmul %[[QH]], %[[KH]] transpose_b
  // CHECK: %[[T:.*]] = attn.scale %[[S]]
  // CHECK: %[[P:.*]] = attn.masked_softmax %[[T]], %[[REP]] : (tensor<10x4x4xf32>, tensor<10xi32>) -> tensor<10x4x4xf32>
  // CHECK: %[[O:.*]] = attn.matmul %[[P]], %[[VH]]
  // CHECK: %[[C:.*]] = attn.merge_heads %[[O]] heads(5)
  // CHECK: %[[Y:.*]] = attn.linear %[[C]], %[[W]]
  // CHECK: return %[[Y]], %[[P]]
  %y, %a = attn.multihead_attention %x, %x, %x heads(5) weights(%w, %w, %w, %w) valid_lens(%vl) return_weights
      : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<2xi32>) -> (tensor<2x4x100xf32>, tensor<10x4x4xf32>)
  return %y, %a : tensor<2x4x100xf32>, tensor<10x4x4xf32>
}

// -----

// D2L AddNorm: ln(dropout(Y) + X).
// CHECK-LABEL: func.func @add_norm
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8xf32>, %[[Y:.*]]: tensor<2x4x8xf32>, %[[G:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>)
func.func @add_norm(%x: tensor<2x4x8xf32>, %y: tensor<2x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  // Y + X
  // CHECK: %[[S:.*]] = attn.add %[[Y]], %[[X]]
  // ln(...), eps carried over
  // CHECK: %[[N:.*]] = attn.layer_norm %[[S]], %[[G]], %[[B]] eps(9.99999997E-7)
  // CHECK: return %[[N]]
  %0 = attn.add_norm %x, %y, %g, %b eps(1.0e-6) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return %0 : tensor<2x4x8xf32>
}

// -----

// D2L PositionWiseFFN: dense2(relu(dense1(X))).
// CHECK-LABEL: func.func @ffn
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8xf32>, %[[W1:.*]]: tensor<16x8xf32>, %[[B1:.*]]: tensor<16xf32>, %[[W2:.*]]: tensor<8x16xf32>, %[[B2:.*]]: tensor<8xf32>)
func.func @ffn(%x: tensor<2x4x8xf32>, %w1: tensor<16x8xf32>, %b1: tensor<16xf32>, %w2: tensor<8x16xf32>, %b2: tensor<8xf32>) -> tensor<2x4x8xf32> {
  // dense1(X)
  // CHECK: %[[H:.*]] = attn.linear %[[X]], %[[W1]], %[[B1]] : (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  // relu(...)
  // CHECK: %[[R:.*]] = attn.relu %[[H]] : tensor<2x4x16xf32>
  // dense2(...)
  // CHECK: %[[Y:.*]] = attn.linear %[[R]], %[[W2]], %[[B2]] : (tensor<2x4x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  // CHECK: return %[[Y]]
  %0 = attn.ffn %x, %w1, %b1, %w2, %b2 : (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return %0 : tensor<2x4x8xf32>
}

// -----

// Primitives, and dropout (folding is canonicalize's job), are left alone.
// CHECK-LABEL: func.func @primitives_untouched
func.func @primitives_untouched(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  // CHECK: attn.positional_encoding
  // CHECK: attn.dropout
  // CHECK: attn.softmax
  %0 = attn.positional_encoding %x : tensor<2x4x8xf32>
  %1 = attn.dropout %0 p(0.1) : tensor<2x4x8xf32>
  %2 = attn.softmax %1 : tensor<2x4x8xf32>
  return %2 : tensor<2x4x8xf32>
}
