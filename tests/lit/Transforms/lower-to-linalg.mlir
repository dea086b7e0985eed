// attn-lower-to-linalg: every primitive attn op becomes linalg/tensor/arith/
// math on tensors with docs/spec.md §2's semantics; every function gets an i32
// kernel status result, and its arguments are marked read only for
// bufferization (inputs and params are const buffers).
// RUN: attn-opt %s --attn-lower-to-linalg --split-input-file --verify-diagnostics | FileCheck %s

// torch nn.Linear: x @ w^T + b over the last axis.
// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x4x8xf32> {bufferization.writable = false}, %[[W:[^:]*]]: tensor<6x8xf32> {bufferization.writable = false}, %[[B:[^:]*]]: tensor<6xf32> {bufferization.writable = false}) -> (tensor<2x4x6xf32>, i32)
func.func @linear(%x: tensor<2x4x8xf32>, %w: tensor<6x8xf32>, %b: tensor<6xf32>) -> tensor<2x4x6xf32> {
  // no embedding: the status is 0
  // CHECK: %[[OK:.*]] = arith.constant 0 : i32
  // x viewed as rows [B*T, I]
  // CHECK: %[[X2:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
  // w [O, I] read as [I, O]
  // CHECK: %[[WT:.*]] = linalg.transpose ins(%[[W]] : tensor<6x8xf32>) outs(%{{.*}} : tensor<8x6xf32>) permutation = [1, 0]
  // the bias, broadcast over rows in the result's shape (so that the result
  // can be that buffer), viewed as rows, is the accumulator
  // CHECK: %[[BB:.*]] = linalg.broadcast ins(%[[B]] : tensor<6xf32>) outs(%{{.*}} : tensor<2x4x6xf32>) dimensions = [0, 1]
  // CHECK: %[[ACC:.*]] = tensor.collapse_shape %[[BB]] {{\[\[}}0, 1], [2]] : tensor<2x4x6xf32> into tensor<8x6xf32>
  // CHECK: %[[Y2:.*]] = linalg.matmul ins(%[[X2]], %[[WT]] : tensor<8x8xf32>, tensor<8x6xf32>) outs(%[[ACC]] : tensor<8x6xf32>)
  // CHECK: %[[Y:.*]] = tensor.expand_shape %[[Y2]] {{\[\[}}0, 1], [2]] output_shape [2, 4, 6]
  // CHECK: return %[[Y]], %[[OK]] : tensor<2x4x6xf32>, i32
  %0 = attn.linear %x, %w, %b : (tensor<2x4x8xf32>, tensor<6x8xf32>, tensor<6xf32>) -> tensor<2x4x6xf32>
  return %0 : tensor<2x4x6xf32>
}

// -----

