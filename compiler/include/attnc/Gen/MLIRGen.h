//===- MLIRGen.h - attn-dialect IR from a checked .attn AST -----*- C++ -*-===//
//
// The single place where the AST becomes IR: a builtin.module with one
// func.func per block, named after the block, whose arguments are the
// block's inputs and params in declaration order and whose results are its
// outputs in `output` order. Every op carries the FileLineColLoc of the call
// it comes from. A call of another block is a func.call of that block's
// function, generated once however often it is called; a block emitted only
// because another calls it is private, and callees come before callers.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_GEN_MLIRGEN_H
#define ATTNC_GEN_MLIRGEN_H

#include "attnc/Parse/AST.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace llvm {
class SourceMgr;
} // namespace llvm

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace attnc {

/// Builds the IR of `module`, which Sema must have accepted. With
/// `onlyBlock` non-empty, only that block (which must exist) is a public
/// function, with the blocks it calls (directly or not) as private ones.
/// Locations name the SourceMgr's main buffer.
mlir::OwningOpRef<mlir::ModuleOp> mlirGen(mlir::MLIRContext &context,
                                          const ast::Module &module,
                                          const llvm::SourceMgr &sourceMgr,
                                          llvm::StringRef onlyBlock = {});

} // namespace attnc

#endif // ATTNC_GEN_MLIRGEN_H
