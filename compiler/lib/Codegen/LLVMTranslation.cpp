//===- LLVMTranslation.cpp - LLVM dialect -> LLVM IR -> machine code ------===//

#include "attnc/Codegen/LLVMTranslation.h"

#include "attnc/Codegen/Bf16AcrossBlocks.h"

#include "attn/Target/KernelAbi.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/InstCombine/InstCombine.h"
#include "llvm/Transforms/Scalar/EarlyCSE.h"
#include "llvm/Transforms/Scalar/SROA.h"
#include "llvm/Transforms/Scalar/SimplifyCFG.h"

using namespace attnc;

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
///   simplifycfg): LLVM's full O2 pipeline cost a sixth of a layer's JIT
///   compile and changed no benchmark's run time beyond noise;
/// - -O3 runs LLVM's O3 pipeline, without its loop and SLP vectorizers and
///   unroller (re-unrolling attnc's loops made bigger code that compiled
///   and ran slower).
/// The measurements are in docs/performance.md ("Measurements the code
/// cites").
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
  // Last, so that no pass moves a bf16 value between blocks again; only
  // where the back end would call __truncsfbf2 (x86 without AVX512-BF16),
  // so that other CPUs' code stays as it was.
  if (machine.getTargetTriple().isX86() &&
      !machine.getMCSubtargetInfo()->checkFeatures("+avx512bf16"))
    carryBf16AcrossBlocksAsBits(module);
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
