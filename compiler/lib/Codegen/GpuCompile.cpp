//===- GpuCompile.cpp - attn-level module -> GPU objects and PTX ----------===//
//
// The GPU pipeline (Pipeline.cpp) leaves host code in the LLVM dialect that
// calls MLIR's `mgpu*` runtime functions and a gpu.binary holding the
// device image. Here that host code becomes an object of its own: the
// binary's global constructors become a function the loader runs once the
// driver is open, the loader's bitcode is linked in and made internal, and
// the exported entries NAME, NAME_cuda and their packed forms are added.
//
//===----------------------------------------------------------------------===//

#include "attnc/Codegen/GpuCompile.h"
#include "attnc/Codegen/Compile.h"
#include "attnc/Codegen/LLVMTranslation.h"
#include "attnc/Codegen/Pipeline.h"
#include "attnc/Codegen/TargetMachine.h"

#include "attn/Target/KernelAbi.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <algorithm>
#include <tuple>

// The loader's bitcode, compiled from lib/ObjectCode/attnc_cuda.c when attnc
// is built (GpuLoaderBitcode.cpp, generated).
extern const unsigned char kAttncCudaBitcode[];
extern const size_t kAttncCudaBitcodeSize;

using namespace attnc;
namespace abi = mlir::attn::abi;
using abi::Entry;

