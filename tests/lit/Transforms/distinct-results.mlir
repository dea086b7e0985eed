// attn-distinct-results: a tensor returned more than once gets a copy per
// repeat (each output is its own buffer in the ABI); block arguments and
// values returned once are left alone.
// RUN: attn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(attn-distinct-results))' | FileCheck %s

// CHECK-LABEL: func.func @twice
// CHECK-SAME: (%[[X:.*]]: tensor<2xf32>)
// CHECK: %[[Y:.*]] = math.exp %[[X]]
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2xf32>
// CHECK: %[[C:.*]] = linalg.copy ins(%[[Y]] : tensor<2xf32>) outs(%[[E]] : tensor<2xf32>) -> tensor<2xf32>
// CHECK: return %[[Y]], %[[C]], %[[X]] : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
func.func @twice(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %y = math.exp %x : tensor<2xf32>
  return %y, %y, %x : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}

// -----

// CHECK-LABEL: func.func @once
// CHECK-NOT: linalg.copy
func.func @once(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %y = math.exp %x : tensor<2xf32>
  return %y, %x : tensor<2xf32>, tensor<2xf32>
}
