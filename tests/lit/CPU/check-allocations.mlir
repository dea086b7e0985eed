// attn-check-allocations: a null buffer returns ATTNC_STATUS_OUT_OF_MEMORY
// (-7) after freeing what was allocated before and is still held; in a loop
// it skips the rest of the body and marks the function; a callee's -7 is
// the caller's. The pointer is compared after an empty inline asm (LLVM
// folds malloc(n) == null to false for a buffer that does not escape).
// RUN: attn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(attn-check-allocations))' | FileCheck %s

// CHECK-LABEL: func.func @body(
// CHECK: %[[A:.*]] = memref.alloc() : memref<1024xf32>
// CHECK: %[[P:.*]] = memref.extract_aligned_pointer_as_index %[[A]]
// CHECK: %[[I:.*]] = arith.index_cast %[[P]] : index to i64
// CHECK: %[[Q:.*]] = llvm.inline_asm "", "=r,0" %[[I]] : (i64) -> i64
// CHECK: %[[N:.*]] = arith.cmpi eq, %[[Q]], %{{.*}} : i64
// CHECK: cf.cond_br %[[N]], ^[[OOM1:.*]], ^[[NEXT1:.*]]
// CHECK: ^[[OOM1]]:
// CHECK-NEXT: %[[S1:.*]] = arith.constant -7 : i32
// CHECK-NEXT: return %[[S1]]
// CHECK: ^[[NEXT1]]:
// CHECK: %[[B:.*]] = memref.alloc() : memref<2048xf32>
// CHECK: cf.cond_br %{{.*}}, ^[[OOM2:.*]], ^[[NEXT2:.*]]
// CHECK: ^[[OOM2]]:
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: arith.constant -7
// CHECK: ^[[NEXT2]]:
// CHECK: memref.alloc() : memref<16xf32>
// CHECK: cf.cond_br %{{.*}}, ^[[OOM3:.*]], ^
// A was freed before the third allocation: only B is.
// CHECK: ^[[OOM3]]:
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK-NEXT: arith.constant -7
func.func @body(%x: memref<4xf32>) -> i32 {
  %a = memref.alloc() : memref<1024xf32>
  %b = memref.alloc() : memref<2048xf32>
  memref.dealloc %a : memref<1024xf32>
  %c = memref.alloc() : memref<16xf32>
  memref.dealloc %b : memref<2048xf32>
  memref.dealloc %c : memref<16xf32>
  %ok = arith.constant 0 : i32
  return %ok : i32
}

// -----

// CHECK-LABEL: func.func @loop(
// CHECK: %[[MARK:.*]] = memref.alloca() : memref<i32>
// CHECK: memref.store %{{.*}}, %[[MARK]][]
// CHECK: scf.for {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32)
// CHECK: %[[PANEL:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64xf32>
// CHECK: llvm.inline_asm
// CHECK: %[[NULL:.*]] = arith.cmpi eq
// CHECK: %[[THERE:.*]] = arith.xori %[[NULL]], %true
// CHECK: %[[R:.*]] = scf.if %[[THERE]] -> (f32) {
// CHECK: memref.store %[[ACC]], %[[PANEL]]
// CHECK: memref.dealloc %[[PANEL]]
// CHECK: scf.yield %{{.*}} : f32
// CHECK: } else {
// CHECK: %[[OOM:.*]] = arith.constant -7 : i32
// CHECK: memref.atomic_rmw assign %[[OOM]], %[[MARK]][]
// CHECK: scf.yield %{{.*}} : f32
// CHECK: scf.yield %[[R]] : f32
// CHECK: %[[M:.*]] = memref.load %[[MARK]][]
// CHECK: %[[FAILED:.*]] = arith.cmpi ne, %[[M]]
// CHECK: %[[S:.*]] = arith.select %[[FAILED]], %[[M]], %{{.*}} : i32
// CHECK: return %[[S]] : i32
func.func @loop(%x: memref<4xf32>) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> f32 {
    %panel = memref.alloc() {alignment = 64 : i64} : memref<64xf32>
    memref.store %acc, %panel[%c0] : memref<64xf32>
    %v = memref.load %panel[%c0] : memref<64xf32>
    memref.dealloc %panel : memref<64xf32>
    %next = arith.addf %v, %zero : f32
    scf.yield %next : f32
  }
  memref.store %sum, %x[%c0] : memref<4xf32>
  %ok = arith.constant 0 : i32
  return %ok : i32
}

// -----

// NAME calls NAME_prepare and NAME_prepared: a callee's out of memory
// returns at once (NAME_prepared does not run on an unprepared buffer).
// CHECK-LABEL: func.func @caller(
// CHECK: %[[S:.*]] = call @prepare(
// CHECK: %[[OOM:.*]] = arith.constant -7 : i32
// CHECK: %[[F:.*]] = arith.cmpi eq, %[[S]], %[[OOM]] : i32
// CHECK: cf.cond_br %[[F]], ^[[RET:.*]], ^[[NEXT:.*]]
// CHECK: ^[[RET]]:
// CHECK: arith.constant -7
// CHECK: ^[[NEXT]]:
// CHECK: call @prepared(
func.func private @prepare(memref<4xf32>) -> i32
func.func private @prepared(memref<4xf32>) -> i32
func.func @caller(%x: memref<4xf32>) -> i32 {
  %s = call @prepare(%x) : (memref<4xf32>) -> i32
  %t = call @prepared(%x) : (memref<4xf32>) -> i32
  return %t : i32
}
