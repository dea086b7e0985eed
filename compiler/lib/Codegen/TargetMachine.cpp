//===- TargetMachine.cpp - LLVM dialect -> LLVM IR -> machine code --------===//

#include "attnc/Codegen/TargetMachine.h"

#include "attnc/Codegen/Dispatch.h"

#include "attn/Target/CpuTarget.h"
#include "attn/Target/KernelAbi.h"

#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/Transforms/InstCombine/InstCombine.h"
#include "llvm/Transforms/Scalar/EarlyCSE.h"
#include "llvm/Transforms/Scalar/SROA.h"
#include "llvm/Transforms/Scalar/SimplifyCFG.h"

#include <mutex>

using namespace attnc;

namespace {} // namespace

void attnc::initializeTargets() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
    llvm::InitializeAllAsmParsers();
  });
}

namespace {

llvm::CodeGenOptLevel codeGenLevel(unsigned optLevel) {
  switch (optLevel) {
  case 0:
    return llvm::CodeGenOptLevel::None;
  case 1:
    return llvm::CodeGenOptLevel::Less;
  case 2:
    return llvm::CodeGenOptLevel::Default;
  default:
    return llvm::CodeGenOptLevel::Aggressive;
  }
}

} // namespace

/// The packed form of `kernel` (its KernelAbi symbol):
/// int (void **args) { return kernel(args[0], ...); }
void attnc::addPackedEntry(llvm::Module &module, llvm::Function &kernel) {
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(context);
  auto *type = llvm::FunctionType::get(kernel.getReturnType(), {ptr}, false);
  auto *entry = llvm::Function::Create(
      type, llvm::GlobalValue::ExternalLinkage,
      mlir::attn::abi::packedEntrySymbol(kernel.getName()), module);
  llvm::IRBuilder<> builder(llvm::BasicBlock::Create(context, "entry", entry));
  llvm::SmallVector<llvm::Value *> args;
  for (unsigned i = 0; i < kernel.arg_size(); ++i) {
    llvm::Value *slot =
        builder.CreateConstInBoundsGEP1_64(ptr, entry->getArg(0), i);
    args.push_back(builder.CreateLoad(ptr, slot));
  }
  builder.CreateRet(builder.CreateCall(&kernel, args));
}

/// The LLVM middle end at `optLevel`. attnc's passes blocked and vectorized
/// the hot loops already, so
/// - -O1 and -O2 run a lean cleanup (SROA, early CSE, instcombine,
///   simplifycfg): LLVM's full O2 pipeline took ~100 of the ~570 ms of the
///   BERT-base layer's JIT compile and changed no measured run time of the
///   benchmark shapes by more than noise (it made the smallest kernel, the
///   book's 5 us case, ~4% faster);
/// - -O3 runs LLVM's O3 pipeline, without its loop and SLP vectorizers and
///   unroller (re-unrolling attnc's loops made bigger code that compiled
///   and ran slower: BERT-base layer JIT compile ~2x, run ~10%).
void attnc::optimizeModule(llvm::Module &module, llvm::TargetMachine &machine,
                           unsigned optLevel) {
  llvm::PipelineTuningOptions tuning;
  tuning.LoopUnrolling = false;
  tuning.LoopVectorization = false;
  tuning.SLPVectorization = false;
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;
  llvm::PassBuilder builder(&machine, tuning);
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);
  llvm::ModulePassManager passes;
  if (optLevel == 0) {
    passes = builder.buildO0DefaultPipeline(llvm::OptimizationLevel::O0);
  } else if (optLevel >= 3) {
    passes = builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  } else {
    llvm::FunctionPassManager cleanup;
    cleanup.addPass(llvm::SROAPass(llvm::SROAOptions::ModifyCFG));
    cleanup.addPass(llvm::EarlyCSEPass(/*UseMemorySSA=*/true));
    cleanup.addPass(llvm::InstCombinePass());
    cleanup.addPass(llvm::SimplifyCFGPass());
    passes.addPass(llvm::createModuleToFunctionPassAdaptor(std::move(cleanup)));
  }
  passes.run(module, modules);
}

std::string attnc::targetTriple(const TargetOptions &options) {
  return llvm::Triple::normalize(options.triple.empty()
                                     ? llvm::sys::getDefaultTargetTriple()
                                     : options.triple);
}

bool attnc::isHostTriple(const TargetOptions &options) {
  if (options.triple.empty())
    return true;
  llvm::Triple host(llvm::sys::getDefaultTargetTriple());
  llvm::Triple target(targetTriple(options));
  // x86_64-linux-gnu and x86_64-pc-linux-gnu are one machine: the vendor
  // does not change the code.
  return host.getArch() == target.getArch() && host.getOS() == target.getOS() &&
         host.getEnvironment() == target.getEnvironment();
}

