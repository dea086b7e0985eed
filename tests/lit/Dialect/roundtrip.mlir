// Every attn op prints in its custom form and parses back unchanged, in the
// custom and in the generic form.
// RUN: attn-opt %s | attn-opt | FileCheck %s
// RUN: attn-opt %s --mlir-print-op-generic | attn-opt | FileCheck %s

// CHECK-LABEL: func.func @linear
func.func @linear(%x: tensor<2x4x100xf32>, %w: tensor<50x100xf32>, %b: tensor<50xf32>) -> (tensor<2x4x50xf32>, tensor<2x4x50xf32>) {
  // CHECK: attn.linear %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x4x100xf32>, tensor<50x100xf32>, tensor<50xf32>) -> tensor<2x4x50xf32>
  %0 = attn.linear %x, %w, %b : (tensor<2x4x100xf32>, tensor<50x100xf32>, tensor<50xf32>) -> tensor<2x4x50xf32>
  // CHECK: attn.linear %{{.*}}, %{{.*}} : (tensor<2x4x100xf32>, tensor<50x100xf32>) -> tensor<2x4x50xf32>
  %1 = attn.linear %x, %w : (tensor<2x4x100xf32>, tensor<50x100xf32>) -> tensor<2x4x50xf32>
  return %0, %1 : tensor<2x4x50xf32>, tensor<2x4x50xf32>
}

