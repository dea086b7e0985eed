// attn-split-prepare needs the names NAME_prepare and NAME_prepared free.
// RUN: attn-opt %s --attn-split-prepare --verify-diagnostics

// expected-error @+1 {{'func.func' op cannot be split: a function named 'k_prepare' exists already}}
func.func @k(%x: tensor<4xf32>) -> (tensor<4xf32>, i32) {
  %c0 = arith.constant 0 : i32
  return %x, %c0 : tensor<4xf32>, i32
}
func.func private @k_prepare()
