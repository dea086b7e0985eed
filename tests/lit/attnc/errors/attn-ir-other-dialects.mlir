// attnc reads the attn dialect, func and DLTI: an op, type or attribute of
// any other dialect is an error where it stands, before any other dialect's
// parser reads it (linalg.transpose's dereferenced a null attribute on a
// malformed permutation, found by attnc-mlir-fuzz).
// RUN: not attnc %s --emit=header 2>&1 | FileCheck %s --implicit-check-not=error:
// RUN: not attnc %S/Inputs/linalg-transpose-crash.mlir --emit=header 2>&1 | FileCheck %s --check-prefix=LINALG --implicit-check-not=error:
func.func @k(%x: tensor<2xf32> {attn.name = "X", attn.role = "input"})
    -> (tensor<2xf32> {attn.name = "Y"}) {
// CHECK: attn-ir-other-dialects.mlir:[[@LINE+1]]:8: error: Dialect `arith' not found for custom op 'arith.addf'
  %0 = arith.addf %x, %x : tensor<2xf32>
  return %0 : tensor<2xf32>
}
// CHECK: attnc: error: '{{.*}}attn-ir-other-dialects.mlir' has 1 error
// LINALG: linalg-transpose-crash.mlir:{{[0-9]+}}:{{[0-9]+}}: error: Dialect `linalg' not found for custom op 'linalg.transpose'
// LINALG: attnc: error: '{{.*}}linalg-transpose-crash.mlir' has 1 error
