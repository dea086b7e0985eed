// Every verifier rule of the attn ops, one case each: the message names what
// was expected and what was found.
// RUN: attn-opt %s --split-input-file --verify-diagnostics

// linear: x must be f32
func.func @case0(%x: tensor<2x4xi32>, %w: tensor<3x4xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<2x4xi32>'}}
  %0 = attn.linear %x, %w : (tensor<2x4xi32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  return
}

// -----

// linear: the weight is 2-D
func.func @case1(%x: tensor<2x4xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{'w' must have rank 2, got f32[4]}}
  %0 = attn.linear %x, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return
}

// -----

// linear: w's columns match x's last dim
func.func @case2(%x: tensor<2x4x100xf32>, %w: tensor<50x99xf32>) {
  // expected-error @+1 {{'w' must be f32[O, 100] to match the last dimension of 'x' (f32[2, 4, 100]), got f32[50, 99]}}
  %0 = attn.linear %x, %w : (tensor<2x4x100xf32>, tensor<50x99xf32>) -> tensor<2x4x50xf32>
  return
}

// -----

// linear: one bias per output
func.func @case3(%x: tensor<2x4xf32>, %w: tensor<3x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'b' must be f32[3] (one bias per row of 'w'), got f32[4]}}
  %0 = attn.linear %x, %w, %b : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return
}

// -----

// linear: x has at least one dim
func.func @case4(%x: tensor<f32>, %w: tensor<3x4xf32>) {
  // expected-error @+1 {{'x' must have rank >= 1, got f32[]}}
  %0 = attn.linear %x, %w : (tensor<f32>, tensor<3x4xf32>) -> tensor<3xf32>
  return
}

// -----

// linear: the result type is the inferred one
func.func @case5(%x: tensor<2x4xf32>, %w: tensor<3x4xf32>) {
  // MLIR follows the mismatch with a second error.
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<2x4xf32>'}}
  %0 = attn.linear %x, %w : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

// static shapes only
func.func @case6(%x: tensor<?x4xf32>, %w: tensor<3x4xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<?x4xf32>'}}
  %0 = attn.linear %x, %w : (tensor<?x4xf32>, tensor<3x4xf32>) -> tensor<?x3xf32>
  return
}

// -----

// no zero-sized dims
func.func @case7(%x: tensor<0x4xf32>) {
  // expected-error @+1 {{'x' has a dimension of size 0 (f32[0, 4]); every dimension must be positive}}
  %0 = attn.relu %x : tensor<0x4xf32>
  return
}

// -----

// no tensor beyond 2^40 elements
func.func @case8(%x: tensor<1048576x1048576x2xf32>) {
  // expected-error @+1 {{'x' is too large (f32[1048576, 1048576, 2]); at most 2^40 elements are supported}}
  %0 = attn.relu %x : tensor<1048576x1048576x2xf32>
  return
}

// -----

// matmul: operands are 3-D
func.func @case9(%a: tensor<4x5xf32>, %b: tensor<2x5x6xf32>) {
  // expected-error @+1 {{'a' must have rank 3, got f32[4, 5]}}
  %0 = attn.matmul %a, %b : (tensor<4x5xf32>, tensor<2x5x6xf32>) -> tensor<2x4x6xf32>
  return
}

// -----

// matmul: batch sizes agree
func.func @case10(%a: tensor<2x4x5xf32>, %b: tensor<3x5x6xf32>) {
  // expected-error @+1 {{batch sizes differ: 'a' is f32[2, 4, 5], 'b' is f32[3, 5, 6]}}
  %0 = attn.matmul %a, %b : (tensor<2x4x5xf32>, tensor<3x5x6xf32>) -> tensor<2x4x6xf32>
  return
}

// -----

// matmul: contraction sizes agree
func.func @case11(%a: tensor<2x4x5xf32>, %b: tensor<2x6x6xf32>) {
  // expected-error @+1 {{contraction sizes differ: 'a' is f32[2, 4, 5] and 'b' is f32[2, 6, 6]; 5 != 6}}
  %0 = attn.matmul %a, %b : (tensor<2x4x5xf32>, tensor<2x6x6xf32>) -> tensor<2x4x6xf32>
  return
}

// -----

// matmul transpose_b: contraction over b's last dim
func.func @case12(%a: tensor<2x4x5xf32>, %b: tensor<2x6x7xf32>) {
  // expected-error @+1 {{contraction sizes differ: 'a' is f32[2, 4, 5] and 'b' (transposed) is f32[2, 6, 7]; 5 != 7}}
  %0 = attn.matmul %a, %b transpose_b : (tensor<2x4x5xf32>, tensor<2x6x7xf32>) -> tensor<2x4x6xf32>
  return
}

// -----

// add: NumPy broadcasting, trailing axes must be equal or 1
func.func @case13(%a: tensor<2x3xf32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{operands cannot be broadcast together: 'a' is f32[2, 3], 'b' is f32[2] (axis -1: 3 vs 2; sizes must be equal or 1)}}
  %0 = attn.add %a, %b : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return
}

// -----

// mul: the mismatch may be on any axis
func.func @case13_mul(%a: tensor<4x2x3xf32>, %b: tensor<3x1x3xf32>) {
  // expected-error @+1 {{operands cannot be broadcast together: 'a' is f32[4, 2, 3], 'b' is f32[3, 1, 3] (axis -3: 4 vs 3; sizes must be equal or 1)}}
  %0 = attn.mul %a, %b : (tensor<4x2x3xf32>, tensor<3x1x3xf32>) -> tensor<4x2x3xf32>
  return
}

// -----

// sub: the result type is the broadcast shape
func.func @case13_sub(%a: tensor<2x1xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<2x1xf32>'}}
  %0 = attn.sub %a, %b : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x1xf32>
  return
}

// -----

