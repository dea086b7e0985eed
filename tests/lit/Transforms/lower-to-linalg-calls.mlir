// attn-lower-to-linalg appends the kernel status to every function; a call
// of another kernel of the module (a block calling a block) gets that
// status as an extra result, and it counts in the caller's: its position
// status (-6) is the caller's, any other failure a 1.
// RUN: attn-opt %s --attn-lower-to-linalg | FileCheck %s

// CHECK-LABEL: func.func private @lookup(
// CHECK-SAME: -> (tensor<3x4xf32>, i32)
// CHECK-LABEL: func.func @top(
// CHECK-SAME: -> (tensor<3x4xf32>, i32)
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[POSITION:.*]] = arith.constant -6 : i32
// CHECK: %[[A:.*]]:2 = call @lookup(%arg0, %arg1) : (tensor<3xi32>, tensor<10x4xf32>) -> (tensor<3x4xf32>, i32)
// CHECK: %[[APOS:.*]] = arith.cmpi eq, %[[A]]#1, %[[POSITION]] : i32
// CHECK: %[[AFAIL:.*]] = arith.cmpi ne, %[[A]]#1, %[[ZERO]] : i32
// CHECK: %[[ANOTPOS:.*]] = arith.cmpi ne, %[[A]]#1, %[[POSITION]] : i32
// CHECK: %[[AOTHER:.*]] = arith.andi %[[AFAIL]], %[[ANOTPOS]] : i1
// CHECK: %[[APOS32:.*]] = arith.extui %[[APOS]] : i1 to i32
// CHECK: %[[AOTHER32:.*]] = arith.extui %[[AOTHER]] : i1 to i32
// CHECK: %[[B:.*]]:2 = call @lookup(%arg0, %arg1)
// CHECK: %[[BPOS32:.*]] = arith.extui %{{.*}} : i1 to i32
// CHECK: %[[BOTHER32:.*]] = arith.extui %{{.*}} : i1 to i32
// CHECK: linalg.generic
// summed at the return: another failure is a 1, a position failure -6
// CHECK: %[[OTHERS:.*]] = arith.addi %[[AOTHER32]], %[[BOTHER32]] : i32
// CHECK-NEXT: %[[BAD:.*]] = arith.cmpi ne, %[[OTHERS]], %[[ZERO]] : i32
// CHECK-NEXT: %[[ONE:.*]] = arith.extui %[[BAD]] : i1 to i32
// CHECK-NEXT: %[[POSITIONS:.*]] = arith.addi %[[APOS32]], %[[BPOS32]] : i32
// CHECK-NEXT: %[[BADPOS:.*]] = arith.cmpi ne, %[[POSITIONS]], %[[ZERO]] : i32
// CHECK-NEXT: %[[RESULT:.*]] = arith.select %[[BADPOS]], %[[POSITION]], %[[ONE]] : i32
// CHECK-NEXT: return %{{.*}}, %[[RESULT]] : tensor<3x4xf32>, i32
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

// A cache written after a call: the write's positions become -1 (nothing
// written) when the call's status is the position status.
// CHECK-LABEL: func.func @write_after_call(
// CHECK: %[[C:.*]]:2 = call @rows(%arg0, %arg1)
// CHECK: %[[CPOS:.*]] = arith.cmpi eq, %[[C]]#1, %{{.*}} : i32
// the call's flag (cmpi ne of its 0/1 folded to the flag) picks -1
// CHECK: linalg.generic {{.*}} ins(%arg3 : tensor<1xi32>) outs(%{{.*}} : tensor<1xi32>)
// CHECK:   arith.select %[[CPOS]], %{{.*}}, %{{.*}} : i32
func.func private @rows(%ids: tensor<1x3xi32>, %table: tensor<10x4xf32>) -> tensor<1x3x4xf32> {
  %e = attn.embedding %ids, %table : (tensor<1x3xi32>, tensor<10x4xf32>) -> tensor<1x3x4xf32>
  return %e : tensor<1x3x4xf32>
}
func.func @write_after_call(%ids: tensor<1x3xi32>, %table: tensor<10x4xf32>, %cache: tensor<1x8x4xf32>, %pos: tensor<1xi32>) -> tensor<1x8x4xf32> {
  %rows = call @rows(%ids, %table) : (tensor<1x3xi32>, tensor<10x4xf32>) -> tensor<1x3x4xf32>
  %c = attn.cache_update %rows into %cache at %pos : tensor<1x3x4xf32>, tensor<1xi32> into tensor<1x8x4xf32>
  return %c : tensor<1x8x4xf32>
}

// Failures counted before and after calls, and a cache written before a
// call (not guarded by it): the counts are summed at the return, which
// every one of them dominates.
// CHECK-LABEL: func.func @before_and_after(
// CHECK: %[[R:.*]]:2 = call @rows
// CHECK: arith.cmpi eq, %[[R]]#1
// CHECK: return
func.func @before_and_after(%ids: tensor<1x3xi32>, %table: tensor<10x4xf32>, %cache: tensor<1x8x4xf32>, %pos: tensor<1xi32>) -> (tensor<1x3x4xf32>, tensor<1x8x4xf32>, tensor<1x3x4xf32>) {
  %first = attn.embedding %ids, %table : (tensor<1x3xi32>, tensor<10x4xf32>) -> tensor<1x3x4xf32>
  %c = attn.cache_update %first into %cache at %pos : tensor<1x3x4xf32>, tensor<1xi32> into tensor<1x8x4xf32>
  %rows = call @rows(%ids, %table) : (tensor<1x3xi32>, tensor<10x4xf32>) -> tensor<1x3x4xf32>
  return %first, %c, %rows : tensor<1x3x4xf32>, tensor<1x8x4xf32>, tensor<1x3x4xf32>
}
