//===- Compile.cpp - attn-level module -> machine code --------------------===//

#include "attnc/Codegen/Compile.h"
#include "attnc/Codegen/Pipeline.h"

#include "attn/Target/CpuTarget.h"

#include "attn/IR/AttnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

using namespace attnc;

void CompileOptions::setOptLevel(unsigned level) {
  target.optLevel = level;
  pipeline.vectorize = level > 0;
}

std::string CompileOptions::fingerprint() const {
  // The target by its description (features, registers), not its name: a
  // VM may call a CPU without AVX-512 znver4. The schedule follows from the
  // description and the overrides below.
  auto description = describeCpuTarget(target);
  std::string described = description
                              ? description->summary()
                              : llvm::toString(description.takeError());
  return "cpu=" + resolveCpuName(target.cpu) + " target=" + described +
         " O=" + std::to_string(target.optLevel) +
         " vectorize=" + std::to_string(pipeline.vectorize) +
         " rows=" + std::to_string(pipeline.rowTile) +
         " cols=" + std::to_string(pipeline.columnTile) +
         " attention=" + pipeline.attention +
         " parallel=" + std::to_string(pipeline.parallel) +
         " objectBlockCache=" + std::to_string(objectBlockCache);
}

llvm::Expected<std::vector<KernelSignature>>
attnc::kernelSignatures(mlir::ModuleOp module) {
  std::vector<KernelSignature> signatures;
  for (auto kernel : module.getOps<mlir::func::FuncOp>()) {
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

llvm::Error attnc::lowerToLLVMDialect(mlir::ModuleOp module,
                                      const CompileOptions &options) {
  mlir::MLIRContext *context = module->getContext();
  mlir::PassManager pm(context);
  if (options.printIRAfterAll) {
    context->disableMultithreading();
    pm.enableIRPrinting(
        /*shouldPrintBeforePass=*/[](mlir::Pass *,
                                     mlir::Operation *) { return false; },
        /*shouldPrintAfterPass=*/
        [](mlir::Pass *, mlir::Operation *) { return true; },
        /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false);
  }
  if (llvm::Error error = attachCpuTarget(module, options.target))
    return error;
  buildCpuLoweringPipeline(pm, options.pipeline);
  if (mlir::failed(pm.run(module)))
    return llvm::createStringError("lowering to the LLVM dialect failed");
  return llvm::Error::success();
}

/// True when `module` holds only LLVM-dialect functions already.
static bool isLowered(mlir::ModuleOp module) {
  return module.getOps<mlir::func::FuncOp>().empty() &&
         !module.getOps<mlir::LLVM::LLVMFuncOp>().empty();
}

/// Lowers when needed and translates to optimized LLVM IR for `machine`.
static llvm::Expected<std::unique_ptr<llvm::Module>>
toOptimizedLLVMIR(mlir::ModuleOp module, const CompileOptions &options,
                  llvm::LLVMContext &context, llvm::TargetMachine &machine) {
  if (!isLowered(module))
    if (llvm::Error error = lowerToLLVMDialect(module, options))
      return std::move(error);
  // Temporaries come from a block cache instead of being page-faulted in
  // on every call: attnc_rt's, which parallel objects link anyway, else the
  // object's own.
  TemporaryAllocator allocator =
      options.pipeline.parallel  ? TemporaryAllocator::Runtime
      : options.objectBlockCache ? TemporaryAllocator::ObjectCache
                                 : TemporaryAllocator::Libc;
  return translateToLLVMIR(module, context, machine, options.target.optLevel,
                           allocator);
}

/// Lowers, translates and optimizes `module` for the options' target, then
/// hands the LLVM module and its TargetMachine to `emit`.
static llvm::Expected<std::string> withOptimizedLLVMIR(
    mlir::ModuleOp module, const CompileOptions &options,
    llvm::function_ref<llvm::Expected<std::string>(llvm::Module &,
                                                   llvm::TargetMachine &)>
        emit) {
  auto machine = createTargetMachine(options.target);
  if (!machine)
    return machine.takeError();
  llvm::LLVMContext context;
  auto llvmModule = toOptimizedLLVMIR(module, options, context, **machine);
  if (!llvmModule)
    return llvmModule.takeError();
  return emit(**llvmModule, **machine);
}

llvm::Expected<std::string>
attnc::compileToLLVMIRText(mlir::ModuleOp module,
                           const CompileOptions &options) {
  return withOptimizedLLVMIR(module, options,
                             [](llvm::Module &llvmModule, llvm::TargetMachine &)
                                 -> llvm::Expected<std::string> {
                               std::string text;
                               llvm::raw_string_ostream os(text);
                               llvmModule.print(os, nullptr);
                               return text;
                             });
}

llvm::Expected<std::string>
attnc::compileToMachineCode(mlir::ModuleOp module,
                            const CompileOptions &options,
                            MachineCodeKind kind) {
  return withOptimizedLLVMIR(
      module, options,
      [&](llvm::Module &llvmModule,
          llvm::TargetMachine &machine) -> llvm::Expected<std::string> {
        llvm::SmallString<0> buffer;
        llvm::raw_svector_ostream os(buffer);
        if (llvm::Error error = emitMachineCode(llvmModule, machine, kind, os))
          return std::move(error);
        return std::string(buffer.str());
      });
}

std::string attnc::emitCHeader(const std::vector<KernelSignature> &signatures,
                               llvm::StringRef origin) {
  std::string text;
  for (const KernelSignature &signature : signatures)
    text += emitCHeader(signature, origin);
  return text;
}