// Without a bias the accumulator starts at zero; a 1-D x is one row.
// CHECK-LABEL: func.func @linear_no_bias_rank1
func.func @linear_no_bias_rank1(%x: tensor<8xf32>, %w: tensor<6x8xf32>) -> tensor<6xf32> {
  // CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [1, 8] : tensor<8xf32> into tensor<1x8xf32>
  // a fresh zero tensor (bufferization.alloc_tensor: CSE cannot make two
  // GEMMs share it)
  // CHECK: %[[FRESH:.*]] = bufferization.alloc_tensor() : tensor<6xf32>
  // CHECK: %[[ZERO:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[FRESH]] : tensor<6xf32>)
  // CHECK: %[[ACC:.*]] = tensor.expand_shape %[[ZERO]] {{\[\[}}0, 1]] output_shape [1, 6] : tensor<6xf32> into tensor<1x6xf32>
  // CHECK: linalg.matmul {{.*}} outs(%[[ACC]] : tensor<1x6xf32>)
  // CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<1x6xf32> into tensor<6xf32>
  %0 = attn.linear %x, %w : (tensor<8xf32>, tensor<6x8xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

// torch.bmm; transpose_b through a linalg.transpose of b.
// CHECK-LABEL: func.func @matmul_transpose_b
// CHECK-SAME: (%[[A:[^:]*]]: tensor<3x4x5xf32> {bufferization.writable = false}, %[[B:[^:]*]]: tensor<3x6x5xf32> {bufferization.writable = false})
func.func @matmul_transpose_b(%a: tensor<3x4x5xf32>, %b: tensor<3x6x5xf32>) -> tensor<3x4x6xf32> {
  // CHECK: %[[BT:.*]] = linalg.transpose ins(%[[B]] : tensor<3x6x5xf32>) outs(%{{.*}} : tensor<3x5x6xf32>) permutation = [0, 2, 1]
  // CHECK: %[[Z:.*]] = linalg.fill
  // CHECK: linalg.batch_matmul ins(%[[A]], %[[BT]] : tensor<3x4x5xf32>, tensor<3x5x6xf32>) outs(%[[Z]] : tensor<3x4x6xf32>)
  %0 = attn.matmul %a, %b transpose_b : (tensor<3x4x5xf32>, tensor<3x6x5xf32>) -> tensor<3x4x6xf32>
  return %0 : tensor<3x4x6xf32>
}

// -----

// Elementwise ops are linalg.generics over the same shape.
// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // x * 0.5
  // CHECK: %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
  // CHECK: linalg.generic
  // CHECK: arith.mulf %{{.*}}, %[[HALF]] : f32
  %0 = attn.scale %x factor(0.5) : tensor<2x3xf32>
  // a + b
  // CHECK: linalg.generic
  // CHECK: arith.addf
  %1 = attn.add %0, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // relu: maximumf propagates NaN, as torch.relu does
  // CHECK: linalg.generic
  // CHECK: arith.maximumf %{{.*}}, %{{.*}} : f32
  %2 = attn.relu %1 : tensor<2x3xf32>
  // dropout is the identity: nothing is emitted for it
  // CHECK-NOT: linalg.generic
  // CHECK: return
  %3 = attn.dropout %2 p(0.5) : tensor<2x3xf32>
  return %3 : tensor<2x3xf32>
}

// -----

// gelu, torch's default: x * 0.5 * (1 + erf(x * (1 / sqrt(2)))).
// CHECK-LABEL: func.func @gelu
// CHECK-DAG: %[[KAPPA:.*]] = arith.constant 4.471500e-02 : f32
// CHECK-DAG: %[[M2BETA:.*]] = arith.constant -1.59576917 : f32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[RSQRT2:.*]] = arith.constant 0.707106769 : f32
// CHECK-DAG: %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[S:.*]] = arith.mulf %[[IN]], %[[RSQRT2]] : f32
// CHECK-NEXT: %[[E:.*]] = math.erf %[[S]] : f32
// CHECK-NEXT: %[[H:.*]] = arith.mulf %[[IN]], %[[HALF]] : f32
// CHECK-NEXT: %[[P:.*]] = arith.addf %[[E]], %[[ONE]] : f32
// CHECK-NEXT: %[[G:.*]] = arith.mulf %[[H]], %[[P]] : f32
// CHECK-NEXT: linalg.yield %[[G]] : f32
// approximate ('tanh'): 0.5 (1 + tanh(u)) is 1 / (1 + exp(-2u)), with
// u = sqrt(2 / pi) (x + 0.044715 x^3)
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[X2:.*]] = arith.mulf %[[IN]], %[[IN]] : f32
// CHECK-NEXT: %[[X3:.*]] = arith.mulf %[[X2]], %[[IN]] : f32
// CHECK-NEXT: %[[KX3:.*]] = arith.mulf %[[X3]], %[[KAPPA]] : f32
// CHECK-NEXT: %[[SUM:.*]] = arith.addf %[[IN]], %[[KX3]] : f32
// CHECK-NEXT: %[[M2U:.*]] = arith.mulf %[[SUM]], %[[M2BETA]] : f32
// CHECK-NEXT: %[[EXP:.*]] = math.exp %[[M2U]] : f32
// CHECK-NEXT: %[[DEN:.*]] = arith.addf %[[EXP]], %[[ONE]] : f32
// CHECK-NEXT: %[[T:.*]] = arith.divf %[[IN]], %[[DEN]] : f32
// CHECK-NEXT: linalg.yield %[[T]] : f32
func.func @gelu(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = attn.gelu %x : tensor<2x3xf32>
  %1 = attn.gelu %x approximate : tensor<2x3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// D2L transpose_qkv: [B, T, H*d] -> [B, T, H, d] -> [B, H, T, d] -> [B*H, T, d].
// CHECK-LABEL: func.func @split_heads
func.func @split_heads(%x: tensor<2x4x6xf32>) -> tensor<6x4x2xf32> {
  // CHECK: %[[S:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0], [1], [2, 3]] output_shape [2, 4, 3, 2]
  // CHECK: %[[T:.*]] = linalg.transpose ins(%[[S]] : tensor<2x4x3x2xf32>) outs(%{{.*}} : tensor<2x3x4x2xf32>) permutation = [0, 2, 1, 3]
  // CHECK: tensor.collapse_shape %[[T]] {{\[\[}}0, 1], [2], [3]] : tensor<2x3x4x2xf32> into tensor<6x4x2xf32>
  %0 = attn.split_heads %x heads(3) : (tensor<2x4x6xf32>) -> tensor<6x4x2xf32>
  return %0 : tensor<6x4x2xf32>
}

// -----

// D2L transpose_output, the inverse.
// CHECK-LABEL: func.func @merge_heads
func.func @merge_heads(%x: tensor<6x4x2xf32>) -> tensor<2x4x6xf32> {
  // CHECK: %[[S:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2], [3]] output_shape [2, 3, 4, 2]
  // CHECK: %[[T:.*]] = linalg.transpose ins(%[[S]] : tensor<2x3x4x2xf32>) outs(%{{.*}} : tensor<2x4x3x2xf32>) permutation = [0, 2, 1, 3]
  // CHECK: tensor.collapse_shape %[[T]] {{\[\[}}0], [1], [2, 3]] : tensor<2x4x3x2xf32> into tensor<2x4x6xf32>
  %0 = attn.merge_heads %x heads(3) : (tensor<6x4x2xf32>) -> tensor<2x4x6xf32>
  return %0 : tensor<2x4x6xf32>
}

// -----

// D2L masked_softmax: entries j >= len are replaced by -1e6, then softmax.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[LEN:.*]] = affine_map<(d0, d1, d2) -> (d0)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @masked_softmax
// CHECK-SAME: (%[[S:[^:]*]]: tensor<3x4x5xf32> {bufferization.writable = false}, %[[VL:[^:]*]]: tensor<3xi32> {bufferization.writable = false})
func.func @masked_softmax(%s: tensor<3x4x5xf32>, %vl: tensor<3xi32>) -> tensor<3x4x5xf32> {
  // CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
  // CHECK-DAG: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
  // CHECK-DAG: %[[MASKED:.*]] = arith.constant -1.000000e+06 : f32
  // x' = j < valid_lens[n] ? x : -1e6
  // CHECK: %[[M:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[LEN]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[S]], %[[VL]] :
  // CHECK: %[[J:.*]] = linalg.index 2 : index
  // CHECK: %[[L:.*]] = arith.index_cast %{{.*}} : i32 to index
  // CHECK: %[[VISIBLE:.*]] = arith.cmpi slt, %[[J]], %[[L]] : index
  // CHECK: arith.select %[[VISIBLE]], %{{.*}}, %[[MASKED]] : f32
  // m = max_j x' (from -inf)
  // CHECK: %[[INIT:.*]] = linalg.fill ins(%[[NEGINF]] : f32)
  // CHECK: %[[MAX:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[M]] : tensor<3x4x5xf32>) outs(%[[INIT]] : tensor<3x4xf32>)
  // CHECK: arith.maximumf
  // e = exp(x' - m)
  // CHECK: %[[E:.*]] = linalg.generic {{.*}} ins(%[[M]], %[[MAX]] :
  // CHECK: arith.subf
  // CHECK: math.exp
  // s = sum_j e
  // CHECK: %[[SINIT:.*]] = linalg.fill ins(%[[ZERO]] : f32)
  // CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[E]] : tensor<3x4x5xf32>) outs(%[[SINIT]] : tensor<3x4xf32>)
  // CHECK: arith.addf
  // e / s
  // CHECK: linalg.generic {{.*}} ins(%[[E]], %[[SUM]] :
  // CHECK: arith.divf
  %0 = attn.masked_softmax %s, %vl : (tensor<3x4x5xf32>, tensor<3xi32>) -> tensor<3x4x5xf32>
  return %0 : tensor<3x4x5xf32>
}

// -----

// 2-D lengths are read per query row.
// CHECK-DAG: #[[ROW2:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @masked_softmax_2d
func.func @masked_softmax_2d(%s: tensor<3x4x5xf32>, %vl: tensor<3x4xi32>) -> tensor<3x4x5xf32> {
  // CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[ROW2]], #{{.*}}]
  // CHECK: linalg.index 2
  %0 = attn.masked_softmax %s, %vl : (tensor<3x4x5xf32>, tensor<3x4xi32>) -> tensor<3x4x5xf32>
  return %0 : tensor<3x4x5xf32>
}

// -----

// D2L PositionalEncoding: x + P[:T], the table computed at compile time in
// float32 (P[i, 2j] = sin(i / 10000^(2j/D)), P[i, 2j+1] = cos(...)).
// CHECK-DAG: #[[BTC:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[TC:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-LABEL: func.func @positional_encoding
func.func @positional_encoding(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  // row 0: sin 0, cos 0, ...; row 1: sin 1, cos 1, sin 0.01, cos 0.01; row 2: sin 2, ...
  // CHECK: %[[P:.*]] = arith.constant dense<{{\[\[}}0.000000e+00, 1.000000e+00, 0.000000e+00, 1.000000e+00], [0.841470957, 0.540302277, 0.00999983306, 0.999949991], [0.909297406, -0.416146845, 0.0199986659, 9.998000e-01]]> : tensor<3x4xf32>
  // CHECK: linalg.generic {indexing_maps = [#[[BTC]], #[[TC]], #[[BTC]]], {{.*}} ins(%{{.*}}, %[[P]] : tensor<2x3x4xf32>, tensor<3x4xf32>)
  // CHECK: arith.addf
  %0 = attn.positional_encoding %x : tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// With offset (a decode step's positions): the table is computed at
// position offset[b] + i, from the column's divisor (the table's own
// arithmetic); an offset with offset[b] + T > max_len (or < 0) makes the
// status ATTNC_STATUS_CACHE_POSITION (-6).
// CHECK-DAG: #[[BTC2:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2) -> (d0)>
// CHECK-LABEL: func.func @positional_encoding_offset
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x3x4xf32> {{.*}}, %[[POS:[^:]*]]: tensor<2xi32>
// CHECK-DAG: %[[CODE:.*]] = arith.constant -6 : i32
// CHECK-DAG: %[[LIMIT:.*]] = arith.constant 6 : i32
// CHECK: arith.cmpi sge, %{{.*}}, %[[LIMIT]] : i32
// CHECK: linalg.generic {indexing_maps = [#[[BTC2]], #[[C]], #[[B]], #[[BTC2]]], {{.*}} ins(%[[X]], %{{.*}}, %[[POS]] : tensor<2x3x4xf32>, tensor<4xf32>, tensor<2xi32>)
// CHECK: ^bb0(%{{.*}}: f32, %[[DIV:.*]]: f32, %[[P:.*]]: i32, %{{.*}}: f32):
// CHECK: %[[I:.*]] = linalg.index 1 : index
// CHECK: %[[I64:.*]] = arith.index_cast %[[I]] : index to i64
// CHECK: %[[P64:.*]] = arith.extsi %[[P]] : i32 to i64
// CHECK: %[[AT:.*]] = arith.addi %[[I64]], %[[P64]] : i64
// CHECK: %[[ROW:.*]] = arith.sitofp %[[AT]] : i64 to f32
// CHECK: arith.divf %[[ROW]], %[[DIV]] : f32
// CHECK: arith.select %{{.*}}, %[[CODE]]
func.func @positional_encoding_offset(%x: tensor<2x3x4xf32>, %pos: tensor<2xi32>) -> tensor<2x3x4xf32> {
  %0 = attn.positional_encoding %x offset(%pos : tensor<2xi32>) max_len(8) : tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// torch nn.LayerNorm: (x - mean) / sqrt(var + eps) * gamma + beta, biased var.
// CHECK-LABEL: func.func @layer_norm
func.func @layer_norm(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x8xf32> {
  // CHECK-DAG: %[[EPS:.*]] = arith.constant 9.99999974E-6 : f32
  // CHECK-DAG: %[[WIDTH:.*]] = arith.constant 8.000000e+00 : f32
  // sum_j x
  // CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
  // CHECK: arith.addf
  // sum_j (x - sum/D)^2
  // CHECK: %[[SQ:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}}, %[[SUM]] :
  // CHECK: arith.divf %{{.*}}, %[[WIDTH]]
  // CHECK: arith.subf
  // CHECK: arith.mulf
  // CHECK: arith.addf
  // normalize, scale, shift
  // CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[SUM]], %[[SQ]], %{{.*}}, %{{.*}} :
  // CHECK: arith.addf %{{.*}}, %[[EPS]]
  // CHECK: math.sqrt
  // CHECK: arith.divf
  // CHECK: arith.mulf
  // CHECK: arith.addf
  %0 = attn.layer_norm %x, %g, %b : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// Embedding: ids out of [0, V) are counted into the status and clamped, so
// no read is out of bounds.
// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[IDS:[^:]*]]: tensor<2x3xi32> {bufferization.writable = false}, %[[T:[^:]*]]: tensor<10x4xf32> {bufferization.writable = false}) -> (tensor<2x3x4xf32>, i32)
func.func @embedding(%ids: tensor<2x3xi32>, %t: tensor<10x4xf32>) -> tensor<2x3x4xf32> {
  // count = sum (id < 0 || id >= 10)
  // CHECK: %[[COUNT:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]} ins(%[[IDS]] : tensor<2x3xi32>)
  // CHECK: arith.cmpi slt
  // CHECK: arith.cmpi sge
  // CHECK: arith.ori
  // CHECK: %[[BAD:.*]] = tensor.extract %[[COUNT]][] : tensor<i32>
  // rows: table[clamp(id, 0, 9), d]
  // CHECK: %[[E:.*]] = linalg.generic {{.*}} ins(%[[IDS]] : tensor<2x3xi32>)
  // CHECK: arith.minsi
  // CHECK: arith.maxsi
  // CHECK: tensor.extract %[[T]]
  // status = count != 0
  // CHECK: %[[FAILED:.*]] = arith.cmpi ne, %[[BAD]], %{{.*}} : i32
  // CHECK: %[[STATUS:.*]] = arith.extui %[[FAILED]] : i1 to i32
  // CHECK: return %[[E]], %[[STATUS]]
  %0 = attn.embedding %ids, %t : (tensor<2x3xi32>, tensor<10x4xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// Composite ops must be decomposed first.
func.func @composite(%x: tensor<2x4x8xf32>, %y: tensor<2x4x8xf32>, %g: tensor<8xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{'attn.add_norm' op is a composite op; run attn-decompose before attn-lower-to-linalg}}
  %0 = attn.add_norm %x, %y, %g, %g : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return %0 : tensor<2x4x8xf32>
}

// -----

// add, mul, sub broadcast like NumPy: a stretched size-1 axis is dropped by
// a rank-reducing slice (a view once bufferized) and the operand's map skips
// every axis it lacks.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[TD:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[D:.*]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-DAG: #[[BT:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[NONE:.*]] = affine_map<(d0, d1, d2) -> ()>
// CHECK-LABEL: func.func @broadcast
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x3x4xf32> {{[^,]*}}, %[[P:[^:]*]]: tensor<1x3x4xf32> {{[^,]*}}, %[[R:[^:]*]]: tensor<4xf32> {{[^,]*}}, %[[C:[^:]*]]: tensor<2x3x1xf32> {{[^,]*}}, %[[S:[^:]*]]: tensor<1xf32>
// CHECK: %[[PS:.*]] = tensor.extract_slice %[[P]][0, 0, 0] [1, 3, 4] [1, 1, 1] : tensor<1x3x4xf32> to tensor<3x4xf32>
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[TD]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[X]], %[[PS]] : tensor<2x3x4xf32>, tensor<3x4xf32>)
// CHECK: arith.addf
// a missing axis needs no slice
// CHECK-NOT: tensor.extract_slice
// CHECK: linalg.generic {indexing_maps = [#[[D]], #[[ID]], #[[ID]]], {{.*}} ins(%[[R]], %[[X]] : tensor<4xf32>, tensor<2x3x4xf32>)
// CHECK: arith.mulf
// CHECK: %[[CS:.*]] = tensor.extract_slice %[[C]][0, 0, 0] [2, 3, 1] [1, 1, 1] : tensor<2x3x1xf32> to tensor<2x3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[BT]], #[[ID]]], {{.*}} ins(%[[X]], %[[CS]] : tensor<2x3x4xf32>, tensor<2x3xf32>)
// CHECK: arith.subf
// CHECK: %[[SS:.*]] = tensor.extract_slice %[[S]][0] [1] [1] : tensor<1xf32> to tensor<f32>
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[NONE]], #[[ID]]], {{.*}} ins(%[[X]], %[[SS]] : tensor<2x3x4xf32>, tensor<f32>)
// CHECK: arith.mulf
func.func @broadcast(%x: tensor<2x3x4xf32>, %p: tensor<1x3x4xf32>, %r: tensor<4xf32>, %c: tensor<2x3x1xf32>, %s: tensor<1xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %0 = attn.add %x, %p : (tensor<2x3x4xf32>, tensor<1x3x4xf32>) -> tensor<2x3x4xf32>
  %1 = attn.mul %r, %x : (tensor<4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %2 = attn.sub %x, %c : (tensor<2x3x4xf32>, tensor<2x3x1xf32>) -> tensor<2x3x4xf32>
  %3 = attn.mul %x, %s : (tensor<2x3x4xf32>, tensor<1xf32>) -> tensor<2x3x4xf32>
  return %0, %1, %2, %3 : tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>
}

// -----

// silu and sigmoid as torch's CPU kernels: x / (1 + exp(-x)) and
// 1 / (1 + exp(-x)); tanh is math.tanh.
// CHECK-LABEL: func.func @silu_sigmoid_tanh
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[N:.*]] = arith.negf %[[IN]] : f32
// CHECK-NEXT: %[[E:.*]] = math.exp %[[N]] : f32
// CHECK-NEXT: %[[D:.*]] = arith.addf %[[E]], %[[ONE]] : f32
// CHECK-NEXT: %[[Y:.*]] = arith.divf %[[IN]], %[[D]] : f32
// CHECK-NEXT: linalg.yield %[[Y]] : f32
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[N:.*]] = arith.negf %[[IN]] : f32
// CHECK-NEXT: %[[E:.*]] = math.exp %[[N]] : f32
// CHECK-NEXT: %[[D:.*]] = arith.addf %[[E]], %[[ONE]] : f32
// CHECK-NEXT: %[[Y:.*]] = arith.divf %[[ONE]], %[[D]] : f32
// CHECK-NEXT: linalg.yield %[[Y]] : f32
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[Y:.*]] = math.tanh %[[IN]] : f32
// CHECK-NEXT: linalg.yield %[[Y]] : f32
func.func @silu_sigmoid_tanh(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = attn.silu %x : tensor<2x3xf32>
  %1 = attn.sigmoid %x : tensor<2x3xf32>
  %2 = attn.tanh %x : tensor<2x3xf32>
  return %0, %1, %2 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// rms_norm, Llama's RMSNorm: the row's sum of squares, then
// gamma * (x * (1 / sqrt(sum / D + eps))), eps 1e-6 by default.
// CHECK-DAG: #[[ROWS:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[COLS:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @rms_norm
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x8xf32> {{[^,]*}}, %[[G:[^:]*]]: tensor<8xf32>
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[EPS:.*]] = arith.constant 9.99999997E-7 : f32
// CHECK-DAG: %[[WIDTH:.*]] = arith.constant 8.000000e+00 : f32
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[X]] : tensor<2x8xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT: %[[SQ:.*]] = arith.mulf %[[IN]], %[[IN]] : f32
// CHECK-NEXT: arith.addf %[[SQ]], %[[ACC]] : f32
// CHECK: linalg.generic {{.*}} ins(%[[X]], %[[SUM]], %[[G]] : tensor<2x8xf32>, tensor<2xf32>, tensor<8xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %[[S:.*]]: f32, %[[GAMMA:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[MEAN:.*]] = arith.divf %[[S]], %[[WIDTH]] : f32
// CHECK-NEXT: %[[V:.*]] = arith.addf %[[MEAN]], %[[EPS]] : f32
// CHECK-NEXT: %[[ROOT:.*]] = math.sqrt %[[V]] : f32
// CHECK-NEXT: %[[INV:.*]] = arith.divf %[[ONE]], %[[ROOT]] : f32
// CHECK-NEXT: %[[NORMED:.*]] = arith.mulf %[[IN]], %[[INV]] : f32
// CHECK-NEXT: %[[Y:.*]] = arith.mulf %[[GAMMA]], %[[NORMED]] : f32
// CHECK-NEXT: linalg.yield %[[Y]] : f32
func.func @rms_norm(%x: tensor<2x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  %0 = attn.rms_norm %x, %g : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}
