// attn-forward-call-outputs: a buffer that only takes a call's output and is
// then copied into the function's output argument becomes that argument.
// RUN: attn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(attn-forward-call-outputs))' | FileCheck %s

func.func private @k_prepared(memref<4xf32>, memref<4xf32>) -> i32

// CHECK-LABEL: func.func @forwarded
// CHECK-SAME: (%[[X:.*]]: memref<4xf32>, %[[OUT:.*]]: memref<4xf32>)
// CHECK-NOT: memref.alloc
// CHECK: %[[S:.*]] = call @k_prepared(%[[X]], %[[OUT]])
// CHECK-NOT: memref.copy
// CHECK: return %[[S]]
func.func @forwarded(%x: memref<4xf32>, %out: memref<4xf32>) -> i32 {
  %b = memref.alloc() : memref<4xf32>
  %s = call @k_prepared(%x, %b) : (memref<4xf32>, memref<4xf32>) -> i32
  memref.copy %b, %out : memref<4xf32> to memref<4xf32>
  return %s : i32
}

// -----

func.func private @k_prepared(memref<4xf32>, memref<4xf32>) -> i32

// The buffer is also read after the call: it stays.
// CHECK-LABEL: func.func @read_too
// CHECK: %[[B:.*]] = memref.alloc
// CHECK: call @k_prepared(%{{.*}}, %[[B]])
// CHECK: memref.copy %[[B]]
func.func @read_too(%x: memref<4xf32>, %out: memref<4xf32>) -> f32 {
  %b = memref.alloc() : memref<4xf32>
  %s = call @k_prepared(%x, %b) : (memref<4xf32>, memref<4xf32>) -> i32
  memref.copy %b, %out : memref<4xf32> to memref<4xf32>
  %c0 = arith.constant 0 : index
  %v = memref.load %b[%c0] : memref<4xf32>
  return %v : f32
}

// -----

func.func private @k_prepared(memref<4xf32>, memref<4xf32>) -> i32

// The output argument is also used elsewhere: the copy stays.
// CHECK-LABEL: func.func @output_used
// CHECK: memref.alloc
// CHECK: memref.copy
func.func @output_used(%x: memref<4xf32>, %out: memref<4xf32>) -> i32 {
  %b = memref.alloc() : memref<4xf32>
  %s = call @k_prepared(%out, %b) : (memref<4xf32>, memref<4xf32>) -> i32
  memref.copy %b, %out : memref<4xf32> to memref<4xf32>
  return %s : i32
}