std::string attnc::resolveCpuName(const TargetOptions &options) {
  if (options.cpu != "native")
    return options.cpu;
  return isHostTriple(options) ? llvm::sys::getHostCPUName().str()
                               : std::string("generic");
}

std::vector<std::string> attnc::cpuList(const TargetOptions &options) {
  std::vector<std::string> cpus;
  for (llvm::StringRef cpu : llvm::split(options.cpu, ','))
    cpus.push_back(cpu.trim().str());
  return cpus;
}

llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
attnc::createTargetMachine(const TargetOptions &options) {
  if (llvm::StringRef(options.cpu).contains(','))
    return llvm::createStringError("--mcpu=" + options.cpu +
                                   " names several CPUs where one is needed");
  if (llvm::StringRef(options.cpu).trim().empty())
    return llvm::createStringError(
        "an empty CPU name in --mcpu (write --mcpu=CPU[,CPU...])");
  initializeTargets();
  llvm::Triple triple(targetTriple(options));
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return llvm::createStringError("--triple=" + options.triple + ": " + error);

  std::string cpu = resolveCpuName(options);
  llvm::SubtargetFeatures features;
  if (options.cpu == "native" && isHostTriple(options))
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      features.AddFeature(feature.getKey(), feature.getValue());
  // Asked with no CPU, so that LLVM does not print its own warning about a
  // CPU it does not know: the error below is the one message the user sees.
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
      target->createMCSubtargetInfo(triple, "", ""));
  if (!subtarget || !subtarget->isCPUStringValid(cpu))
    return llvm::createStringError(
        "unknown CPU '" + cpu + "' for " + triple.str() +
        (triple.isX86()
             ? " (use an LLVM CPU name such as znver4, x86-64-v3, or native)"
             : " (use an LLVM CPU name of that triple, or generic)"));

  llvm::TargetOptions targetOptions;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, cpu, features.getString(), targetOptions, llvm::Reloc::PIC_,
      std::nullopt, codeGenLevel(options.optLevel)));
  if (!machine)
    return llvm::createStringError("cannot create a target machine for " +
                                   triple.str() + " " + cpu);
  return machine;
}

llvm::Error attnc::checkCpuList(const TargetOptions &options) {
  // The dispatcher reads x86's cpuid and xgetbv (Dispatch.h).
  if (cpuList(options).size() > 1 &&
      !llvm::Triple(targetTriple(options)).isX86())
    return llvm::createStringError(
        "a --mcpu list (one object, a variant per CPU) is for x86-64 only; " +
        targetTriple(options) + " takes one CPU");
  return llvm::Error::success();
}

llvm::Error attnc::checkTarget(const TargetOptions &options) {
  for (const std::string &cpu : cpuList(options)) {
    TargetOptions one = options;
    one.cpu = cpu;
    auto machine = createTargetMachine(one);
    if (!machine)
      return machine.takeError();
  }
  return checkCpuList(options);
}

namespace {

/// The sizes of this machine's L1 data cache and of its L2 per core, from
/// Linux's sysfs; zero when not known.
std::pair<int64_t, int64_t> hostCacheSizes() {
  int64_t l1d = 0, l2 = 0;
  for (int index = 0; index < 8; ++index) {
    std::string dir =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    auto read = [&](const char *name) -> std::string {
      // sysfs files report a size they do not have: read them as streams.
      auto buffer = llvm::MemoryBuffer::getFileAsStream(dir + "/" + name);
      return buffer ? (*buffer)->getBuffer().trim().str() : std::string();
    };
    std::string level = read("level"), type = read("type"), size = read("size");
    if (level.empty())
      break;
    llvm::StringRef text(size);
    int64_t scale = text.consume_back("K")   ? 1024
                    : text.consume_back("M") ? 1024 * 1024
                                             : 1;
    int64_t value = 0;
    if (text.getAsInteger(10, value))
      continue;
    if (level == "1" && type == "Data")
      l1d = value * scale;
    else if (level == "2" && type != "Instruction")
      l2 = value * scale;
  }
  return {l1d, l2};
}

} // namespace

