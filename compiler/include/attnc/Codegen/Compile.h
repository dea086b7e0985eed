//===- Compile.h - attn-level module -> machine code ------------*- C++ -*-===//
//
// The steps the code generators (CodeGenerator.h) share: read the kernels'
// signatures, lower to the LLVM dialect with attnc's CPU pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_CODEGEN_COMPILE_H
#define ATTNC_CODEGEN_COMPILE_H

#include "attnc/Codegen/CompileOptions.h"
#include "attnc/Codegen/KernelSignature.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
class PassManager;
namespace func {
class FuncOp;
} // namespace func
} // namespace mlir

namespace attnc {

/// Reads the signature of an attn-level kernel function (see the attn
/// dialect's kNameAttr and friends; unnamed arguments are called argN and
/// resultN).
llvm::Expected<KernelSignature> signatureOf(mlir::func::FuncOp kernel);

/// The signatures of every kernel (public func.func) of an attn-level
/// module; private functions are blocks that only other blocks call.
llvm::Expected<std::vector<KernelSignature>>
kernelSignatures(mlir::ModuleOp module);

/// Fills each signature's packedElements from a module lowered at least
/// through attn-split-prepare (the kernels' attn.packed_elements).
llvm::Error readPackedElements(mlir::ModuleOp lowered,
                               std::vector<KernelSignature> &signatures);

/// --print-ir-after-all: the whole module after every pass of `pm`, to
/// stderr (single-threaded, so that the dumps do not interleave).
void enableIRPrintingAfterAll(mlir::PassManager &pm);

/// Lowers an attn-level module in place to the LLVM dialect. Failures are
/// reported to the context's diagnostic handler; the error says which stage.
llvm::Error lowerToLLVMDialect(mlir::ModuleOp module,
                               const CompileOptions &options);

} // namespace attnc

#endif // ATTNC_CODEGEN_COMPILE_H
