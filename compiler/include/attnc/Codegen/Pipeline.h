//===- Pipeline.h - The attn -> LLVM dialect lowering pipeline --*- C++ -*-===//
//
// The one definition of how a kernel is lowered, used by attnc, the runtime
// and, as the registered pipeline `attn-to-llvm`, by attn-opt:
//
//   attn-decompose, attn-lower-to-linalg,          attn -> linalg on tensors
//   convert-elementwise-to-linalg
//   canonicalize, cse
//   attn-split-prepare                  NAME_prepare, NAME_prepared, NAME
//   attn-fuse-elementwise
//   attn-distinct-results               a value returned twice is copied
//   one-shot-bufferize, canonicalize, buffer-results-to-out-params,
//   attn-forward-call-outputs, deallocation
//   attn-lower-fused-attention                   flash-style attention
//   attn-tile-and-vectorize, attn-approximate-math  register tiles, vectors
//   convert-*-to-llvm (bare-pointer calling convention)
//
// The result is an LLVM-dialect module whose function NAME takes one plain
// pointer per input, param and output and returns the i32 kernel status;
// NAME_prepare(params..., packed) and NAME_prepared(args..., packed, outputs)
// are the same kernel in two steps, the first done once per params.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_CODEGEN_PIPELINE_H
#define ATTNC_CODEGEN_PIPELINE_H

#include "attnc/Codegen/CompileOptions.h"

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace attnc {

/// Appends the passes from attn ops to the LLVM dialect to `pm` (anchored on
/// builtin.module).
void buildCpuLoweringPipeline(mlir::OpPassManager &pm,
                              const CpuPipelineOptions &options);

/// Registers `attn-to-llvm` (with options row-tile, column-tile, vectorize)
/// for textual pipelines and attn-opt.
void registerCpuLoweringPipeline();

} // namespace attnc

#endif // ATTNC_CODEGEN_PIPELINE_H
