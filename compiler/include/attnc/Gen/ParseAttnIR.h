//===- ParseAttnIR.h - Kernels written in the attn dialect ------*- C++ -*-===//
//
// attnc's second input language: a module in the `attn` dialect, as
// `attnc --emit=attn` prints it or as one writes it by hand (docs/spec.md
// §4). It goes through the same code generation as a spec's MLIRGen output,
// so it must have that output's shape, which these checks establish with
// located errors: public func.func kernels whose arguments and results carry
// attn.name (and attn.role: input or param), names the C interface can
// take, bodies of attn ops, func.call of functions of the module (no
// recursion) and func.return.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_GEN_PARSEATTNIR_H
#define ATTNC_GEN_PARSEATTNIR_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include "llvm/Support/Error.h"

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace attnc {

/// Whether `path` names attn IR (`.mlir`) rather than a spec (`.attn`).
bool isAttnIRFile(llvm::StringRef path);

/// Parses and checks `text`; located errors go to `diagnostics`, and the
/// Error says how many there were. `block` empty and `allBlocks` false: the
/// module must have one kernel. A kernel is selected by erasing the others
/// (and the functions only they call). The CPU description an `--emit=attn`
/// output carries is dropped: the compile options choose the target.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
parseAttnIR(mlir::MLIRContext &context, llvm::StringRef text,
            llvm::StringRef sourceName, llvm::StringRef block,
            llvm::raw_ostream &diagnostics, bool allBlocks = false);

/// Erases every function of `module` but kernel `kernel` (which must be
/// one) and the functions it calls, which become private.
void keepOnlyKernel(mlir::ModuleOp module, llvm::StringRef kernel);

} // namespace attnc

#endif // ATTNC_GEN_PARSEATTNIR_H
