//===- Passes.td - CPU code generation passes of attn ------*- tablegen -*-===//
//
// The passes a CPU target provides: each reads its blocking from the
// module's CPU target description (attn/Target/CpuTarget.h). A new target
// (GPU, another backend) provides its own set in place of these; the
// target-neutral passes are in attn/Transforms/Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_CPU_PASSES_TD
#define ATTN_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnBf16PairGemms : Pass<"attn-bf16-pair-gemms", "::mlir::ModuleOp"> {
  let summary = "Read the operands of bf16 GEMMs as bf16, k in pairs";
  let description = [{
    Runs on tensors, after `attn-lower-to-linalg` and before
    `attn-split-prepare`. A `linalg.matmul` whose operands are both bf16
    tensors widened to f32 (`attn-compute-in-f32`'s extensions, through
    reshapes and transposes) and whose k is even becomes:

    - a pack of B into `[K/2, N]` f32 slots, each holding the bf16 pair
      `(B[2p, n], B[2p+1, n])` as bits, the even k in the low half (the
      VNNI layout of `vdpbf16ps`); on a weight it reads only params, so
      `attn-split-prepare` moves it into `NAME_prepare`;
    - a `linalg.generic` marked `attn.bf16_pair_gemm` that reads A as bf16
      and sums k in pairs in `vdpbf16ps`'s order,
      `C = (C + A[m, 2p+1] B[2p+1, n]) + A[m, 2p] B[2p, n]`
      (each product exact in f32, each sum rounded once).

    `attn-tile-and-vectorize` makes the generic register blocks:
    `vdpbf16ps` with AVX512-BF16, FMAs on the widened pairs elsewhere, the
    same sums in the same order, so every CPU gets the same bits (but for
    inputs or sums below f32's normal range, which `vdpbf16ps` flushes to
    zero). The weights take half the memory of the widened f32 ones.

    Before:

    ```mlir
    %a = linalg.generic ... ins(%x : tensor<4x8xbf16>) ... arith.extf
    %w32 = linalg.generic ... ins(%w : tensor<16x8xbf16>) ... arith.extf
    %wt = linalg.transpose ins(%w32 : tensor<16x8xf32>) ... permutation = [1, 0]
    %y = linalg.matmul ins(%a, %wt : tensor<4x8xf32>, tensor<8x16xf32>)
                       outs(%c : tensor<4x16xf32>)
    ```

    After:

    ```mlir
    %packed = linalg.generic ... ins(%w, %w : tensor<16x8xbf16>, ...)
        outs(%e : tensor<4x16xf32>)      // (n, p) -> (n, 2p), (n, 2p+1)
    %y = linalg.generic {attn.bf16_pair_gemm, ...}
        ins(%x, %x, %packed : tensor<4x8xbf16>, tensor<4x8xbf16>,
            tensor<4x16xf32>) outs(%c : tensor<4x16xf32>)
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
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

    With `hoist=false` nothing is prepared (every `packed` has 0
    elements): the GPU emulation's kernels read their params as the GPU's,
    which have no prepare step.
  }];
  let options = [
    Option<"hoist", "hoist", "bool", /*default=*/"true",
           "Move the work on params into NAME_prepare (false: the three "
           "functions, with nothing in NAME_prepare)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
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

    A plain matmul of fewer rows than `row-tile` (a decode step's
    projections, bound by reading B) reads B in chunks of
    `gemv-chunk-steps` k steps, an `scf.parallel` with `parallel`: each
    chunk's rows at once, its register blocks (as wide as a full block's
    accumulators) covering `gemv-block-steps` k steps each into partial
    sums of the chunk, which a last loop adds in chunk order onto C's start
    (zeros, the bias or C) before the activation.

    A bf16 pair GEMM (`attn-bf16-pair-gemms`, `attn.bf16_pair_gemm`) becomes
    register blocks of the same shape whose k steps are pairs: `vdpbf16ps`
    (`x86vector.avx512.dot`) on its slots, or two FMAs (k = 2p+1, then 2p)
    on widened operands; its tiles form becomes AMX blocks (2 x 2 tiles of
    16 x 16 f32, `amx.tile_mulf`, A copied into tiles first), after a
    request for the tile state at the function's start
    (`dialects/lib/CPU/AmxGemm.cpp`).

    Epilogues: a `linalg.fill` of zeros or a `linalg.broadcast` of a bias
    over rows that writes a plain matmul's accumulator right before it, and
    an activation that reads the accumulator right after it into another
    buffer (an elementwise `linalg.generic` of C alone with identity maps
    whose body is scalar arith/math: ReLU's `max(x, +0.0)`, GELU's erf or
    exp formula, ...), are folded into the register blocks: the first k
    slice starts from zeros or the bias instead of loading C, and the last
    applies the activation's body to the accumulator vectors and stores the
    result into the activation's output. Each saves a pass over C. The
    activation is folded only when nothing else reads C.

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
           "rows) an scf.parallel, for threads">,
    Option<"parallelWork", "parallel-work", "int64_t", /*default=*/"-1",
           "With parallel: split loops of at least this much work (flops or "
           "elements) over threads, for both of the schedule's thresholds "
           "(-1: parallel-flops and parallel-elements; 0: every loop, as "
           "the tests of the same bits on 1 and 2 threads compile)">
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::amx::AMXDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
    "::mlir::x86vector::X86VectorDialect"
  ];
}

def AttnCheckAllocations
    : Pass<"attn-check-allocations", "::mlir::func::FuncOp"> {
  let summary = "Return the out-of-memory status when a heap buffer cannot "
                "be allocated";
  let description = [{
    Runs on buffers, just before the structured loops become OpenMP or
    branches, on the functions of the kernel ABI (those returning only the
    `i32` status). After each `memref.alloc` (malloc, once lowered) it tests
    the buffer's pointer: when it is null, the function frees the buffers it
    allocated before and not yet freed, and returns
    `ATTNC_STATUS_OUT_OF_MEMORY` (attn/Target/KernelStatus.h) instead of
    writing through the null pointer. Nothing of the outputs is valid then;
    the caller's buffers (states included) are untouched only if the
    allocation came before any write, which the pass does not promise.

    An allocation inside a loop cannot branch out of it: when its pointer
    is null the rest of its block (where the buffer lives and is freed) is
    skipped, an `i32` mark of the function is set (atomically: parallel
    loops), and the function's return reports the mark once the loops are
    done. A loop body whose results the pass cannot stand in for is an
    error, so that no allocation is left unchecked.

    Before:
    ```mlir
    %buf = memref.alloc() {alignment = 64 : i64} : memref<4096x4096xf32>
    ... uses ...
    ```
    After:
    ```mlir
    %buf = memref.alloc() {alignment = 64 : i64} : memref<4096x4096xf32>
    %p = memref.extract_aligned_pointer_as_index %buf
    %i = arith.index_cast %p : index to i64
    %q = llvm.inline_asm "", "=r,0" %i : (i64) -> i64  // LLVM cannot fold it
    %null = arith.cmpi eq, %q, %c0_i64 : i64
    cf.cond_br %null, ^oom, ^next
  ^oom:  // frees what was allocated before, returns -7
  ^next: ... uses ...
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::cf::ControlFlowDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def AttnApproximateMath : Pass<"attn-approximate-math"> {
  let summary = "Replace math.exp, math.erf and math.tanh by polynomial "
                "approximations";
  let description = [{
    Rewrites `math.exp` (softmax), `math.erf` and `math.tanh` (gelu) on f32
    scalars and vectors into upstream's polynomial approximations (`exp`:
    range reduction, a polynomial, exponent bit manipulation, ~1 ulp;
    `erf`, `tanh`: rational polynomials on clamped ranges, ~3e-7 absolute).
    Without it, LLVM turns every lane of a vector `exp` into a call to
    libm's `expf` (`erff`, `tanhf`): slow, and the kernel object would need
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

def AttnExpandFloatConversions : Pass<"attn-expand-float-conversions"> {
  let summary = "f32 <-> bf16/f16 conversions as integer arithmetic";
  let description = [{
    Rewrites `arith.truncf` f32 -> bf16 always, and `arith.extf` f16 -> f32
    and `arith.truncf` f32 -> f16 where the target has no F16C, into
    integer and bit operations on scalars and vectors: round to nearest
    even, overflow to +-inf, NaN to a quiet NaN (0x7fc0 for bf16, 0x7e00
    for f16), subnormals kept — torch's conversions, bit for bit. Without
    it LLVM calls `__truncsfbf2`, `__truncsfhf2` and `__extendhfsf2` from
    libgcc or compiler-rt, which kernel objects do not link. bf16 is
    expanded on every CPU, so that results are the same bits everywhere
    (AVX512-BF16's `vcvtneps2bf16` does not keep subnormal inputs); f16 uses
    F16C's exact `vcvtps2ph`/`vcvtph2ps` where the CPU has them.

    Before: `%h = arith.truncf %x : vector<16xf32> to vector<16xf16>`

    After (without F16C): `arith.bitcast` to `vector<16xi32>`, shifts,
    masks, adds and `arith.select`s, `arith.trunci` to `vector<16xi16>`,
    `arith.bitcast` to `vector<16xf16>`.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def AttnLowerFusedAttention
    : Pass<"attn-lower-fused-attention", "::mlir::func::FuncOp"> {
  let summary = "Lower attn.fused_attention on buffers to a flash-style loop "
                "nest, attn.decode_attention to a split-key one";
  let description = [{
    For each batch entry, the keys are transposed into a scratch buffer in
    blocks of `key-block` keys (`[Tk / W, d, W]`: one block's vectors are
    contiguous, and never 4 KB apart in one L1 set); then for each block of `row-block` query rows, an online softmax
    runs over blocks of `key-block` keys: scores are computed in vector
    registers (FMAs against a vector of keys), masked from indices with
    D2L's `-1e6` replacement (`j >= len`, `len = min(len, i + 1)` when
    causal), and folded into a running max `m`, sum `l` and output row
    (`out = out * exp(m - m') + p @ v`) once per step of `softmax-blocks`
    key blocks: a step's scores wait in a `[row-block, key-block x
    softmax-blocks]` scratch, so the output rows are rescaled and the max and
    sum reduced once per step. Key blocks past every row's length are
    skipped; no `[Tq, Tk]` scores are ever stored. A row with `len <= 0` gets the
    mean of `v` (D2L's uniform row); a row whose visible scores are all below
    `-1e6 + 104` (where the skipped masked keys would still count) is
    recomputed exactly.

    With `products(bf16)` both products take bf16 operands: on an AMX
    target (`bf16-amx`, `d % 32 == 0`, `dv % 16 == 0`) they run on
    `tdpbf16ps` tiles in a loop of their own; on AVX512-BF16 without AMX
    (`bf16-dot`, `d` even, `dv % 16 == 0`) on `vdpbf16ps` in the loop
    above, from the same packed bf16 pairs; elsewhere as FMAs on rounded
    values.

    Extra memory: about `d * Tk + dv` floats per thread, whatever Tq.

    `attn.decode_attention` (a block's attention over its KV cache) gets a
    loop nest of its own (DecodeEmitter.h): the work items are (batch x
    groups of kv heads, up to `decode-rows` query rows) x chunks of
    `decode-keys` cache rows, an `scf.parallel` with `parallel`; each reads
    its group's span of its visible key rows once for all the query rows
    of the group (scores, masked to -inf, in a `[decode-keys, rows]`
    scratch), takes the chunk's max, weights and sum, then reads its value
    rows once; a second loop reduces each row's chunks in order. No cache
    row past a token's position is read. Extra memory: the partials, `(d +
    2)` floats per row and chunk.
  }];
  let options = [
    Option<"rowBlock", "row-block", "int64_t", /*default=*/"0",
           "Query rows per block (score accumulators in registers; 0: the "
           "target's attention-rows)">,
    Option<"keyBlock", "key-block", "int64_t", /*default=*/"0",
           "Keys per block, a power of two (row-block x key-block / lanes "
           "score accumulators; 0: the target's attention-keys)">,
    Option<"softmaxBlocks", "softmax-blocks", "int64_t", /*default=*/"0",
           "Key blocks per step of the online softmax (0: the target's "
           "attention-softmax-blocks)">,
    Option<"parallel", "parallel", "bool", /*default=*/"false",
           "Make the loop over batch entries an scf.parallel (each iteration "
           "with its own scratch), for threads">,
    Option<"parallelWork", "parallel-work", "int64_t", /*default=*/"-1",
           "With parallel: split loops of at least this much work (flops or "
           "elements) over threads, for both of the schedule's thresholds "
           "(-1: parallel-flops and parallel-elements; 0: every loop, as "
           "the tests of the same bits on 1 and 2 threads compile)">
  ];
  let dependentDialects = [
    "::mlir::amx::AMXDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
    "::mlir::x86vector::X86VectorDialect"
  ];
}

def AttnPrepareCalls : Pass<"attn-prepare-calls", "::mlir::ModuleOp"> {
  let summary = "Prepare the params of each call of another kernel once, in "
                "the caller's NAME_prepare";
  let description = [{
    A block may call another block (docs/spec.md §2): a `func.call` of a kernel
    that `attn-split-prepare` split into `K_prepare` and `K_prepared`. Left
    alone, the call runs `K`, which prepares (packs) `K`'s params again on
    every call. After `attn-split-prepare`, this pass gives each such call in
    a caller's `C_prepared` whose param operands are `C`'s own params its
    region of `C`'s packed buffer:

    - `C_prepare` calls `K_prepare` on those params and inserts the result
      into its packed buffer (at a cache-line offset after what was there);
    - the call in `C_prepared` becomes one of `K_prepared` with that slice
      of `C`'s packed argument (`tensor.extract_slice`);
    - `C`'s `attn.packed_elements` grows by it.

    So `K`'s code exists once however often it is called, and the params of
    each call are prepared once per bind, by `C_prepare`. Calls with the same
    callee and the same params share a region. A call whose params are not
    `C`'s params (an input, a computed value) keeps calling `K`. Callees come
    first, so a kernel called by a caller that is itself called has its
    calls prepared before its own size is read. The parts of a private
    kernel (a block that is only called) are private too.
  }];
  let dependentDialects = [
    "::mlir::func::FuncDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

#endif // ATTN_CPU_PASSES_TD
