//===- Passes.td - Passes of the attn dialect --------------*- tablegen -*-===//

#ifndef ATTN_TRANSFORMS_PASSES_TD
#define ATTN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnDecompose : Pass<"attn-decompose"> {
  let summary = "Rewrite composite attn ops into primitive attn ops";
  let description = [{
    Rewrites the composite ops into the primitive ones, following the D2L
    PyTorch code step by step, so that later lowerings handle primitives only:

    - `multihead_attention` → three `linear` projections, `split_heads`,
      `valid_lens` repeated per head (`repeat_interleave(vl, heads, dim=0)`,
      as `linalg.broadcast` + `tensor.collapse_shape`), `attention`,
      `merge_heads`, the output `linear`;
    - `attention` → `matmul transpose_b`, `scale` by `1/sqrt(d)`, then
      `masked_softmax` (or `softmax` when nothing is masked), `matmul`.
      `causal` becomes 2-D lengths `min(valid_len, i + 1)`: masking `j > i`
      and `j >= valid_len` by the same `-1e6` replacement is masking
      `j >= min(valid_len, i + 1)`;
    - `add_norm` → `add(y, x)`, `layer_norm`;
    - `ffn` → `linear`, `relu`, `linear`.

    Before:

    ```mlir
    %o = attn.attention %q, %k, %v valid_lens(%vl)
        : (tensor<10x4x20xf32>, tensor<10x6x20xf32>, tensor<10x6x20xf32>,
           tensor<10xi32>) -> tensor<10x4x20xf32>
    ```

    After:

    ```mlir
    %s = attn.matmul %q, %k transpose_b
        : (tensor<10x4x20xf32>, tensor<10x6x20xf32>) -> tensor<10x4x6xf32>
    %t = attn.scale %s factor(0.223606795) : tensor<10x4x6xf32>
    %p = attn.masked_softmax %t, %vl
        : (tensor<10x4x6xf32>, tensor<10xi32>) -> tensor<10x4x6xf32>
    %o = attn.matmul %p, %v
        : (tensor<10x4x6xf32>, tensor<10x6x20xf32>) -> tensor<10x4x20xf32>
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

#endif // ATTN_TRANSFORMS_PASSES_TD
