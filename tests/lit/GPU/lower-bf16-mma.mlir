// attn-gpu-lower-bf16-mma: nvgpu.mma.sync on bf16 (which MLIR 22's
// convert-nvgpu-to-nvvm cannot type) becomes nvvm.mma.sync with each
// register's pair of bf16 in an i32; f16 is left to convert-nvgpu-to-nvvm.
// The PTX: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32.
// RUN: attn-opt %s \
// RUN:   --pass-pipeline='builtin.module(gpu.module(attn-gpu-lower-bf16-mma))' \
// RUN:   | FileCheck %s
// RUN: attn-opt %s \
// RUN:   --pass-pipeline='builtin.module(gpu.module(attn-gpu-lower-bf16-mma,convert-nvgpu-to-nvvm,convert-gpu-to-nvvm,reconcile-unrealized-casts))' \
// RUN:   | FileCheck %s --check-prefix=NVVM

// CHECK-LABEL: gpu.func @bf16
// CHECK-COUNT-4: vector.bitcast %{{.*}} : vector<2xbf16> to vector<1xi32>
// CHECK-COUNT-2: vector.bitcast %{{.*}} : vector<2xbf16> to vector<1xi32>
// CHECK:         %[[D:.*]] = nvvm.mma.sync A[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] B[%{{.*}}, %{{.*}}] C[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}]
// CHECK-SAME:      layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>
// CHECK-SAME:      multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>
// CHECK-SAME:      shape = #nvvm.shape<m = 16, n = 8, k = 16>
// CHECK-SAME:      (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-COUNT-4: llvm.extractvalue %[[D]][{{[0-3]}}]
// CHECK:         vector.from_elements {{.*}} : vector<2x2xf32>
// CHECK-NOT:     nvgpu.mma.sync
// CHECK-LABEL: gpu.func @f16
// CHECK:         nvgpu.mma.sync
// NVVM-LABEL: llvm.func @bf16
// NVVM:         nvvm.mma.sync {{.*}} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// NVVM-LABEL: llvm.func @f16
// NVVM:         nvvm.mma.sync {{.*}} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
gpu.module @kernels {
  gpu.func @bf16(%a: vector<4x2xbf16>, %b: vector<2x2xbf16>, %c: vector<2x2xf32>, %out: memref<2x2xf32>) kernel {
    %d = nvgpu.mma.sync (%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
    %c0 = arith.constant 0 : index
    vector.store %d, %out[%c0, %c0] : memref<2x2xf32>, vector<2x2xf32>
    gpu.return
  }
  gpu.func @f16(%a: vector<4x2xf16>, %b: vector<2x2xf16>, %c: vector<2x2xf32>, %out: memref<2x2xf32>) kernel {
    %d = nvgpu.mma.sync (%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
    %c0 = arith.constant 0 : index
    vector.store %d, %out[%c0, %c0] : memref<2x2xf32>, vector<2x2xf32>
    gpu.return
  }
}

