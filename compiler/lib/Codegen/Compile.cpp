//===- Compile.cpp - Signatures and the CPU lowering, shared --------------===//

#include "attnc/Codegen/Compile.h"
#include "attnc/Codegen/CpuDescription.h"
#include "attnc/Codegen/Pipeline.h"

#include "attn/IR/AttnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/raw_ostream.h"

using namespace attnc;

void CompileOptions::setOptLevel(unsigned level) {
  target.optLevel = level;
  pipeline.vectorize = level > 0;
}

namespace {
/// One value of forEachCodeOption as describeCodeOptions writes it.
struct OptionText {
  llvm::raw_ostream &os;

  void operator()(const char *name, TargetKind kind) {
    write(name) << (kind == TargetKind::Cpu ? "cpu" : "nvptx");
  }
  void operator()(const char *name, Backend backend) {
    write(name) << (backend == Backend::Mlir ? "mlir" : "halide");
  }
  void operator()(const char *name, const std::string &text) {
    write(name) << '"';
    os.write_escaped(text) << '"';
  }
  void operator()(const char *name, bool value) {
    write(name) << (value ? "true" : "false");
  }
  void operator()(const char *name, int64_t value) { write(name) << value; }
  void operator()(const char *name, unsigned value) { write(name) << value; }

  llvm::raw_ostream &write(const char *name) {
    if (!first)
      os << ' ';
    first = false;
    return os << name << '=';
  }
  bool first = true;
};
} // namespace

std::string attnc::describeCodeOptions(const CompileOptions &options) {
  std::string text;
  llvm::raw_string_ostream os(text);
  forEachCodeOption(options, OptionText{os});
  return text;
}

llvm::Expected<std::vector<KernelSignature>>
attnc::kernelSignatures(mlir::ModuleOp module) {
  std::vector<KernelSignature> signatures;
  for (auto kernel : module.getOps<mlir::func::FuncOp>()) {
    // A private function is a block that only others call: not a kernel.
    if (kernel.isPrivate())
      continue;
    llvm::Expected<KernelSignature> signature = signatureOf(kernel);
    if (!signature)
      return signature.takeError();
    signatures.push_back(std::move(*signature));
  }
  return signatures;
}

llvm::Error
attnc::readPackedElements(mlir::ModuleOp lowered,
                          std::vector<KernelSignature> &signatures) {
  for (KernelSignature &signature : signatures) {
    mlir::Operation *kernel =
        mlir::SymbolTable::lookupSymbolIn(lowered, signature.name);
    auto size = kernel ? kernel->getAttrOfType<mlir::IntegerAttr>(
                             mlir::attn::AttnDialect::kPackedElementsAttr)
                       : nullptr;
    if (!size)
      return llvm::createStringError("kernel '" + signature.name +
                                     "' has no packed-params size; was "
                                     "attn-split-prepare run?");
    signature.packedElements = size.getInt();
  }
  return llvm::Error::success();
}

void attnc::enableIRPrintingAfterAll(mlir::PassManager &pm) {
  pm.getContext()->disableMultithreading();
  pm.enableIRPrinting(
      /*shouldPrintBeforePass=*/[](mlir::Pass *,
                                   mlir::Operation *) { return false; },
      /*shouldPrintAfterPass=*/
      [](mlir::Pass *, mlir::Operation *) { return true; },
      /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false);
}

llvm::Error attnc::lowerToLLVMDialect(mlir::ModuleOp module,
                                      const CompileOptions &options) {
  options.enterStage("lowering to the LLVM dialect (" + options.target.cpu +
                     ")");
  mlir::MLIRContext *context = module->getContext();
  mlir::PassManager pm(context);
  if (options.printIRAfterAll)
    enableIRPrintingAfterAll(pm);
  if (llvm::Error error = checkCpuLowering(options.pipeline))
    return error;
  if (llvm::Error error = attachCpuTarget(module, options.target))
    return error;
  buildCpuLoweringPipeline(pm, options.pipeline);
  if (mlir::failed(pm.run(module)))
    return llvm::createStringError("lowering to the LLVM dialect failed");
  return llvm::Error::success();
}
