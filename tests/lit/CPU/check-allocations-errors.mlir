// attn-check-allocations refuses what it cannot check, so that no
// allocation is left unchecked.
// RUN: attn-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(attn-check-allocations))' --verify-diagnostics

// expected-error @+1 {{allocates buffers or calls a kernel but does not return only an i32 status: a failed allocation could not be reported}}
func.func @no_status(%x: memref<4xf32>) {
  %a = memref.alloc() : memref<1024xf32>
  memref.dealloc %a : memref<1024xf32>
  return
}

// -----

func.func private @callee(memref<4xf32>) -> i32
func.func @call_in_loop(%x: memref<4xf32>) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    // expected-error @+1 {{calls a function that returns a status inside a loop: attn-check-allocations cannot report its failure}}
    %s = func.call @callee(%x) : (memref<4xf32>) -> i32
  }
  %ok = arith.constant 0 : i32
  return %ok : i32
}

// -----

func.func @memref_result(%x: memref<4xf32>) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %v = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %x) -> memref<4xf32> {
    // expected-error @+1 {{leaves its loop body: attn-check-allocations cannot skip that body when the allocation fails}}
    %a = memref.alloc() : memref<4xf32>
    scf.yield %a : memref<4xf32>
  }
  %ok = arith.constant 0 : i32
  return %ok : i32
}
