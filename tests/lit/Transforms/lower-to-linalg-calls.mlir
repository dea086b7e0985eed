// attn-lower-to-linalg appends the kernel status to every function; a call
// of another kernel of the module (a block calling a block) gets that
// status as an extra result, and it counts in the caller's.
// RUN: attn-opt %s --attn-lower-to-linalg | FileCheck %s

// CHECK-LABEL: func.func private @lookup(
// CHECK-SAME: -> (tensor<3x4xf32>, i32)
// CHECK-LABEL: func.func @top(
// CHECK-SAME: -> (tensor<3x4xf32>, i32)
// CHECK: %[[A:.*]]:2 = call @lookup(%arg0, %arg1) : (tensor<3xi32>, tensor<10x4xf32>) -> (tensor<3x4xf32>, i32)
// CHECK: %[[B:.*]]:2 = call @lookup(%arg0, %arg1)
// CHECK: %[[SUM:.*]] = arith.addi %[[A]]#1, %[[B]]#1 : i32
// CHECK: %[[BAD:.*]] = arith.cmpi ne, %[[SUM]], %{{.*}} : i32
// CHECK: %[[STATUS:.*]] = arith.extui %[[BAD]] : i1 to i32
// CHECK: return %{{.*}}, %[[STATUS]] : tensor<3x4xf32>, i32
func.func private @lookup(%ids: tensor<3xi32>, %table: tensor<10x4xf32>) -> tensor<3x4xf32> {
  %e = attn.embedding %ids, %table : (tensor<3xi32>, tensor<10x4xf32>) -> tensor<3x4xf32>
  return %e : tensor<3x4xf32>
}
func.func @top(%ids: tensor<3xi32>, %table: tensor<10x4xf32>) -> tensor<3x4xf32> {
  %a = call @lookup(%ids, %table) : (tensor<3xi32>, tensor<10x4xf32>) -> tensor<3x4xf32>
  %b = call @lookup(%ids, %table) : (tensor<3xi32>, tensor<10x4xf32>) -> tensor<3x4xf32>
  %s = attn.add %a, %b : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return %s : tensor<3x4xf32>
}
