// attn-gpu-lower-fused-attention with products(bf16) on sm_80 and later: a
// launch of tensor-core tiles, 4 warps of 16 query rows per block; key and
// value tiles (64 keys; heads padded to 16 columns) staged as bf16, the
// values transposed; per tile S = Q K^T as mma tiles (2 n8 tiles of keys
// per 16, one k16 step of the head of 12), the rows' maxima and sums over
// a group's four lanes by xor shuffles (1, 2), O += P V (the weights
// rounded to bf16); then the exact launch, as without tensor cores.
// Without products, or on sm_75, the thread-per-row launch.
// RUN: attn-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(attn-gpu-lower-fused-attention))' \
// RUN:   | FileCheck %s
// RUN: attn-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(attn-gpu-lower-fused-attention{chip=sm_75}))' \
// RUN:   | FileCheck %s --check-prefix=SM75

// B=2, T=40 (one block of rows per batch entry), a head of 12.
// CHECK-LABEL: func.func @products
// CHECK-SAME:    (%[[Q:.*]]: memref<2x40x12xf32>, %[[K:.*]]: memref<2x40x12xf32>, %[[V:.*]]: memref<2x40x12xf32>, %{{.*}}: memref<2xi32>, %[[O:.*]]: memref<2x40x12xf32>)
// CHECK:         gpu.launch async blocks({{.*}}) in ({{.*}} = %c2{{[_0-9]*}}, {{.*}}) threads({{.*}}) in ({{.*}} = %c128{{[_0-9]*}}, {{.*}}) workgroup(%[[KT:.*]] : memref<64x24xbf16, #gpu.address_space<workgroup>>, %[[VT:.*]] : memref<16x72xbf16, #gpu.address_space<workgroup>>)
// Q's fragment: 8 elements of q, each rounded to bf16.
// CHECK-COUNT-8: arith.truncf %{{.*}} : f32 to bf16
// CHECK:         vector.from_elements {{.*}} : vector<4x2xbf16>
// CHECK:         scf.for {{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, vector<2x2xf32>, vector<2x2xf32>)
// CHECK:           memref.load %[[K]]
// CHECK:           memref.store %{{.*}}, %[[KT]][%{{.*}}, %{{.*}}] : memref<64x24xbf16, #gpu.address_space<workgroup>>
// CHECK:           memref.load %[[V]]
// CHECK:           memref.store %{{.*}}, %[[VT]][%{{.*}}, %{{.*}}] : memref<16x72xbf16, #gpu.address_space<workgroup>>
// CHECK:           gpu.barrier
// CHECK-COUNT-8:   nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK:           gpu.shuffle  xor %{{.*}}, %c1_i32
// CHECK:           gpu.shuffle  xor %{{.*}}, %c2_i32
// CHECK:           math.exp
// CHECK:           arith.truncf %{{.*}} : f32 to bf16
// CHECK-COUNT-8:   nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK:           gpu.barrier
// CHECK:         memref.store %{{.*}} : memref<80xi32>
// CHECK:         arith.divf
// CHECK:         memref.store %{{.*}}, %[[O]]
// CHECK:         gpu.terminator
// The exact launch.
// CHECK:         gpu.launch async
// CHECK:         gpu.shuffle
// SM75-LABEL:  func.func @products
// SM75-NOT:      nvgpu.mma.sync
// SM75:          workgroup({{.*}} : memref<64x12xf32, #gpu.address_space<workgroup>>
func.func @products(%q: memref<2x40x12xf32>, %k: memref<2x40x12xf32>, %v: memref<2x40x12xf32>, %vl: memref<2xi32>, %o: memref<2x40x12xf32>) {
  attn.fused_attention %q, %k, %v valid_lens(%vl) outs(%o) scale(5.000000e-01) products(bf16) : (memref<2x40x12xf32>, memref<2x40x12xf32>, memref<2x40x12xf32>, memref<2xi32>, memref<2x40x12xf32>) -> ()
  return
}

// -----

// CHECK-LABEL: func.func @f32
// CHECK-NOT:     nvgpu.mma.sync
// CHECK:         workgroup({{.*}} : memref<64x12xf32, #gpu.address_space<workgroup>>
func.func @f32(%q: memref<2x40x12xf32>, %k: memref<2x40x12xf32>, %v: memref<2x40x12xf32>, %o: memref<2x40x12xf32>) {
  attn.fused_attention %q, %k, %v outs(%o) scale(5.000000e-01) : (memref<2x40x12xf32>, memref<2x40x12xf32>, memref<2x40x12xf32>, memref<2x40x12xf32>) -> ()
  return
}
