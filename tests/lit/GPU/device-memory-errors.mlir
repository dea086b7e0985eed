// attn-gpu-device-memory refuses host code it cannot place on the device.
// RUN: attn-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(attn-gpu-device-memory))'

memref.global "private" constant @table : memref<4xf32> = dense<1.0>

func.func @host_reads_a_constant(%out: memref<4xf32>) {
  // expected-error @below {{is used by host code; constants reach the GPU only inside kernels}}
  %table = memref.get_global @table : memref<4xf32>
  memref.copy %table, %out : memref<4xf32> to memref<4xf32>
  return
}

// -----

func.func @reads_back_a_big_buffer(%a: memref<2048xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  // expected-error @below {{reads a device buffer that is not a small dense one back to the host}}
  %v = memref.load %a[%c0] : memref<2048xf32>
  return %v : f32
}
