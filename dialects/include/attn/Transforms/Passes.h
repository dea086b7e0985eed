//===- Passes.h - Passes of the attn dialect ----------------------*- C++
//-*-===//

#ifndef ATTN_TRANSFORMS_PASSES_H
#define ATTN_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

#include <memory>

namespace mlir {
class RewritePatternSet;

namespace attn {

#define GEN_PASS_DECL
#include "attn/Transforms/Passes.h.inc"

/// Adds the patterns of `attn-decompose` (composite ops -> primitives).
void populateDecomposePatterns(RewritePatternSet &patterns);

/// Adds the patterns of `attn-lower-to-linalg` (primitives -> linalg).
void populateLowerToLinalgPatterns(RewritePatternSet &patterns);

#define GEN_PASS_REGISTRATION
#include "attn/Transforms/Passes.h.inc"

} // namespace attn
} // namespace mlir

#endif // ATTN_TRANSFORMS_PASSES_H
