// attn IR that does not verify: the op's own shape rule, at the op, before
// anything is compiled; and `attnc run` says the same.
// RUN: not attnc %s --emit=header 2>&1 | FileCheck %s --implicit-check-not=error:
// RUN: not attnc run %s --random-inputs 2>&1 | FileCheck %s --implicit-check-not=error:
func.func @mismatch(%x: tensor<2x3xf32> {attn.name = "X", attn.role = "input"},
                    %y: tensor<3x2xf32> {attn.name = "Z", attn.role = "input"})
    -> (tensor<2x3xf32> {attn.name = "Y"}) {
// CHECK: attn-ir-invalid.mlir:[[@LINE+1]]:8: error: 'attn.add'
  %0 = attn.add %x, %y : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
// CHECK: attnc: error: '{{.*}}attn-ir-invalid.mlir' has 1 error
