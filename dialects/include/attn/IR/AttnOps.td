//===- AttnOps.td - Operations of the attn dialect ---------*- tablegen -*-===//
//
// One op per DSL op (docs/spec.md §2). Every op is pure, works on statically shaped
// tensors, infers its result type, and checks its operands with the shared
// rules of AttnShapeRules.h (hasVerifier), so hand-written IR gets exactly the
// checks that a `.attn` spec gets.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_OPS_TD
#define ATTN_OPS_TD

include "attn/IR/AttnDialect.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.td"

// The float types of the element-type table (attn/Target/ElementType.h).
// Which of them an op takes, and its result's, is its verifier's: the
// shared rules accept the rows the table marks supported.
def Attn_FloatTensor : StaticShapeTensorOf<[F32, BF16, F16]>;
def Attn_I32Tensor : StaticShapeTensorOf<[I32]>;

// The attention_weights result is there exactly with return_weights
// (ReturnWeightsResult in AttnOps.h).
def Attn_ReturnWeightsResult : NativeOpTrait<"ReturnWeightsResult"> {
  let cppNamespace = "::mlir::attn";
}

class Attn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Attn_Dialect, mnemonic,
         !listconcat(traits, [Pure, InferTypeOpAdaptor])> {
  let results = (outs Attn_FloatTensor:$result);
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// CastOp
//===----------------------------------------------------------------------===//

def Attn_CastOp : Attn_Op<"cast"> {
  let summary = "conversion between float element types";
  let description = [{
    `result = x` converted to `dtype`: to bf16 or f16 it rounds to nearest
    even, overflow gives +-inf and NaN stays NaN (as `torch.Tensor.to`); to
    f32 it is exact. bf16 <-> f16 goes through f32. The DSL's
    `cast(x, dtype=bf16)`; `attn-compute-in-f32` also puts these around
    every op on bf16/f16 tensors, so that the op computes in f32 and rounds
    its result once (docs/spec.md §2, v3 "Numerics").

    Example:

    ```mlir
    %y = attn.cast %x to f32 : tensor<2x4xbf16>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$x, TypeAttr:$dtype);
  let assemblyFormat = "$x `to` $dtype attr-dict `:` type($x)";
}

//===----------------------------------------------------------------------===//
// LinearOp
//===----------------------------------------------------------------------===//

def Attn_LinearOp : Attn_Op<"linear"> {
  let summary = "affine map over the last axis, torch nn.Linear";
  let description = [{
    `result[..., o] = sum_i x[..., i] * w[o, i] + b[o]`, i.e. `x @ wᵀ + b`
    with the weight in torch's `[out_features, in_features]` layout. The bias
    is optional.

    Example:

    ```mlir
    %y = attn.linear %x, %w, %b
        : (tensor<2x4x100xf32>, tensor<50x100xf32>, tensor<50xf32>)
        -> tensor<2x4x50xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$x, Attn_FloatTensor:$w,
                       Optional<Attn_FloatTensor>:$b);
  let assemblyFormat = [{
    $x `,` $w (`,` $b^)? attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

def Attn_MatmulOp : Attn_Op<"matmul"> {
  let summary = "batched matrix product, torch.bmm";
  let description = [{
    `result[n, m, p] = sum_k a[n, m, k] * b[n, k, p]`; with `transpose_b`,
    `b` is read as `[N, P, K]`: `result[n, m, p] = sum_k a[n, m, k] * b[n, p, k]`.

    Example (attention scores `q kᵀ`):

    ```mlir
    %s = attn.matmul %q, %k transpose_b
        : (tensor<10x4x20xf32>, tensor<10x6x20xf32>) -> tensor<10x4x6xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$a, Attn_FloatTensor:$b,
                       UnitAttr:$transpose_b);
  let assemblyFormat = [{
    $a `,` $b (`transpose_b` $transpose_b^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// ScaleOp
//===----------------------------------------------------------------------===//

def Attn_ScaleOp : Attn_Op<"scale"> {
  let summary = "multiplication by a constant";
  let description = [{
    `result = x * factor` elementwise, for a tensor of any shape.

    Example (`1/sqrt(d)` with d = 16):

    ```mlir
    %y = attn.scale %x factor(2.500000e-01) : tensor<10x4x6xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$x, F32Attr:$factor);
  let assemblyFormat = "$x `factor` `(` $factor `)` attr-dict `:` type($x)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// AddOp
//===----------------------------------------------------------------------===//

def Attn_AddOp : Attn_Op<"add", [Commutative]> {
  let summary = "elementwise sum with NumPy broadcasting";
  let description = [{
    `result = a + b` elementwise, as `torch.add`: the shapes are aligned on
    their trailing axes, and a size-1 or missing axis of one operand
    stretches over the other's (`f32[1, T, D] + f32[B, T, D]`,
    `f32[D] + f32[B, T, D]`). Any other mismatch is an error naming both
    shapes. The result has the larger rank and, per axis, the larger size.
    `attn.mul` and `attn.sub` broadcast the same way.

    Example:

    ```mlir
    %z = attn.add %x, %y
        : (tensor<2x4x100xf32>, tensor<2x4x100xf32>) -> tensor<2x4x100xf32>
    %e = attn.add %tok, %pos
        : (tensor<2x4x100xf32>, tensor<1x4x100xf32>) -> tensor<2x4x100xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$a, Attn_FloatTensor:$b);
  let assemblyFormat = [{
    $a `,` $b attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// MulOp, SubOp
//===----------------------------------------------------------------------===//

def Attn_MulOp : Attn_Op<"mul", [Commutative]> {
  let summary = "elementwise product with NumPy broadcasting";
  let description = [{
    `result = a * b` elementwise, as `torch.mul`, broadcasting like
    `attn.add` (Llama's SwiGLU multiplies `silu(gate)` by `up`; a `[D]`
    scale multiplies every row).

    Example:

    ```mlir
    %z = attn.mul %g, %u
        : (tensor<1x8x96xf32>, tensor<1x8x96xf32>) -> tensor<1x8x96xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$a, Attn_FloatTensor:$b);
  let assemblyFormat = [{
    $a `,` $b attr-dict `:` functional-type(operands, results)
  }];
}

def Attn_SubOp : Attn_Op<"sub"> {
  let summary = "elementwise difference with NumPy broadcasting";
  let description = [{
    `result = a - b` elementwise, as `torch.sub`, broadcasting like
    `attn.add`.

    Example:

    ```mlir
    %z = attn.sub %x, %m
        : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$a, Attn_FloatTensor:$b);
  let assemblyFormat = [{
    $a `,` $b attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// ReluOp
//===----------------------------------------------------------------------===//

def Attn_ReluOp : Attn_Op<"relu"> {
  let summary = "rectified linear unit";
  let description = [{
    `result = max(x, 0)` elementwise.

    Example:

    ```mlir
    %y = attn.relu %x : tensor<2x4x64xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$x);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

//===----------------------------------------------------------------------===//
// GeluOp
//===----------------------------------------------------------------------===//

def Attn_GeluOp : Attn_Op<"gelu"> {
  let summary = "Gaussian error linear unit, torch.nn.functional.gelu";
  let description = [{
    Elementwise, exactly `torch.nn.functional.gelu`:

    - `result = 0.5 * x * (1 + erf(x / sqrt(2)))` (torch's default,
      `approximate='none'`);
    - with `approximate`, torch's `approximate='tanh'`:
      `result = 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))`.

    Both are f32. attn-lower-to-linalg computes the first with `math.erf`
    and the second as `x / (1 + exp(-2u))`, `u` the argument of tanh (the
    same function, closer to torch in f32); the CPU pipeline approximates
    `erf` and `exp` with polynomials (no libm), the GPU's takes libdevice's.

    Example:

    ```mlir
    %y = attn.gelu %x : tensor<2x4x64xf32>
    %z = attn.gelu %x approximate : tensor<2x4x64xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$x, UnitAttr:$approximate);
  let assemblyFormat = [{
    $x (`approximate` $approximate^)? attr-dict `:` type($x)
  }];
}

//===----------------------------------------------------------------------===//
// SiluOp, TanhOp, SigmoidOp
//===----------------------------------------------------------------------===//

def Attn_SiluOp : Attn_Op<"silu"> {
  let summary = "sigmoid linear unit, torch.nn.functional.silu";
  let description = [{
    `result = x * sigmoid(x)` elementwise, computed as torch's CPU kernel
    does: `x / (1 + exp(-x))` (f32; -0 far below zero, `x` far above).

    Example:

    ```mlir
    %y = attn.silu %x : tensor<1x8x96xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$x);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

def Attn_TanhOp : Attn_Op<"tanh"> {
  let summary = "hyperbolic tangent, torch.tanh";
  let description = [{
    `result = tanh(x)` elementwise (f32; the CPU pipeline approximates
    `math.tanh` with a polynomial, no libm).

    Example:

    ```mlir
    %y = attn.tanh %x : tensor<2x4x64xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$x);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

def Attn_SigmoidOp : Attn_Op<"sigmoid"> {
  let summary = "logistic sigmoid, torch.sigmoid";
  let description = [{
    `result = 1 / (1 + exp(-x))` elementwise, as torch's CPU kernel computes
    it (f32; 0 far below zero, 1 far above).

    Example:

    ```mlir
    %y = attn.sigmoid %x : tensor<2x4x64xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$x);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

//===----------------------------------------------------------------------===//
// SplitHeadsOp
//===----------------------------------------------------------------------===//

def Attn_SplitHeadsOp : Attn_Op<"split_heads"> {
  let summary = "[B, T, H*d] -> [B*H, T, d], D2L transpose_qkv";
  let description = [{
    `result[b*H + h, t, i] = x[b, t, h*d + i]` with `d = D / heads`: each
    head's slice of the features becomes its own batch entry (D2L
    `transpose_qkv`). `heads` divides `D`.

    Example:

    ```mlir
    %h = attn.split_heads %x heads(5)
        : (tensor<2x4x100xf32>) -> tensor<10x4x20xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$x, I64Attr:$heads);
  let assemblyFormat = [{
    $x `heads` `(` $heads `)` attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// MergeHeadsOp
//===----------------------------------------------------------------------===//

def Attn_MergeHeadsOp : Attn_Op<"merge_heads"> {
  let summary = "[B*H, T, d] -> [B, T, H*d], D2L transpose_output";
  let description = [{
    `result[b, t, h*d + i] = x[b*H + h, t, i]`, the inverse of `split_heads`
    (D2L `transpose_output`). `heads` divides the leading dimension.

    Example:

    ```mlir
    %y = attn.merge_heads %x heads(5)
        : (tensor<10x4x20xf32>) -> tensor<2x4x100xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$x, I64Attr:$heads);
  let assemblyFormat = [{
    $x `heads` `(` $heads `)` attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// SoftmaxOp
//===----------------------------------------------------------------------===//

def Attn_SoftmaxOp : Attn_Op<"softmax"> {
  let summary = "softmax over the last axis";
  let description = [{
    `result[..., j] = exp(x[..., j] - m) / sum_k exp(x[..., k] - m)` with
    `m = max_k x[..., k]` (max-subtracted, as torch computes it).

    Example:

    ```mlir
    %p = attn.softmax %s : tensor<10x4x6xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$x);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

//===----------------------------------------------------------------------===//
// MaskedSoftmaxOp
//===----------------------------------------------------------------------===//

def Attn_MaskedSoftmaxOp : Attn_Op<"masked_softmax"> {
  let summary = "D2L masked_softmax: softmax with positions >= valid_len "
                "replaced by -1e6";
  let description = [{
    `result[n, i, :] = softmax(x'[n, i, :])` where
    `x'[n, i, j] = j < len(n, i) ? x[n, i, j] : -1e6` and `len(n, i)` is
    `valid_lens[n]` (1-D) or `valid_lens[n, i]` (2-D). Masked entries are
    *replaced*, not set to -inf, exactly as D2L does: a row with
    `len <= 0` comes out uniform (`1/Tk`), never NaN; `len > Tk` masks
    nothing.

    Example:

    ```mlir
    %p = attn.masked_softmax %s, %vl
        : (tensor<10x4x6xf32>, tensor<10xi32>) -> tensor<10x4x6xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$x, Attn_I32Tensor:$valid_lens);
  let assemblyFormat = [{
    $x `,` $valid_lens attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

def Attn_AttentionOp : Attn_Op<"attention", [Attn_ReturnWeightsResult]> {
  let summary = "D2L DotProductAttention (composite)";
  let description = [{
    `result = masked_softmax(q kᵀ / sqrt(d), valid_lens) @ v` over each of
    the N batch entries, with `q[N, Tq, d]`, `k[N, Tk, d]`, `v[N, Tk, dv]`.
    Without `valid_lens` (and without `causal`) the softmax is unmasked.
    `causal` also masks keys `j > i` (replaced by -1e6, like the lengths),
    which equals masking with lengths `min(valid_len, i + 1)`.

    With `return_weights` the op has a second result, `attention_weights =
    masked_softmax(q kᵀ / sqrt(d), valid_lens)` (with `causal`'s mask too),
    `[N, Tq, Tk]`: D2L's `DotProductAttention.attention_weights`. An op
    whose weights are returned is always decomposed (the weights are the
    scores' softmax), never lowered as a fused, flash-style kernel.

    Example:

    ```mlir
    %o = attn.attention %q, %k, %v valid_lens(%vl) causal
        : (tensor<10x4x20xf32>, tensor<10x4x20xf32>, tensor<10x4x20xf32>,
           tensor<10xi32>) -> tensor<10x4x20xf32>
    %y, %a = attn.attention %q, %k, %v valid_lens(%vl) return_weights
        : (tensor<10x4x20xf32>, tensor<10x6x20xf32>, tensor<10x6x20xf32>,
           tensor<10xi32>) -> (tensor<10x4x20xf32>, tensor<10x4x6xf32>)
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$q, Attn_FloatTensor:$k,
                       Attn_FloatTensor:$v, Optional<Attn_I32Tensor>:$valid_lens,
                       UnitAttr:$causal, UnitAttr:$return_weights);
  let results = (outs Attn_FloatTensor:$result,
                      Optional<Attn_FloatTensor>:$attention_weights);
  let assemblyFormat = [{
    $q `,` $k `,` $v (`valid_lens` `(` $valid_lens^ `)`)? (`causal` $causal^)?
    (`return_weights` $return_weights^)?
    attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// MultiheadAttentionOp
//===----------------------------------------------------------------------===//

def Attn_MultiheadAttentionOp
    : Attn_Op<"multihead_attention",
              [Attn_ReturnWeightsResult, AttrSizedOperandSegments]> {
  let summary = "D2L MultiHeadAttention, with the v2 keywords (composite)";
  let description = [{
    With `split`/`merge` the head reshapes of `split_heads`/`merge_heads`:

    `result = merge(attention(split(q w_qᵀ + b_q), split(k w_kᵀ + b_k),
    split(v w_vᵀ + b_v), repeat_interleave(valid_lens, heads))) w_oᵀ + b_o`

    for `q[B, Tq, Dq]`, `k[B, Tk, Dk]`, `v[B, Tk, Dv]`, weights
    `w_q[Hd, Dq]`, `w_k[Hd, Dk]`, `w_v[Hd, Dv]`, `w_o[Hd, Hd]`;
    `heads` divides `Hd`, `d = Hd / heads` is the head dimension.
    `valid_lens` is `[B]` or `[B, Tq]` and is repeated for every head;
    `causal` also masks keys `j > i`.

    The v2 keywords (docs/spec.md §2 "Ops (v2)"), each optional:

    - `b_q`, `b_k`, `b_v`, `b_o`: the biases of the four projections, one
      per row of their weight (`[Hd]`; `b_k`, `b_v` `[kv_heads * d]`), any
      subset (D2L `bias=True`, `nn.MultiheadAttention(bias=True)`).
    - `kv_heads(G)`: grouped-query attention. `w_k`, `w_v` are
      `[G * d, Dk]`, `[G * d, Dv]`; query head `h` attends with key/value
      head `h / (heads / G)` (Hugging Face `repeat_kv`); `G = 1` is
      multi-query attention. `G` divides `heads`. No copy of a key/value
      head is made per query head: the lowerings index the shared head.
    - `window(W)`, with `causal` only: key `j` is visible from query `i`
      iff `i - W < j <= i` (Mistral's sliding window), intersected with
      `valid_lens`. `W >= 1`.
    - `rope`, `rope_base(b)` (default 10000): rotary position embedding on
      every head of the projected `q` and `k` before the scores, position =
      the row index: Hugging Face Llama's `q * cos + rotate_half(q) * sin`
      with `rotate_half` pairing element `j` with `j + d/2` and
      `inv_freq[j] = b^(-2j/d)`. `d` must be even.

    The KV cache (docs/spec.md §2 "State and decoding (v3)"):

    - `cache(cache_k, cache_v, cache_pos)`: `cache_k`, `cache_v` are
      `[B, L, G * d]` (kv heads' projections, rotated by `rope`),
      `cache_pos` `i32[B]`; `q`, `k`, `v` hold the `T` new tokens. The op
      writes the new keys and values into rows `pos[b] .. pos[b] + T - 1`
      and has two more results, the updated caches; new token `t` attends
      to cache rows `0 .. pos[b] + t` (with `window(W)` only the last `W`
      of them); `rope` uses positions `pos[b] + t`. `causal` must be set
      (a cache implies it); no `valid_lens`, no `return_weights`. When
      some `pos[b] < 0` or `pos[b] + T > L` the updated caches are the
      operands unchanged (the kernel returns ATTNC_STATUS_CACHE_POSITION)
      and the output is unspecified. Cache rows past `pos[b] + T` are never
      read into the output, whatever they hold.

    Every masked score (lengths, causal, window) is *replaced* by -1e6, as
    D2L's masked_softmax does: a row that sees no key is uniform over all
    keys.

    With `return_weights` the op has a second result, `attention_weights`:
    the weights of that `attention`, `[B*heads, Tq, Tk]` with row
    `b*heads + h` for head `h` of batch entry `b` (D2L's
    `attention.attention_weights`). Like `attention`'s, such an op is
    always decomposed, never fused.

    Example (the book's case, B=2, T=4, D=100, 5 heads; then a Llama-style
    one: biases on q and o, 4 query heads sharing 2 kv heads of dim 8,
    rope, a causal window of 3):

    ```mlir
    %y = attn.multihead_attention %x, %x, %x heads(5)
        weights(%wq, %wk, %wv, %wo) valid_lens(%vl)
        : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<2x4x100xf32>,
           tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>,
           tensor<100x100xf32>, tensor<2xi32>) -> tensor<2x4x100xf32>
    %z, %a = attn.multihead_attention %x, %x, %x heads(5)
        weights(%wq, %wk, %wv, %wo) valid_lens(%vl) return_weights
        : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<2x4x100xf32>,
           tensor<100x100xf32>, tensor<100x100xf32>, tensor<100x100xf32>,
           tensor<100x100xf32>, tensor<2xi32>)
        -> (tensor<2x4x100xf32>, tensor<10x4x4xf32>)
    %l = attn.multihead_attention %h, %h, %h heads(4) kv_heads(2)
        weights(%wq2, %wk2, %wv2, %wo2) b_q(%bq) b_o(%bo) causal window(3)
        rope rope_base(5.000000e+05)
        : (tensor<1x8x32xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>,
           tensor<32x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>,
           tensor<32x32xf32>, tensor<32xf32>, tensor<32xf32>)
        -> tensor<1x8x32xf32>
    %d, %kc2, %vc2 = attn.multihead_attention %t, %t, %t heads(4) kv_heads(2)
        weights(%wq2, %wk2, %wv2, %wo2) cache(%kc, %vc, %pos) causal rope
        : (tensor<1x1x32xf32>, tensor<1x1x32xf32>, tensor<1x1x32xf32>,
           tensor<32x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>,
           tensor<32x32xf32>, tensor<1x64x16xf32>, tensor<1x64x16xf32>,
           tensor<1xi32>)
        -> (tensor<1x1x32xf32>, tensor<1x64x16xf32>, tensor<1x64x16xf32>)
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$q, Attn_FloatTensor:$k,
                       Attn_FloatTensor:$v, Attn_FloatTensor:$w_q,
                       Attn_FloatTensor:$w_k, Attn_FloatTensor:$w_v,
                       Attn_FloatTensor:$w_o, Optional<Attn_I32Tensor>:$valid_lens,
                       Optional<Attn_FloatTensor>:$b_q,
                       Optional<Attn_FloatTensor>:$b_k,
                       Optional<Attn_FloatTensor>:$b_v,
                       Optional<Attn_FloatTensor>:$b_o,
                       Optional<Attn_FloatTensor>:$cache_k,
                       Optional<Attn_FloatTensor>:$cache_v,
                       Optional<Attn_I32Tensor>:$cache_pos,
                       I64Attr:$heads,
                       DefaultValuedAttr<I64Attr, "::mlir::attn::rules::kNotGiven">:$kv_heads,
                       UnitAttr:$causal,
                       DefaultValuedAttr<I64Attr, "::mlir::attn::rules::kNotGiven">:$window,
                       UnitAttr:$rope,
                       DefaultValuedAttr<F32Attr, "::mlir::attn::rules::kDefaultRopeBase">:$rope_base,
                       UnitAttr:$return_weights);
  // After the result, either the attention weights (return_weights) or the
  // updated caches (cache_k, cache_v), never both: one variadic group.
  let results = (outs Attn_FloatTensor:$result,
                      Variadic<Attn_FloatTensor>:$more_results);
  let assemblyFormat = [{
    $q `,` $k `,` $v `heads` `(` $heads `)` (`kv_heads` `(` $kv_heads^ `)`)?
    `weights` `(` $w_q `,` $w_k `,` $w_v `,` $w_o `)`
    (`b_q` `(` $b_q^ `)`)? (`b_k` `(` $b_k^ `)`)? (`b_v` `(` $b_v^ `)`)?
    (`b_o` `(` $b_o^ `)`)?
    (`cache` `(` $cache_k^ `,` $cache_v `,` $cache_pos `)`)?
    (`valid_lens` `(` $valid_lens^ `)`)? (`causal` $causal^)?
    (`window` `(` $window^ `)`)? (`rope` $rope^)?
    (`rope_base` `(` $rope_base^ `)`)?
    (`return_weights` $return_weights^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// The key/value heads: kv_heads, or heads when it is not given.
    int64_t getNumKvHeads() {
      int64_t given = getKvHeads();
      return given == ::mlir::attn::rules::kNotGiven ? getHeads() : given;
    }
    /// The sliding window W, if there is one.
    ::std::optional<int64_t> getSlidingWindow() {
      int64_t given = getWindow();
      if (given == ::mlir::attn::rules::kNotGiven)
        return ::std::nullopt;
      return given;
    }
    /// Whether the op reads and updates a KV cache.
    bool hasCache() { return static_cast<bool>(getCacheK()); }
    /// The second result with return_weights, else null.
    ::mlir::Value getAttentionWeights() {
      return getReturnWeights() && !getMoreResults().empty()
                 ? getMoreResults().front() : ::mlir::Value();
    }
    /// The caches after the call's write, with a cache, else null (after
    /// the weights with return_weights).
    ::mlir::Value getUpdatedCacheK() {
      size_t first = getReturnWeights() ? 1 : 0;
      return hasCache() && getMoreResults().size() == first + 2
                 ? getMoreResults()[first] : ::mlir::Value();
    }
    ::mlir::Value getUpdatedCacheV() {
      size_t first = getReturnWeights() ? 1 : 0;
      return hasCache() && getMoreResults().size() == first + 2
                 ? getMoreResults()[first + 1] : ::mlir::Value();
    }
  }];
}

//===----------------------------------------------------------------------===//
// PositionalEncodingOp
//===----------------------------------------------------------------------===//

def Attn_PositionalEncodingOp : Attn_Op<"positional_encoding"> {
  let summary = "D2L PositionalEncoding in eval mode: x + P[:T]";
  let description = [{
    `result[b, i, c] = x[b, i, c] + P[i, c]` with
    `P[i, 2j] = sin(i / 10000^(2j/D))` and `P[i, 2j+1] = cos(i / 10000^(2j/D))`.
    `D` must be even and `T <= max_len` (default 1000), as in D2L where the
    table has `max_len` rows.

    With `offset` (`i32[B]`, docs/spec.md §2 v3: the tokens a decode step
    or a prefill chunk adds after `offset[b]` cached ones), row `i` of
    entry `b` is at position `offset[b] + i`: `result[b, i, c] = x[b, i, c]
    + P[offset[b] + i, c]`, D2L's `X + P[:, offset:offset + T]`. When some
    `offset[b] < 0` or `offset[b] + T > max_len` (past D2L's table) the
    result is unspecified and the kernel returns
    ATTNC_STATUS_CACHE_POSITION.

    Example:

    ```mlir
    %p = attn.positional_encoding %x max_len(1000) : tensor<2x4x100xf32>
    %s = attn.positional_encoding %x offset(%pos : tensor<2xi32>)
        : tensor<2x1x100xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$x,
                       Optional<Attn_I32Tensor>:$offset,
                       DefaultValuedAttr<I64Attr, "::mlir::attn::rules::kDefaultMaxLen">:$max_len);
  let assemblyFormat = [{
    $x (`offset` `(` $offset^ `:` type($offset) `)`)?
    (`max_len` `(` $max_len^ `)`)? attr-dict `:` type($x)
  }];
}

//===----------------------------------------------------------------------===//
// LayerNormOp
//===----------------------------------------------------------------------===//

def Attn_LayerNormOp : Attn_Op<"layer_norm"> {
  let summary = "layer normalization over the last axis, torch nn.LayerNorm";
  let description = [{
    `result = (x - mean) / sqrt(var + eps) * gamma + beta` over the last axis,
    with the biased variance `var = mean((x - mean)^2)`.

    Example:

    ```mlir
    %y = attn.layer_norm %x, %gamma, %beta eps(1.000000e-05)
        : (tensor<2x4x100xf32>, tensor<100xf32>, tensor<100xf32>)
        -> tensor<2x4x100xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$x, Attn_FloatTensor:$gamma,
                       Attn_FloatTensor:$beta,
                       DefaultValuedAttr<F32Attr, "::mlir::attn::rules::kDefaultEps">:$eps);
  let assemblyFormat = [{
    $x `,` $gamma `,` $beta (`eps` `(` $eps^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// AddNormOp
//===----------------------------------------------------------------------===//

def Attn_AddNormOp : Attn_Op<"add_norm"> {
  let summary = "D2L AddNorm: layer_norm(y + x) (composite)";
  let description = [{
    `result = layer_norm(y + x, gamma, beta, eps)`: the residual connection
    and layer normalization of D2L `AddNorm` (dropout is the identity at
    inference).

    Example:

    ```mlir
    %z = attn.add_norm %x, %y, %gamma, %beta
        : (tensor<2x4x100xf32>, tensor<2x4x100xf32>, tensor<100xf32>,
           tensor<100xf32>) -> tensor<2x4x100xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$x, Attn_FloatTensor:$y,
                       Attn_FloatTensor:$gamma, Attn_FloatTensor:$beta,
                       DefaultValuedAttr<F32Attr, "::mlir::attn::rules::kDefaultEps">:$eps);
  let assemblyFormat = [{
    $x `,` $y `,` $gamma `,` $beta (`eps` `(` $eps^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// RmsNormOp
//===----------------------------------------------------------------------===//

def Attn_RmsNormOp : Attn_Op<"rms_norm"> {
  let summary = "root-mean-square normalization over the last axis (RMSNorm)";
  let description = [{
    Llama's `RMSNorm` (Hugging Face `LlamaRMSNorm`), over the last axis of
    `x` with `gamma` of that axis' size:

    `result = gamma * (x * rsqrt(mean(x * x, -1) + eps))`

    with the mean in f32 and `rsqrt(v) = 1 / sqrt(v)`, as torch computes it.
    `eps` defaults to 1e-6 and must be positive.

    Example:

    ```mlir
    %y = attn.rms_norm %x, %g : (tensor<1x8x64xf32>, tensor<64xf32>)
        -> tensor<1x8x64xf32>
    %z = attn.rms_norm %x, %g eps(1.0e-05)
        : (tensor<1x8x64xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$x, Attn_FloatTensor:$gamma,
                       DefaultValuedAttr<F32Attr, "::mlir::attn::rules::kDefaultRmsEps">:$eps);
  let assemblyFormat = [{
    $x `,` $gamma (`eps` `(` $eps^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// FfnOp
//===----------------------------------------------------------------------===//

def Attn_FfnOp : Attn_Op<"ffn"> {
  let summary = "D2L PositionWiseFFN (composite)";
  let description = [{
    `result = linear(relu(linear(x, w1, b1)), w2, b2)` for `x[..., D]`,
    `w1[F, D]`, `b1[F]`, `w2[O, F]`, `b2[O]`.

    Example:

    ```mlir
    %y = attn.ffn %x, %w1, %b1, %w2, %b2
        : (tensor<2x4x32xf32>, tensor<64x32xf32>, tensor<64xf32>,
           tensor<32x64xf32>, tensor<32xf32>) -> tensor<2x4x32xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$x, Attn_FloatTensor:$w1,
                       Attn_FloatTensor:$b1, Attn_FloatTensor:$w2,
                       Attn_FloatTensor:$b2);
  let assemblyFormat = [{
    $x `,` $w1 `,` $b1 `,` $w2 `,` $b2 attr-dict `:`
    functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// EmbeddingOp
//===----------------------------------------------------------------------===//

def Attn_EmbeddingOp : Attn_Op<"embedding"> {
  let summary = "row lookup in an embedding table";
  let description = [{
    `result[..., :] = table[ids[...], :]`. An id outside `[0, V)` is a
    run-time error that the generated code reports; it never reads out of
    bounds.

    Example:

    ```mlir
    %e = attn.embedding %ids, %table
        : (tensor<2x4xi32>, tensor<1000x64xf32>) -> tensor<2x4x64xf32>
    ```
  }];
  let arguments = (ins Attn_I32Tensor:$ids, Attn_FloatTensor:$table);
  let assemblyFormat = [{
    $ids `,` $table attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// DropoutOp
//===----------------------------------------------------------------------===//

def Attn_DropoutOp : Attn_Op<"dropout"> {
  let summary = "dropout at inference: the identity";
  let description = [{
    `result = x`. The probability `p` is kept for the record and checked to be
    in `[0, 1)`; the op folds away.

    Example:

    ```mlir
    %y = attn.dropout %x p(1.000000e-01) : tensor<2x4x100xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$x, F32Attr:$p);
  let assemblyFormat = "$x `p` `(` $p `)` attr-dict `:` type($x)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// CacheUpdateOp (internal: produced by attn-decompose, not in the DSL)
//===----------------------------------------------------------------------===//

def Attn_CacheUpdateOp : Op<Attn_Dialect, "cache_update",
                            [Pure, AllTypesMatch<["cache", "result"]>]> {
  let summary = "new rows written into a KV cache at per-entry positions";
  let description = [{
    `result` is `cache` with rows `pos[b] .. pos[b] + T - 1` of entry `b`
    replaced by `rows[b]`, for `cache[B, L, E]`, `rows[B, T, E]` (the
    cache's element type) and `pos` `i32[B]`. When some `pos[b] < 0` or
    `pos[b] + T > L`, `result` is `cache` unchanged: no row of any entry is
    written (attn-lower-to-linalg also makes the kernel return
    ATTNC_STATUS_CACHE_POSITION). Its lowering updates `cache`'s buffer in
    place when that is a writable function argument (a `state`).

    Example:

    ```mlir
    %k2 = attn.cache_update %rows into %k at %pos
        : tensor<2x1x64xf32>, tensor<2xi32> into tensor<2x128x64xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$cache, Attn_FloatTensor:$rows,
                       Attn_I32Tensor:$pos);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $rows `into` $cache `at` $pos attr-dict `:` type($rows) `,` type($pos)
    `into` type($cache)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// FusedAttentionOp (internal: produced by attn-decompose, not in the DSL)
//===----------------------------------------------------------------------===//

// f32 only until the fused lowerings generate code for other float types.
def Attn_ShapedF32 : AnyTypeOf<[StaticShapeTensorOf<[F32]>,
                                 StaticShapeMemRefOf<[F32]>]>;
def Attn_ShapedI32 : AnyTypeOf<[StaticShapeTensorOf<[I32]>,
                                 StaticShapeMemRefOf<[I32]>]>;

def Attn_FusedAttentionOp : Op<Attn_Dialect, "fused_attention", [
    AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<BufferizableOpInterface,
        ["bufferizesToMemoryRead", "bufferizesToMemoryWrite",
         "bufferizesToElementwiseAccess", "getAliasingValues", "bufferize"]>]> {
  let summary = "attention as one flash-style kernel, in destination style";
  let description = [{
    Computes exactly `attn.attention` (D2L DotProductAttention: scores
    `q kᵀ * scale`, entries `j >= len(n, i)` replaced by -1e6 (with
    `causal`, `len = min(len, i + 1)`), softmax, `@ v`) into `init`, without
    materializing the `[N, Tq, Tk]` scores: `attn-lower-fused-attention`
    emits an online softmax over blocks of keys, with the mask computed from
    indices and key blocks past every row's length skipped.

    With `heads(H)` (H > 1), it is the attention core of D2L
    MultiHeadAttention on the projections as they are: `q` `[B, Tq, H*dk]`,
    `k` `[B, Tk, H*dk]`, `v` `[B, Tk, H*dv]`, `valid_lens` per batch entry
    (`[B]` or `[B, Tq]`, shared by its heads) and `init` `[B, Tq, H*dv]`
    are read and written as if split into heads (`split_heads`, lengths
    `repeat_interleave`d, `merge_heads`), without those copies. `scale` is
    `1/sqrt(dk)`.

    The keywords of `multihead_attention` v2:

    - `kv_heads(G)` (G divides H): `k` is `[B, Tk, G*dk]` and `v`
      `[B, Tk, G*dv]`; query head `h` reads key/value head `h / (H / G)`
      where it is (Hugging Face `repeat_kv`, without the copies).
    - `window(W)` (W >= 1, with `causal`): keys `j <= i - W` are masked
      too (replaced by -1e6); key blocks entirely below every row's window
      are skipped, so the work grows with `Tq * W`.
    - `rope(%cos, %sin)`: the rotary embedding of Hugging Face Llama on
      every head of `q` and `k` before the scores, position = row index:
      `x'[j] = x[j] cos[t, j] - x[j + dk/2] sin[t, j]` and
      `x'[j + dk/2] = x[j + dk/2] cos[t, j] + x[j] sin[t, j]` for
      `j < dk/2`; `cos`, `sin` are `[max(Tq, Tk), dk/2]` tables (attn-
      decompose computes them as torch does). The lowerings apply it where
      the kernel reads `q` and `k`, not as a pass over them.
    - `products(bf16)`: the operands of the two products are rounded to
      bf16 where the kernel reads them: `q` and `k` (after rope), `v`, and
      the softmax weights before `@ v` (the fused kernels round the
      weights `exp(s - m)` of the running max `m` and divide by the sum
      after); the products are exact in f32 and summed in f32, the
      statistics are f32. A `multihead_attention` or `attention` on bf16
      gets it (mlir::attn::attentionProductsOf), so that both products run
      on AMX or `vdpbf16ps`; the buffers stay f32.
    - `exclusive` (with `causal`): a masked key weighs exactly 0, as in
      attn.decode_attention (a KV cache's rule), instead of D2L's -1e6
      replacement; the two differ only for a row whose visible scores are
      all below -1e6 + 104 (attn-decompose's prefill of a cache from
      position 0, which reads the rows it wrote: `q`'s positions are its
      rows'). The CPU's lowering only.

    On tensors it returns the result (`init` is only a destination); after
    bufferization it works on memrefs and writes `init`. `init` may be `q`
    (or share its buffer): row `i` of the result needs row `i` of `q` only,
    and the lowering reads the rows it overwrites before writing them.

    Example:

    ```mlir
    %o = attn.fused_attention %q, %k, %v valid_lens(%vl) outs(%init) causal
        scale(2.500000e-01)
        : (tensor<10x64x16xf32>, tensor<10x64x16xf32>, tensor<10x64x16xf32>,
           tensor<10xi32>, tensor<10x64x16xf32>) -> tensor<10x64x16xf32>
    %m = attn.fused_attention %x, %x, %x valid_lens(%lens) outs(%init2)
        heads(4) scale(2.500000e-01)
        : (tensor<2x64x64xf32>, tensor<2x64x64xf32>, tensor<2x64x64xf32>,
           tensor<2xi32>, tensor<2x64x64xf32>) -> tensor<2x64x64xf32>
    %g = attn.fused_attention %qp, %kp, %vp rope(%cos, %sin) outs(%qp)
        causal window(16) heads(4) kv_heads(2) scale(2.500000e-01)
        : (tensor<2x64x64xf32>, tensor<2x64x32xf32>, tensor<2x64x32xf32>,
           tensor<64x8xf32>, tensor<64x8xf32>, tensor<2x64x64xf32>)
        -> tensor<2x64x64xf32>
    ```
  }];
  let arguments = (ins Attn_ShapedF32:$q, Attn_ShapedF32:$k, Attn_ShapedF32:$v,
                       Optional<Attn_ShapedI32>:$valid_lens,
                       Optional<Attn_ShapedF32>:$rope_cos,
                       Optional<Attn_ShapedF32>:$rope_sin,
                       Attn_ShapedF32:$init, UnitAttr:$causal,
                       OptionalAttr<I64Attr>:$window,
                       DefaultValuedAttr<I64Attr, "1">:$heads,
                       OptionalAttr<I64Attr>:$kv_heads,
                       F32Attr:$scale,
                       OptionalAttr<TypeAttr>:$products,
                       UnitAttr:$exclusive);
  let results = (outs Variadic<Attn_FloatTensor>:$result);
  let assemblyFormat = [{
    $q `,` $k `,` $v (`valid_lens` `(` $valid_lens^ `)`)?
    (`rope` `(` $rope_cos^ `,` $rope_sin `)`)? `outs` `(` $init `)`
    (`causal` $causal^)? (`exclusive` $exclusive^)? (`window` `(` $window^ `)`)?
    (`heads` `(` $heads^ `)`)? (`kv_heads` `(` $kv_heads^ `)`)?
    `scale` `(` $scale `)` (`products` `(` $products^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// True after bufferization: operands are memrefs, no result.
    bool hasBufferSemantics() {
      return ::llvm::isa<::mlir::MemRefType>(getInit().getType());
    }
    /// The key/value heads: kv_heads, or heads when it is not given.
    int64_t getNumKvHeads() {
      ::std::optional<uint64_t> given = getKvHeads();
      return given ? static_cast<int64_t>(*given) : getHeads();
    }
  }];
}

//===----------------------------------------------------------------------===//
// DecodeAttentionOp (internal: produced by attn-decompose, not in the DSL)
//===----------------------------------------------------------------------===//

def Attn_ShapedFloat : AnyTypeOf<[StaticShapeTensorOf<[F32, BF16, F16]>,
                                   StaticShapeMemRefOf<[F32, BF16, F16]>]>;

def Attn_DecodeAttentionOp : Op<Attn_Dialect, "decode_attention", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<BufferizableOpInterface,
        ["bufferizesToMemoryRead", "bufferizesToMemoryWrite",
         "getAliasingValues", "bufferize"]>]> {
  let summary = "the attention of new tokens over a KV cache, in destination "
                "style";
  let description = [{
    The attention core of `multihead_attention` with a KV cache, on the
    projections as they are: `q` `[B, T, H*d]` (the `T` new tokens' queries,
    rotated when the block has `rope`), the caches `k` and `v`
    `[B, L, G*d]` (`G` = `kv_heads`, else `H`; f32, bf16 or f16, the new
    rows already written), `pos` `i32[B]` and `init` `[B, T, H*d]`.

    New token `t` of entry `b` sees exactly the cache rows
    `[lo, pos[b] + t]`, `lo = max(0, pos[b] + t + 1 - window)` with
    `window(W)`, else 0; query head `h` reads kv head `h / (H / G)`. Its
    output is `softmax(q kᵀ * scale) @ v` over those rows: no other row is
    read (rows past `pos[b] + T` may hold anything, NaN included), and none
    counts in the softmax, as in D2L's decoder at prediction, whose state
    holds only the past tokens. Positions out of range (`pos[b] < 0` or
    `pos[b] + T > L`) read nothing and leave `init` as it is
    (`attn.cache_update` then wrote nothing and the kernel reports it).

    `products(bf16)`: `q`, `k`, `v` and the weights `exp(s - m)` are
    rounded to bf16 before the two products (as `attn.fused_attention`).

    The CPU lowering (`attn-lower-fused-attention`) splits the keys into
    chunks of a fixed, compile-time size (the target's `decodeKeys`), each
    giving a partial (max, sum, output) per row, reduced in chunk order: the
    same bits on any number of threads.

    Example:

    ```mlir
    %o = attn.decode_attention %q, %k, %v at %pos outs(%init) window(8)
        heads(4) kv_heads(2) scale(1.250000e-01)
        : (tensor<2x1x256xf32>, tensor<2x128x128xbf16>,
           tensor<2x128x128xbf16>, tensor<2xi32>, tensor<2x1x256xf32>)
        -> tensor<2x1x256xf32>
    ```
  }];
  let arguments = (ins Attn_ShapedF32:$q, Attn_ShapedFloat:$k,
                       Attn_ShapedFloat:$v, Attn_ShapedI32:$pos,
                       Attn_ShapedF32:$init,
                       OptionalAttr<I64Attr>:$window,
                       I64Attr:$heads,
                       OptionalAttr<I64Attr>:$kv_heads,
                       F32Attr:$scale,
                       OptionalAttr<TypeAttr>:$products);
  let results = (outs Variadic<Attn_FloatTensor>:$result);
  let assemblyFormat = [{
    $q `,` $k `,` $v `at` $pos `outs` `(` $init `)`
    (`window` `(` $window^ `)`)? `heads` `(` $heads `)`
    (`kv_heads` `(` $kv_heads^ `)`)? `scale` `(` $scale `)`
    (`products` `(` $products^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// True after bufferization: operands are memrefs, no result.
    bool hasBufferSemantics() {
      return ::llvm::isa<::mlir::MemRefType>(getInit().getType());
    }
    /// The key/value heads: kv_heads, or heads when it is not given.
    int64_t getNumKvHeads() {
      ::std::optional<uint64_t> given = getKvHeads();
      return given ? static_cast<int64_t>(*given) : getHeads();
    }
  }];
}

#endif // ATTN_OPS_TD
