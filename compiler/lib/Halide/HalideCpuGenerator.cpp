//===- HalideCpuGenerator.cpp - CPU objects through Halide ----------------===//
//
// The code generator of --backend=halide (HalideBackend.h builds each CPU's
// variant). Built with or without Halide: without it, check() says so.
//
//===----------------------------------------------------------------------===//

#include "../Codegen/Generators.h"

#include "attnc/Halide/HalideBackend.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/IR/Module.h"

using namespace attnc;

namespace {

class HalideCpuGenerator final : public CpuGenerator {
public:
  explicit HalideCpuGenerator(const CompileOptions &options)
      : CpuGenerator(options) {}

  llvm::Error check() const override {
    // First: with --target=nvptx the CPU checks would call sm_90a an
    // unknown CPU.
    if (llvm::Error error = checkHalideOptions(compileOptions))
      return error;
    return CpuGenerator::check();
  }

  llvm::Error checkOutput(OutputKind kind) const override {
    if (kind == OutputKind::Lowered)
      return llvm::createStringError(
          "--emit=lowered shows the MLIR backend's IR; with --backend=halide "
          "use --emit=llvm or --emit=asm");
    return CpuGenerator::checkOutput(kind);
  }

  llvm::Expected<std::string> describeSchedule() const override {
    if (llvm::Error error = checkHalideOptions(compileOptions))
      return std::move(error);
    return describeHalideSchedule(compileOptions);
  }

protected:
  // The pipeline reads its params as they are: no packed sizes.
  llvm::Expected<std::unique_ptr<llvm::Module>>
  translate(mlir::ModuleOp variant, const CompileOptions &one,
            llvm::LLVMContext &context, llvm::TargetMachine &machine,
            std::vector<KernelSignature> *) const override {
    return translateWithHalide(variant, one, context, machine);
  }

  std::string derivedFingerprint() const override {
    return CpuGenerator::derivedFingerprint() + " halide=" + halideVersion();
  }
};

} // namespace

std::unique_ptr<CodeGenerator>
attnc::createHalideCpuGenerator(const CompileOptions &options) {
  return std::unique_ptr<CodeGenerator>(new HalideCpuGenerator(options));
}