namespace {

/// The host side of a GPU object: plain x86-64, whatever this machine has
/// (the host code only enqueues work).
TargetOptions hostTarget(const TargetOptions &gpu) {
  TargetOptions host;
  host.cpu = "x86-64";
  host.optLevel = gpu.optLevel;
  return host;
}

llvm::Error lowerForGpu(mlir::ModuleOp module, const CompileOptions &options,
                        bool ptxOnly) {
  llvm::Expected<CudaToolkit> toolkit = findCudaToolkit();
  if (!toolkit)
    return toolkit.takeError();
  GpuPipelineOptions gpu;
  gpu.chip = gpuChip(options.target);
  gpu.features = ptxFeatures(gpu.chip);
  gpu.optLevel = std::min(options.target.optLevel, 3u);
  gpu.toolkit = toolkit->root;
  gpu.libdevice = toolkit->libdevice;
  gpu.format = !ptxOnly && toolkit->canAssemble ? "fatbin" : "isa";
  gpu.attention = options.pipeline.attention;
  gpu.tf32 = options.pipeline.tf32;

  mlir::DialectRegistry registry;
  mlir::registerAllToLLVMIRTranslations(registry);
  mlir::NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  module->getContext()->appendDialectRegistry(registry);

  mlir::PassManager pm(module->getContext());
  if (options.printIRAfterAll)
    enableIRPrintingAfterAll(pm);
  buildGpuLoweringPipeline(pm, gpu);
  if (mlir::failed(pm.run(module)))
    return llvm::createStringError("lowering for the GPU failed");
  return llvm::Error::success();
}

/// The PTX of every gpu.binary in `module` (lowered with format `isa`).
llvm::Expected<std::string> ptxOf(mlir::ModuleOp module) {
  std::string ptx;
  module.walk([&](mlir::gpu::BinaryOp binary) {
    for (mlir::Attribute attribute : binary.getObjects())
      if (auto object = mlir::dyn_cast<mlir::gpu::ObjectAttr>(attribute))
        ptx += object.getObject().getValue().str();
  });
  if (ptx.empty())
    return llvm::createStringError("the GPU pipeline made no PTX");
  return ptx;
}

/// Replaces the module's global constructors (the gpu.binary module loads)
/// by attnc_cuda_object_load_modules, which the loader calls once the
/// driver is open: a constructor would run before any call (and without a
/// driver), and the JIT runs none.
void loadModulesLazily(llvm::Module &module) {
  llvm::LLVMContext &context = module.getContext();
  std::vector<std::pair<uint64_t, llvm::Function *>> constructors;
  if (llvm::GlobalVariable *list =
          module.getGlobalVariable("llvm.global_ctors")) {
    if (auto *array =
            llvm::dyn_cast<llvm::ConstantArray>(list->getInitializer()))
      for (llvm::Value *entry : array->operands()) {
        auto *fields = llvm::cast<llvm::ConstantStruct>(entry);
        auto *priority = llvm::cast<llvm::ConstantInt>(fields->getOperand(0));
        if (auto *function =
                llvm::dyn_cast<llvm::Function>(fields->getOperand(1)))
          constructors.push_back({priority->getZExtValue(), function});
      }
    list->eraseFromParent();
  }
  // Modules stay loaded until the process ends (the driver unloads them).
  if (llvm::GlobalVariable *list =
          module.getGlobalVariable("llvm.global_dtors"))
    list->eraseFromParent();
  // Same-priority constructors keep their order (the index breaks ties).
  std::vector<std::tuple<uint64_t, size_t, llvm::Function *>> ordered;
  for (auto [i, constructor] : llvm::enumerate(constructors))
    ordered.emplace_back(constructor.first, i, constructor.second);
  std::sort(ordered.begin(), ordered.end());
  auto *load = llvm::Function::Create(
      llvm::FunctionType::get(llvm::Type::getVoidTy(context), false),
      llvm::GlobalValue::ExternalLinkage, "attnc_cuda_object_load_modules",
      module);
  llvm::IRBuilder<> builder(llvm::BasicBlock::Create(context, "entry", load));
  for (auto &[priority, index, function] : ordered)
    builder.CreateCall(function);
  builder.CreateRetVoid();
}

/// int NAME_cuda(void *stream, ...): the lowered host function between
/// attnc_cuda_begin and attnc_cuda_end.
llvm::Function *addDeviceEntry(llvm::Module &module, llvm::Function &kernel,
                               llvm::StringRef name) {
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(context);
  llvm::Type *i32 = llvm::Type::getInt32Ty(context);
  std::vector<llvm::Type *> parameters = {ptr};
  for (llvm::Argument &argument : kernel.args())
    parameters.push_back(argument.getType());
  auto *entry =
      llvm::Function::Create(llvm::FunctionType::get(i32, parameters, false),
                             llvm::GlobalValue::ExternalLinkage,
                             abi::entrySymbol(name, Entry::Cuda), module);
  llvm::FunctionCallee begin = module.getOrInsertFunction(
      "attnc_cuda_begin", llvm::FunctionType::get(i32, {ptr}, false));
  llvm::FunctionCallee end = module.getOrInsertFunction(
      "attnc_cuda_end", llvm::FunctionType::get(i32, false));
  auto *start = llvm::BasicBlock::Create(context, "entry", entry);
  auto *run = llvm::BasicBlock::Create(context, "run", entry);
  auto *refused = llvm::BasicBlock::Create(context, "refused", entry);
  llvm::IRBuilder<> builder(start);
  llvm::Value *began = builder.CreateCall(begin, {entry->getArg(0)});
  builder.CreateCondBr(builder.CreateICmpEQ(began, builder.getInt32(0)), run,
                       refused);
  builder.SetInsertPoint(refused);
  builder.CreateRet(began);
  builder.SetInsertPoint(run);
  std::vector<llvm::Value *> args;
  for (unsigned i = 1; i < entry->arg_size(); ++i)
    args.push_back(entry->getArg(i));
  llvm::Value *status = builder.CreateCall(&kernel, args);
  llvm::Value *ended = builder.CreateCall(end);
  builder.CreateRet(builder.CreateSelect(
      builder.CreateICmpNE(ended, builder.getInt32(0)), ended, status));
  return entry;
}

/// int NAME(...): host pointers, through attnc_cuda_call_host and the
/// packed form of NAME_cuda.
llvm::Function *addHostEntry(llvm::Module &module,
                             const KernelSignature &signature,
                             llvm::Function &devicePacked) {
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(context);
  llvm::Type *i32 = llvm::Type::getInt32Ty(context);
  llvm::Type *i64 = llvm::Type::getInt64Ty(context);
  llvm::Type *i8 = llvm::Type::getInt8Ty(context);
  size_t count = signature.arguments.size();

  // attnc_cuda.h's copies: in for what the kernel reads, out for what it
  // writes (a state both).
  std::vector<llvm::Constant *> bytes, copies;
  for (const KernelArgument &argument : signature.arguments) {
    bytes.push_back(llvm::ConstantInt::get(
        i64, argument.numElements() * mlir::attn::bytesOf(argument.type)));
    int in = argument.role == ArgumentRole::Output ? 0 : 1;
    int out = mlir::attn::abi::isWritten(argument.role) ? 2 : 0;
    copies.push_back(llvm::ConstantInt::get(i8, in | out));
  }
  auto constantArray = [&](llvm::Type *element,
                           std::vector<llvm::Constant *> &values,
                           const std::string &suffix) {
    auto *type = llvm::ArrayType::get(element, values.size());
    return new llvm::GlobalVariable(
        module, type, /*isConstant=*/true, llvm::GlobalValue::PrivateLinkage,
        llvm::ConstantArray::get(type, values), signature.name + suffix);
  };
  auto *argumentsType = llvm::StructType::get(context, {i32, ptr, ptr});
  auto *arguments = new llvm::GlobalVariable(
      module, argumentsType, /*isConstant=*/true,
      llvm::GlobalValue::PrivateLinkage,
      llvm::ConstantStruct::get(argumentsType,
                                {llvm::ConstantInt::get(i32, count),
                                 constantArray(i64, bytes, ".bytes"),
                                 constantArray(i8, copies, ".copies")}),
      signature.name + ".arguments");

  std::vector<llvm::Type *> parameters(count, ptr);
  auto *entry = llvm::Function::Create(
      llvm::FunctionType::get(i32, parameters, false),
      llvm::GlobalValue::ExternalLinkage,
      abi::entrySymbol(signature.name, Entry::Run), module);
  llvm::FunctionCallee callHost = module.getOrInsertFunction(
      "attnc_cuda_call_host",
      llvm::FunctionType::get(i32, {ptr, ptr, ptr}, false));
  llvm::IRBuilder<> builder(llvm::BasicBlock::Create(context, "entry", entry));
  llvm::Value *pointers =
      builder.CreateAlloca(ptr, builder.getInt32(std::max<size_t>(count, 1)));
  for (unsigned i = 0; i < count; ++i)
    builder.CreateStore(entry->getArg(i),
                        builder.CreateConstInBoundsGEP1_64(ptr, pointers, i));
  builder.CreateRet(
      builder.CreateCall(callHost, {arguments, &devicePacked, pointers}));
  return entry;
}

/// const char *NAME_cuda_last_error(void).
void addLastError(llvm::Module &module, llvm::StringRef name) {
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(context);
  auto *entry = llvm::Function::Create(
      llvm::FunctionType::get(ptr, false), llvm::GlobalValue::ExternalLinkage,
      abi::entrySymbol(name, Entry::CudaLastError), module);
  llvm::FunctionCallee last = module.getOrInsertFunction(
      "attnc_cuda_last_error", llvm::FunctionType::get(ptr, false));
  llvm::IRBuilder<> builder(llvm::BasicBlock::Create(context, "entry", entry));
  builder.CreateRet(builder.CreateCall(last));
}

/// The object's host module: entries, lazy module loads, the chip, the
/// loader linked in, everything but the entries internal, optimized.
llvm::Expected<std::unique_ptr<llvm::Module>>
translateGpuHost(mlir::ModuleOp module,
                 const std::vector<KernelSignature> &signatures,
                 const CompileOptions &options, llvm::LLVMContext &context,
                 llvm::TargetMachine &machine) {
  dropAttnArgumentAttrs(module);
  std::unique_ptr<llvm::Module> host =
      mlir::translateModuleToLLVMIR(module, context, "attnc");
  if (!host)
    return llvm::createStringError("translating the GPU host code to LLVM IR "
                                   "failed");
  host->setTargetTriple(machine.getTargetTriple());
  host->setDataLayout(machine.createDataLayout());
  loadModulesLazily(*host);
  std::string chip = gpuChip(options.target);
  auto *chipValue = llvm::ConstantDataArray::getString(context, chip);
  new llvm::GlobalVariable(*host, chipValue->getType(), /*isConstant=*/true,
                           llvm::GlobalValue::ExternalLinkage, chipValue,
                           "attnc_cuda_object_chip");

  llvm::StringSet<> exported;
  // Every lowered host function moves to its internal name first, so that
  // no entry added below can meet one of them.
  std::vector<llvm::Function *> kernels;
  for (const KernelSignature &signature : signatures) {
    llvm::Function *kernel = host->getFunction(signature.name);
    if (!kernel || kernel->isDeclaration())
      return llvm::createStringError("the GPU host code has no function '" +
                                     signature.name + "'");
    kernels.push_back(kernel);
  }
  for (auto [signature, kernel] : llvm::zip_equal(signatures, kernels)) {
    kernel->setName(abi::deviceFunctionSymbol(signature.name));
    kernel->setLinkage(llvm::GlobalValue::InternalLinkage);
  }
  for (auto [signature, kernel] : llvm::zip_equal(signatures, kernels)) {
    llvm::Function *device = addDeviceEntry(*host, *kernel, signature.name);
    addPackedEntry(*host, *device);
    llvm::Function *devicePacked =
        host->getFunction(abi::packedEntrySymbol(device->getName()));
    llvm::Function *hostEntry = addHostEntry(*host, signature, *devicePacked);
    addPackedEntry(*host, *hostEntry);
    addLastError(*host, signature.name);
    for (const std::string &name :
         abi::exportedSymbols(signature.name, abi::ObjectKind::Gpu))
      exported.insert(name);
  }

  auto bitcode = llvm::MemoryBufferRef(
      llvm::StringRef(reinterpret_cast<const char *>(kAttncCudaBitcode),
                      kAttncCudaBitcodeSize),
      "attnc_cuda.bc");
  llvm::Expected<std::unique_ptr<llvm::Module>> loader =
      llvm::parseBitcodeFile(bitcode, context);
  if (!loader)
    return loader.takeError();
  (*loader)->setTargetTriple(machine.getTargetTriple());
  (*loader)->setDataLayout(machine.createDataLayout());
  if (llvm::Linker::linkModules(*host, std::move(*loader)))
    return llvm::createStringError("linking the CUDA loader failed");
  // Two GPU objects in one program each keep their own loader.
  for (llvm::GlobalValue &value : host->global_values())
    if (!value.isDeclaration() && !exported.contains(value.getName()) &&
        !value.hasLocalLinkage())
      value.setLinkage(llvm::GlobalValue::InternalLinkage);
  optimizeModule(*host, machine, options.target.optLevel);
  return host;
}

} // namespace

