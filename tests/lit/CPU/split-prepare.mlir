// attn-split-prepare: the work on params alone moves into NAME_prepare, the
// rest into NAME_prepared, and NAME calls the two.
// RUN: attn-opt %s --split-input-file --attn-split-prepare | FileCheck %s
// A second run leaves the parts alone.
// RUN: attn-opt %s --split-input-file --attn-split-prepare --attn-split-prepare | FileCheck %s --check-prefix=TWICE

// linear: the weight transpose is prepared; the bias broadcast over rows is
// bigger than the bias and stays per call.
// CHECK-LABEL: func.func @linear(
// CHECK-SAME: attn.packed_elements = 128 : i64
// CHECK: %[[P:.*]]:2 = call @linear_prepare(%arg1, %arg2)
// CHECK: %[[R:.*]]:2 = call @linear_prepared(%arg0, %arg1, %arg2, %[[P]]#0)
// CHECK: return %[[R]]#0, %[[R]]#1
// CHECK-LABEL: func.func @linear_prepare(
// CHECK-SAME: %arg0: tensor<16x8xf32> {attn.name = "W", attn.role = "param"}
// CHECK-SAME: -> (tensor<128xf32>, i32) attributes {attn.kernel_part = "prepare"}
// CHECK: %[[T:.*]] = linalg.transpose ins(%arg0
// CHECK-NOT: linalg.broadcast
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[T]] {{\[\[}}0, 1]]
// CHECK: tensor.insert_slice %[[FLAT]] into %{{.*}}[0] [128] [1]
// CHECK-LABEL: func.func @linear_prepared(
// CHECK-SAME: %arg3: tensor<128xf32> {attn.name = "packed", bufferization.writable = false}
// CHECK: %[[S:.*]] = tensor.extract_slice %arg3[0] [128] [1]
// CHECK: %[[W:.*]] = tensor.expand_shape %[[S]] {{\[\[}}0, 1]] output_shape [8, 16]
// CHECK-NOT: linalg.transpose
// CHECK: linalg.broadcast ins(%arg2
// CHECK: linalg.matmul ins(%arg0, %[[W]] :
// TWICE-COUNT-3: func.func @linear
// TWICE-NOT: func.func @linear
func.func @linear(%x: tensor<4x8xf32>,
                  %w: tensor<16x8xf32> {attn.name = "W", attn.role = "param"},
                  %b: tensor<16xf32> {attn.role = "param"})
    -> (tensor<4x16xf32>, i32) {
  %e = tensor.empty() : tensor<8x16xf32>
  %wt = linalg.transpose ins(%w : tensor<16x8xf32>) outs(%e : tensor<8x16xf32>) permutation = [1, 0]
  %e2 = tensor.empty() : tensor<4x16xf32>
  %bb = linalg.broadcast ins(%b : tensor<16xf32>) outs(%e2 : tensor<4x16xf32>) dimensions = [0]
  %y = linalg.matmul ins(%x, %wt : tensor<4x8xf32>, tensor<8x16xf32>) outs(%bb : tensor<4x16xf32>) -> tensor<4x16xf32>
  %c0 = arith.constant 0 : i32
  return %y, %c0 : tensor<4x16xf32>, i32
}

// -----

// Two weights: the second starts at the next multiple of 16 floats. An
// input's transpose is per call; a chain on one param is prepared whole and
// only its end is packed.
// CHECK-LABEL: func.func @two_weights(
// CHECK-SAME: attn.packed_elements = 48 : i64
// CHECK-LABEL: func.func @two_weights_prepare(
// CHECK: linalg.transpose ins(%arg0
// CHECK: linalg.generic
// CHECK: linalg.transpose ins(%arg1
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0] [15] [1]
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[16] [28] [1]
// CHECK-LABEL: func.func @two_weights_prepared(
// CHECK: tensor.extract_slice %arg3[0] [15] [1]
// CHECK: tensor.extract_slice %arg3[16] [28] [1]
// CHECK: linalg.transpose ins(%arg0
// CHECK-NOT: linalg.transpose
// CHECK-NOT: linalg.generic
// CHECK: return
#id = affine_map<(i, j) -> (i, j)>
func.func @two_weights(%x: tensor<5x3xf32>,
                       %a: tensor<5x3xf32> {attn.role = "param"},
                       %b: tensor<4x7xf32> {attn.role = "param"})
    -> (tensor<3x5xf32>, tensor<3x5xf32>, tensor<7x4xf32>, i32) {
  %e = tensor.empty() : tensor<3x5xf32>
  %xt = linalg.transpose ins(%x : tensor<5x3xf32>) outs(%e : tensor<3x5xf32>) permutation = [1, 0]
  %at = linalg.transpose ins(%a : tensor<5x3xf32>) outs(%e : tensor<3x5xf32>) permutation = [1, 0]
  %c = arith.constant 2.0 : f32
  %a2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%at : tensor<3x5xf32>) outs(%e : tensor<3x5xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %c : f32
    linalg.yield %0 : f32
  } -> tensor<3x5xf32>
  %e2 = tensor.empty() : tensor<7x4xf32>
  %bt = linalg.transpose ins(%b : tensor<4x7xf32>) outs(%e2 : tensor<7x4xf32>) permutation = [1, 0]
  %c0 = arith.constant 0 : i32
  return %xt, %a2, %bt, %c0 : tensor<3x5xf32>, tensor<3x5xf32>, tensor<7x4xf32>, i32
}

// -----

// Nothing to prepare: a 0-element packed buffer. Private functions are not
// kernels.
// CHECK-LABEL: func.func @no_params(
// CHECK-SAME: attn.packed_elements = 0 : i64
// CHECK-LABEL: func.func @no_params_prepare()
// CHECK-SAME: -> (tensor<0xf32>, i32)
// CHECK: tensor.empty() : tensor<0xf32>
// CHECK-LABEL: func.func @no_params_prepared(
// CHECK-SAME: %arg1: tensor<0xf32>
// CHECK-LABEL: func.func private @helper(
// CHECK-NOT: func.func @helper_prepare
func.func @no_params(%x: tensor<4xf32>) -> (tensor<4xf32>, i32) {
  %c0 = arith.constant 0 : i32
  return %x, %c0 : tensor<4xf32>, i32
}
func.func private @helper(%w: tensor<4x4xf32> {attn.role = "param"}) -> tensor<4x4xf32> {
  %e = tensor.empty() : tensor<4x4xf32>
  %wt = linalg.transpose ins(%w : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) permutation = [1, 0]
  return %wt : tensor<4x4xf32>
}
