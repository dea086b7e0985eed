// attn-gpu-merge-kernel-modules: the modules gpu-kernel-outlining makes (one
// per kernel, each kernel named like the block) become one `kernels`
// module, each kernel named after its module, one copy of a shared
// constant, launches repointed.
// RUN: attn-opt %s --gpu-kernel-outlining --attn-gpu-merge-kernel-modules \
// RUN:   | FileCheck %s

// CHECK-LABEL: func.func @k
// CHECK:       gpu.launch_func async @kernels::@k_kernel blocks
// CHECK:       gpu.launch_func async [%{{.*}}] @kernels::@k_kernel_0 blocks
// CHECK:     gpu.module @kernels
// CHECK:       gpu.func @k_kernel(
// CHECK:       gpu.func @k_kernel_0(
// CHECK-NOT: gpu.module
// RUN: attn-opt %s --gpu-kernel-outlining --attn-gpu-merge-kernel-modules \
// RUN:   | FileCheck %s --check-prefix=TABLE
// The host's and one copy in @kernels.
// TABLE-COUNT-2: memref.global "private" constant @table
// TABLE-NOT:     memref.global "private" constant @table
module attributes {gpu.container_module} {
  memref.global "private" constant @table : memref<4xf32> = dense<1.0>
  func.func @k(%out: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    %t0 = gpu.launch async blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
                           threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      %c0 = arith.constant 0 : index
      %table = memref.get_global @table : memref<4xf32>
      %v = memref.load %table[%c0] : memref<4xf32>
      memref.store %v, %out[%c0] : memref<4xf32>
      gpu.terminator
    }
    %t1 = gpu.launch async [%t0] blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
                           threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      %c1_0 = arith.constant 1 : index
      %table = memref.get_global @table : memref<4xf32>
      %v = memref.load %table[%c1_0] : memref<4xf32>
      memref.store %v, %out[%c1_0] : memref<4xf32>
      gpu.terminator
    }
    return
  }
}
