// attn IR that does not have the shape of a kernel: each problem is an
// error at its place (the argument, the function or the op), all in one run.
// RUN: not attnc %s --emit=header 2>&1 | FileCheck %s --implicit-check-not=error:

// CHECK-DAG: attn-ir.mlir:[[@LINE+1]]:{{[0-9]+}}: error: function 'declared' has no body: attnc compiles functions defined in the module
func.func private @declared(tensor<2xf32>) -> tensor<2xf32>

// CHECK-DAG: attn-ir.mlir:[[@LINE+2]]:{{[0-9]+}}: error: argument #0 of 'unnamed' has no attn.name: attnc names every buffer, e.g. {attn.name = "X", attn.role = "input"}
// CHECK-DAG: attn-ir.mlir:[[@LINE+1]]:{{[0-9]+}}: error: argument #0 of 'unnamed' needs attn.role = "input", "param" or "state"
func.func @unnamed(%x: tensor<2xf32>) -> (tensor<2xf32> {attn.name = "Y"}) {
  %0 = attn.relu %x : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// Names, roles and updates are the dialect's verifier's
// (Dialect/invalid-kernel-attrs.mlir); the marks attnc's passes leave are
// not written by hand.
// CHECK-DAG: attn-ir.mlir:[[@LINE+1]]:{{[0-9]+}}: error: 'attn.packed_elements' is set by attnc's passes, not by hand; remove it
func.func @marked(%x: tensor<2xf32> {attn.name = "X", attn.role = "input"})
    -> (tensor<2xf32> {attn.name = "Y"}) attributes {attn.packed_elements = 4 : i64} {
// CHECK-DAG: attn-ir.mlir:[[@LINE+1]]:{{[0-9]+}}: error: 'attn.inner_rounding' is set by attnc's passes, not by hand; remove it
  %0 = attn.relu %x {attn.inner_rounding = bf16} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// CHECK-DAG: attn-ir.mlir:[[@LINE+2]]:{{[0-9]+}}: error: argument #0 of 'types' has type 'tensor<?xf32>'; a kernel's arguments and results are tensors of static shape with elements f32, bf16, f16 or i32
// CHECK-DAG: attn-ir.mlir:[[@LINE+1]]:{{[0-9]+}}: error: result #0 of 'types' has type 'tensor<?xf32>'
func.func @types(%x: tensor<?xf32> {attn.name = "X", attn.role = "input"},
// CHECK-DAG: attn-ir.mlir:[[@LINE+1]]:{{[0-9]+}}: error: argument #1 of 'types' has type 'tensor<2xf64>'
                 %y: tensor<2xf64> {attn.name = "D", attn.role = "input"})
    -> (tensor<?xf32> {attn.name = "Y"}) {
  return %x : tensor<?xf32>
}

// CHECK-DAG: attn-ir.mlir:[[@LINE+1]]:{{[0-9]+}}: error: kernel 'free' is a C library function, which an exported kernel of that name would replace
func.func @free(%x: tensor<2xf32> {attn.name = "X", attn.role = "input"})
    -> (tensor<2xf32> {attn.name = "Y"}) {
// CHECK-DAG: attn-ir.mlir:[[@LINE+1]]:{{[0-9]+}}: error: 'builtin.unrealized_conversion_cast' is not an attn op: a kernel's body is attn ops, func.call and func.return
  %0 = builtin.unrealized_conversion_cast %x : tensor<2xf32> to tensor<2xf32>
  return %0 : tensor<2xf32>
}

func.func @k(%x: tensor<2xf32> {attn.name = "X", attn.role = "input"})
    -> (tensor<2xf32> {attn.name = "Y"}) {
  %0 = attn.relu %x : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// CHECK-DAG: attn-ir.mlir:[[@LINE+1]]:{{[0-9]+}}: error: the header of 'k_prepare' declares 'k_prepare', as the header of 'k' does; rename one
func.func @k_prepare(%x: tensor<2xf32> {attn.name = "X", attn.role = "input"})
    -> (tensor<2xf32> {attn.name = "Y"}) {
  %0 = attn.relu %x : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// CHECK: attnc: error: '{{.*}}attn-ir.mlir' has 11 errors
