//===- Passes.td - GPU code generation passes of attn ------*- tablegen -*-===//
//
// The passes the GPU (NVPTX) target provides, in place of the CPU ones
// (attn/CPU/Passes.td). They run on buffers, after bufferization and
// `convert-linalg-to-parallel-loops`: every loop nest of a kernel becomes a
// `gpu.launch`, and the host code that is left allocates device memory and
// orders the launches on one stream. Upstream's `gpu-kernel-outlining`,
// `convert-gpu-to-nvvm`, `gpu-module-to-binary` and `gpu-to-llvm` take it
// from there.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_GPU_PASSES_TD
#define ATTN_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnGpuLowerFusedAttention
    : Pass<"attn-gpu-lower-fused-attention", "::mlir::func::FuncOp"> {
  let summary = "Lower attn.fused_attention on buffers to a flash-attention "
                "launch that stages key and value tiles in shared memory";
  let description = [{
    Replaces each `attn.fused_attention` (after bufferization, at the top
    level of its function) by a `gpu.launch async` of its own: one block
    per (batch entry x head, tile of query rows), one thread per query row
    (a head too wide for a thread's registers: per slice of the row, each
    with its share of the query and output columns), sizes from
    attn/Target/GpuTarget.h
    (`attentionTile`). The block walks the keys in tiles: its threads copy
    a tile's key and value rows (with rope, the keys rotated) into
    workgroup memory, `gpu.barrier`, and each thread updates its online
    softmax state (registers) with the tile's keys it sees, then
    `gpu.barrier` again. The tiles walked are those below the block's
    longest row (valid_lens 1-D or 2-D, causal, at most Tk) and from its
    first row's causal window on: tiles past every row's length are never
    read. Within a tile a thread takes exactly its row's visible keys, in
    order. When the row has no visible key, or its visible scores are all
    below -1e6 + 104 (so that D2L's -1e6 for a masked key no longer
    underflows), a second pass over every key from global memory with
    D2L's replacement gives D2L's result (the uniform row for
    `valid_len` 0).

    A row split over slices adds its threads' partial dot products with
    `gpu.shuffle xor`, so every thread walks all the keys of the block's
    tiles, those its row does not see leaving its state as it was; its
    second pass is a `gpu.launch async` of its own after the main one (a
    block of one warp per row, the lanes sharing the dot product with
    shuffles) for the rows the main launch marked in a buffer and did not
    store.

    ```mlir
    attn.fused_attention %q, %k, %v valid_lens(%vl) outs(%o) scale(0.25)
        : (memref<2x64x16xf32>, memref<2x64x16xf32>, memref<2x64x16xf32>,
           memref<2xi32>, memref<2x64x16xf32>) -> ()
    ```

    becomes a launch of 2 blocks of 64 threads with workgroup buffers
    `memref<64x16xf32, #gpu.address_space<workgroup>>` for keys and values,
    an `scf.for` over key tiles up to the batch entry's length around the
    copies, the barriers and an `scf.for` over the thread's keys.

    With `products(bf16)` on a chip with tensor cores (sm_80 and later,
    `mmaAttentionTile`) the main launch runs the products as
    `nvgpu.mma.sync` m16n8k16 tiles instead: 4 warps of 16 query rows per
    block, key tiles staged as bf16 ([key][column] and the values
    [column][key]), per tile S = Q K^T, the masked scores -inf, each row's
    maximum and sum across its group's four lanes by `gpu.shuffle xor`, the
    weights rounded to bf16 and O += P V from S's accumulators as P's A
    fragments; rows marked for the same second pass.
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90a\"",
           "The compute capability whose attention tile the launch uses "
           "(attn/Target/GpuTarget.h)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def AttnGpuLowerDecodeAttention
    : Pass<"attn-gpu-lower-decode-attention", "::mlir::func::FuncOp"> {
  let summary = "Lower attn.decode_attention on buffers to a split-KV "
                "launch and a launch that combines its chunks";
  let description = [{
    Replaces each `attn.decode_attention` (after bufferization, at the top
    level of its function) by two `gpu.launch async`, sizes from
    attn/Target/GpuTarget.h (`decodeTile`), as Flash-Decoding splits a
    decode step: the first has a block per (batch entry, group of rows,
    chunk of cache rows) and a warp per row (query head x new token), the
    lanes on the row's columns (the partial dot products added with
    `gpu.shuffle xor`), and writes each row's partial (max, sum, output)
    for its chunk into buffers of its own; the second, a warp per row,
    combines the chunks in chunk order and stores the output row. A row
    reads only the cache rows its entry's tokens see (from the first
    token's window to `pos[b] + T`), masks those it does not see itself
    (weight exactly 0), and an entry whose position is out of range reads
    nothing and stores nothing.

    ```mlir
    attn.decode_attention %q, %k, %v at %pos outs(%o) heads(4) kv_heads(2)
        scale(0.125)
        : (memref<2x1x256xf32>, memref<2x128x128xbf16>,
           memref<2x128x128xbf16>, memref<2xi32>, memref<2x1x256xf32>) -> ()
    ```

    becomes `memref.alloc`s of the partial results, a launch of
    2 x 1 x 2 blocks (entries, row groups, chunks of 64 rows) of 4 warps,
    a launch of 2 blocks of 4 warps, and the deallocs.
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90a\"",
           "The compute capability whose multiprocessors the chunks are "
           "sized for (attn/Target/GpuTarget.h)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
  ];
}

def AttnGpuTileMatmul
    : Pass<"attn-gpu-tile-matmul", "::mlir::func::FuncOp"> {
  let summary = "GEMMs on buffers as register blocks of up to 4 x 4 outputs "
                "per GPU thread";
  let description = [{
    Replaces each `linalg.matmul` and `linalg.batch_matmul` (default
    indexing maps, f32, static shapes, rows of B and C contiguous) by an
    `scf.parallel` over blocks of R x C outputs (R, C the largest of 4, 2, 1
    that divide M and N), the column blocks innermost. Each iteration loads
    its R rows of C as vectors of C lanes, walks k loading one vector of B's
    row k and R scalars of A's column k into R x C FMAs, and stores the
    block back: C += A B as linalg.matmul defines it, with R + 1 loads per
    R x C FMAs instead of two per FMA. attn-gpu-map-loops makes each
    iteration one thread.

    ```mlir
    linalg.matmul ins(%a, %b : memref<8x100xf32>, memref<100x64xf32>)
                  outs(%c : memref<8x64xf32>)
    ```

    becomes `scf.parallel (%i, %j) = (0, 0) to (2, 16)` around an `scf.for`
    over k with four `vector<4xf32>` accumulators.

    A GEMM at the top level of the function whose M and N are at least a
    quarter of the target's shared-memory tile (attn/Target/GpuTarget.h:
    64 x 64 outputs, k in steps of 16, 4 x 4 accumulators per thread of
    256) becomes a `gpu.launch async` of its own instead: one block per
    tile of C (batch entries outermost), whose threads copy each k-step's
    slices of A (transposed, rows padded against bank conflicts) and B into
    workgroup memory, `gpu.barrier`, multiply from there with vector loads,
    and `gpu.barrier` again; elements past M, N or K load as 0 and are not
    stored. Its C is accumulated into as above.

    On a chip with tensor cores (sm_80 and later), a GEMM at the top level
    whose two f32 operands hold bf16 (or both f16) values -- each last
    written, before the GEMM in its block, by a generic that yields an
    `arith.extf` from that type, or by a transpose of such a buffer --
    becomes a launch of `nvgpu.mma.sync` m16n8k16 tiles instead, at any
    size (attn/Target/GpuTarget.h `GpuTensorCoreTile`: 64 x 64 outputs per
    block of 4 warps, k in slices of 32 staged in workgroup memory in the
    narrow type, k innermost). An operand that is a plain widening of a
    buffer nothing writes before the GEMM is read as that buffer (through
    the operand's reshapes; a transposed weight as its [N, K] rows), and the
    widening and transpose are erased when nothing else reads them; other
    operands are read as f32 and narrowed (exactly) as they are staged.
    With `tf32`, every other top-level f32 GEMM takes the same launch with
    m16n8k8 tiles of tf32 (`tf32Enabled`), each operand rounded to tf32
    (to nearest, ties away) as it is staged.
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90a\"",
           "The compute capability whose shared-memory tile GEMMs use "
           "(attn/Target/GpuTarget.h)">,
    Option<"tf32", "tf32", "bool", /*default=*/"false",
           "f32 GEMMs at the top level on tensor cores too (m16n8k8 tiles, "
           "operands rounded to tf32: --gpu-math=tf32)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def AttnGpuLowerRowReductions
    : Pass<"attn-gpu-lower-row-reductions", "::mlir::func::FuncOp"> {
  let summary = "Row reductions on buffers as launches of a warp per row "
                "that combine their lanes with shuffles";
  let description = [{
    Replaces each `linalg.generic` at the top level of its function whose
    last iterator is its only reduction, whose f32 output is indexed by the
    parallel dimensions, and whose body combines what it computes from the
    inputs once with the output's value (`arith.addf`, `arith.maximumf`,
    `arith.minimumf`, `arith.maxnumf`, `arith.minnumf`) by a
    `gpu.launch async` of its own: a warp per output element (the reduced
    dimension at least a warp long: `usesWarpPerRow` in
    attn/Target/GpuTarget.h; shorter ones stay loop nests of a thread per
    output). Lane l combines the elements l, l + 32, ... into a partial
    result starting from the combiner's identity, five `gpu.shuffle xor`
    steps combine the warp's partial results, and lane 0 combines the
    total with the output's value and stores it. Softmax's row maximum and
    sum and layer norm's mean and variance become such launches; the order
    of the additions differs from the loop's (32 strided partial sums, then
    a tree), not its operands.

    ```mlir
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                     affine_map<(d0, d1) -> (d0)>],
                    iterator_types = ["parallel", "reduction"]}
        ins(%x : memref<64x768xf32>) outs(%sum : memref<64xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %0 = arith.addf %in, %acc : f32
      linalg.yield %0 : f32
    }
    ```

    becomes a launch of 64 warps, an `scf.for` from the lane to 768 in
    steps of 32, five shuffles and a store under `lane == 0`.
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90a\"",
           "The compute capability whose warp and block sizes the launches "
           "use (attn/Target/GpuTarget.h)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
  ];
}

def AttnGpuMapLoops : Pass<"attn-gpu-map-loops", "::mlir::func::FuncOp"> {
  let summary = "Turn each top-level loop nest of a kernel into a gpu.launch";
  let description = [{
    Runs on a kernel whose linalg ops are loops already
    (`convert-linalg-to-parallel-loops`). Every shape is static, so each
    top-level `scf.parallel` has a known iteration count N: it becomes a
    `gpu.launch async` of ceil(N / S) blocks of S threads, in which thread
    `blockIdx.x * S + threadIdx.x` (when below N) runs the body once for
    the iteration of that linear index,
    the innermost dimension fastest (consecutive threads touch consecutive
    elements of a row-major buffer). Loops nested inside (the reduction
    `scf.for` of a matmul) stay sequential within the thread.

    Any other op that touches memory at the top level (a loop with no
    parallel dimension, a store) runs in a launch of one thread, so that no
    host code reads or writes device memory. Allocations, views, constants,
    scalar arithmetic, calls (another kernel's host code) and the loads
    that read a result back (`attn-gpu-device-memory` handles them) stay on
    the host.

    ```mlir
    scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c100) step (%c1, %c1) {
      %v = memref.load %a[%i, %j] : memref<4x100xf32>
      memref.store %v, %b[%j, %i] : memref<100x4xf32>
    }
    ```

    becomes a launch of 13 blocks of 32 threads (400 iterations: S = 256
    would leave most of sm_90a's 132 multiprocessors idle) whose thread `t`
    runs the body for `%i = t / 100`, `%j = t mod 100`. S is `block-size`
    (0: the target's, 256) unless N / (2 x multiprocessors) is smaller, then that rounded up to a
    warp (attn/Target/GpuTarget.h).
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"0",
           "Threads per block of a mapped loop nest at most (a multiple of "
           "32; 0: the target's preferred size, 256); fewer when that "
           "leaves multiprocessors idle">,
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90a\"",
           "The compute capability whose multiprocessors the launches "
           "should cover (attn/Target/GpuTarget.h)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::scf::SCFDialect",
  ];
}

def AttnGpuDeviceMemory
    : Pass<"attn-gpu-device-memory", "::mlir::func::FuncOp"> {
  let summary = "Put a kernel's buffers in device memory and order its GPU "
                "work on one stream";
  let description = [{
    Runs after `attn-gpu-map-loops`, on a kernel whose arguments are device
    buffers (the `NAME_cuda` ABI). It

    - turns each `memref.alloc`/`memref.alloca` into a `gpu.alloc` and
      frees it (`gpu.dealloc`) before the function returns, after every
      launch that may use it; `memref.dealloc`s are dropped;
    - moves each `memref.get_global` used inside a launch into the launch
      body, so that outlining copies the constant into the GPU module
      (device memory) rather than handing the kernel a host address;
    - replaces a host `memref.load` of a device buffer (a kernel status,
      the count of out-of-range embedding ids) by a copy into host memory,
      a wait on the stream, and a load of that copy;
    - chains every `gpu.alloc`, `gpu.launch`, `gpu.memcpy` and
      `gpu.dealloc` through async tokens from one `gpu.wait async` at entry:
      one stream, in program order, and no wait at the end (the caller's
      stream is left to run; the `NAME` wrapper waits for it).
  }];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

def AttnGpuMergeKernelModules
    : Pass<"attn-gpu-merge-kernel-modules", "::mlir::ModuleOp"> {
  let summary = "Put every outlined kernel in one gpu.module";
  let description = [{
    `gpu-kernel-outlining` makes one `gpu.module` per kernel, and each
    becomes its own PTX image: one `ptxas` run at compile time and one
    module load at run time per launch site. This pass moves the contents of
    every `gpu.module` into the first one (renamed `kernels`), keeps one copy
    of each constant that several kernels use, and points every
    `gpu.launch_func` at the merged module.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def AttnGpuAlignWorkgroupMemory
    : Pass<"attn-gpu-align-workgroup-memory", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Give every kernel's workgroup buffers the alignment of the "
                "widest shared-memory access";
  let description = [{
    Sets `llvm.align` (kWorkgroupAlignment, attn/Target/GpuTarget.h) on
    every workgroup attribution of every `gpu.func`, which the NVVM
    lowering makes the alignment of the buffer's `.shared` variable.
    Without it the variable is declared with its element's alignment
    (`.align 4` for f32) while LLVM's optimizer assumes a global without an
    explicit alignment has the data layout's preferred one (16 bytes for an
    array of more than 128 bits) and merges neighbouring loads into
    `ld.shared.v4`, which faults or reads the wrong bytes if ptxas places
    the buffer at an address that is not a multiple of 16. An attribution
    that already has a larger alignment keeps it.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def AttnGpuLowerBf16Mma
    : Pass<"attn-gpu-lower-bf16-mma", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Lower nvgpu.mma.sync on bf16 operands to nvvm.mma.sync";
  let description = [{
    MLIR 22's convert-nvgpu-to-nvvm lowers `nvgpu.mma.sync` on f16 and tf32
    operands but refuses bf16 ("failed to deduce operand PTX types"; fixed
    upstream after 22). This pass lowers the bf16 m16n8k16 form itself:
    each register of A's `vector<4x2xbf16>` and B's `vector<2x2xbf16>`
    fragment is bitcast to the `i32` that holds its two elements, C's four
    elements become the f32 accumulators of an `nvvm.mma.sync` (row-major
    A, column-major B, multiplicands of PTX type bf16), and its result
    struct becomes the `vector<2x2xf32>` again. The rest stays for
    convert-nvgpu-to-nvvm, which runs after it.
  }];
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::vector::VectorDialect",
  ];
}

#endif // ATTN_GPU_PASSES_TD
