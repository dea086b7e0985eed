// attn-gpu-map-loops refuses what it cannot map, with a location.
// RUN: attn-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(attn-gpu-map-loops))'

func.func @dynamic(%a: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @below {{has a bound that is not a constant; GPU kernels need static shapes}}
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %a[%i] : memref<?xf32>
    memref.store %v, %a[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

// -----

func.func @host_uses_a_device_value(%a: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  // expected-error @below {{computes a value that host code uses; it cannot run on the GPU}}
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> f32 {
    %v = memref.load %a[%i] : memref<4xf32>
    %s = arith.addf %acc, %v : f32
    scf.yield %s : f32
  }
  return %r : f32
}

