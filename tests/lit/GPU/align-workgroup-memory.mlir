// attn-gpu-align-workgroup-memory: every workgroup buffer of every kernel
// says kWorkgroupAlignment (16 bytes, an ld.shared.v4), which the NVVM
// lowering makes the alignment of its .shared variable; a larger one stays.
// RUN: attn-opt %s --pass-pipeline='builtin.module(gpu.module(attn-gpu-align-workgroup-memory))' \
// RUN:   | FileCheck %s
// RUN: attn-opt %s --pass-pipeline='builtin.module(gpu.module(attn-gpu-align-workgroup-memory))' \
// RUN:   | mlir-opt --convert-gpu-to-nvvm | FileCheck %s --check-prefix=NVVM
// Without the pass, the variables have their element's alignment.
// RUN: mlir-opt %s --convert-gpu-to-nvvm | FileCheck %s --check-prefix=BEFORE

// CHECK-LABEL: gpu.func @two_tiles
// CHECK-SAME:  workgroup(%{{.*}} : memref<8x4xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<3xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK-LABEL: gpu.func @aligned_already
// CHECK-SAME:  workgroup(%{{.*}} : memref<16xf32, #gpu.address_space<workgroup>> {llvm.align = 64 : i64}, %{{.*}} : memref<16xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// NVVM-DAG: llvm.mlir.global internal @__wg_two_tiles_0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<32 x f32>
// NVVM-DAG: llvm.mlir.global internal @__wg_two_tiles_1() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<3 x f32>
// NVVM-DAG: llvm.mlir.global internal @__wg_aligned_already_0() {addr_space = 3 : i32, alignment = 64 : i64}
// NVVM-DAG: llvm.mlir.global internal @__wg_aligned_already_1() {addr_space = 3 : i32, alignment = 16 : i64}
// BEFORE: llvm.mlir.global internal @__wg_two_tiles_0() {addr_space = 3 : i32} : !llvm.array<32 x f32>
gpu.module @kernels {
  gpu.func @two_tiles(%out: memref<4xf32>)
      workgroup(%a : memref<8x4xf32, #gpu.address_space<workgroup>>,
                %b : memref<3xf32, #gpu.address_space<workgroup>>) kernel {
    %c0 = arith.constant 0 : index
    %row = vector.load %a[%c0, %c0] : memref<8x4xf32, #gpu.address_space<workgroup>>, vector<4xf32>
    %x = memref.load %b[%c0] : memref<3xf32, #gpu.address_space<workgroup>>
    %splat = vector.broadcast %x : f32 to vector<4xf32>
    %sum = arith.addf %row, %splat : vector<4xf32>
    vector.store %sum, %out[%c0] : memref<4xf32>, vector<4xf32>
    gpu.return
  }
  gpu.func @aligned_already(%out: memref<16xf32>)
      workgroup(%a : memref<16xf32, #gpu.address_space<workgroup>> {llvm.align = 64 : i64},
                %b : memref<16xf32, #gpu.address_space<workgroup>> {llvm.align = 4 : i64}) kernel {
    %c0 = arith.constant 0 : index
    %x = vector.load %a[%c0] : memref<16xf32, #gpu.address_space<workgroup>>, vector<16xf32>
    %y = vector.load %b[%c0] : memref<16xf32, #gpu.address_space<workgroup>>, vector<16xf32>
    %sum = arith.addf %x, %y : vector<16xf32>
    vector.store %sum, %out[%c0] : memref<16xf32>, vector<16xf32>
    gpu.return
  }
}
