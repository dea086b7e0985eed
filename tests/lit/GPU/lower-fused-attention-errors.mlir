// attn-gpu-lower-fused-attention refuses what cannot become a launch, with
// a location.
// RUN: attn-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(attn-gpu-lower-fused-attention))'

// Nested in other code: a launch is host code, at the function's top level.
func.func @nested(%q: memref<1x4x8xf32>, %o: memref<1x4x8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    // expected-error @below {{must be at the top level of its function for attn-gpu-lower-fused-attention (it becomes a launch)}}
    attn.fused_attention %q, %q, %q outs(%o) scale(0.35)
        : (memref<1x4x8xf32>, memref<1x4x8xf32>, memref<1x4x8xf32>,
           memref<1x4x8xf32>) -> ()
  }
  return
}

// -----

// Heads whose key and value rows pass the shared memory of a block.
func.func @huge_heads(%q: memref<1x4x8192xf32>, %o: memref<1x4x8192xf32>) {
  // expected-error @below {{has heads of 8192 key and 8192 value columns, whose key and value rows do not fit the 32768 bytes of shared memory an attention block has}}
  attn.fused_attention %q, %q, %q outs(%o) scale(0.01)
      : (memref<1x4x8192xf32>, memref<1x4x8192xf32>, memref<1x4x8192xf32>,
         memref<1x4x8192xf32>) -> ()
  return
}
