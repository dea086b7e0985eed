//===- CpuGenerator.cpp - CPU objects, and attnc's MLIR pipeline for them -===//

#include "Generators.h"

#include "attnc/Codegen/Compile.h"
#include "attnc/Codegen/CpuDescription.h"
#include "attnc/Codegen/Dispatch.h"
#include "attnc/Codegen/LLVMTranslation.h"
#include "attnc/Codegen/Pipeline.h"
#include "attnc/Codegen/TargetMachine.h"

#include "attn/Target/CpuTarget.h"

#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <mutex>

using namespace attnc;

namespace {

/// The target part of the cache key for a --mcpu value: each CPU by its
/// description and its full feature string (the CPU guard checks every
/// feature, and two VMs of one CPU name may mask different ones). Building
/// it takes TargetMachines and sysfs reads, so it is computed once per
/// value: the key is asked for on every compile, memory-cache hits too.
std::string describeForKey(const TargetOptions &target) {
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

/// True when `module` holds only LLVM-dialect functions already.
bool isLowered(mlir::ModuleOp module) {
  return module.getOps<mlir::func::FuncOp>().empty() &&
         !module.getOps<mlir::LLVM::LLVMFuncOp>().empty();
}

std::string printed(mlir::ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os);
  os << "\n";
  return text;
}

/// attnc's own pipeline: attn -> linalg -> tiled, vectorized loops -> LLVM.
class MlirCpuGenerator final : public CpuGenerator {
public:
  explicit MlirCpuGenerator(const CompileOptions &options)
      : CpuGenerator(options) {}

  llvm::Expected<std::string> describeSchedule() const override {
    return describeEachCpu(
        compileOptions.target,
        [](const TargetOptions &,
           const mlir::attn::CpuTargetDescription &description)
            -> llvm::Expected<CpuScheduleText> {
          return CpuScheduleText{
              "schedule:\n",
              mlir::attn::deriveCpuSchedule(description).format()};
        });
  }

  std::string describeKernels(mlir::ModuleOp module) const override {
    return describeAttentionLowerings(
        module, cpuAttentionLowering(compileOptions.pipeline),
        /*decodeKernel=*/true, cpuPrefillFlash(compileOptions.pipeline));
  }

protected:
  llvm::Expected<std::unique_ptr<llvm::Module>>
  translate(mlir::ModuleOp variant, const CompileOptions &one,
            llvm::LLVMContext &context, llvm::TargetMachine &machine,
            std::vector<KernelSignature> *signatures) const override {
    if (!isLowered(variant))
      if (llvm::Error error = lowerToLLVMDialect(variant, one))
        return std::move(error);
    if (signatures && !signatures->empty())
      if (llvm::Error error = readPackedElements(variant, *signatures))
        return std::move(error);
    // Temporaries come from a block cache instead of being page-faulted in
    // on every call: attnc_rt's, which parallel objects link anyway, else
    // the object's own.
    TemporaryAllocator allocator =
        one.pipeline.parallel  ? TemporaryAllocator::Runtime
        : one.objectBlockCache ? TemporaryAllocator::ObjectCache
                               : TemporaryAllocator::Libc;
    one.enterStage("translating and optimizing LLVM IR (" + one.target.cpu +
                   ")");
    return translateToLLVMIR(variant, context, machine, one.target.optLevel,
                             allocator);
  }
};

} // namespace

mlir::attn::abi::ObjectKind CpuGenerator::objectKind() const {
  return mlir::attn::abi::ObjectKind::Cpu;
}

llvm::Error CpuGenerator::check() const {
  if (llvm::Error error = checkCpuLowering(compileOptions.pipeline))
    return error;
  return checkTarget(compileOptions.target);
}

llvm::Error CpuGenerator::checkOutput(OutputKind kind) const {
  if (kind == OutputKind::Ptx)
    return llvm::createStringError("--emit=ptx needs --target=nvptx");
  if (kind == OutputKind::Lowered && cpuList(compileOptions.target).size() > 1)
    return llvm::createStringError(
        "--emit=lowered shows one CPU's MLIR; give one --mcpu");
  return llvm::Error::success();
}

llvm::Error CpuGenerator::checkRunsHere() const {
  if (llvm::Error error = checkLoadsHere())
    return error;
  return checkRunsOnHost(compileOptions.target);
}

