// A kernel written by hand in the attn dialect (attn-ir-input.test).
func.func @gelu_plus(%x: tensor<2x3xf32> {attn.name = "X", attn.role = "input"},
                     %b: tensor<2x3xf32> {attn.name = "B", attn.role = "param"})
    -> (tensor<2x3xf32> {attn.name = "Y"}) {
  %0 = attn.gelu %x : tensor<2x3xf32>
  %1 = attn.add %0, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}