// CHECK-LABEL: func.func @linear_rank1
func.func @linear_rank1(%x: tensor<7xf32>, %w: tensor<3x7xf32>) -> tensor<3xf32> {
  // CHECK: attn.linear %{{.*}}, %{{.*}} : (tensor<7xf32>, tensor<3x7xf32>) -> tensor<3xf32>
  %0 = attn.linear %x, %w : (tensor<7xf32>, tensor<3x7xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// CHECK-LABEL: func.func @matmul
func.func @matmul(%a: tensor<10x4x20xf32>, %b: tensor<10x6x20xf32>, %c: tensor<10x20x3xf32>) -> (tensor<10x4x6xf32>, tensor<10x4x3xf32>) {
  // CHECK: attn.matmul %{{.*}}, %{{.*}} transpose_b : (tensor<10x4x20xf32>, tensor<10x6x20xf32>) -> tensor<10x4x6xf32>
  %0 = attn.matmul %a, %b transpose_b : (tensor<10x4x20xf32>, tensor<10x6x20xf32>) -> tensor<10x4x6xf32>
  // CHECK: attn.matmul %{{.*}}, %{{.*}} : (tensor<10x4x20xf32>, tensor<10x20x3xf32>) -> tensor<10x4x3xf32>
  %1 = attn.matmul %a, %c : (tensor<10x4x20xf32>, tensor<10x20x3xf32>) -> tensor<10x4x3xf32>
  return %0, %1 : tensor<10x4x6xf32>, tensor<10x4x3xf32>
}

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: attn.scale %{{.*}} factor(1.250000e-01) : tensor<2x3xf32>
  %0 = attn.scale %x factor(0.125) : tensor<2x3xf32>
  // CHECK: attn.add %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = attn.add %0, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: attn.relu %{{.*}} : tensor<2x3xf32>
  %2 = attn.relu %1 : tensor<2x3xf32>
  // CHECK: attn.dropout %{{.*}} p(1.000000e-01) : tensor<2x3xf32>
  %3 = attn.dropout %2 p(0.1) : tensor<2x3xf32>
  return %3 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @gelu
func.func @gelu(%x: tensor<2x3xf32>, %s: tensor<f32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<f32>) {
  // CHECK: attn.gelu %{{.*}} : tensor<2x3xf32>
  %0 = attn.gelu %x : tensor<2x3xf32>
  // CHECK: attn.gelu %{{.*}} approximate : tensor<2x3xf32>
  %1 = attn.gelu %0 approximate : tensor<2x3xf32>
  // CHECK: attn.gelu %{{.*}} approximate : tensor<f32>
  %2 = attn.gelu %s approximate : tensor<f32>
  return %0, %1, %2 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @elementwise_v2
func.func @elementwise_v2(%x: tensor<2x3xf32>, %r: tensor<3xf32>, %c: tensor<2x1xf32>, %s: tensor<f32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<f32>) {
  // CHECK: attn.silu %{{.*}} : tensor<2x3xf32>
  %0 = attn.silu %x : tensor<2x3xf32>
  // CHECK: attn.tanh %{{.*}} : tensor<2x3xf32>
  %1 = attn.tanh %0 : tensor<2x3xf32>
  // CHECK: attn.sigmoid %{{.*}} : tensor<f32>
  %2 = attn.sigmoid %s : tensor<f32>
  // CHECK: attn.mul %{{.*}}, %{{.*}} : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = attn.mul %r, %1 : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: attn.sub %{{.*}}, %{{.*}} : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %4 = attn.sub %c, %r : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: attn.add %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %5 = attn.add %4, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  // CHECK: attn.rms_norm %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %6 = attn.rms_norm %5, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: attn.rms_norm %{{.*}}, %{{.*}} eps(9.99999974E-6) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %7 = attn.rms_norm %5, %r eps(1.0e-05) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %3, %5, %6, %7, %0, %2 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @heads
func.func @heads(%x: tensor<2x4x100xf32>) -> tensor<2x4x100xf32> {
  // CHECK: attn.split_heads %{{.*}} heads(5) : (tensor<2x4x100xf32>) -> tensor<10x4x20xf32>
  %0 = attn.split_heads %x heads(5) : (tensor<2x4x100xf32>) -> tensor<10x4x20xf32>
  // CHECK: attn.merge_heads %{{.*}} heads(5) : (tensor<10x4x20xf32>) -> tensor<2x4x100xf32>
  %1 = attn.merge_heads %0 heads(5) : (tensor<10x4x20xf32>) -> tensor<2x4x100xf32>
  return %1 : tensor<2x4x100xf32>
}

// CHECK-LABEL: func.func @softmaxes
func.func @softmaxes(%s: tensor<10x4x6xf32>, %vl1: tensor<10xi32>, %vl2: tensor<10x4xi32>) -> (tensor<10x4x6xf32>, tensor<10x4x6xf32>, tensor<10x4x6xf32>) {
  // CHECK: attn.softmax %{{.*}} : tensor<10x4x6xf32>
  %0 = attn.softmax %s : tensor<10x4x6xf32>
  // CHECK: attn.masked_softmax %{{.*}}, %{{.*}} : (tensor<10x4x6xf32>, tensor<10xi32>) -> tensor<10x4x6xf32>
  %1 = attn.masked_softmax %s, %vl1 : (tensor<10x4x6xf32>, tensor<10xi32>) -> tensor<10x4x6xf32>
  // CHECK: attn.masked_softmax %{{.*}}, %{{.*}} : (tensor<10x4x6xf32>, tensor<10x4xi32>) -> tensor<10x4x6xf32>
  %2 = attn.masked_softmax %s, %vl2 : (tensor<10x4x6xf32>, tensor<10x4xi32>) -> tensor<10x4x6xf32>
  return %0, %1, %2 : tensor<10x4x6xf32>, tensor<10x4x6xf32>, tensor<10x4x6xf32>
}

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<10x4x20xf32>, %k: tensor<10x6x20xf32>, %v: tensor<10x6x8xf32>, %vl: tensor<10x4xi32>) -> (tensor<10x4x8xf32>, tensor<10x4x8xf32>, tensor<10x4x8xf32>) {
  // CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}} : (tensor<10x4x20xf32>, tensor<10x6x20xf32>, tensor<10x6x8xf32>) -> tensor<10x4x8xf32>
  %0 = attn.attention %q, %k, %v : (tensor<10x4x20xf32>, tensor<10x6x20xf32>, tensor<10x6x8xf32>) -> tensor<10x4x8xf32>
  // CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}} valid_lens(%{{.*}}) : (tensor<10x4x20xf32>, tensor<10x6x20xf32>, tensor<10x6x8xf32>, tensor<10x4xi32>) -> tensor<10x4x8xf32>
  %1 = attn.attention %q, %k, %v valid_lens(%vl) : (tensor<10x4x20xf32>, tensor<10x6x20xf32>, tensor<10x6x8xf32>, tensor<10x4xi32>) -> tensor<10x4x8xf32>
  // CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}} causal : (tensor<10x4x20xf32>, tensor<10x6x20xf32>, tensor<10x6x8xf32>) -> tensor<10x4x8xf32>
  %2 = attn.attention %q, %k, %v causal : (tensor<10x4x20xf32>, tensor<10x6x20xf32>, tensor<10x6x8xf32>) -> tensor<10x4x8xf32>
  return %0, %1, %2 : tensor<10x4x8xf32>, tensor<10x4x8xf32>, tensor<10x4x8xf32>
}

// return_weights: the attention weights [N, Tq, Tk] as a second result.
// CHECK-LABEL: func.func @attention_weights
func.func @attention_weights(%q: tensor<10x4x20xf32>, %k: tensor<10x6x20xf32>, %v: tensor<10x6x8xf32>, %vl: tensor<10xi32>) -> (tensor<10x4x8xf32>, tensor<10x4x6xf32>) {
  // CHECK: %{{.*}}, %{{.*}} = attn.attention %{{.*}}, %{{.*}}, %{{.*}} valid_lens(%{{.*}}) causal return_weights : (tensor<10x4x20xf32>, tensor<10x6x20xf32>, tensor<10x6x8xf32>, tensor<10xi32>) -> (tensor<10x4x8xf32>, tensor<10x4x6xf32>)
  %y, %a = attn.attention %q, %k, %v valid_lens(%vl) causal return_weights : (tensor<10x4x20xf32>, tensor<10x6x20xf32>, tensor<10x6x8xf32>, tensor<10xi32>) -> (tensor<10x4x8xf32>, tensor<10x4x6xf32>)
  return %y, %a : tensor<10x4x8xf32>, tensor<10x4x6xf32>
}

// The book's case: B=2, T=4, D=100, 5 heads; then cross-attention Tq != Tk.
// CHECK-LABEL: func.func @multihead_attention
func.func @multihead_attention(%x: tensor<2x4x100xf32>, %w: tensor<100x100xf32>, %vl: tensor<2xi32>,
                               %kv: tensor<2x6x36xf32>, %wkv: tensor<100x36xf32>) -> (tensor<2x4x100xf32>, tensor<2x4x100xf32>) {
  // CHECK: attn.multihead_attention %{{.*}}, %{{.*}}, %{{.*}} heads(5) weights(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) valid_lens(%{{.*}}) : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<2xi32>) -> tensor<2x4x100xf32>
  %0 = attn.multihead_attention %x, %x, %x heads(5) weights(%w, %w, %w, %w) valid_lens(%vl)
      : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>, tensor<2xi32>) -> tensor<2x4x100xf32>
  // CHECK: attn.multihead_attention %{{.*}}, %{{.*}}, %{{.*}} heads(4) weights(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) causal : (tensor<2x4x100xf32>, tensor<2x6x36xf32>, tensor<2x6x36xf32>, tensor<100x100xf32>, tensor<100x36xf32>, tensor<100x36xf32>, tensor<100x100xf32>) -> tensor<2x4x100xf32>
  %1 = attn.multihead_attention %x, %kv, %kv heads(4) weights(%w, %wkv, %wkv, %w) causal
      : (tensor<2x4x100xf32>, tensor<2x6x36xf32>, tensor<2x6x36xf32>, tensor<100x100xf32>, tensor<100x36xf32>, tensor<100x36xf32>, tensor<100x100xf32>) -> tensor<2x4x100xf32>
  return %0, %1 : tensor<2x4x100xf32>, tensor<2x4x100xf32>
}

// return_weights: [B*heads, Tq, Tk] weights, cross-attention Tq=4, Tk=6.
// CHECK-LABEL: func.func @multihead_attention_weights
func.func @multihead_attention_weights(%x: tensor<2x4x100xf32>, %w: tensor<100x100xf32>,
                                       %kv: tensor<2x6x36xf32>, %wkv: tensor<100x36xf32>) -> (tensor<2x4x100xf32>, tensor<8x4x6xf32>) {
  // CHECK: %{{.*}}, %{{.*}} = attn.multihead_attention %{{.*}}, %{{.*}}, %{{.*}} heads(4) weights(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) return_weights : (tensor<2x4x100xf32>, tensor<2x6x36xf32>, tensor<2x6x36xf32>, tensor<100x100xf32>, tensor<100x36xf32>, tensor<100x36xf32>, tensor<100x100xf32>) -> (tensor<2x4x100xf32>, tensor<8x4x6xf32>)
  %y, %a = attn.multihead_attention %x, %kv, %kv heads(4) weights(%w, %wkv, %wkv, %w) return_weights
      : (tensor<2x4x100xf32>, tensor<2x6x36xf32>, tensor<2x6x36xf32>, tensor<100x100xf32>, tensor<100x36xf32>, tensor<100x36xf32>, tensor<100x100xf32>) -> (tensor<2x4x100xf32>, tensor<8x4x6xf32>)
  return %y, %a : tensor<2x4x100xf32>, tensor<8x4x6xf32>
}

// CHECK-LABEL: func.func @positional_encoding
func.func @positional_encoding(%x: tensor<2x4x100xf32>) -> (tensor<2x4x100xf32>, tensor<2x4x100xf32>) {
  // The default max_len (1000) is not printed.
  // CHECK: attn.positional_encoding %{{.*}} : tensor<2x4x100xf32>
  %0 = attn.positional_encoding %x : tensor<2x4x100xf32>
  // CHECK: attn.positional_encoding %{{.*}} max_len(4) : tensor<2x4x100xf32>
  %1 = attn.positional_encoding %x max_len(4) : tensor<2x4x100xf32>
  return %0, %1 : tensor<2x4x100xf32>, tensor<2x4x100xf32>
}

// CHECK-LABEL: func.func @positional_encoding_offset
func.func @positional_encoding_offset(%x: tensor<2x1x100xf32>, %pos: tensor<2xi32>) -> tensor<2x1x100xf32> {
  // CHECK: attn.positional_encoding %{{.*}} offset(%{{.*}} : tensor<2xi32>) max_len(64) : tensor<2x1x100xf32>
  %0 = attn.positional_encoding %x offset(%pos : tensor<2xi32>) max_len(64) : tensor<2x1x100xf32>
  return %0 : tensor<2x1x100xf32>
}

// CHECK-LABEL: func.func @norms
func.func @norms(%x: tensor<2x4x100xf32>, %y: tensor<2x4x100xf32>, %g: tensor<100xf32>, %b: tensor<100xf32>) -> (tensor<2x4x100xf32>, tensor<2x4x100xf32>) {
  // CHECK: attn.layer_norm %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x4x100xf32>, tensor<100xf32>, tensor<100xf32>) -> tensor<2x4x100xf32>
  %0 = attn.layer_norm %x, %g, %b : (tensor<2x4x100xf32>, tensor<100xf32>, tensor<100xf32>) -> tensor<2x4x100xf32>
  // CHECK: attn.add_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} eps(9.99999997E-7) : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<100xf32>, tensor<100xf32>) -> tensor<2x4x100xf32>
  %1 = attn.add_norm %x, %y, %g, %b eps(1.0e-6) : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<100xf32>, tensor<100xf32>) -> tensor<2x4x100xf32>
  return %0, %1 : tensor<2x4x100xf32>, tensor<2x4x100xf32>
}

// CHECK-LABEL: func.func @ffn
func.func @ffn(%x: tensor<2x4x32xf32>, %w1: tensor<64x32xf32>, %b1: tensor<64xf32>, %w2: tensor<16x64xf32>, %b2: tensor<16xf32>) -> tensor<2x4x16xf32> {
  // CHECK: attn.ffn %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x4x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  %0 = attn.ffn %x, %w1, %b1, %w2, %b2 : (tensor<2x4x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  return %0 : tensor<2x4x16xf32>
}

// CHECK-LABEL: func.func @embedding
func.func @embedding(%ids: tensor<2x4xi32>, %table: tensor<1000x64xf32>) -> tensor<2x4x64xf32> {
  // CHECK: attn.embedding %{{.*}}, %{{.*}} : (tensor<2x4xi32>, tensor<1000x64xf32>) -> tensor<2x4x64xf32>
  %0 = attn.embedding %ids, %table : (tensor<2x4xi32>, tensor<1000x64xf32>) -> tensor<2x4x64xf32>
  return %0 : tensor<2x4x64xf32>
}

// The internal destination-style op that attn-decompose{attention=fused}
// produces, on tensors and on memrefs.
// CHECK-LABEL: func.func @fused_attention
func.func @fused_attention(%q: tensor<10x4x20xf32>, %k: tensor<10x6x20xf32>, %v: tensor<10x6x8xf32>, %vl: tensor<10xi32>,
                           %mq: memref<10x4x20xf32>, %mk: memref<10x6x20xf32>, %mv: memref<10x6x8xf32>, %mo: memref<10x4x8xf32>) -> tensor<10x4x8xf32> {
  %init = tensor.empty() : tensor<10x4x8xf32>
  // CHECK: attn.fused_attention %{{.*}}, %{{.*}}, %{{.*}} valid_lens(%{{.*}}) outs(%{{.*}}) causal scale(2.500000e-01) : (tensor<10x4x20xf32>, tensor<10x6x20xf32>, tensor<10x6x8xf32>, tensor<10xi32>, tensor<10x4x8xf32>) -> tensor<10x4x8xf32>
  %0 = attn.fused_attention %q, %k, %v valid_lens(%vl) outs(%init) causal scale(0.25) : (tensor<10x4x20xf32>, tensor<10x6x20xf32>, tensor<10x6x8xf32>, tensor<10xi32>, tensor<10x4x8xf32>) -> tensor<10x4x8xf32>
  // CHECK: attn.fused_attention %{{.*}}, %{{.*}}, %{{.*}} outs(%{{.*}}) scale(1.250000e-01) : (memref<10x4x20xf32>, memref<10x6x20xf32>, memref<10x6x8xf32>, memref<10x4x8xf32>) -> ()
  attn.fused_attention %mq, %mk, %mv outs(%mo) scale(0.125) : (memref<10x4x20xf32>, memref<10x6x20xf32>, memref<10x6x8xf32>, memref<10x4x8xf32>) -> ()
  return %0 : tensor<10x4x8xf32>
}

// exclusive (causal): masked keys weigh 0, a KV cache's rule.
// CHECK-LABEL: func.func @fused_attention_exclusive
func.func @fused_attention_exclusive(%x: tensor<2x6x20xf32>) -> tensor<2x6x20xf32> {
  %init = tensor.empty() : tensor<2x6x20xf32>
  // CHECK: attn.fused_attention %{{.*}}, %{{.*}}, %{{.*}} outs(%{{.*}}) causal exclusive heads(4) scale(0.44721359)
  %0 = attn.fused_attention %x, %x, %x outs(%init) causal exclusive heads(4) scale(0.4472136) : (tensor<2x6x20xf32>, tensor<2x6x20xf32>, tensor<2x6x20xf32>, tensor<2x6x20xf32>) -> tensor<2x6x20xf32>
  return %0 : tensor<2x6x20xf32>
}

// With heads, on the projections as they are: [B, T, heads * d].
// CHECK-LABEL: func.func @fused_attention_heads
func.func @fused_attention_heads(%x: tensor<2x6x20xf32>, %vl: tensor<2x6xi32>) -> tensor<2x6x20xf32> {
  %init = tensor.empty() : tensor<2x6x20xf32>
  // CHECK: attn.fused_attention %{{.*}}, %{{.*}}, %{{.*}} valid_lens(%{{.*}}) outs(%{{.*}}) heads(4) scale(0.44721359) : (tensor<2x6x20xf32>, tensor<2x6x20xf32>, tensor<2x6x20xf32>, tensor<2x6xi32>, tensor<2x6x20xf32>) -> tensor<2x6x20xf32>
  %0 = attn.fused_attention %x, %x, %x valid_lens(%vl) outs(%init) heads(4) scale(0.4472136) : (tensor<2x6x20xf32>, tensor<2x6x20xf32>, tensor<2x6x20xf32>, tensor<2x6xi32>, tensor<2x6x20xf32>) -> tensor<2x6x20xf32>
  return %0 : tensor<2x6x20xf32>
}

// multihead_attention v2: biases (any subset), kv_heads, a causal window,
// rope and rope_base; keywords at their defaults are not printed.
// CHECK-LABEL: func.func @multihead_attention_v2
func.func @multihead_attention_v2(%x: tensor<1x8x32xf32>, %wq: tensor<32x32xf32>, %wkv: tensor<16x32xf32>,
                                  %b: tensor<32xf32>, %bkv: tensor<16xf32>, %vl: tensor<1xi32>) -> (tensor<1x8x32xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>) {
  // CHECK: attn.multihead_attention %{{.*}}, %{{.*}}, %{{.*}} heads(4) weights(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) b_q(%{{.*}}) b_k(%{{.*}}) b_v(%{{.*}}) b_o(%{{.*}}) valid_lens(%{{.*}}) : (tensor<1x8x32xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<1xi32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<1x8x32xf32>
  %0 = attn.multihead_attention %x, %x, %x heads(4) weights(%wq, %wq, %wq, %wq) b_q(%b) b_k(%b) b_v(%b) b_o(%b) valid_lens(%vl)
      : (tensor<1x8x32xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<1xi32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<1x8x32xf32>
  // CHECK: attn.multihead_attention %{{.*}}, %{{.*}}, %{{.*}} heads(4) kv_heads(2) weights(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) b_k(%{{.*}}) b_o(%{{.*}}) causal window(3) rope rope_base(5.000000e+05) : (tensor<1x8x32xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>, tensor<32x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<32x32xf32>, tensor<16xf32>, tensor<32xf32>) -> tensor<1x8x32xf32>
  %1 = attn.multihead_attention %x, %x, %x heads(4) kv_heads(2) weights(%wq, %wkv, %wkv, %wq) b_k(%bkv) b_o(%b) causal window(3) rope rope_base(500000.0)
      : (tensor<1x8x32xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>, tensor<32x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<32x32xf32>, tensor<16xf32>, tensor<32xf32>) -> tensor<1x8x32xf32>
  // CHECK: attn.multihead_attention %{{.*}}, %{{.*}}, %{{.*}} heads(4) weights(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) rope : (
  %2 = attn.multihead_attention %x, %x, %x heads(4) weights(%wq, %wq, %wq, %wq) rope rope_base(10000.0)
      : (tensor<1x8x32xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<1x8x32xf32>
  return %0, %1, %2 : tensor<1x8x32xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>
}

// fused_attention v2: kv_heads, a window, rope tables.
// CHECK-LABEL: func.func @fused_attention_v2
func.func @fused_attention_v2(%q: tensor<2x64x64xf32>, %kv: tensor<2x64x32xf32>, %c: tensor<64x8xf32>, %s: tensor<64x8xf32>) -> tensor<2x64x64xf32> {
  // CHECK: attn.fused_attention %{{.*}}, %{{.*}}, %{{.*}} rope(%{{.*}}, %{{.*}}) outs(%{{.*}}) causal window(16) heads(4) kv_heads(2) scale(2.500000e-01) : (tensor<2x64x64xf32>, tensor<2x64x32xf32>, tensor<2x64x32xf32>, tensor<64x8xf32>, tensor<64x8xf32>, tensor<2x64x64xf32>) -> tensor<2x64x64xf32>
  %0 = attn.fused_attention %q, %kv, %kv rope(%c, %s) outs(%q) causal window(16) heads(4) kv_heads(2) scale(0.25)
      : (tensor<2x64x64xf32>, tensor<2x64x32xf32>, tensor<2x64x32xf32>, tensor<64x8xf32>, tensor<64x8xf32>, tensor<2x64x64xf32>) -> tensor<2x64x64xf32>
  return %0 : tensor<2x64x64xf32>
}

// multihead_attention with a KV cache (two more results: the updated
// caches, here bf16), and the cache_update it decomposes into.
// CHECK-LABEL: func.func @kv_cache
func.func @kv_cache(%t: tensor<1x1x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<16x32xf32>, %kc: tensor<1x64x16xbf16>, %pos: tensor<1xi32>, %rows: tensor<1x1x16xbf16>) -> (tensor<1x1x32xf32>, tensor<1x64x16xbf16>, tensor<1x64x16xbf16>, tensor<1x64x16xbf16>) {
  // CHECK: %{{.*}}, %{{.*}}:2 = attn.multihead_attention %{{.*}}, %{{.*}}, %{{.*}} heads(4) kv_heads(2) weights(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) cache(%{{.*}}, %{{.*}}, %{{.*}}) causal window(8) rope : ({{.*}}, tensor<1x64x16xbf16>, tensor<1x64x16xbf16>, tensor<1xi32>) -> (tensor<1x1x32xf32>, tensor<1x64x16xbf16>, tensor<1x64x16xbf16>)
  %y, %k2, %v2 = attn.multihead_attention %t, %t, %t heads(4) kv_heads(2) weights(%wq, %wk, %wk, %wq) cache(%kc, %kc, %pos) causal window(8) rope
      : (tensor<1x1x32xf32>, tensor<1x1x32xf32>, tensor<1x1x32xf32>, tensor<32x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<32x32xf32>, tensor<1x64x16xbf16>, tensor<1x64x16xbf16>, tensor<1xi32>) -> (tensor<1x1x32xf32>, tensor<1x64x16xbf16>, tensor<1x64x16xbf16>)
  // CHECK: attn.cache_update %{{.*}} into %{{.*}} at %{{.*}} : tensor<1x1x16xbf16>, tensor<1xi32> into tensor<1x64x16xbf16>
  %c = attn.cache_update %rows into %kc at %pos : tensor<1x1x16xbf16>, tensor<1xi32> into tensor<1x64x16xbf16>
  return %y, %k2, %v2, %c : tensor<1x1x32xf32>, tensor<1x64x16xbf16>, tensor<1x64x16xbf16>, tensor<1x64x16xbf16>
}

// decode_attention (internal): a step's queries over bf16 caches, on tensors
// and on buffers.
// CHECK-LABEL: func.func @decode_attention
func.func @decode_attention(%q: tensor<2x1x32xf32>, %k: tensor<2x64x16xbf16>, %pos: tensor<2xi32>, %qb: memref<2x1x32xf32>, %kb: memref<2x64x16xbf16>, %pb: memref<2xi32>) -> tensor<2x1x32xf32> {
  %init = tensor.empty() : tensor<2x1x32xf32>
  // CHECK: attn.decode_attention %{{.*}}, %{{.*}}, %{{.*}} at %{{.*}} outs(%{{.*}}) window(8) heads(4) kv_heads(2) scale(2.500000e-01) products(bf16) : (tensor<2x1x32xf32>, tensor<2x64x16xbf16>, tensor<2x64x16xbf16>, tensor<2xi32>, tensor<2x1x32xf32>) -> tensor<2x1x32xf32>
  %o = attn.decode_attention %q, %k, %k at %pos outs(%init) window(8) heads(4) kv_heads(2) scale(2.500000e-01) products(bf16)
      : (tensor<2x1x32xf32>, tensor<2x64x16xbf16>, tensor<2x64x16xbf16>, tensor<2xi32>, tensor<2x1x32xf32>) -> tensor<2x1x32xf32>
  // CHECK: attn.decode_attention %{{.*}}, %{{.*}}, %{{.*}} at %{{.*}} outs(%{{.*}}) heads(4) kv_heads(2) scale(2.500000e-01) : (memref<2x1x32xf32>, memref<2x64x16xbf16>, memref<2x64x16xbf16>, memref<2xi32>, memref<2x1x32xf32>) -> ()
  attn.decode_attention %qb, %kb, %kb at %pb outs(%qb) heads(4) kv_heads(2) scale(2.500000e-01)
      : (memref<2x1x32xf32>, memref<2x64x16xbf16>, memref<2x64x16xbf16>, memref<2xi32>, memref<2x1x32xf32>) -> ()
  return %o : tensor<2x1x32xf32>
}
