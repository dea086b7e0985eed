//===- HalideCpuGenerator.cpp - CPU objects through Halide ----------------===//
//
// The code generator of --backend=halide (HalideBackend.h builds each CPU's
// variant). Built with or without Halide: without it, check() says so.
//
//===----------------------------------------------------------------------===//

#include "../Codegen/Generators.h"

#include "attnc/Halide/HalideBackend.h"

#include "attn/IR/AttnOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Location.h"

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

  llvm::Error checkModule(mlir::ModuleOp module) const override {
    std::string where;
    module.walk([&](mlir::attn::MultiheadAttentionOp op) {
      if (!op.hasCache())
        return mlir::WalkResult::advance();
      llvm::raw_string_ostream os(where);
      if (auto at = mlir::dyn_cast<mlir::FileLineColLoc>(op.getLoc()))
        os << at.getFilename().getValue() << ":" << at.getLine() << ":"
           << at.getColumn() << ": ";
      return mlir::WalkResult::interrupt();
    });
    if (where.empty())
      return llvm::Error::success();
    return llvm::createStringError(
        where + "the Halide backend does not support KV caches yet "
                "(multihead_attention with cache_k=, cache_v=, cache_pos=); "
                "compile this block with --backend=mlir");
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

  std::string backendFingerprint() const override {
    return " backend=halide-" + halideVersion() +
           " schedule=" + compileOptions.halideSchedule;
  }
};

} // namespace

std::unique_ptr<CodeGenerator>
attnc::createHalideCpuGenerator(const CompileOptions &options) {
  return std::unique_ptr<CodeGenerator>(new HalideCpuGenerator(options));
}