llvm::Expected<std::string> attnc::compileForGpu(mlir::ModuleOp module,
                                                 const CompileOptions &options,
                                                 OutputKind kind) {
  if (llvm::Error error = checkGpuTarget(options.target))
    return std::move(error);
  auto machine = createTargetMachine(hostTarget(options.target));
  if (!machine)
    return machine.takeError();
  auto signatures = kernelSignatures(module);
  if (!signatures)
    return signatures.takeError();
  if (llvm::Error error = lowerForGpu(module, options, kind == OutputKind::Ptx))
    return std::move(error);
  if (kind == OutputKind::Ptx)
    return ptxOf(module);
  if (kind == OutputKind::Lowered) {
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os);
    os << "\n";
    return text;
  }
  llvm::LLVMContext context;
  auto host =
      translateGpuHost(module, *signatures, options, context, **machine);
  if (!host)
    return host.takeError();
  if (kind == OutputKind::LlvmIr) {
    std::string text;
    llvm::raw_string_ostream os(text);
    (*host)->print(os, nullptr);
    return text;
  }
  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream os(buffer);
  if (llvm::Error error = emitMachineCode(**host, **machine,
                                          kind == OutputKind::Object
                                              ? MachineCodeKind::Object
                                              : MachineCodeKind::Assembly,
                                          os))
    return std::move(error);
  return std::string(buffer.str());
}