// silu: f32 only
func.func @case13_silu(%x: tensor<2x3xi32>) {
  // expected-error @+1 {{'x' must be an f32, bf16 or f16 tensor, got i32[2, 3]}}
  %0 = attn.silu %x : tensor<2x3xi32>
  return
}

// -----

// One op takes one low-precision type (docs/spec.md §2, v3 "Promotion"):
// f32 with bf16 gives f32, bf16 with f16 is an error that says to cast.
func.func @bf16_with_f16(%a: tensor<4xbf16>, %b: tensor<4xf16>) {
  // expected-error @+1 {{'b' is f16 but 'a' is bf16; one op takes one low-precision type: cast one of them (cast(b, dtype=bf16))}}
  %0 = attn.add %a, %b : (tensor<4xbf16>, tensor<4xf16>) -> tensor<4xbf16>
  return
}

// -----

func.func @f32_with_bf16_is_f32(%a: tensor<4xf32>, %b: tensor<4xbf16>) {
  // expected-error @+2 {{inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<4xbf16>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = attn.add %a, %b : (tensor<4xf32>, tensor<4xbf16>) -> tensor<4xbf16>
  return
}

// -----

// rms_norm: gamma has the last dimension of x
func.func @case13_rms(%x: tensor<2x8xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'gamma' must be f32[8] (the last dimension of 'x'), got f32[4]}}
  %0 = attn.rms_norm %x, %g : (tensor<2x8xf32>, tensor<4xf32>) -> tensor<2x8xf32>
  return
}

// -----

// rms_norm: eps positive
func.func @case13_rms_eps(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{eps=0 must be a positive number}}
  %0 = attn.rms_norm %x, %g eps(0.0) : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// -----

// split_heads: heads divides D
func.func @case14(%x: tensor<2x4x100xf32>) {
  // expected-error @+1 {{heads=7 does not divide the model dimension 100 of 'x' (f32[2, 4, 100])}}
  %0 = attn.split_heads %x heads(7) : (tensor<2x4x100xf32>) -> tensor<14x4x14xf32>
  return
}

// -----

// split_heads: heads is positive
func.func @case15(%x: tensor<2x4x100xf32>) {
  // expected-error @+1 {{heads=0 must be positive}}
  %0 = attn.split_heads %x heads(0) : (tensor<2x4x100xf32>) -> tensor<2x4x100xf32>
  return
}

// -----

// split_heads: x is [B, T, D]
func.func @case16(%x: tensor<4x100xf32>) {
  // expected-error @+1 {{'x' must have rank 3, got f32[4, 100]}}
  %0 = attn.split_heads %x heads(5) : (tensor<4x100xf32>) -> tensor<20x20xf32>
  return
}

// -----

// merge_heads: heads divides B*H
func.func @case17(%x: tensor<9x4x20xf32>) {
  // expected-error @+1 {{heads=5 does not divide the leading dimension 9 (B*heads) of 'x' (f32[9, 4, 20])}}
  %0 = attn.merge_heads %x heads(5) : (tensor<9x4x20xf32>) -> tensor<1x4x100xf32>
  return
}

// -----

// merge_heads: heads is positive
func.func @case18(%x: tensor<10x4x20xf32>) {
  // expected-error @+1 {{heads=-5 must be positive}}
  %0 = attn.merge_heads %x heads(-5) : (tensor<10x4x20xf32>) -> tensor<2x4x100xf32>
  return
}

// -----

// softmax: over a last axis
func.func @case19(%x: tensor<f32>) {
  // expected-error @+1 {{'x' must have rank >= 1, got f32[]}}
  %0 = attn.softmax %x : tensor<f32>
  return
}

// -----

// masked_softmax: valid_lens is i32
func.func @case20(%x: tensor<10x4x6xf32>, %vl: tensor<10xf32>) {
  // expected-error @+1 {{operand #1 must be statically shaped tensor of 32-bit signless integer values, but got 'tensor<10xf32>'}}
  %0 = attn.masked_softmax %x, %vl : (tensor<10x4x6xf32>, tensor<10xf32>) -> tensor<10x4x6xf32>
  return
}

// -----

// masked_softmax: valid_lens is 1-D or 2-D
func.func @case21(%x: tensor<10x4x6xf32>, %vl: tensor<10x4x6xi32>) {
  // expected-error @+1 {{'valid_lens' must have rank 1 or 2, got i32[10, 4, 6]}}
  %0 = attn.masked_softmax %x, %vl : (tensor<10x4x6xf32>, tensor<10x4x6xi32>) -> tensor<10x4x6xf32>
  return
}

// -----

// masked_softmax: one length per batch entry
func.func @case22(%x: tensor<10x4x6xf32>, %vl: tensor<2xi32>) {
  // expected-error @+1 {{'valid_lens' must have 10 rows (N), got i32[2]}}
  %0 = attn.masked_softmax %x, %vl : (tensor<10x4x6xf32>, tensor<2xi32>) -> tensor<10x4x6xf32>
  return
}

// -----

// masked_softmax: 2-D lengths have one per query
func.func @case23(%x: tensor<10x4x6xf32>, %vl: tensor<10x6xi32>) {
  // expected-error @+1 {{a 2-D 'valid_lens' must be i32[10, 4] (one length per query), got i32[10, 6]}}
  %0 = attn.masked_softmax %x, %vl : (tensor<10x4x6xf32>, tensor<10x6xi32>) -> tensor<10x4x6xf32>
  return
}

// -----

// masked_softmax: scores are [N, Tq, Tk]
func.func @case24(%x: tensor<4x6xf32>, %vl: tensor<4xi32>) {
  // expected-error @+1 {{'x' must have rank 3, got f32[4, 6]}}
  %0 = attn.masked_softmax %x, %vl : (tensor<4x6xf32>, tensor<4xi32>) -> tensor<4x6xf32>
  return
}

// -----