llvm::Expected<mlir::attn::CpuTargetDescription>
attnc::describeCpuTarget(const TargetOptions &options) {
  auto machine = createTargetMachine(options);
  if (!machine)
    return machine.takeError();
  const llvm::MCSubtargetInfo *subtarget = (*machine)->getMCSubtargetInfo();
  const llvm::Triple &triple = (*machine)->getTargetTriple();
  auto has = [&](llvm::StringRef feature) {
    return subtarget->checkFeatures(("+" + feature).str());
  };
  mlir::attn::CpuTargetDescription target;
  target.arch = triple.getArchName().str();
  target.cpu = (*machine)->getTargetCPU().str();
  llvm::ArrayRef<llvm::StringRef> interesting;
  if (triple.isX86()) {
    static const llvm::StringRef x86[] = {
        "sse2",       "sse4.1",     "sse4.2",   "avx",
        "avx2",       "fma",        "f16c",     "avx512f",
        "avx512bw",   "avx512dq",   "avx512vl", "avx512bf16",
        "avx512vnni", "avx512fp16", "amx-tile", "amx-bf16"};
    interesting = x86;
    // The widest registers the features allow: AVX-512 has 32 of 512 bits,
    // AVX 16 of 256, SSE2 16 of 128.
    target.vectorBits = has("avx512f") ? 512 : has("avx") ? 256 : 128;
    target.vectorRegisters = has("avx512f") ? 32 : 16;
    target.fma = has("fma") || has("avx512f");
  } else if (triple.isAArch64()) {
    static const llvm::StringRef arm[] = {"neon", "fullfp16", "dotprod", "bf16",
                                          "sve"};
    interesting = arm;
    target.vectorBits = 128;
    target.vectorRegisters = 32;
    target.fma = true;
  } else {
    target.vectorBits = 128;
    target.vectorRegisters = 16;
    target.fma = false;
  }
  target.fmaUnits = target.fma ? 2 : 0;
  target.features.clear();
  for (llvm::StringRef feature : interesting)
    // AMX's tile state is the OS's to grant: Linux's arch_prctl, which the
    // kernels call (attn-tile-and-vectorize).
    if (has(feature) && (!feature.starts_with("amx") || triple.isOSLinux()))
      target.features.push_back(feature.str());
  llvm::sort(target.features);
  target.cacheLineBytes = 64;
  target.l1dBytes = 32 * 1024;
  target.l2BytesPerCore = 1024 * 1024;
  if (options.cpu == "native" && isHostTriple(options)) {
    auto [l1d, l2] = hostCacheSizes();
    if (l1d)
      target.l1dBytes = l1d;
    if (l2)
      target.l2BytesPerCore = l2;
  }
  return target;
}

llvm::Expected<std::string> attnc::describeEachCpu(
    const TargetOptions &options,
    llvm::function_ref<llvm::Expected<CpuScheduleText>(
        const TargetOptions &, const mlir::attn::CpuTargetDescription &)>
        describe) {
  std::string text;
  llvm::raw_string_ostream os(text);
  for (const std::string &cpu : cpuList(options)) {
    TargetOptions one = options;
    one.cpu = cpu;
    auto description = describeCpuTarget(one);
    if (!description)
      return description.takeError();
    auto schedule = describe(one, *description);
    if (!schedule)
      return schedule.takeError();
    os << "target: " << description->summary() << "\n" << schedule->heading;
    for (llvm::StringRef line : llvm::split(schedule->lines, '\n'))
      if (!line.empty())
        os << "  " << line << "\n";
  }
  return text;
}

llvm::Error attnc::attachCpuTarget(mlir::ModuleOp module,
                                   const TargetOptions &options) {
  if (module->hasAttr(mlir::DLTIDialect::kTargetSystemDescAttrName))
    return llvm::Error::success();
  TargetOptions first = options;
  first.cpu = cpuList(options).front();
  auto target = describeCpuTarget(first);
  if (!target)
    return target.takeError();
  mlir::attn::attachCpuTarget(module, *target);
  return llvm::Error::success();
}

llvm::Error attnc::checkRunsOnHost(const TargetOptions &options) {
  auto machine = createTargetMachine(options);
  if (!machine)
    return machine.takeError();
  if (!isHostTriple(options))
    return llvm::createStringError(
        "code for --triple=" + options.triple + " cannot run on this " +
        llvm::sys::getDefaultTargetTriple() +
        " machine (compile it with 'attnc SPEC --triple=" + options.triple +
        " -o OBJ' and run it there)");
  if (options.cpu == "native")
    return llvm::Error::success();
  // The CPU's features against the host's, by feature (never by CPU name:
  // a VM may report a CPU whose AVX-512 is switched off). Features the host
  // query does not report (tuning flags) are not ISA and are skipped, and
  // so are system instructions that only intrinsics reach (VMs hide some:
  // a Zen 3 VM without mwaitx and rdpru runs Zen 3 code).
  const llvm::MCSubtargetInfo *subtarget = (*machine)->getMCSubtargetInfo();
  llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
  llvm::SmallVector<llvm::StringRef> missing;
  for (const llvm::SubtargetFeatureKV &feature :
       subtarget->getAllProcessorFeatures()) {
    auto it = host.find(feature.Key);
    if (it != host.end() && !it->second &&
        !isIntrinsicsOnlyFeature(feature.Key) &&
        subtarget->checkFeatures(("+" + llvm::StringRef(feature.Key)).str()))
      missing.push_back(feature.Key);
  }
  if (missing.empty())
    return llvm::Error::success();
  return llvm::createStringError(
      "this machine (" + llvm::sys::getHostCPUName() +
      ") lacks features of --mcpu=" + options.cpu + ": " +
      llvm::join(missing, ", ") +
      "; its code would stop with an illegal instruction (use --mcpu=native "
      "to run here)");
}

