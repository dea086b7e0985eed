//===- Passes.td - Target-neutral passes of the attn dialect *- tablegen -*-===//
//
// attn -> linalg and the rewrites that hold for any target. What a CPU
// target must provide on top (register blocking, the flash loop nest,
// packed params, math approximations) is in attn/CPU/Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TRANSFORMS_PASSES_TD
#define ATTN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnComputeInF32 : Pass<"attn-compute-in-f32"> {
  let summary = "Compute every op on bf16/f16 tensors in f32";
  let description = [{
    The numerics of docs/spec.md §2 (v3): each op computes in f32 and
    rounds its result to its type once. An op whose float operands or
    results are bf16 or f16 gets its low-precision operands widened by
    `attn.cast` (exact), computes in f32, and its low-precision results
    are rounded back by one `attn.cast` each; a composite op
    (`multihead_attention`, `ffn`, ...) is widened as a whole, so only its
    results are rounded. A result whose one use is an elementwise op (add,
    sub, mul, relu, gelu, silu, tanh, sigmoid) is not rounded: it goes to
    that op, its epilogue, in f32, and only the chain's last result is
    rounded (the residual `add(X, linear(H, W))` rounds once, as a fused
    epilogue; `keepsResultInF32`). Ops on f32 alone and `attn.cast` are
    left as they are; integer operands (lengths, ids) too. Function
    signatures keep their types: the kernel's buffers stay bf16/f16.

    Before:

    ```mlir
    %y = attn.relu %x : tensor<4xbf16>
    ```

    After:

    ```mlir
    %0 = attn.cast %x to f32 : tensor<4xbf16>
    %1 = attn.relu %0 : tensor<4xf32>
    %y = attn.cast %1 to bf16 : tensor<4xf32>
    ```
  }];
}

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
      `j >= min(valid_len, i + 1)`. With `return_weights`, that softmax is
      also the op's `attention_weights` result (for `multihead_attention`,
      its inner attention's, `[B*heads, Tq, Tk]`);
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
           "batch entry exceed `fuse-threshold` elements). An op with "
           "`return_weights` is always decomposed: its weights are the "
           "scores' softmax">,
    Option<"fuseThreshold", "fuse-threshold", "int64_t", /*default=*/"4096",
           "With attention=auto: Tq * Tk from which attention is fused">,
    Option<"decodeKernel", "decode-kernel", "bool", /*default=*/"false",
           "Whether the target lowers attn.decode_attention (the CPU and the GPU do): a "
           "multihead_attention with a KV cache then becomes one (unless "
           "attention=decomposed) instead of step-by-step ops over the whole "
           "cache">,
    Option<"prefillFlashRows", "prefill-flash-rows", "int64_t",
           /*default=*/"64",
           "With decode-kernel: a call with a cache adding at least this many "
           "tokens (0: none) runs the flash kernel (attn.fused_attention, "
           "exclusive) on the rows it wrote when every entry starts at "
           "position 0 (a prompt's prefill), the decode kernel otherwise: the "
           "decode kernel reads each key once for all of a kv head's query "
           "rows, which a long prompt's rows outgrow">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def AttnLowerToLinalg : Pass<"attn-lower-to-linalg", "::mlir::ModuleOp"> {
  let summary = "Lower primitive attn ops to linalg/tensor/arith/math";
  let description = [{
    Lowers every primitive attn op to upstream ops on tensors, keeping the
    exact semantics of docs/spec.md §2:

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
    - `embedding` → a gather with each id clamped into `[0, V)`;
    - `cache_update` → when every position is in range, an `scf.for` over
      the batch inserting each entry's rows at its position
      (`tensor.insert_slice` into the cache, in place for a `state`
      argument), under an `scf.if` that otherwise yields the cache.

    Every function gets one more result, an `i32` kernel status: 0, 1 when
    an embedding id was outside `[0, V)` (the output rows of such ids are
    the clamped rows; nothing is read out of bounds), or
    ATTNC_STATUS_CACHE_POSITION when a cache position was out of range
    (nothing written to the caches; it takes precedence).

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
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def AttnDropStateResults : Pass<"attn-drop-state-results", "::mlir::ModuleOp"> {
  let summary = "Drop the results that return a state's own buffer";
  let description = [{
    After `one-shot-bufferize`, a function result marked `attn.updates = i`
    (the new value of state argument `i`, docs/spec.md §2 "State and
    decoding") must be that argument's buffer itself: the state was updated
    in place. Such results are dropped from the function and its calls
    (callees first, so a kernel returning its `NAME_prepared` call's state
    result sees the argument); a state result that is any other buffer
    would be a copy of the state that the caller never sees, and is an
    error naming the state.

    Before:

    ```mlir
    func.func @k(%c: memref<2x8xf32> {attn.role = "state"}) -> (memref<2x8xf32> {attn.updates = 0 : i64}) {
      ...
      return %c : memref<2x8xf32>
    }
    ```

    After: `func.func @k(%c: memref<2x8xf32> {attn.role = "state"})`, `return`.
  }];
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

def AttnForwardCallSlices
    : Pass<"attn-forward-call-slices", "::mlir::ModuleOp"> {
  let summary = "Let a call read or write a slice of a 1-D buffer in place";
  let description = [{
    A caller hands each call of another kernel its region of the caller's
    packed params (`attn-prepare-calls`): a static slice `[K, K + N)` of a
    1-D buffer. Functions take identity-layout memrefs (docs/spec.md §5's bare
    pointers), and a slice at `K > 0` is not one, so bufferization copies it
    into a fresh buffer for the call (`_prepared` reading it) or out of one
    after the call (`_prepare` filling it). This pass removes those copies:
    the call gets the whole buffer instead, through a private declaration
    `@CALLEE.at.I` whose `attn.offset_call_of` names the callee and whose
    `attn.offset_call_bytes` gives each operand's byte offset;
    `attn-resolve-offset-calls`, once in the LLVM dialect, makes that a call
    of the callee with the pointers advanced.

    Only copies that cannot change what is computed are removed: a slice
    read from the caller's `packed` argument (`attn.name = "packed"`, no
    `attn.role`: never written) into a buffer that one call takes as its
    callee's `packed` argument (read only), or a buffer that one call of a
    `_prepare` part fills as its last (output) argument and that is copied
    right after into a slice no other operand of the call reaches.

    Before:

    ```mlir
    %s = memref.subview %packed[4608] [4608] [1]
        : memref<9216xf32> to memref<4608xf32, strided<[1], offset: 4608>>
    %b = memref.alloc() : memref<4608xf32>
    memref.copy %s, %b
    %r = call @layer_prepared(%x, %w, %b, %out) : (...) -> i32
    ```

    After: `%r = call @layer_prepared.at.0(%x, %w, %packed, %out)`, no
    alloc, no copy, with `@layer_prepared.at.0` declared with
    `attn.offset_call_bytes = array<i64: 0, 0, 18432, 0>`.
  }];
  let dependentDialects = [
    "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect"
  ];
}

def AttnResolveOffsetCalls
    : Pass<"attn-resolve-offset-calls", "::mlir::ModuleOp"> {
  let summary = "Calls of attn-forward-call-slices' declarations become "
                "calls of their callees, with offset pointers";
  let description = [{
    In the LLVM dialect (bare-pointer calling convention), each `llvm.call`
    of a declaration carrying `attn.offset_call_of = @F` and
    `attn.offset_call_bytes` becomes a call of `@F` whose pointer operands
    are advanced by those byte offsets (`llvm.getelementptr` on i8); the
    declarations are erased. Also gives every defined function that is
    private (`sym_visibility = "private"`: a block only called by others,
    and its parts) internal linkage, so that objects export only the
    kernels asked for.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // ATTN_TRANSFORMS_PASSES_TD