// attention: one batch size
func.func @case25(%q: tensor<10x4x20xf32>, %k: tensor<5x6x20xf32>) {
  // expected-error @+1 {{'q', 'k' and 'v' must have the same batch size N, got f32[10, 4, 20], f32[5, 6, 20], f32[5, 6, 20]}}
  %0 = attn.attention %q, %k, %k : (tensor<10x4x20xf32>, tensor<5x6x20xf32>, tensor<5x6x20xf32>) -> tensor<10x4x20xf32>
  return
}

// -----

// attention: queries and keys have one feature size
func.func @case26(%q: tensor<10x4x20xf32>, %k: tensor<10x6x16xf32>) {
  // expected-error @+1 {{'k' must have the feature size of 'q' (20), got f32[10, 6, 16]}}
  %0 = attn.attention %q, %k, %k : (tensor<10x4x20xf32>, tensor<10x6x16xf32>, tensor<10x6x16xf32>) -> tensor<10x4x16xf32>
  return
}

// -----

// attention: a value per key
func.func @case27(%q: tensor<10x4x20xf32>, %k: tensor<10x6x20xf32>, %v: tensor<10x5x8xf32>) {
  // expected-error @+1 {{'v' must have as many rows as 'k' (6 keys), got f32[10, 5, 8]}}
  %0 = attn.attention %q, %k, %v : (tensor<10x4x20xf32>, tensor<10x6x20xf32>, tensor<10x5x8xf32>) -> tensor<10x4x8xf32>
  return
}

// -----

// attention: valid_lens has N rows
func.func @case28(%q: tensor<10x4x20xf32>, %vl: tensor<2xi32>) {
  // expected-error @+1 {{'valid_lens' must have 10 rows (N), got i32[2]}}
  %0 = attn.attention %q, %q, %q valid_lens(%vl) : (tensor<10x4x20xf32>, tensor<10x4x20xf32>, tensor<10x4x20xf32>, tensor<2xi32>) -> tensor<10x4x20xf32>
  return
}

// -----

// multihead_attention: heads divides Hd
func.func @case29(%x: tensor<2x4x100xf32>, %w: tensor<100x100xf32>) {
  // expected-error @+1 {{heads=7 does not divide the model dimension 100 (hidden size of 'w_q')}}
  %0 = attn.multihead_attention %x, %x, %x heads(7) weights(%w, %w, %w, %w) : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<2x4x100xf32>
  return
}

// -----

// multihead_attention: heads is positive
func.func @case30(%x: tensor<2x4x100xf32>, %w: tensor<100x100xf32>) {
  // expected-error @+1 {{heads=0 must be positive}}
  %0 = attn.multihead_attention %x, %x, %x heads(0) weights(%w, %w, %w, %w) : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<2x4x100xf32>
  return
}

// -----

// multihead_attention: w_k maps k's features to Hd
func.func @case31(%x: tensor<2x4x100xf32>, %w: tensor<100x100xf32>, %wk: tensor<100x64xf32>) {
  // expected-error @+1 {{'w_k' must be f32[100, 100] (hidden size 100 of 'w_q', features of 'k'), got f32[100, 64]}}
  %0 = attn.multihead_attention %x, %x, %x heads(5) weights(%w, %wk, %w, %w) : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<100x100xf32>, tensor<100x64xf32>, tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<2x4x100xf32>
  return
}

// -----

// multihead_attention: w_o is [Hd, Hd]
func.func @case32(%x: tensor<2x4x100xf32>, %w: tensor<100x100xf32>, %wo: tensor<50x100xf32>) {
  // expected-error @+1 {{'w_o' must be f32[100, 100] (hidden size 100 of 'w_q', hidden size), got f32[50, 100]}}
  %0 = attn.multihead_attention %x, %x, %x heads(5) weights(%w, %w, %w, %wo) : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<50x100xf32>) -> tensor<2x4x100xf32>
  return
}

// -----

// multihead_attention: one batch size
func.func @case33(%x: tensor<2x4x100xf32>, %y: tensor<3x4x100xf32>, %w: tensor<100x100xf32>) {
  // expected-error @+1 {{'q', 'k' and 'v' must have the same batch size B, got f32[2, 4, 100], f32[3, 4, 100], f32[3, 4, 100]}}
  %0 = attn.multihead_attention %x, %y, %y heads(5) weights(%w, %w, %w, %w) : (tensor<2x4x100xf32>, tensor<3x4x100xf32>, tensor<3x4x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<2x4x100xf32>
  return
}

// -----

// multihead_attention: keys and values pair up
func.func @case34(%x: tensor<2x4x100xf32>, %y: tensor<2x5x100xf32>, %w: tensor<100x100xf32>) {
  // expected-error @+1 {{'v' must have as many rows as 'k' (4 keys), got f32[2, 5, 100]}}
  %0 = attn.multihead_attention %x, %x, %y heads(5) weights(%w, %w, %w, %w) : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<2x5x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<2x4x100xf32>
  return
}

// -----

// multihead_attention: 2-D valid_lens is [B, Tq]
func.func @case35(%x: tensor<2x4x100xf32>, %w: tensor<100x100xf32>, %vl: tensor<2x5xi32>) {
  // expected-error @+1 {{a 2-D 'valid_lens' must be i32[2, 4] (one length per query), got i32[2, 5]}}
  %0 = attn.multihead_attention %x, %x, %x heads(5) weights(%w, %w, %w, %w) valid_lens(%vl) : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<2x5xi32>) -> tensor<2x4x100xf32>
  return
}

// -----

// attention: return_weights gives a second result
func.func @weights_missing(%q: tensor<10x4x20xf32>, %k: tensor<10x6x20xf32>) {
  // expected-error @+1 {{with return_weights has two results, the output and the attention weights}}
  %0 = attn.attention %q, %k, %k return_weights : (tensor<10x4x20xf32>, tensor<10x6x20xf32>, tensor<10x6x20xf32>) -> tensor<10x4x20xf32>
  return
}

// -----

