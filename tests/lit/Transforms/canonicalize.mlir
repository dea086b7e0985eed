// Folds of the attn ops under --canonicalize.
// RUN: attn-opt %s --canonicalize | FileCheck %s

// Dropout is the identity at inference.
// CHECK-LABEL: func.func @dropout_folds
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @dropout_folds(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = attn.dropout %x p(0.5) : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// Scaling by exactly 1 folds; any other factor stays.
// CHECK-LABEL: func.func @scale_by_one_folds
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: %[[S:.*]] = attn.scale %[[X]] factor(5.000000e-01)
// CHECK-NEXT: return %[[S]]
func.func @scale_by_one_folds(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = attn.scale %x factor(1.0) : tensor<2x3xf32>
  %1 = attn.scale %0 factor(0.5) : tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}
