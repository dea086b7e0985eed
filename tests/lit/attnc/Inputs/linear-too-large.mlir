// Used by errors/result-too-large.test: a linear whose operands are within
// the element limit and whose result is not.
func.func @f(%x: tensor<1099511627776x1xf32>, %w: tensor<2x1xf32>) -> tensor<1099511627776x2xf32> {
  %y = attn.linear %x, %w : (tensor<1099511627776x1xf32>, tensor<2x1xf32>) -> tensor<1099511627776x2xf32>
  return %y : tensor<1099511627776x2xf32>
}
