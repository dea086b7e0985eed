// The attn-to-llvm pipeline (attnc's): attn ops down to the LLVM dialect; a
// kernel takes one bare pointer per input, param and output and returns the
// i32 status; nothing calls libm.
// RUN: attn-opt %s --attn-to-llvm | FileCheck %s
// RUN: attn-opt %s --attn-to-llvm="vectorize=false" | FileCheck %s --check-prefix=SCALAR
// A registered lowering by name (attn-opt registers the tests' GPU
// emulation: the GPU's kernels as loops, no gpu.launch left); a name that
// is not registered is an error of the pipeline's text.
// RUN: attn-opt %s --attn-to-llvm="lowering=gpu-emulation" | FileCheck %s --check-prefix=EMULATED
// RUN: not attn-opt %s --attn-to-llvm="lowering=no-such" 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// CHECK-LABEL: llvm.func @block(
// CHECK-SAME: %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr) -> i32
// CHECK: llvm.intr.{{fma|fmuladd}}({{.*}}) : (vector<32xf32>, vector<32xf32>, vector<32xf32>) -> vector<32xf32>
// CHECK-NOT: llvm.call @expf
// CHECK: llvm.return %{{.*}} : i32
// SCALAR-LABEL: llvm.func @block(
// SCALAR-NOT: vector<32xf32>
// EMULATED-LABEL: llvm.func @block(
// EMULATED-NOT: gpu.launch
// EMULATED: llvm.return %{{.*}} : i32
// UNKNOWN: no CPU lowering named 'no-such' is registered
func.func @block(%x: tensor<4x8x64xf32>, %w: tensor<64x64xf32>, %vl: tensor<4xi32>) -> tensor<4x8x64xf32> {
  %0 = attn.linear %x, %w : (tensor<4x8x64xf32>, tensor<64x64xf32>) -> tensor<4x8x64xf32>
  %1 = attn.split_heads %0 heads(2) : (tensor<4x8x64xf32>) -> tensor<8x8x32xf32>
  %2 = attn.attention %1, %1, %1 : (tensor<8x8x32xf32>, tensor<8x8x32xf32>, tensor<8x8x32xf32>) -> tensor<8x8x32xf32>
  %3 = attn.merge_heads %2 heads(2) : (tensor<8x8x32xf32>) -> tensor<4x8x64xf32>
  return %3 : tensor<4x8x64xf32>
}
