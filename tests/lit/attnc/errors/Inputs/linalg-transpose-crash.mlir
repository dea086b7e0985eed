// A malformed linalg.transpose permutation: MLIR 22's parser of it
// dereferences a null attribute (SIGSEGV in attn-opt, which reads linalg;
// attnc refuses the dialect before its parser runs).
func.func @k(%b: tensor<4x7xf32>, %e: tensor<7x4xf32>) -> tensor<7x4xf32> {
  %bt = linalg.transpose ins(%b : tensor<4x7xf32>) outs(%e : tensor<7x4xf32>) permutation = [t 0 : i32
  return %x, %c0 : tensor<4xf32>, i32