// attention: the second result comes with return_weights only
func.func @weights_unrequested(%q: tensor<10x4x20xf32>, %k: tensor<10x6x20xf32>) {
  // expected-error @+1 {{has a second result, the attention weights, only with return_weights}}
  %0, %1 = attn.attention %q, %k, %k : (tensor<10x4x20xf32>, tensor<10x6x20xf32>, tensor<10x6x20xf32>) -> (tensor<10x4x20xf32>, tensor<10x4x6xf32>)
  return
}

// -----

// attention: the weights are [N, Tq, Tk]
func.func @weights_shape(%q: tensor<10x4x20xf32>, %k: tensor<10x6x20xf32>) {
  // expected-error @+1 {{'attention_weights' must be 'tensor<10x4x6xf32>' ([N, Tq, Tk]), got 'tensor<10x6x4xf32>'}}
  %0, %1 = attn.attention %q, %k, %k return_weights : (tensor<10x4x20xf32>, tensor<10x6x20xf32>, tensor<10x6x20xf32>) -> (tensor<10x4x20xf32>, tensor<10x6x4xf32>)
  return
}

// -----

// attention: the operands' rules come first, with weights requested too
func.func @weights_bad_operands(%q: tensor<10x4x20xf32>, %k: tensor<10x6x16xf32>) {
  // expected-error @+1 {{'k' must have the feature size of 'q' (20), got f32[10, 6, 16]}}
  %0, %1 = attn.attention %q, %k, %k return_weights : (tensor<10x4x20xf32>, tensor<10x6x16xf32>, tensor<10x6x16xf32>) -> (tensor<10x4x16xf32>, tensor<10x4x6xf32>)
  return
}

// -----

// multihead_attention: the weights are [B * heads, Tq, Tk]
func.func @mha_weights_shape(%x: tensor<2x4x100xf32>, %w: tensor<100x100xf32>) {
  // expected-error @+1 {{'attention_weights' must be 'tensor<10x4x4xf32>' ([B * heads, Tq, Tk]), got 'tensor<2x4x4xf32>'}}
  %0, %1 = attn.multihead_attention %x, %x, %x heads(5) weights(%w, %w, %w, %w) return_weights : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>) -> (tensor<2x4x100xf32>, tensor<2x4x4xf32>)
  return
}

// -----

// multihead_attention: return_weights gives a second result
func.func @mha_weights_missing(%x: tensor<2x4x100xf32>, %w: tensor<100x100xf32>) {
  // expected-error @+1 {{with return_weights has two results, the output and the attention weights}}
  %0 = attn.multihead_attention %x, %x, %x heads(5) weights(%w, %w, %w, %w) return_weights : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<2x4x100xf32>
  return
}

// -----

// positional_encoding: D is even
func.func @case36(%x: tensor<2x4x99xf32>) {
  // expected-error @+1 {{positional encoding needs an even model dimension D, got 99 (f32[2, 4, 99])}}
  %0 = attn.positional_encoding %x : tensor<2x4x99xf32>
  return
}

// -----

// positional_encoding: T <= max_len
func.func @case37(%x: tensor<2x8x16xf32>) {
  // expected-error @+1 {{sequence length T=8 exceeds max_len=6}}
  %0 = attn.positional_encoding %x max_len(6) : tensor<2x8x16xf32>
  return
}

// -----

// positional_encoding: the default max_len is 1000
func.func @case38(%x: tensor<1x1001x16xf32>) {
  // expected-error @+1 {{sequence length T=1001 exceeds max_len=1000}}
  %0 = attn.positional_encoding %x : tensor<1x1001x16xf32>
  return
}

// -----

// positional_encoding: max_len is positive
func.func @case39(%x: tensor<2x8x16xf32>) {
  // expected-error @+1 {{max_len=0 must be positive}}
  %0 = attn.positional_encoding %x max_len(0) : tensor<2x8x16xf32>
  return
}

// -----

// positional_encoding: x is [B, T, D]
func.func @case40(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{'x' must have rank 3, got f32[8, 16]}}
  %0 = attn.positional_encoding %x : tensor<8x16xf32>
  return
}

// -----

// positional_encoding: offset is one position per entry of x
func.func @pe_offset_entries(%x: tensor<2x1x16xf32>, %pos: tensor<3xi32>) {
  // expected-error @+1 {{'offset' must be i32[2], one position per entry of x (f32[2, 1, 16]), got i32[3]}}
  %0 = attn.positional_encoding %x offset(%pos : tensor<3xi32>) : tensor<2x1x16xf32>
  return
}

// -----

// layer_norm: gamma has D entries
func.func @case41(%x: tensor<2x4x100xf32>, %g: tensor<50xf32>, %b: tensor<100xf32>) {
  // expected-error @+1 {{'gamma' must be f32[100] (the last dimension of 'x'), got f32[50]}}
  %0 = attn.layer_norm %x, %g, %b : (tensor<2x4x100xf32>, tensor<50xf32>, tensor<100xf32>) -> tensor<2x4x100xf32>
  return
}

// -----

// layer_norm: beta is 1-D
func.func @case42(%x: tensor<2x4x100xf32>, %g: tensor<100xf32>, %b: tensor<1x100xf32>) {
  // expected-error @+1 {{'beta' must have rank 1, got f32[1, 100]}}
  %0 = attn.layer_norm %x, %g, %b : (tensor<2x4x100xf32>, tensor<100xf32>, tensor<1x100xf32>) -> tensor<2x4x100xf32>
  return
}

// -----

// layer_norm: eps is positive
func.func @case43(%x: tensor<2x4x100xf32>, %g: tensor<100xf32>) {
  // expected-error @+1 {{eps=0 must be a positive number}}
  %0 = attn.layer_norm %x, %g, %g eps(0.0) : (tensor<2x4x100xf32>, tensor<100xf32>, tensor<100xf32>) -> tensor<2x4x100xf32>
  return
}

// -----

