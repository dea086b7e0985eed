//===- SpecToModule.h - .attn text -> attn-dialect module -------*- C++ -*-===//
//
// The front end and MLIRGen in one call, with block selection: what attnc
// and the runtime both do before code generation. A `sourceName` ending in
// .mlir is attn IR instead of a spec (ParseAttnIR.h).
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_GEN_SPECTOMODULE_H
#define ATTNC_GEN_SPECTOMODULE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include "llvm/Support/Error.h"

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace attnc {

/// Parses and checks `text` (called `sourceName` in diagnostics, which are
/// printed to `diagnostics`) and generates the IR of `block`. An empty
/// `block` selects the file's only block and is an error when it has
/// several (the message lists them). With `allBlocks`, every block is
/// generated and `block` is ignored.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
specToModule(mlir::MLIRContext &context, llvm::StringRef text,
             llvm::StringRef sourceName, llvm::StringRef block,
             llvm::raw_ostream &diagnostics, bool allBlocks = false);

} // namespace attnc

#endif // ATTNC_GEN_SPECTOMODULE_H
