//===- Compile.h - attn-level module -> machine code ------------*- C++ -*-===//
//
// The steps of `attnc` and of the runtime's JIT, in one place: read the
// kernels' signatures, lower to the LLVM dialect, translate and optimize,
// emit machine code.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_CODEGEN_COMPILE_H
#define ATTNC_CODEGEN_COMPILE_H

#include "attnc/Codegen/KernelSignature.h"
#include "attnc/Codegen/Pipeline.h"
#include "attnc/Codegen/Target.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace attnc {

struct CompileOptions {
  TargetOptions target;
  CpuPipelineOptions pipeline;
  /// Print the IR after every pass to stderr (--print-ir-after-all).
  bool printIRAfterAll = false;
  /// Objects without `pipeline.parallel` keep their large temporaries in a
  /// cache of their own (libc-only objects). Runtime::defaultOptions turns
  /// it off: the JIT resolves malloc/free to attnc_rt's cache anyway, and
  /// the blocks a JIT-ed object holds are not freed when it is unloaded.
  bool objectBlockCache = true;

  /// -O0 .. -O3: -O0 also turns off tiling/vectorization (scalar loops).
  void setOptLevel(unsigned level);
  /// Everything that changes the generated code, for cache keys.
  std::string fingerprint() const;
};

/// The signatures of every kernel (func.func) of an attn-level module.
llvm::Expected<std::vector<KernelSignature>>
kernelSignatures(mlir::ModuleOp module);

/// Fills each signature's packedElements from a module lowered at least
/// through attn-split-prepare (the kernels' attn.packed_elements).
llvm::Error readPackedElements(mlir::ModuleOp lowered,
                               std::vector<KernelSignature> &signatures);

/// Lowers an attn-level module in place to the LLVM dialect. Failures are
/// reported to the context's diagnostic handler; the error says which stage.
llvm::Error lowerToLLVMDialect(mlir::ModuleOp module,
                               const CompileOptions &options);

/// Lowers (if not already lowered), translates and optimizes `module`, and
/// returns LLVM IR text.
llvm::Expected<std::string> compileToLLVMIRText(mlir::ModuleOp module,
                                                const CompileOptions &options);

/// Lowers (if not already lowered), translates, optimizes and emits
/// `module` as an object file or assembly.
llvm::Expected<std::string> compileToMachineCode(mlir::ModuleOp module,
                                                 const CompileOptions &options,
                                                 MachineCodeKind kind);

/// The C header declaring every kernel of `signatures`.
std::string emitCHeader(const std::vector<KernelSignature> &signatures,
                        llvm::StringRef origin);

} // namespace attnc

#endif // ATTNC_CODEGEN_COMPILE_H
