//===- Generators.h - The code generators behind CodeGenerator.h -*- C++
//-*-===//
//
// Internal to code generation: the implementations createCodeGenerator
// chooses among, and the part the two CPU generators share (a --mcpu list
// built as one multi-ISA object, the CPU checks, the header's packed sizes).
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_LIB_CODEGEN_GENERATORS_H
#define ATTNC_LIB_CODEGEN_GENERATORS_H

#include "attnc/Codegen/CodeGenerator.h"

#include "llvm/ADT/STLFunctionalExtras.h"

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
} // namespace llvm

namespace attnc {

/// A code generator of CPU objects (ObjectKind::Cpu): each CPU of a --mcpu
/// list gets its own variant of the kernels, behind dispatchers on x86-64
/// (Dispatch.h); what differs between the backends is how one variant
/// becomes optimized LLVM IR.
class CpuGenerator : public CodeGenerator {
public:
  mlir::attn::abi::ObjectKind objectKind() const override;
  llvm::Error check() const override;
  llvm::Error checkOutput(OutputKind kind) const override;
  llvm::Error checkRunsHere() const override;
  llvm::Error annotate(mlir::ModuleOp module) const override;

protected:
  std::string derivedFingerprint() const override;

  using CodeGenerator::CodeGenerator;

  llvm::Expected<CompiledKernels> generate(mlir::ModuleOp module,
                                           OutputKind kind) const override;

  /// The signatures with the packed sizes of the MLIR pipeline's prepare
  /// step: a host sees one header whichever backend built the object.
  llvm::Expected<std::vector<KernelSignature>>
  headerSignatures(mlir::ModuleOp module) const override;

  /// `variant` (attn level, a copy for one CPU of the list) as optimized
  /// LLVM IR for `machine`, per `one` (the options with that CPU). When
  /// `signatures` is given, fills their packed sizes if this backend's
  /// objects have a prepare step.
  virtual llvm::Expected<std::unique_ptr<llvm::Module>>
  translate(mlir::ModuleOp variant, const CompileOptions &one,
            llvm::LLVMContext &context, llvm::TargetMachine &machine,
            std::vector<KernelSignature> *signatures) const = 0;

private:
  /// Translates `module` once per CPU of the list, links the variants
  /// behind dispatchers (x86-64) and hands the result and the last CPU's
  /// TargetMachine to `emit`.
  llvm::Expected<std::string> buildVariants(
      mlir::ModuleOp module, std::vector<KernelSignature> &signatures,
      llvm::function_ref<llvm::Expected<std::string>(llvm::Module &,
                                                     llvm::TargetMachine &)>
          emit) const;
};

std::unique_ptr<CodeGenerator>
createMlirCpuGenerator(const CompileOptions &options);
std::unique_ptr<CodeGenerator>
createHalideCpuGenerator(const CompileOptions &options);
std::unique_ptr<CodeGenerator>
createNvptxGenerator(const CompileOptions &options);

} // namespace attnc

#endif // ATTNC_LIB_CODEGEN_GENERATORS_H