// add_norm: x and y have one shape
func.func @case44(%x: tensor<2x4x100xf32>, %y: tensor<2x5x100xf32>, %g: tensor<100xf32>) {
  // expected-error @+1 {{'x' and 'y' must have the same shape, got f32[2, 4, 100] and f32[2, 5, 100]}}
  %0 = attn.add_norm %x, %y, %g, %g : (tensor<2x4x100xf32>, tensor<2x5x100xf32>, tensor<100xf32>, tensor<100xf32>) -> tensor<2x4x100xf32>
  return
}

// -----

// add_norm: gamma has D entries
func.func @case45(%x: tensor<2x4x100xf32>, %g: tensor<99xf32>) {
  // expected-error @+1 {{'gamma' must be f32[100] (the last dimension of 'x'), got f32[99]}}
  %0 = attn.add_norm %x, %x, %g, %g : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<99xf32>, tensor<99xf32>) -> tensor<2x4x100xf32>
  return
}

// -----

// ffn: w1 takes x's features
func.func @case46(%x: tensor<2x4x32xf32>, %w1: tensor<64x31xf32>, %b1: tensor<64xf32>, %w2: tensor<32x64xf32>, %b2: tensor<32xf32>) {
  // expected-error @+1 {{'w1' must be f32[O, 32] to match the last dimension of 'x' (f32[2, 4, 32]), got f32[64, 31]}}
  %0 = attn.ffn %x, %w1, %b1, %w2, %b2 : (tensor<2x4x32xf32>, tensor<64x31xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<2x4x32xf32>
  return
}

// -----

// ffn: one b1 per hidden unit
func.func @case47(%x: tensor<2x4x32xf32>, %w1: tensor<64x32xf32>, %b1: tensor<32xf32>, %w2: tensor<32x64xf32>) {
  // expected-error @+1 {{'b1' must be f32[64] (one bias per row of 'w1'), got f32[32]}}
  %0 = attn.ffn %x, %w1, %b1, %w2, %b1 : (tensor<2x4x32xf32>, tensor<64x32xf32>, tensor<32xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<2x4x32xf32>
  return
}

// -----

// ffn: w2 takes the hidden units
func.func @case48(%x: tensor<2x4x32xf32>, %w1: tensor<64x32xf32>, %b1: tensor<64xf32>, %w2: tensor<32x48xf32>, %b2: tensor<32xf32>) {
  // expected-error @+1 {{'w2' must be f32[O, 64] to take the 64 hidden units of 'w1', got f32[32, 48]}}
  %0 = attn.ffn %x, %w1, %b1, %w2, %b2 : (tensor<2x4x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<32x48xf32>, tensor<32xf32>) -> tensor<2x4x32xf32>
  return
}

// -----

// ffn: one b2 per output
func.func @case49(%x: tensor<2x4x32xf32>, %w1: tensor<64x32xf32>, %b1: tensor<64xf32>, %w2: tensor<32x64xf32>) {
  // expected-error @+1 {{'b2' must be f32[32] (one bias per row of 'w2'), got f32[64]}}
  %0 = attn.ffn %x, %w1, %b1, %w2, %b1 : (tensor<2x4x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<64xf32>) -> tensor<2x4x32xf32>
  return
}

// -----

// embedding: ids are i32
func.func @case50(%ids: tensor<2x4xf32>, %t: tensor<10x8xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 32-bit signless integer values, but got 'tensor<2x4xf32>'}}
  %0 = attn.embedding %ids, %t : (tensor<2x4xf32>, tensor<10x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

// embedding: the table is [V, D]
func.func @case51(%ids: tensor<2x4xi32>, %t: tensor<80xf32>) {
  // expected-error @+1 {{'table' must have rank 2, got f32[80]}}
  %0 = attn.embedding %ids, %t : (tensor<2x4xi32>, tensor<80xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

// dropout: p < 1
func.func @case52(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{dropout probability p=1 must be in [0, 1)}}
  %0 = attn.dropout %x p(1.0) : tensor<2x3xf32>
  return
}

// -----

// dropout: p >= 0
func.func @case53(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{dropout probability p=-0.25 must be in [0, 1)}}
  %0 = attn.dropout %x p(-0.25) : tensor<2x3xf32>
  return
}

// -----

// gelu: x must be f32 (the shared rule's message: the type is inferred)
func.func @gelu_i32(%x: tensor<2x3xi32>) {
  // expected-error @+1 {{'x' must be an f32, bf16 or f16 tensor, got i32[2, 3]}}
  %0 = attn.gelu %x approximate : tensor<2x3xi32>
  return
}

// -----

// gelu: the shared rules (no zero-sized dims)
func.func @gelu_empty(%x: tensor<2x0xf32>) {
  // expected-error @+1 {{'x' has a dimension of size 0 (f32[2, 0]); every dimension must be positive}}
  %0 = attn.gelu %x : tensor<2x0xf32>
  return
}

// -----

// gelu: the result has x's shape (generic form)
func.func @gelu_result(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<3x2xf32>'}}
  %0 = "attn.gelu"(%x) : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return
}

// -----

// gelu: approximate is a unit attribute, not a bool
func.func @gelu_bool(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{attribute 'approximate' failed to satisfy constraint: unit attribute}}
  %0 = "attn.gelu"(%x) {approximate = true} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// scale: factor is required (generic form)
func.func @case54(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{requires attribute 'factor'}}
  %0 = "attn.scale"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// scale: the factor is finite
func.func @scale_inf(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{the scale factor must be a finite number, got inf}}
  %0 = attn.scale %x factor(0x7F800000) : tensor<2x3xf32>
  return
}

// -----

// fused_attention: tensors and memrefs do not mix
func.func @fused_mixed(%q: tensor<2x4x8xf32>, %o: memref<2x4x8xf32>) {
  // expected-error @+1 {{operands must be all tensors or all memrefs}}
  attn.fused_attention %q, %q, %q outs(%o) scale(1.0) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, memref<2x4x8xf32>) -> ()
  return
}

// -----

