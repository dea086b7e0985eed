// attn-gpu-tile-matmul: a GEMM whose two f32 operands hold bf16 (f16)
// values -- last written by a generic that yields a widened value, or a
// transpose of such a buffer -- becomes a launch of m16n8k16 tensor-core
// tiles: 4 warps per 64 x 64 tile of C, k in slices of 32 staged in
// workgroup memory in the narrow type (rows of 32 + 8), each warp 2 x 4
// nvgpu.mma.sync per 16 of k. A plain widening of an argument is not run:
// the launch reads the argument (through the operand's reshapes); a linear
// weight's transpose neither: its [N, K] rows are staged as they are.
// RUN: attn-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(attn-gpu-tile-matmul))' \
// RUN:   | FileCheck %s
// RUN: attn-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(attn-gpu-tile-matmul{chip=sm_75}))' \
// RUN:   | FileCheck %s --check-prefix=SM75

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>

// A linear layer: X [2, 33, 48] collapsed to [66, 48], W [40, 48] transposed.
// CHECK-LABEL: func.func @linear
// CHECK-SAME:    (%[[X:.*]]: memref<2x33x48xbf16>, %[[W:.*]]: memref<40x48xbf16>, %[[C:.*]]: memref<66x40xf32>)
// CHECK-NOT:     linalg.generic
// CHECK-NOT:     linalg.transpose
// CHECK:         %[[XR:.*]] = memref.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] : memref<2x33x48xbf16> into memref<66x48xbf16>
// CHECK:         gpu.launch async blocks({{.*}}) in ({{.*}} = %c2, {{.*}}) threads({{.*}}) in ({{.*}} = %c128, {{.*}}) workgroup(%[[AS:.*]] : memref<64x40xbf16, #gpu.address_space<workgroup>>, %[[BS:.*]] : memref<64x40xbf16, #gpu.address_space<workgroup>>)
// CHECK:           scf.for {{.*}} iter_args({{.*}}) -> (vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>)
// CHECK:             memref.load %[[XR]]
// CHECK:             memref.store %{{.*}}, %[[AS]]
// CHECK:             memref.load %[[W]]
// CHECK:             memref.store %{{.*}}, %[[BS]]
// CHECK:             gpu.barrier
// CHECK:             vector.load %[[AS]][{{.*}}] : memref<64x40xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// CHECK:             vector.load %[[BS]][{{.*}}] : memref<64x40xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// CHECK-COUNT-16:    nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK:             gpu.barrier
// CHECK:           memref.load %[[C]]
// CHECK:           arith.addf
// CHECK:           memref.store %{{.*}}, %[[C]]
// CHECK:         gpu.terminator
// CHECK-NOT:     linalg.matmul
// SM75-LABEL:  func.func @linear
// SM75-NOT:      nvgpu.mma.sync
// SM75:          linalg.generic
func.func @linear(%x: memref<2x33x48xbf16>, %w: memref<40x48xbf16>, %c: memref<66x40xf32>) {
  %xf = memref.alloc() : memref<2x33x48xf32>
  linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : memref<2x33x48xbf16>) outs(%xf : memref<2x33x48xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  }
  %wf = memref.alloc() : memref<40x48xf32>
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%w : memref<40x48xbf16>) outs(%wf : memref<40x48xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  }
  %wt = memref.alloc() : memref<48x40xf32>
  linalg.transpose ins(%wf : memref<40x48xf32>) outs(%wt : memref<48x40xf32>) permutation = [1, 0]
  %xr = memref.collapse_shape %xf [[0, 1], [2]] : memref<2x33x48xf32> into memref<66x48xf32>
  linalg.matmul ins(%xr, %wt : memref<66x48xf32>, memref<48x40xf32>) outs(%c : memref<66x40xf32>)
  return
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// Rounded values (an op's f16 result, widened for the next): the f32
// buffers are read and each element narrowed (exactly) as it is staged;
// B's slice is transposed as it is staged ([n][k]).
// CHECK-LABEL: func.func @rounded
// CHECK-SAME:    (%[[A:.*]]: memref<3x20x24xf32>, %[[B:.*]]: memref<3x24x16xf16>, %{{.*}}: memref<3x20x16xf32>)
// CHECK:         %[[AR:.*]] = memref.alloc() : memref<3x20x24xf32>
// CHECK:         linalg.generic
// CHECK:         gpu.launch async blocks({{.*}}) in ({{.*}} = %c3, {{.*}}) threads({{.*}}) in ({{.*}} = %c128, {{.*}}) workgroup({{.*}} : memref<64x40xf16, #gpu.address_space<workgroup>>, {{.*}} : memref<64x40xf16, #gpu.address_space<workgroup>>)
// CHECK:           memref.load %[[AR]]
// CHECK:           arith.truncf %{{.*}} : f32 to f16
// CHECK:           memref.load %[[B]]
// CHECK:           nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK-NOT:     linalg.batch_matmul
func.func @rounded(%a: memref<3x20x24xf32>, %b: memref<3x24x16xf16>, %c: memref<3x20x16xf32>) {
  %ar = memref.alloc() : memref<3x20x24xf32>
  linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a : memref<3x20x24xf32>) outs(%ar : memref<3x20x24xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.truncf %in : f32 to f16
    %1 = arith.extf %0 : f16 to f32
    linalg.yield %1 : f32
  }
  %bf = memref.alloc() : memref<3x24x16xf32>
  linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%b : memref<3x24x16xf16>) outs(%bf : memref<3x24x16xf32>) {
  ^bb0(%in: f16, %out: f32):
    %0 = arith.extf %in : f16 to f32
    linalg.yield %0 : f32
  }
  linalg.batch_matmul ins(%ar, %bf : memref<3x20x24xf32>, memref<3x24x16xf32>) outs(%c : memref<3x20x16xf32>)
  return
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>

