//===- InitAttn.h - Dialect and pass registration for tools -----*- C++ -*-===//
//
// The one place where attnc's tools register dialects and passes, so that
// attn-opt, attnc and the runtime understand exactly the same IR and
// pipeline strings.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_INITATTN_H
#define ATTNC_INITATTN_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace attnc {

/// Adds the attn dialect and the upstream dialects and extensions that the
/// lowering pipelines use.
void registerAllDialects(mlir::DialectRegistry &registry);

/// Registers the attn passes and the upstream passes with the global pass
/// registry (for `--pass-name` flags and textual pipelines).
void registerAllPasses();

} // namespace attnc

#endif // ATTNC_INITATTN_H
