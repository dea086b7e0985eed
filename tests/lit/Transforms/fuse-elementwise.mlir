// attn-fuse-elementwise: chains of elementwise linalg.generics fuse into one;
// a transpose feeding a matmul does not, so the matmul stays a named op.
// RUN: attn-opt %s --attn-fuse-elementwise | FileCheck %s

#id = affine_map<(i, j) -> (i, j)>

// CHECK-LABEL: func.func @chain_fuses
func.func @chain_fuses(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = arith.constant 0.5 : f32
  %e0 = tensor.empty() : tensor<4x8xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e0 : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %c : f32
    linalg.yield %0 : f32
  } -> tensor<4x8xf32>
  %e1 = tensor.empty() : tensor<4x8xf32>
  %exp = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%scaled : tensor<4x8xf32>) outs(%e1 : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    linalg.yield %0 : f32
  } -> tensor<4x8xf32>
  // one generic computes exp(x * 0.5)
  // CHECK: linalg.generic
  // CHECK: arith.mulf
  // CHECK-NEXT: math.exp
  // CHECK-NOT: linalg.generic
  return %exp : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @matmul_stays_named
func.func @matmul_stays_named(%a: tensor<4x8xf32>, %w: tensor<6x8xf32>, %acc: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %e = tensor.empty() : tensor<8x6xf32>
  // CHECK: linalg.transpose
  %t = linalg.transpose ins(%w : tensor<6x8xf32>) outs(%e : tensor<8x6xf32>) permutation = [1, 0]
  // CHECK: linalg.matmul
  %0 = linalg.matmul ins(%a, %t : tensor<4x8xf32>, tensor<8x6xf32>) outs(%acc : tensor<4x6xf32>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}
