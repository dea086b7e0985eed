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
  let options = [
    Option<"attentionLowering", "attention", "std::string",
           /*default=*/"\"decomposed\"",
           "How `attention` is lowered: `decomposed` (matmul, masked_softmax, "
           "matmul: the D2L code step by step), `fused` (one "
           "attn.fused_attention, a flash-style kernel that never "
           "materializes the scores) or `auto` (fused when the scores of one "
           "batch entry exceed `fuse-threshold` elements)">,
    Option<"fuseThreshold", "fuse-threshold", "int64_t", /*default=*/"4096",
           "With attention=auto: Tq * Tk from which attention is fused">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def AttnLowerToLinalg : Pass<"attn-lower-to-linalg", "::mlir::ModuleOp"> {
  let summary = "Lower primitive attn ops to linalg/tensor/arith/math";
  let description = [{
    Lowers every primitive attn op to upstream ops on tensors, keeping the
    exact semantics of SPEC §2:

    - `linear` → `tensor.collapse_shape`, `linalg.transpose` of the weight,
      the bias broadcast as the accumulator, `linalg.matmul`;
    - `matmul` → `linalg.batch_matmul` (`transpose_b` through
      `linalg.transpose`);
    - `softmax` → row max, `exp(x - max)`, row sum, division
      (`linalg.generic`s); `masked_softmax` first replaces `x[n, i, j]` by
      `-1e6` where `j >= len` (`linalg.index` against the lengths);
    - `positional_encoding` → `x + P[:T]` with the table computed at compile
      time in float32, the way torch computes it;
    - `layer_norm` → sum, sum of squared deviations, normalization;
    - `split_heads`/`merge_heads` → `expand_shape`, `linalg.transpose`,
      `collapse_shape`; `dropout` → its input;
    - `embedding` → a gather with each id clamped into `[0, V)`.

    Every function gets one more result, an `i32` kernel status: 0, or 1 when
    an embedding id was outside `[0, V)` (the output rows of such ids are
    the clamped rows; nothing is read out of bounds).

    Composite ops must be decomposed first (`attn-decompose`).

    Before:

    ```mlir
    func.func @f(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
      %0 = attn.relu %x : tensor<2x8xf32>
      return %0 : tensor<2x8xf32>
    }
    ```

    After:

    ```mlir
    func.func @f(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, i32) {
      %c0_i32 = arith.constant 0 : i32
      %e = tensor.empty() : tensor<2x8xf32>
      %0 = linalg.generic {...} ins(%x : tensor<2x8xf32>) outs(%e : tensor<2x8xf32>) {
      ^bb0(%in: f32, %out: f32):
        %1 = arith.maximumf %in, %cst : f32
        linalg.yield %1 : f32
      } -> tensor<2x8xf32>
      return %0, %c0_i32 : tensor<2x8xf32>, i32
    }
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def AttnSplitPrepare : Pass<"attn-split-prepare", "::mlir::ModuleOp"> {
  let summary = "Split each kernel into a once-per-params prepare step and "
                "the per-call rest";
  let description = [{
    Params are bound once and then used by many calls, yet a kernel lowered
    to linalg transposes every `linear` weight on every call. For each
    kernel `NAME` (a public `func.func` on tensors, after
    `attn-lower-to-linalg`) this pass builds

    - `NAME_prepare(params...) -> (packed, status)`: every linalg op that
      reads only params (and constants) and makes no bigger a tensor than it
      reads (the weight transposes; not the bias broadcasts), with the
      results the rest of the kernel reads flattened, one after another at
      16-float offsets, into the 1-D f32 tensor `packed`;
    - `NAME_prepared(args..., packed) -> (results..., status)`: `NAME` with
      those results read out of `packed` (`tensor.extract_slice` +
      `tensor.expand_shape`, no copy once bufferized);

    and makes `NAME` call the two, so that its ABI and its results do not
    change. `NAME` records the size of `packed` as `attn.packed_elements`;
    a kernel with nothing to prepare gets a 0-element `packed`.

    Before:

    ```mlir
    func.func @k(%x: tensor<4x8xf32>, %w: tensor<16x8xf32> {attn.role = "param"})
        -> (tensor<4x16xf32>, i32) {
      %wt = linalg.transpose ins(%w : tensor<16x8xf32>) outs(%e : tensor<8x16xf32>)
          permutation = [1, 0]
      %y = linalg.matmul ins(%x, %wt : ...) outs(%zero : tensor<4x16xf32>)
      return %y, %c0 : tensor<4x16xf32>, i32
    }
    ```

    After: `@k_prepare(%w)` returns the transpose in `tensor<128xf32>`;
    `@k_prepared(%x, %w, %packed)` starts from
    `tensor.extract_slice %packed[0] [128] [1]` and
    `tensor.expand_shape ... into tensor<8x16xf32>`; `@k` calls both.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def AttnDistinctResults
    : Pass<"attn-distinct-results", "::mlir::func::FuncOp"> {
  let summary = "Give a value returned more than once a copy per extra result";
  let description = [{
    A block may list one value as two outputs (`Y1 = Y0; output Y0, Y1`, or
    two identical calls that CSE merged). Each output is its own buffer in
    the ABI, but `buffer-results-to-out-params` cannot write one buffer
    into two out-params. Before bufferization, every repeat of a returned
    tensor becomes a `linalg.copy` into a fresh tensor.

    Before: `return %y, %y : tensor<2xf32>, tensor<2xf32>`

    After:

    ```mlir
    %e = tensor.empty() : tensor<2xf32>
    %c = linalg.copy ins(%y : tensor<2xf32>) outs(%e : tensor<2xf32>) -> tensor<2xf32>
    return %y, %c : tensor<2xf32>, tensor<2xf32>
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def AttnForwardCallOutputs
    : Pass<"attn-forward-call-outputs", "::mlir::func::FuncOp"> {
  let summary = "Let a call write a function's output argument directly";
  let description = [{
    After `buffer-results-to-out-params`, a kernel `NAME` that returns what
    `NAME_prepared` returned allocates a buffer for the call's output and
    copies it into its own output argument. This pass makes the call write
    the output argument itself when that is all the buffer is for: a
    `memref.alloc` used only by one `func.call` and a `memref.copy` into a
    function argument used by nothing else (same type).

    Before:

    ```mlir
    func.func @k(%x: memref<4xf32>, %out: memref<4xf32>) -> i32 {
      %b = memref.alloc() : memref<4xf32>
      %s = call @k_prepared(%x, %b) : (memref<4xf32>, memref<4xf32>) -> i32
      memref.copy %b, %out : memref<4xf32> to memref<4xf32>
      return %s : i32
    }
    ```

    After: `%s = call @k_prepared(%x, %out)`, no alloc, no copy.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def AttnFuseElementwise : Pass<"attn-fuse-elementwise"> {
  let summary = "Fuse elementwise linalg.generic chains, keeping named GEMMs";
  let description = [{
    Upstream's `linalg-fuse-elementwise-ops` also fuses `linalg.transpose`
    and `linalg.broadcast` producers into `linalg.matmul`, turning it into a
    `linalg.generic` with permuted maps that no GEMM lowering recognizes.
    This pass applies the same fusion patterns, restricted to
    `linalg.generic` producers and consumers.

    Before: `%s = linalg.generic {mulf}` (scale) feeding
    `%m = linalg.generic {select}` (mask).

    After: one `linalg.generic` computing `select(j < len, x * s, -1e6)`.
  }];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def AttnTileAndVectorize
    : Pass<"attn-tile-and-vectorize", "::mlir::func::FuncOp"> {
  let summary = "Register-block GEMMs and vectorize elementwise linalg ops "
                "on buffers";
  let description = [{
    Runs after bufferization.

    Every `linalg.matmul` / `linalg.batch_matmul` with the default maps
    (`C[m, n] += A[m, k] * B[k, n]`) is replaced by register blocks of
    `row-tile` rows by `column-tile` columns of C: the block's rows are loaded
    into vector accumulators, a k loop carries them, each k step loads one
    vector of B, broadcasts `row-tile` scalars of A and issues `row-tile`
    FMAs, and the block is stored once. Shapes are static, so the leftover
    rows and columns are blocks of smaller static sizes: no masks, no
    partial vectors.

    Epilogues: a `linalg.fill` of zeros or a `linalg.broadcast` of a bias
    over rows that writes a plain matmul's accumulator right before it, and
    a ReLU `linalg.generic` (`max(x, +0.0)`) that reads the accumulator
    right after it into another buffer, are folded into the register
    blocks: the first k slice starts from zeros or the bias instead of
    loading C, and the last stores `max(acc, 0)` into the ReLU's output.
    Each saves a pass over C. The ReLU is folded only when nothing else
    reads C.

    All-parallel ops (elementwise `linalg.generic`, `linalg.fill`,
    `linalg.broadcast`, and `linalg.transpose` when it keeps the innermost
    dimension, as split_heads/merge_heads do) are tiled into strips of their
    innermost dimension (the largest power of two up to `column-tile` that
    divides it) and vectorized. Reductions over the innermost dimension only
    (softmax's max and sum, layer norm's sums) of rows up to 1024 elements
    are vectorized one row per vector (`vector.reduction`).

    Other reductions, other transposes and gathers are left for
    `convert-linalg-to-loops`. The vector ops are lowered to 1-D form.

    Before:

    ```mlir
    linalg.matmul ins(%a, %b : memref<12x5xf32>, memref<5x40xf32>)
                  outs(%c : memref<12x40xf32>)
    ```

    After (the first block; then 4x32, 8x8 and 4x8 blocks):

    ```mlir
    %c0 = vector.load %c[%i0, %j] : memref<12x40xf32>, vector<32xf32>
    ...
    %acc:8 = scf.for %k = ... iter_args(%a0 = %c0, ...) {
      %b = vector.load %b[%k, %j] : memref<5x40xf32>, vector<32xf32>
      %a = memref.load %a[%i0, %k] : memref<12x5xf32>
      %s = vector.broadcast %a : f32 to vector<32xf32>
      %f = vector.fma %s, %b, %a0 : vector<32xf32>
      ...
    }
    vector.store %acc#0, %c[%i0, %j] : memref<12x40xf32>, vector<32xf32>
    ```
  }];
  let options = [
    Option<"rowTile", "row-tile", "int64_t", /*default=*/"0",
           "Most rows of C per register block (0: the target's schedule, "
           "gemm-rows)">,
    Option<"columnTile", "column-tile", "int64_t", /*default=*/"0",
           "Most columns of C per register block and elements per vector "
           "strip, a power of two (0: the target's gemm-columns and "
           "strip-elements)">,
    Option<"depthTile", "depth-tile", "int64_t", /*default=*/"0",
           "k per slice: a column block's slice of B (depth-tile x "
           "column-tile floats) is reused from cache by every row block (0: "
           "the target's gemm-depth)">,
    Option<"parallel", "parallel", "bool", /*default=*/"false",
           "Make the outermost GEMM block loop (batch, else columns, else "
           "rows) an scf.parallel, for threads">
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def AttnApproximateMath : Pass<"attn-approximate-math"> {
  let summary = "Replace math.exp by its polynomial approximation";
  let description = [{
    Rewrites `math.exp` on f32 scalars and vectors into upstream's polynomial
    approximation (range reduction, a polynomial, exponent bit
    manipulation; ~1 ulp). Without it, LLVM turns every lane of a vector
    `exp` into a call to libm's `expf`: slow, and the kernel object would need
    `-lm` to link.

    Before: `%y = math.exp %x : vector<16xf32>`

    After: a sequence of `arith` ops (`arith.mulf`, `math.fma`,
    `arith.bitcast`, ...) on `vector<16xf32>`.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def AttnLowerFusedAttention
    : Pass<"attn-lower-fused-attention", "::mlir::func::FuncOp"> {
  let summary = "Lower attn.fused_attention on buffers to a flash-style loop "
                "nest";
  let description = [{
    For each batch entry, the keys are transposed into a scratch buffer in
    blocks of `key-block` keys (`[Tk / W, d, W]`: one block's vectors are
    contiguous, and never 4 KB apart in one L1 set); then for each block of `row-block` query rows, an online softmax
    runs over blocks of `key-block` keys: scores are computed in vector
    registers (FMAs against a vector of keys), masked from indices with
    D2L's `-1e6` replacement (`j >= len`, `len = min(len, i + 1)` when
    causal), and folded into a running max `m`, sum `l` and output row
    (`out = out * exp(m - m') + p @ v`). Key blocks past every row's length
    are skipped; the scores are never stored. A row with `len <= 0` gets the
    mean of `v` (D2L's uniform row); a row whose visible scores are all below
    `-1e6 + 104` (where the skipped masked keys would still count) is
    recomputed exactly.

    Extra memory: about `d * Tk + dv` floats per thread, whatever Tq.
  }];
  let options = [
    Option<"rowBlock", "row-block", "int64_t", /*default=*/"0",
           "Query rows per block (score accumulators in registers; 0: the "
           "target's attention-rows)">,
    Option<"keyBlock", "key-block", "int64_t", /*default=*/"0",
           "Keys per block, a power of two (row-block x key-block / lanes "
           "score accumulators; 0: the target's attention-keys)">,
    Option<"parallel", "parallel", "bool", /*default=*/"false",
           "Make the loop over batch entries an scf.parallel (each iteration "
           "with its own scratch), for threads">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

#endif // ATTN_TRANSFORMS_PASSES_TD
