// attn-gpu-lower-decode-attention refuses what cannot become launches, with
// a location.
// RUN: attn-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(attn-gpu-lower-decode-attention))'

// Nested in other code: a launch is host code, at the function's top level.
func.func @nested(%q: memref<1x1x8xf32>, %k: memref<1x16x8xf32>,
                  %pos: memref<1xi32>, %o: memref<1x1x8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    // expected-error @below {{must be at the top level of its function for attn-gpu-lower-decode-attention (it becomes launches)}}
    attn.decode_attention %q, %k, %k at %pos outs(%o) heads(1) scale(0.35)
        : (memref<1x1x8xf32>, memref<1x16x8xf32>, memref<1x16x8xf32>,
           memref<1xi32>, memref<1x1x8xf32>) -> ()
  }
  return
}

// -----

// On tensors: bufferize first.
func.func @tensors(%q: tensor<1x1x8xf32>, %k: tensor<1x16x8xf32>,
                   %pos: tensor<1xi32>, %o: tensor<1x1x8xf32>)
    -> tensor<1x1x8xf32> {
  // expected-error @below {{must be bufferized before attn-gpu-lower-decode-attention}}
  %r = attn.decode_attention %q, %k, %k at %pos outs(%o) heads(1) scale(0.35)
      : (tensor<1x1x8xf32>, tensor<1x16x8xf32>, tensor<1x16x8xf32>,
         tensor<1xi32>, tensor<1x1x8xf32>) -> tensor<1x1x8xf32>
  return %r : tensor<1x1x8xf32>
}