// fused_attention: on tensors it has a result
func.func @fused_no_result(%q: tensor<2x4x8xf32>) {
  // expected-error @+1 {{on tensors has one result}}
  attn.fused_attention %q, %q, %q outs(%q) scale(1.0) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> ()
  return
}

// -----

// fused_attention: the shapes of attention
func.func @fused_shapes(%q: tensor<2x4x8xf32>, %k: tensor<2x5x7xf32>) {
  // expected-error @+1 {{'k' must have the feature size of 'q' (8), got f32[2, 5, 7]}}
  %0 = attn.fused_attention %q, %k, %k outs(%q) scale(1.0) : (tensor<2x4x8xf32>, tensor<2x5x7xf32>, tensor<2x5x7xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

// fused_attention: with heads, the features split evenly
func.func @fused_heads_split(%q: tensor<2x4x8xf32>) {
  // expected-error @+1 {{with heads(3), 'q' must be [B, T, heads * d], got f32[2, 4, 8]}}
  %0 = attn.fused_attention %q, %q, %q outs(%q) heads(3) scale(1.0) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

// fused_attention: heads is positive
func.func @fused_heads_zero(%q: tensor<2x4x8xf32>) {
  // expected-error @+1 {{heads must be positive, got 0}}
  %0 = attn.fused_attention %q, %q, %q outs(%q) heads(0) scale(1.0) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

// fused_attention: with heads, lengths are per batch entry
func.func @fused_heads_lens(%q: tensor<2x4x8xf32>, %vl: tensor<4xi32>) {
  // expected-error @+1 {{with heads(2), 'valid_lens' must have one row per batch entry (2), got i32[4]}}
  %0 = attn.fused_attention %q, %q, %q valid_lens(%vl) outs(%q) heads(2) scale(1.0) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<4xi32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

// fused_attention: init has the result's shape
func.func @fused_init(%q: tensor<2x4x8xf32>, %init: tensor<2x4x9xf32>) {
  // expected-error @+1 {{'init' must have the attention's result shape f32[2, 4, 8]}}
  %0 = attn.fused_attention %q, %q, %q outs(%init) scale(1.0) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x9xf32>) -> tensor<2x4x9xf32>
  return
}

// -----

// multihead_attention v2: a bias has one entry per row of its weight
func.func @mha_bias_shape(%x: tensor<2x4x100xf32>, %w: tensor<100x100xf32>, %b: tensor<99xf32>) {
  // expected-error @+1 {{'b_q' must be f32[100] (one bias per row of 'w_q'), got f32[99]}}
  %0 = attn.multihead_attention %x, %x, %x heads(5) weights(%w, %w, %w, %w) b_q(%b) : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<99xf32>) -> tensor<2x4x100xf32>
  return
}

// -----

// multihead_attention v2: a bias is a vector
func.func @mha_bias_rank(%x: tensor<2x4x100xf32>, %w: tensor<100x100xf32>, %b: tensor<100x1xf32>) {
  // expected-error @+1 {{'b_o' must have rank 1, got f32[100, 1]}}
  %0 = attn.multihead_attention %x, %x, %x heads(5) weights(%w, %w, %w, %w) b_o(%b) : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x1xf32>) -> tensor<2x4x100xf32>
  return
}

// -----

// multihead_attention v2: with kv_heads, b_k has kv_heads * head_dim entries
func.func @mha_kv_bias(%x: tensor<2x4x100xf32>, %w: tensor<100x100xf32>, %wkv: tensor<20x100xf32>, %b: tensor<100xf32>) {
  // expected-error @+1 {{'b_k' must be f32[20] (one bias per row of 'w_k'), got f32[100]}}
  %0 = attn.multihead_attention %x, %x, %x heads(5) kv_heads(1) weights(%w, %wkv, %wkv, %w) b_k(%b) : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<100x100xf32>, tensor<20x100xf32>, tensor<20x100xf32>, tensor<100x100xf32>, tensor<100xf32>) -> tensor<2x4x100xf32>
  return
}

// -----

// multihead_attention v2: kv_heads divides heads
func.func @mha_kv_heads_divide(%x: tensor<2x4x100xf32>, %w: tensor<100x100xf32>, %wkv: tensor<60x100xf32>) {
  // expected-error @+1 {{kv_heads=3 does not divide heads=5 (each kv head serves heads / kv_heads query heads)}}
  %0 = attn.multihead_attention %x, %x, %x heads(5) kv_heads(3) weights(%w, %wkv, %wkv, %w) : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<100x100xf32>, tensor<60x100xf32>, tensor<60x100xf32>, tensor<100x100xf32>) -> tensor<2x4x100xf32>
  return
}

// -----

// multihead_attention v2: kv_heads is positive
func.func @mha_kv_heads_positive(%x: tensor<2x4x100xf32>, %w: tensor<100x100xf32>) {
  // expected-error @+1 {{kv_heads=0 must be positive}}
  %0 = attn.multihead_attention %x, %x, %x heads(5) kv_heads(0) weights(%w, %w, %w, %w) : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<2x4x100xf32>
  return
}

// -----

// multihead_attention v2: with kv_heads, w_k has kv_heads heads of head_dim rows
func.func @mha_kv_weight(%x: tensor<2x4x100xf32>, %w: tensor<100x100xf32>) {
  // expected-error @+1 {{'w_k' must be f32[50, 100] (kv_heads=2 x head dim 25, features of 'k'), got f32[100, 100]}}
  %0 = attn.multihead_attention %x, %x, %x heads(4) kv_heads(2) weights(%w, %w, %w, %w) : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<2x4x100xf32>
  return
}

// -----

// multihead_attention v2: the sliding window is causal
func.func @mha_window_causal(%x: tensor<2x4x100xf32>, %w: tensor<100x100xf32>) {
  // expected-error @+1 {{window=3 needs causal=true (the sliding window is causal: i - window < j <= i)}}
  %0 = attn.multihead_attention %x, %x, %x heads(5) weights(%w, %w, %w, %w) window(3) : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<2x4x100xf32>
  return
}