// Not for the tensor cores: an operand of f32 values (B, an argument), bf16
// with f16, and a buffer written again after its widening (by a copy).
// CHECK-LABEL: func.func @f32_operand
// CHECK-NOT:     nvgpu.mma.sync
// CHECK:         vector.fma
func.func @f32_operand(%a: memref<64x64xbf16>, %b: memref<64x64xf32>, %c: memref<64x64xf32>) {
  %af = memref.alloc() : memref<64x64xf32>
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<64x64xbf16>) outs(%af : memref<64x64xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  }
  linalg.matmul ins(%af, %b : memref<64x64xf32>, memref<64x64xf32>) outs(%c : memref<64x64xf32>)
  return
}

// CHECK-LABEL: func.func @mixed_types
// CHECK-NOT:     nvgpu.mma.sync
// CHECK:         vector.fma
func.func @mixed_types(%a: memref<64x64xbf16>, %b: memref<64x64xf16>, %c: memref<64x64xf32>) {
  %af = memref.alloc() : memref<64x64xf32>
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<64x64xbf16>) outs(%af : memref<64x64xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  }
  %bf = memref.alloc() : memref<64x64xf32>
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%b : memref<64x64xf16>) outs(%bf : memref<64x64xf32>) {
  ^bb0(%in: f16, %out: f32):
    %0 = arith.extf %in : f16 to f32
    linalg.yield %0 : f32
  }
  linalg.matmul ins(%af, %bf : memref<64x64xf32>, memref<64x64xf32>) outs(%c : memref<64x64xf32>)
  return
}

// CHECK-LABEL: func.func @written_again
// CHECK-NOT:     nvgpu.mma.sync
// CHECK:         vector.fma
func.func @written_again(%a: memref<64x64xbf16>, %f: memref<64x64xf32>, %c: memref<64x64xf32>) {
  %af = memref.alloc() : memref<64x64xf32>
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<64x64xbf16>) outs(%af : memref<64x64xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  }
  memref.copy %f, %af : memref<64x64xf32> to memref<64x64xf32>
  linalg.matmul ins(%af, %af : memref<64x64xf32>, memref<64x64xf32>) outs(%c : memref<64x64xf32>)
  return
}

// -----

// --gpu-math=tf32: an f32 GEMM on the tensor cores, m16n8k8 tiles of tf32
// (one element a register), each operand rounded to tf32 as it is staged
// (+ 0x1000, the 13 low bits cleared; NaN kept), rows of 32 + 4 floats.
// RUN: attn-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(attn-gpu-tile-matmul{tf32=true}))' \
// RUN:   | FileCheck %s --check-prefix=TF32
// TF32-LABEL: func.func @f32_gemm
// TF32:         gpu.launch async {{.*}} workgroup({{.*}} : memref<64x36xf32, #gpu.address_space<workgroup>>, {{.*}} : memref<64x36xf32, #gpu.address_space<workgroup>>)
// TF32:           arith.bitcast %{{.*}} : f32 to i32
// TF32:           arith.addi %{{.*}}, %c4096_i32
// TF32:           arith.andi %{{.*}}, %c-8192_i32
// TF32:           arith.cmpf uno
// TF32:           vector.load {{.*}} : memref<64x36xf32, #gpu.address_space<workgroup>>, vector<1xf32>
// TF32-COUNT-32:  nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 8], tf32Enabled} : (vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK-LABEL: func.func @f32_gemm
// CHECK-NOT:     nvgpu.mma.sync
func.func @f32_gemm(%a: memref<64x64xf32>, %b: memref<64x64xf32>, %c: memref<64x64xf32>) {
  linalg.matmul ins(%a, %b : memref<64x64xf32>, memref<64x64xf32>) outs(%c : memref<64x64xf32>)
  return
}
