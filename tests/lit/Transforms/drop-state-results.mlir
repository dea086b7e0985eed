// attn-drop-state-results: a result tied to a state argument (attn.updates)
// that returns the argument's buffer is dropped from the function and its
// calls (callees first); one that returns any other buffer is a copy the
// caller would never see: an error naming the state.
// RUN: attn-opt %s --split-input-file --attn-drop-state-results --verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @k_prepared
// CHECK-SAME: (%[[X:.*]]: memref<4xf32>, %[[S:.*]]: memref<4xf32> {attn.name = "S", attn.role = "state"}) -> (memref<4xf32> {attn.name = "Y"})
// CHECK: linalg.copy ins(%[[X]] : memref<4xf32>) outs(%[[S]] : memref<4xf32>)
// CHECK: return %{{.*}} : memref<4xf32>
func.func @k_prepared(%x: memref<4xf32>, %s: memref<4xf32> {attn.name = "S", attn.role = "state"}) -> (memref<4xf32> {attn.name = "Y"}, memref<4xf32> {attn.name = "S", attn.updates = 1 : i64}) {
  %y = memref.alloc() : memref<4xf32>
  linalg.copy ins(%x : memref<4xf32>) outs(%s : memref<4xf32>)
  %c = memref.cast %s : memref<4xf32> to memref<4xf32>
  return %y, %c : memref<4xf32>, memref<4xf32>
}

// The kernel returns what its call returned: dropped once the callee's is.
// CHECK-LABEL: func.func @k
// CHECK-SAME: -> (memref<4xf32> {attn.name = "Y"})
// CHECK: %[[Y:.*]] = call @k_prepared(%{{.*}}, %{{.*}}) : (memref<4xf32>, memref<4xf32>) -> memref<4xf32>
// CHECK: return %[[Y]] : memref<4xf32>
func.func @k(%x: memref<4xf32>, %s: memref<4xf32> {attn.name = "S", attn.role = "state"}) -> (memref<4xf32> {attn.name = "Y"}, memref<4xf32> {attn.name = "S", attn.updates = 1 : i64}) {
  %y, %t = call @k_prepared(%x, %s) : (memref<4xf32>, memref<4xf32>) -> (memref<4xf32>, memref<4xf32>)
  return %y, %t : memref<4xf32>, memref<4xf32>
}

// -----

func.func @copied(%x: memref<4xf32>, %s: memref<4xf32> {attn.name = "S", attn.role = "state"}) -> (memref<4xf32> {attn.name = "S", attn.updates = 1 : i64}) {
  %t = memref.alloc() : memref<4xf32>
  linalg.copy ins(%x : memref<4xf32>) outs(%t : memref<4xf32>)
  // expected-error @+1 {{state 'S' would be updated in a copy of its buffer, not in place: the caller would not see the update (a state may be read by nothing after the op that updates it)}}
  return %t : memref<4xf32>
}
