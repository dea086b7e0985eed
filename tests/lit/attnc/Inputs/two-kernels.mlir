// Two kernels, `outer` calling `inner` (attn-ir-input.test).
func.func @inner(%x: tensor<4x8xf32> {attn.name = "X", attn.role = "input"},
                 %w: tensor<4x8xf32> {attn.name = "W", attn.role = "param"})
    -> (tensor<4x8xf32> {attn.name = "Y"}) {
  %0 = attn.relu %x : tensor<4x8xf32>
  %1 = attn.add %0, %w : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}
func.func @outer(%x: tensor<4x8xf32> {attn.name = "X", attn.role = "input"},
                 %w: tensor<4x8xf32> {attn.name = "W1", attn.role = "param"})
    -> (tensor<4x8xf32> {attn.name = "Y"}) {
  %0 = call @inner(%x, %w) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