/// `attrs` (an llvm.func's arg_attrs or res_attrs) without attributes of
/// the attn dialect; null when nothing changes.
static mlir::ArrayAttr withoutAttnAttrs(mlir::ArrayAttr attrs) {
  if (!attrs)
    return {};
  bool changed = false;
  llvm::SmallVector<mlir::Attribute> kept;
  for (mlir::Attribute entry : attrs) {
    auto dict = llvm::cast<mlir::DictionaryAttr>(entry);
    llvm::SmallVector<mlir::NamedAttribute> names;
    for (mlir::NamedAttribute named : dict)
      if (named.getNameDialect() &&
          named.getNameDialect()->getNamespace() == "attn")
        changed = true;
      else
        names.push_back(named);
    kept.push_back(mlir::DictionaryAttr::get(attrs.getContext(), names));
  }
  return changed ? mlir::ArrayAttr::get(attrs.getContext(), kept)
                 : mlir::ArrayAttr();
}

void attnc::dropAttnArgumentAttrs(mlir::ModuleOp module) {
  module.walk([](mlir::LLVM::LLVMFuncOp func) {
    if (mlir::ArrayAttr args = withoutAttnAttrs(func.getArgAttrsAttr()))
      func.setArgAttrsAttr(args);
    if (mlir::ArrayAttr results = withoutAttnAttrs(func.getResAttrsAttr()))
      func.setResAttrsAttr(results);
  });
}

llvm::Expected<std::unique_ptr<llvm::Module>>
attnc::translateToLLVMIR(mlir::ModuleOp module, llvm::LLVMContext &context,
                         llvm::TargetMachine &machine, unsigned optLevel,
                         TemporaryAllocator allocator) {
  mlir::DialectRegistry registry;
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::registerOpenMPDialectTranslation(registry);
  module->getContext()->appendDialectRegistry(registry);

  dropAttnArgumentAttrs(module);
  std::unique_ptr<llvm::Module> llvmModule =
      mlir::translateModuleToLLVMIR(module, context, "attnc");
  if (!llvmModule)
    return llvm::createStringError("translation to LLVM IR failed");
  llvmModule->setTargetTriple(machine.getTargetTriple());
  llvmModule->setDataLayout(machine.createDataLayout());

  llvm::SmallVector<llvm::Function *> kernels;
  for (llvm::Function &function : *llvmModule)
    if (!function.isDeclaration() && function.hasExternalLinkage())
      kernels.push_back(&function);
  for (llvm::Function *kernel : kernels)
    addPackedEntry(*llvmModule, *kernel);
  // Done before optimizing: LLVM knows malloc and free, and would pair a
  // zero-filled malloc into a calloc that the caches cannot take.
  if (allocator == TemporaryAllocator::Runtime) {
    for (auto [from, to] :
         {std::pair<const char *, const char *>{"malloc", "attnc_rt_malloc"},
          {"free", "attnc_rt_free"}})
      if (llvm::Function *function = llvmModule->getFunction(from))
        function->setName(to);
  } else if (allocator == TemporaryAllocator::ObjectCache) {
    addBlockCache(*llvmModule);
  }

  optimizeModule(*llvmModule, machine, optLevel);
  return llvmModule;
}

llvm::Error attnc::emitMachineCode(llvm::Module &module,
                                   llvm::TargetMachine &machine,
                                   MachineCodeKind kind,
                                   llvm::raw_pwrite_stream &out) {
  llvm::legacy::PassManager passes;
  auto fileType = kind == MachineCodeKind::Object
                      ? llvm::CodeGenFileType::ObjectFile
                      : llvm::CodeGenFileType::AssemblyFile;
  if (machine.addPassesToEmitFile(passes, out, nullptr, fileType))
    return llvm::createStringError("the target cannot emit this file type");
  passes.run(module);
  return llvm::Error::success();
}