std::string CpuGenerator::derivedFingerprint() const {
  const TargetOptions &target = compileOptions.target;
  // The target by its description (features, registers), not its name: a
  // VM may call a CPU without AVX-512 znver4. The schedule follows from the
  // description and the options.
  return "triple=" + targetTriple(target) + " cpu=" + resolveCpuName(target) +
         " target=" + describeForKey(target);
}

llvm::Error CpuGenerator::annotate(mlir::ModuleOp module) const {
  return attachCpuTarget(module, compileOptions.target);
}

llvm::Expected<std::vector<KernelSignature>>
CpuGenerator::headerSignatures(mlir::ModuleOp module) const {
  auto signatures = kernelSignatures(module);
  if (!signatures)
    return signatures.takeError();
  if (llvm::Error error = lowerToLLVMDialect(module, compileOptions))
    return std::move(error);
  if (llvm::Error error = readPackedElements(module, *signatures))
    return std::move(error);
  return signatures;
}

llvm::Expected<CompiledKernels> CpuGenerator::generate(mlir::ModuleOp module,
                                                       OutputKind kind) const {
  if (llvm::Error error = checkOutput(kind))
    return std::move(error);
  if (kind == OutputKind::Lowered) {
    // The header's lowering, printed.
    auto signatures = CpuGenerator::headerSignatures(module);
    if (!signatures)
      return signatures.takeError();
    return CompiledKernels{printed(module), std::move(*signatures)};
  }
  auto signatures = kernelSignatures(module);
  if (!signatures)
    return signatures.takeError();
  CompiledKernels result;
  result.signatures = std::move(*signatures);
  auto code = buildVariants(
      module, result.signatures,
      [&](llvm::Module &llvmModule,
          llvm::TargetMachine &machine) -> llvm::Expected<std::string> {
        if (kind == OutputKind::LlvmIr) {
          std::string text;
          llvm::raw_string_ostream os(text);
          llvmModule.print(os, nullptr);
          return text;
        }
        MachineCodeKind machineKind = kind == OutputKind::Object
                                          ? MachineCodeKind::Object
                                          : MachineCodeKind::Assembly;
        compileOptions.enterStage(machineKind == MachineCodeKind::Object
                                      ? "generating machine code"
                                      : "generating assembly");
        llvm::SmallString<0> buffer;
        llvm::raw_svector_ostream os(buffer);
        if (llvm::Error error =
                emitMachineCode(llvmModule, machine, machineKind, os))
          return std::move(error);
        return std::string(buffer.str());
      });
  if (!code)
    return code.takeError();
  result.code = std::move(*code);
  return result;
}

llvm::Expected<std::string> CpuGenerator::buildVariants(
    mlir::ModuleOp module, std::vector<KernelSignature> &signatures,
    llvm::function_ref<llvm::Expected<std::string>(llvm::Module &,
                                                   llvm::TargetMachine &)>
        emit) const {
  std::vector<std::string> cpus = cpuList(compileOptions.target);
  std::vector<std::unique_ptr<llvm::TargetMachine>> machines;
  for (const std::string &cpu : cpus) {
    TargetOptions one = compileOptions.target;
    one.cpu = cpu;
    auto machine = createTargetMachine(one);
    if (!machine)
      return machine.takeError();
    machines.push_back(std::move(*machine));
  }
  if (llvm::Error error = checkCpuList(compileOptions.target))
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
    CompileOptions one = compileOptions;
    one.target.cpu = cpu;
    // Each variant lowers its own copy, with its own target description.
    mlir::OwningOpRef<mlir::ModuleOp> copy;
    mlir::ModuleOp variant = module;
    if (cpus.size() > 1) {
      copy = module.clone();
      variant = *copy;
      variant->removeAttr(mlir::DLTIDialect::kTargetSystemDescAttrName);
    }
    // The header's packed sizes are the first CPU's (attachCpuTarget).
    auto llvmModule = translate(variant, one, context, *machines[i],
                                i == 0 ? &signatures : nullptr);
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

std::unique_ptr<CodeGenerator>
attnc::createMlirCpuGenerator(const CompileOptions &options) {
  return std::unique_ptr<CodeGenerator>(new MlirCpuGenerator(options));
}
