//===- Compile.cpp - attn-level module -> machine code --------------------===//

#include "attnc/Codegen/Compile.h"
#include "attnc/Codegen/Dispatch.h"
#include "attnc/Codegen/GpuCompile.h"
#include "attnc/Codegen/Pipeline.h"
#include "attnc/Halide/HalideBackend.h"

#include "attn/Target/CpuTarget.h"

#include "attn/IR/AttnDialect.h"

#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <mutex>

using namespace attnc;

void CompileOptions::setOptLevel(unsigned level) {
  target.optLevel = level;
  pipeline.vectorize = level > 0;
}

/// The target part of the cache key for a --mcpu value: each CPU by its
/// description and its full feature string (the CPU guard checks every
/// feature, and two VMs of one CPU name may mask different ones). Building
/// it takes TargetMachines and sysfs reads, so it is computed once per
/// value: the key is asked for on every compile, memory-cache hits too.
static std::string describeForKey(const TargetOptions &target) {
  static std::mutex mutex;
  static llvm::StringMap<std::string> known;
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] =
      known.try_emplace(targetTriple(target) + " " + target.cpu);
  if (!inserted)
    return it->second;
  for (const std::string &cpu : cpuList(target)) {
    TargetOptions one = target;
    one.cpu = cpu;
    auto description = describeCpuTarget(one);
    it->second += description ? description->summary()
                              : llvm::toString(description.takeError());
    if (auto machine = createTargetMachine(one))
      it->second += " [" + (*machine)->getTargetFeatureString().str() + "]";
    else
      llvm::consumeError(machine.takeError());
    it->second += "; ";
  }
  return it->second;
}

std::string CompileOptions::fingerprint() const {
  if (target.kind == TargetKind::Nvptx) {
    // The device code depends on the chip, the toolkit's libdevice and
    // whether ptxas added a cubin; the host code is plain x86-64.
    llvm::Expected<CudaToolkit> toolkit = findCudaToolkit();
    std::string where = toolkit ? toolkit->root + " assemble=" +
                                      std::to_string(toolkit->canAssemble)
                                : llvm::toString(toolkit.takeError());
    return "target=nvptx chip=" + gpuChip(target) +
           " O=" + std::to_string(target.optLevel) +
           " attention=" + pipeline.attention + " toolkit=" + where;
  }
  // The target by its description (features, registers), not its name: a
  // VM may call a CPU without AVX-512 znver4. The schedule follows from the
  // description and the overrides below.
  std::string described = describeForKey(target);
  return "triple=" + targetTriple(target) + " cpu=" + resolveCpuName(target) +
         " target=" + described + " O=" + std::to_string(target.optLevel) +
         " vectorize=" + std::to_string(pipeline.vectorize) +
         " rows=" + std::to_string(pipeline.rowTile) +
         " cols=" + std::to_string(pipeline.columnTile) +
         " attention=" + pipeline.attention +
         " parallel=" + std::to_string(pipeline.parallel) +
         " gpuEmulation=" + std::to_string(pipeline.gpuEmulation) +
         " objectBlockCache=" + std::to_string(objectBlockCache) +
         (backend == Backend::Halide ? " backend=halide-" + halideVersion() +
                                           " schedule=" + halideSchedule
                                     : "");
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
  options.enterStage("translating and optimizing LLVM IR (" +
                     options.target.cpu + ")");
  return translateToLLVMIR(module, context, machine, options.target.optLevel,
                           allocator);
}

/// Lowers, translates and optimizes `module` once per CPU of the options'
/// target (a --mcpu list), links the variants into one LLVM module behind
/// dispatchers (Dispatch.h) when the target is x86, then hands it and the
/// TargetMachine of the last CPU to `emit`.
static llvm::Expected<std::string> withOptimizedLLVMIR(
    mlir::ModuleOp module, const CompileOptions &options,
    llvm::function_ref<llvm::Expected<std::string>(llvm::Module &,
                                                   llvm::TargetMachine &)>
        emit) {
  std::vector<std::string> cpus = cpuList(options.target);
  std::vector<std::unique_ptr<llvm::TargetMachine>> machines;
  for (const std::string &cpu : cpus) {
    TargetOptions one = options.target;
    one.cpu = cpu;
    auto machine = createTargetMachine(one);
    if (!machine)
      return machine.takeError();
    machines.push_back(std::move(*machine));
  }
  if (llvm::Error error = checkCpuList(options.target))
    return std::move(error);
  bool x86 = machines.front()->getTargetTriple().isX86();
  if (cpus.size() > 1 && isLowered(module))
    return llvm::createStringError(
        "a module lowered already has one CPU's schedule; a --mcpu list "
        "needs the attn-level module");

  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> combined;
  std::vector<std::string> exported, suffixes;
  std::vector<CpuRequirements> requirements;
  for (auto [i, cpu] : llvm::enumerate(cpus)) {
    CompileOptions one = options;
    one.target.cpu = cpu;
    // Each variant lowers its own copy, with its own target description.
    mlir::OwningOpRef<mlir::ModuleOp> copy;
    mlir::ModuleOp variant = module;
    if (cpus.size() > 1) {
      copy = module.clone();
      variant = *copy;
      variant->removeAttr(mlir::DLTIDialect::kTargetSystemDescAttrName);
    }
    auto llvmModule =
        options.backend == Backend::Halide
            ? translateWithHalide(variant, one, context, *machines[i])
            : toOptimizedLLVMIR(variant, one, context, *machines[i]);
    if (!llvmModule)
      return llvmModule.takeError();
    if (!x86) {
      combined = std::move(*llvmModule);
      break;
    }
    CpuRequirements required =
        cpuRequirements(*machines[i]->getMCSubtargetInfo(), cpu);
    std::string features = machines[i]->getTargetFeatureString().str();
    for (const std::string &off : required.disabled)
      features += (features.empty() ? "" : ",") + off;
    requirements.push_back(std::move(required));
    suffixes.push_back("v" + std::to_string(i));
    std::vector<std::string> names = makeVariant(
        **llvmModule, suffixes.back(), machines[i]->getTargetCPU(), features);
    if (i == 0) {
      exported = std::move(names);
      combined = std::move(*llvmModule);
    } else if (llvm::Linker::linkModules(*combined, std::move(*llvmModule))) {
      return llvm::createStringError("linking the variant for " + cpu +
                                     " failed");
    }
  }
  if (x86)
    addDispatchers(*combined, exported, suffixes, requirements);
  return emit(*combined, *machines.back());
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
        options.enterStage(kind == MachineCodeKind::Object
                               ? "generating machine code"
                               : "generating assembly");
        llvm::SmallString<0> buffer;
        llvm::raw_svector_ostream os(buffer);
        if (llvm::Error error = emitMachineCode(llvmModule, machine, kind, os))
          return std::move(error);
        return std::string(buffer.str());
      });
}