// -----

// multihead_attention v2: the window holds a key at least
func.func @mha_window_size(%x: tensor<2x4x100xf32>, %w: tensor<100x100xf32>) {
  // expected-error @+1 {{window=0 must be at least 1 (key j is visible from query i when i - window < j <= i)}}
  %0 = attn.multihead_attention %x, %x, %x heads(5) weights(%w, %w, %w, %w) causal window(0) : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<2x4x100xf32>
  return
}

// -----

// multihead_attention v2: rope pairs j with j + d/2, so d is even
func.func @mha_rope_odd(%x: tensor<2x4x15xf32>, %w: tensor<15x15xf32>) {
  // expected-error @+1 {{rope=true needs an even head dimension, got 5 (hidden size 15 / heads=3; rotate_half pairs element j with j + d/2)}}
  %0 = attn.multihead_attention %x, %x, %x heads(3) weights(%w, %w, %w, %w) rope : (tensor<2x4x15xf32>, tensor<2x4x15xf32>, tensor<2x4x15xf32>, tensor<15x15xf32>, tensor<15x15xf32>, tensor<15x15xf32>, tensor<15x15xf32>) -> tensor<2x4x15xf32>
  return
}

// -----

// multihead_attention v2: rope_base is positive
func.func @mha_rope_base(%x: tensor<2x4x100xf32>, %w: tensor<100x100xf32>) {
  // expected-error @+1 {{rope_base=-1 must be a positive number}}
  %0 = attn.multihead_attention %x, %x, %x heads(5) weights(%w, %w, %w, %w) rope rope_base(-1.0) : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<2x4x100xf32>
  return
}

// -----

// multihead_attention v2: rope_base only with rope
func.func @mha_rope_base_alone(%x: tensor<2x4x100xf32>, %w: tensor<100x100xf32>) {
  // expected-error @+1 {{rope_base=500000 is used only with rope=true}}
  %0 = attn.multihead_attention %x, %x, %x heads(5) weights(%w, %w, %w, %w) rope_base(500000.0) : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>) -> tensor<2x4x100xf32>
  return
}

// -----

