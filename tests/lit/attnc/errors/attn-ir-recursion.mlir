// Kernels may not call themselves, directly or through others (as blocks
// may not).
// RUN: not attnc %s --emit=header 2>&1 | FileCheck %s --implicit-check-not=error:
func.func @ping(%x: tensor<2xf32> {attn.name = "X", attn.role = "input"})
    -> (tensor<2xf32> {attn.name = "Y"}) {
  %0 = call @pong(%x) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
// CHECK: attn-ir-recursion.mlir:[[@LINE+1]]:1: error: 'pong' calls itself through 'ping'; blocks may not be recursive
func.func private @pong(%x: tensor<2xf32> {attn.name = "X", attn.role = "input"})
    -> (tensor<2xf32> {attn.name = "Y"}) {
  %0 = call @ping(%x) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
// CHECK: attnc: error: '{{.*}}attn-ir-recursion.mlir' has 1 error
