// attn.cache_update through attn-lower-to-linalg and bufferization: the
// rows are copied into the state's own buffer (no allocation of a cache),
// under the guard that every position is in range, and the kernel status
// is ATTNC_STATUS_CACHE_POSITION (-6) otherwise.
// RUN: attn-opt %s --attn-lower-to-linalg --canonicalize --cse --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --canonicalize --attn-drop-state-results | FileCheck %s

// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[ROWS:.*]]: memref<2x3x4xf32>, %[[POS:.*]]: memref<2xi32>, %[[CACHE:.*]]: memref<2x8x4xf32> {attn.role = "state"}) -> i32
// CHECK-DAG: %[[LAST:.*]] = arith.constant 6 : i32
// CHECK-DAG: %[[CODE:.*]] = arith.constant -6 : i32
// CHECK-NOT: memref.alloc() {{.*}} : memref<2x8x4xf32>
// CHECK: arith.cmpi sge, %{{.*}}, %[[LAST]] : i32
// CHECK: %[[BAD:.*]] = memref.load
// CHECK: %[[OK:.*]] = arith.cmpi eq, %[[BAD]], %{{.*}} : i32
// CHECK: scf.if %[[OK]] {
// CHECK:   scf.for %[[B:.*]] = 
// CHECK:     %[[P:.*]] = memref.load %[[POS]][%[[B]]] : memref<2xi32>
// CHECK:     %[[AT:.*]] = arith.index_cast %[[P]] : i32 to index
// CHECK:     %[[FROM:.*]] = memref.subview %[[ROWS]][%[[B]], 0, 0] [1, 3, 4] [1, 1, 1]
// CHECK:     %[[TO:.*]] = memref.subview %[[CACHE]][%[[B]], %[[AT]], 0] [1, 3, 4] [1, 1, 1]
// CHECK:     memref.copy %[[FROM]], %[[TO]]
// CHECK-NOT: else
// CHECK: %[[FAILED:.*]] = arith.cmpi ne, %[[BAD]]
// CHECK: %[[STATUS:.*]] = arith.select %[[FAILED]], %[[CODE]]
// CHECK: return %[[STATUS]] : i32
func.func @step(%rows: tensor<2x3x4xf32>, %pos: tensor<2xi32>, %cache: tensor<2x8x4xf32> {attn.role = "state"}) -> (tensor<2x8x4xf32> {attn.updates = 2 : i64}) {
  %0 = attn.cache_update %rows into %cache at %pos : tensor<2x3x4xf32>, tensor<2xi32> into tensor<2x8x4xf32>
  return %0 : tensor<2x8x4xf32>
}

// A positional_encoding offset out of range writes no cache row either: the
// cache's positions become -1 (out of range) when any offset is bad.
// CHECK-LABEL: func.func @step_with_encoding
// CHECK-SAME: %[[POS:[^:]*]]: memref<2xi32>, %[[OFF:[^:]*]]: memref<2xi32>
// CHECK-DAG: %[[MINUS1:.*]] = arith.constant -1 : i32
// CHECK: %[[OFFBAD:.*]] = memref.load
// CHECK: %[[ANY:.*]] = arith.cmpi ne, %[[OFFBAD]], %{{.*}} : i32
// CHECK: arith.select %[[ANY]], %[[MINUS1]], %{{.*}} : i32
// CHECK: scf.if
// CHECK: memref.copy
func.func @step_with_encoding(%rows: tensor<2x1x4xf32>, %pos: tensor<2xi32>, %offset: tensor<2xi32>, %x: tensor<2x1x4xf32>, %cache: tensor<2x8x4xf32> {attn.role = "state"}) -> (tensor<2x1x4xf32>, tensor<2x8x4xf32> {attn.updates = 4 : i64}) {
  %p = attn.positional_encoding %x offset(%offset : tensor<2xi32>) max_len(4) : tensor<2x1x4xf32>
  %0 = attn.cache_update %rows into %cache at %pos : tensor<2x1x4xf32>, tensor<2xi32> into tensor<2x8x4xf32>
  return %p, %0 : tensor<2x1x4xf32>, tensor<2x8x4xf32>
}