// fused_attention: kv_heads divides heads
func.func @fused_kv_heads(%q: tensor<2x4x8xf32>, %k: tensor<2x4x6xf32>) {
  // expected-error @+1 {{kv_heads(3) must be positive and divide heads(4)}}
  %0 = attn.fused_attention %q, %k, %k outs(%q) heads(4) kv_heads(3) scale(1.0) : (tensor<2x4x8xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

// fused_attention: with kv_heads, k and v have kv_heads heads
func.func @fused_kv_shape(%q: tensor<2x4x8xf32>, %k: tensor<2x4x7xf32>) {
  // expected-error @+1 {{with heads(4), 'k' must be [B, T, kv_heads * d], got f32[2, 4, 7]}}
  %0 = attn.fused_attention %q, %k, %k outs(%q) heads(4) kv_heads(2) scale(1.0) : (tensor<2x4x8xf32>, tensor<2x4x7xf32>, tensor<2x4x7xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

// fused_attention: with kv_heads, each kv head has the query heads' dim
func.func @fused_kv_dim(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'k' must have the feature size of 'q' (2), got f32[8, 4, 4]}}
  %0 = attn.fused_attention %q, %k, %k outs(%q) heads(4) kv_heads(2) scale(1.0) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

// fused_attention: the window is causal
func.func @fused_window_causal(%q: tensor<2x4x8xf32>) {
  // expected-error @+1 {{window needs causal}}
  %0 = attn.fused_attention %q, %q, %q outs(%q) window(2) scale(1.0) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

// fused_attention: exclusive is for causal rows, each seeing a key
func.func @fused_exclusive_causal(%q: tensor<2x4x8xf32>) {
  // expected-error @+1 {{exclusive needs causal and no valid_lens}}
  %0 = attn.fused_attention %q, %q, %q outs(%q) exclusive scale(1.0) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

// fused_attention: the window holds a key at least
func.func @fused_window_size(%q: tensor<2x4x8xf32>) {
  // expected-error @+1 {{window(0) must be at least 1}}
  %0 = attn.fused_attention %q, %q, %q outs(%q) causal window(0) scale(1.0) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

// fused_attention: rope tables are [max(Tq, Tk), d / 2]
func.func @fused_rope_tables(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %c: tensor<4x2xf32>) {
  // expected-error @+1 {{rope tables must be f32[6, 2] (max(Tq, Tk) positions, head dim / 2), got f32[4, 2]}}
  %0 = attn.fused_attention %q, %k, %k rope(%c, %c) outs(%q) heads(2) scale(1.0) : (tensor<2x4x8xf32>, tensor<2x6x8xf32>, tensor<2x6x8xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

// fused_attention: rope needs an even head dimension
func.func @fused_rope_odd(%q: tensor<2x4x6xf32>, %c: tensor<4x1xf32>) {
  // expected-error @+1 {{rope needs an even head dimension, got 3}}
  %0 = attn.fused_attention %q, %q, %q rope(%c, %c) outs(%q) heads(2) scale(1.0) : (tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  return
}

// -----

// fused_attention: products only in bf16
func.func @fused_products_f16(%q: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{'attn.fused_attention' op products must be bf16, got 'f16'}}
  %0 = attn.fused_attention %q, %q, %q outs(%q) scale(1.0) products(f16) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %0 : tensor<2x4x8xf32>
}

// -----

// multihead_attention: a cache adds exactly two results
func.func @cache_results(%t: tensor<1x1x8xf32>, %w: tensor<8x8xf32>, %c: tensor<1x4x8xf32>, %pos: tensor<1xi32>) {
  // expected-error @+1 {{'attn.multihead_attention' op with a cache has three results, the output and the updated cache_k and cache_v}}
  %0 = attn.multihead_attention %t, %t, %t heads(2) weights(%w, %w, %w, %w) cache(%c, %c, %pos) causal
      : (tensor<1x1x8xf32>, tensor<1x1x8xf32>, tensor<1x1x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1xi32>) -> tensor<1x1x8xf32>
  return
}

// -----

// multihead_attention: a cache with return_weights has four results
func.func @cache_weights_results(%t: tensor<1x1x8xf32>, %w: tensor<8x8xf32>, %c: tensor<1x4x8xf32>, %pos: tensor<1xi32>) {
  // expected-error @+1 {{'attn.multihead_attention' op with a cache and return_weights has four results, the output, the attention weights and the updated cache_k and cache_v}}
  %0:3 = attn.multihead_attention %t, %t, %t heads(2) weights(%w, %w, %w, %w) cache(%c, %c, %pos) causal return_weights
      : (tensor<1x1x8xf32>, tensor<1x1x8xf32>, tensor<1x1x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1xi32>) -> (tensor<1x1x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>)
  return
}

// -----

// multihead_attention: with a cache the weights are over its rows,
// [B * heads, T, L]
func.func @cache_weights_shape(%t: tensor<1x1x8xf32>, %w: tensor<8x8xf32>, %c: tensor<1x4x8xf32>, %pos: tensor<1xi32>) {
  // expected-error @+1 {{'attn.multihead_attention' op 'attention_weights' must be 'tensor<2x1x4xf32>' ([B * heads, T, L]), got 'tensor<2x1x1xf32>'}}
  %0:4 = attn.multihead_attention %t, %t, %t heads(2) weights(%w, %w, %w, %w) cache(%c, %c, %pos) causal return_weights
      : (tensor<1x1x8xf32>, tensor<1x1x8xf32>, tensor<1x1x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1xi32>) -> (tensor<1x1x8xf32>, tensor<2x1x1xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>)
  return
}

// -----

// multihead_attention: a cache is causal (the rules' message, as in the DSL)
func.func @cache_not_causal(%t: tensor<1x1x8xf32>, %w: tensor<8x8xf32>, %c: tensor<1x4x8xf32>, %pos: tensor<1xi32>) {
  // expected-error @+1 {{a cache implies causal attention: causal=false is an error}}
  %0:3 = attn.multihead_attention %t, %t, %t heads(2) weights(%w, %w, %w, %w) cache(%c, %c, %pos)
      : (tensor<1x1x8xf32>, tensor<1x1x8xf32>, tensor<1x1x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1xi32>) -> (tensor<1x1x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>)
  return
}

// -----

// cache_update: more rows than the cache holds
func.func @cache_update_rows(%r: tensor<2x5x4xf32>, %c: tensor<2x4x4xf32>, %pos: tensor<2xi32>) {
  // expected-error @+1 {{'attn.cache_update' op rows must be [B, T <= L, E] and positions [B] for a cache 'tensor<2x4x4xf32>', got 'tensor<2x5x4xf32>', 'tensor<2xi32>'}}
  %0 = attn.cache_update %r into %c at %pos : tensor<2x5x4xf32>, tensor<2xi32> into tensor<2x4x4xf32>
  return
}

// -----

// cache_update: rows in the cache's element type
func.func @cache_update_type(%r: tensor<2x1x4xf32>, %c: tensor<2x4x4xbf16>, %pos: tensor<2xi32>) {
  // expected-error @+1 {{'attn.cache_update' op rows must have the cache's element type 'bf16', got 'f32'}}
  %0 = attn.cache_update %r into %c at %pos : tensor<2x1x4xf32>, tensor<2xi32> into tensor<2x4x4xbf16>
  return
}

// -----

// decode_attention: the caches are [B, L, kv_heads * d] of one type
func.func @decode_cache_shape(%q: tensor<2x1x32xf32>, %k: tensor<2x64x32xf32>, %pos: tensor<2xi32>) {
  %init = tensor.empty() : tensor<2x1x32xf32>
  // expected-error @+1 {{'attn.decode_attention' op the caches must be one type [2, L, 16] (B, the cache length, kv_heads x d)}}
  %0 = attn.decode_attention %q, %k, %k at %pos outs(%init) heads(4) kv_heads(2) scale(2.500000e-01)
      : (tensor<2x1x32xf32>, tensor<2x64x32xf32>, tensor<2x64x32xf32>, tensor<2xi32>, tensor<2x1x32xf32>) -> tensor<2x1x32xf32>
  return
}

// -----

// decode_attention: more new tokens than the cache holds
func.func @decode_cache_rows(%q: tensor<1x8x8xf32>, %k: tensor<1x4x8xbf16>, %pos: tensor<1xi32>) {
  %init = tensor.empty() : tensor<1x8x8xf32>
  // expected-error @+1 {{'attn.decode_attention' op the caches hold 4 rows, fewer than the 8 new tokens}}
  %0 = attn.decode_attention %q, %k, %k at %pos outs(%init) heads(2) scale(5.000000e-01)
      : (tensor<1x8x8xf32>, tensor<1x4x8xbf16>, tensor<1x4x8xbf16>, tensor<1xi32>, tensor<1x8x8xf32>) -> tensor<1x8x8xf32>
  return
}

// -----

// decode_attention: kv_heads divides heads
func.func @decode_kv_heads(%q: tensor<1x1x8xf32>, %k: tensor<1x4x6xf32>, %pos: tensor<1xi32>) {
  %init = tensor.empty() : tensor<1x1x8xf32>
  // expected-error @+1 {{'attn.decode_attention' op kv_heads(3) must be positive and divide heads(4)}}
  %0 = attn.decode_attention %q, %k, %k at %pos outs(%init) heads(4) kv_heads(3) scale(5.000000e-01)
      : (tensor<1x1x8xf32>, tensor<1x4x6xf32>, tensor<1x4x6xf32>, tensor<1xi32>, tensor<1x1x8xf32>) -> tensor<1x1x8xf32>
  return
}
