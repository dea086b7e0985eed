//===- Passes.h - Passes of the attn dialect --------------------*- C++ -*-===//

#ifndef ATTN_TRANSFORMS_PASSES_H
#define ATTN_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

#include <cstdint>
#include <memory>

namespace mlir {
class RewritePatternSet;

namespace attn {

#define GEN_PASS_DECL
#include "attn/Transforms/Passes.h.inc"

/// How attn-decompose lowers `attention` (see its `attention` option).
enum class AttentionLowering { Decomposed, Fused, Auto };

/// Adds the patterns of `attn-decompose` (composite ops -> primitives).
void populateDecomposePatterns(
    RewritePatternSet &patterns,
    AttentionLowering attention = AttentionLowering::Decomposed,
    int64_t fuseThreshold = 4096);

/// Adds the patterns of `attn-lower-to-linalg` (primitives -> linalg).
void populateLowerToLinalgPatterns(RewritePatternSet &patterns);

#define GEN_PASS_REGISTRATION
#include "attn/Transforms/Passes.h.inc"

} // namespace attn
} // namespace mlir

#endif // ATTN_TRANSFORMS_PASSES_H
