// attn-forward-call-slices: a call's copy of a static slice of a 1-D buffer
// (a callee's region of its caller's packed params) becomes the buffer
// itself, through a declaration that records the byte offsets.
// RUN: attn-opt %s --split-input-file --attn-forward-call-slices | FileCheck %s

// Read: the callee's packed argument reads region [128, 256) in place.
// CHECK-LABEL: func.func @c_prepared(
// CHECK-SAME: %[[X:.*]]: memref<4xf32>, %[[PACKED:.*]]: memref<256xf32> {attn.name = "packed"}, %[[OUT:.*]]: memref<4xf32>)
// CHECK-NEXT: %[[R:.*]] = call @k_prepared.at.0(%[[X]], %[[PACKED]], %[[OUT]]) : (memref<4xf32>, memref<256xf32>, memref<4xf32>) -> i32
// CHECK-NEXT: return %[[R]]
// CHECK: func.func private @k_prepared.at.0(memref<4xf32>, memref<256xf32>, memref<4xf32>) -> i32 attributes {attn.offset_call_bytes = array<i64: 0, 512, 0>, attn.offset_call_of = @k_prepared}
func.func private @k_prepared(%x: memref<4xf32> {attn.name = "X", attn.role = "input"},
                              %p: memref<128xf32> {attn.name = "packed"},
                              %out: memref<4xf32>) -> i32
    attributes {attn.kernel_part = "prepared"}
func.func @c_prepared(%x: memref<4xf32>, %packed: memref<256xf32> {attn.name = "packed"},
                      %out: memref<4xf32>) -> i32 {
  %s = memref.subview %packed[128] [128] [1] : memref<256xf32> to memref<128xf32, strided<[1], offset: 128>>
  %b = memref.alloc() : memref<128xf32>
  memref.copy %s, %b : memref<128xf32, strided<[1], offset: 128>> to memref<128xf32>
  %r = call @k_prepared(%x, %b, %out) : (memref<4xf32>, memref<128xf32>, memref<4xf32>) -> i32
  return %r : i32
}

// -----

// Write: the callee's _prepare fills region [64, 192) of the caller's
// output in place.
// CHECK-LABEL: func.func @c_prepare(
// CHECK-SAME: %[[W:.*]]: memref<8xf32>, %[[OUT:.*]]: memref<192xf32>)
// CHECK-NEXT: %[[R:.*]] = call @k_prepare.at.0(%[[W]], %[[OUT]]) : (memref<8xf32>, memref<192xf32>) -> i32
// CHECK-NOT: memref.copy
// CHECK: attn.offset_call_bytes = array<i64: 0, 256>, attn.offset_call_of = @k_prepare
func.func private @k_prepare(%w: memref<8xf32> {attn.name = "W", attn.role = "param"},
                             %packed: memref<128xf32>) -> i32
    attributes {attn.kernel_part = "prepare"}
func.func @c_prepare(%w: memref<8xf32>, %out: memref<192xf32>) -> i32 {
  %b = memref.alloc() : memref<128xf32>
  %r = call @k_prepare(%w, %b) : (memref<8xf32>, memref<128xf32>) -> i32
  %s = memref.subview %out[64] [128] [1] : memref<192xf32> to memref<128xf32, strided<[1], offset: 64>>
  memref.copy %b, %s : memref<128xf32> to memref<128xf32, strided<[1], offset: 64>>
  return %r : i32
}

// -----

// Left alone: a slice of a buffer that is not a packed argument (it could
// be written), a callee argument that is not its packed one (it could
// write it), a write with a use of the output in between, and a callee
// that reaches the output through another operand.
// CHECK-LABEL: func.func @kept(
// CHECK-COUNT-4: memref.copy
// CHECK-NOT: .at.
func.func private @k_prepared(%x: memref<128xf32> {attn.name = "X", attn.role = "input"},
                              %p: memref<128xf32> {attn.name = "packed"}) -> i32
    attributes {attn.kernel_part = "prepared"}
func.func private @k_prepare(%w: memref<192xf32>, %packed: memref<128xf32>) -> i32
    attributes {attn.kernel_part = "prepare"}
func.func private @k_prepare2(%w: memref<256xf32>, %packed: memref<128xf32>) -> i32
    attributes {attn.kernel_part = "prepare"}
func.func @kept(%packed: memref<256xf32> {attn.name = "packed"}, %other: memref<256xf32>,
                %out: memref<192xf32>) -> i32 {
  %s1 = memref.subview %other[128] [128] [1] : memref<256xf32> to memref<128xf32, strided<[1], offset: 128>>
  %b1 = memref.alloc() : memref<128xf32>
  memref.copy %s1, %b1 : memref<128xf32, strided<[1], offset: 128>> to memref<128xf32>
  %s2 = memref.subview %packed[128] [128] [1] : memref<256xf32> to memref<128xf32, strided<[1], offset: 128>>
  %b2 = memref.alloc() : memref<128xf32>
  memref.copy %s2, %b2 : memref<128xf32, strided<[1], offset: 128>> to memref<128xf32>
  %r1 = call @k_prepared(%b2, %b1) : (memref<128xf32>, memref<128xf32>) -> i32
  %b3 = memref.alloc() : memref<128xf32>
  %r2 = call @k_prepare(%out, %b3) : (memref<192xf32>, memref<128xf32>) -> i32
  %s3 = memref.subview %out[64] [128] [1] : memref<192xf32> to memref<128xf32, strided<[1], offset: 64>>
  memref.copy %b3, %s3 : memref<128xf32> to memref<128xf32, strided<[1], offset: 64>>
  %b4 = memref.alloc() : memref<128xf32>
  %r3 = call @k_prepare2(%other, %b4) : (memref<256xf32>, memref<128xf32>) -> i32
  %c = arith.constant 0.0 : f32
  %i = arith.constant 0 : index
  memref.store %c, %out[%i] : memref<192xf32>
  %s4 = memref.subview %out[64] [128] [1] : memref<192xf32> to memref<128xf32, strided<[1], offset: 64>>
  memref.copy %b4, %s4 : memref<128xf32> to memref<128xf32, strided<[1], offset: 64>>
  %s = arith.addi %r1, %r2 : i32
  %t = arith.addi %s, %r3 : i32
  return %t : i32
}
