//===- HalideBackend.cpp - attn-level module -> kernels through Halide ----===//
//
// Each kernel: HalideGen's pipeline, scheduled, compiled by Halide (its own
// LLVM inside libHalide.so) to bitcode, which LLVM 22 reads (bitcode is
// read by every later LLVM). The bitcode of every kernel is linked into
// one module with the ABI wrappers below; Halide's runtime is made
// internal, so objects of several kernels and several blocks link together
// and a host sees only the entries the MLIR backend exports.
//
//===----------------------------------------------------------------------===//

#include "attnc/Halide/HalideBackend.h"

#include "HalideGen.h"
#include "HalideSchedule.h"

#include "attnc/Codegen/Compile.h"
#include "attnc/Codegen/CpuDescription.h"
#include "attnc/Codegen/LLVMTranslation.h"
#include "attnc/Codegen/TargetMachine.h"

#include "attn/Target/CpuTarget.h"
#include "attn/Target/KernelAbi.h"
#include "attn/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include "HalideRuntime.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/IPO/GlobalDCE.h"
#include "llvm/Transforms/IPO/Internalize.h"

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>

// attnc_halide_par_for.c as bitcode (HalideParForBitcode.cpp, generated).
extern const unsigned char kAttncHalideParForBitcode[];
extern const size_t kAttncHalideParForBitcodeSize;

using namespace attnc;
namespace abi = mlir::attn::abi;
using abi::Entry;

namespace {

/// The name of a kernel's Halide pipeline in the object.
std::string pipelineName(llvm::StringRef kernel) {
  return ("__attnc_halide_" + kernel).str();
}

llvm::Error halideError(const std::string &what, const Halide::Error &e) {
  return llvm::createStringError("Halide: " + what + ": " + e.what());
}

/// Halide's compile-time messages: errors become the exception attnc turns
/// into its own message (Halide's default reporter also prints them), and
/// warnings (about how a schedule stores a Func: an autoscheduler's
/// business, nothing a user can act on) are dropped.
class QuietReporter : public Halide::CompileTimeErrorReporter {
public:
  void warning(const char *) override {}
  [[noreturn]] void error(const char *message) override {
    throw Halide::CompileError(message);
  }
};

void installReporter() {
  static QuietReporter reporter;
  static std::once_flag once;
  std::call_once(
      once, [] { Halide::set_custom_compile_time_error_reporter(&reporter); });
}

/// Loads the autoscheduler plugins once (they register themselves).
llvm::Error loadAutoscheduler(llvm::StringRef name) {
  static std::mutex mutex;
  static std::set<std::string> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded.count(name.str()))
    return llvm::Error::success();
  // Where the wheel keeps them (cmake/AttncHalide.cmake).
  std::string library = std::string(ATTNC_HALIDE_PLUGIN_DIR) +
                        "/libautoschedule_" + name.lower() + ".so";
  try {
    Halide::load_plugin(library);
  } catch (const Halide::Error &e) {
    return halideError(
        "loading the autoscheduler " + name.str() + " (" + library + ")", e);
  }
  loaded.insert(name.str());
  return llvm::Error::success();
}

/// The LLVM features Halide 21 enables for its `avx512_zen4` (beyond
/// `avx512_skylake`'s): a CPU without one of them does not get it.
constexpr llvm::StringLiteral kHalideZen4Features[] = {
    "avx512ifma", "avx512vbmi",   "avx512bf16",
    "avx512vnni", "avx512bitalg", "avx512vbmi2"};

/// The parameters each autoscheduler needs beyond its name.
Halide::AutoschedulerParams autoschedulerParams(llvm::StringRef name,
                                                bool parallel) {
  Halide::AutoschedulerParams params(name.str());
  std::string threads = parallel ? "2" : "1";
  if (name == "Mullapudi2016" || name == "Adams2019" || name == "Li2018")
    params.extra["parallelism"] = threads;
  return params;
}

/// Whether `machine` has `feature` (an LLVM name).
bool hasFeature(const llvm::TargetMachine &machine, llvm::StringRef feature) {
  return machine.getMCSubtargetInfo()->checkFeatures(("+" + feature).str());
}

/// Whether Halide's GEMMs of two bf16 operands run on vdpbf16ps
/// (halideTarget).
bool halideBf16Dot(const llvm::TargetMachine &machine,
                   const mlir::attn::CpuTargetDescription &description) {
  if (mlir::attn::deriveCpuSchedule(description).bf16Dot !=
      mlir::attn::CpuSchedule::Bf16Dot::Vdpbf16ps)
    return false;
  return llvm::all_of(kHalideZen4Features, [&](llvm::StringRef feature) {
    return hasFeature(machine, feature);
  });
}

/// What attnc's schedules read of `description`.
halide::ScheduleTarget
scheduleTargetOf(const llvm::TargetMachine &machine,
                 const mlir::attn::CpuTargetDescription &description,
                 bool parallel) {
  halide::ScheduleTarget target;
  // attnc's schedules compute in f32, whatever the buffers hold.
  target.vectorLanes =
      static_cast<int>(description.lanes(mlir::attn::ElementType::F32));
  target.vectorRegisters = static_cast<int>(description.vectorRegisters);
  target.parallel = parallel;
  target.bf16Dot = halideBf16Dot(machine, description);
  return target;
}

/// `module` compiled by Halide to bitcode (through a temporary file: Halide
/// writes its outputs to files); `what` names it in an error.
llvm::Expected<std::string> bitcodeOf(const Halide::Module &module,
                                      const std::string &what) {
  llvm::SmallString<128> file;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("attnc-halide", "bc", file))
    return llvm::createStringError("cannot create a temporary file: " +
                                   ec.message());
  std::string path = file.str().str();
  try {
    module.compile({{Halide::OutputFileType::bitcode, path}});
  } catch (const Halide::Error &e) {
    llvm::sys::fs::remove(path);
    return halideError(what, e);
  }
  auto buffer = llvm::MemoryBuffer::getFile(path);
  llvm::sys::fs::remove(path);
  if (!buffer)
    return llvm::createStringError("cannot read Halide's bitcode: " +
                                   buffer.getError().message());
  return (*buffer)->getBuffer().str();
}

/// Halide's bitcode read into `context`, without the module flags in which
/// Halide records its target (halide_mcpu_target, ...): they differ between
/// the variants of a --mcpu list and mean nothing to LLVM 22's code
/// generator, which the functions' attributes direct.
llvm::Expected<std::unique_ptr<llvm::Module>>
parseHalideBitcode(llvm::MemoryBufferRef bitcode, llvm::LLVMContext &context) {
  auto parsed = llvm::parseBitcodeFile(bitcode, context);
  if (!parsed)
    return parsed.takeError();
  if (llvm::NamedMDNode *flags = (*parsed)->getModuleFlagsMetadata()) {
    std::vector<llvm::MDNode *> kept;
    for (llvm::MDNode *flag : flags->operands()) {
      auto *name = flag->getNumOperands() > 1
                       ? llvm::dyn_cast<llvm::MDString>(flag->getOperand(1))
                       : nullptr;
      if (!name || !name->getString().starts_with("halide_"))
        kept.push_back(flag);
    }
    flags->clearOperands();
    for (llvm::MDNode *flag : kept)
      flags->addOperand(flag);
  }
  return parsed;
}

/// One kernel's pipeline as Halide-compiled bitcode, read into `context`;
/// the states it updates in `stateWrites`.
llvm::Expected<std::unique_ptr<llvm::Module>>
compileKernel(mlir::func::FuncOp kernel, const CompileOptions &options,
              const mlir::attn::CpuTargetDescription &description,
              const llvm::TargetMachine &machine, llvm::LLVMContext &context,
              std::vector<halide::StateWrite> &stateWrites) {
  installReporter();
  std::string what = "compiling kernel '" + kernel.getName().str() + "'";
  std::optional<Halide::Module> module;
  // Halide reports errors as exceptions, in building the Funcs too.
  try {
    bool ownSchedule = options.halideSchedule == "attnc";
    halide::ScheduleTarget scheduleTarget =
        scheduleTargetOf(machine, description, options.pipeline.parallel);
    llvm::Expected<halide::KernelPipeline> pipeline =
        halide::buildKernelPipeline(kernel, /*clampReads=*/!ownSchedule,
                                    /*bf16Pairs=*/ownSchedule &&
                                        scheduleTarget.bf16Dot);
    if (!pipeline)
      return pipeline.takeError();
    halide::constrainShapes(*pipeline);
    stateWrites = pipeline->stateWrites;
    // The runtime comes from runtimeBitcode.
    Halide::Target target(halideTarget(machine, description) + "-no_runtime");
    Halide::Pipeline whole(pipeline->outputs);
    if (ownSchedule) {
      for (halide::Stage &stage : pipeline->stages)
        stage.schedule(scheduleTarget);
      for (Halide::Func &output : pipeline->outputs)
        output.compute_root();
    } else {
      if (llvm::Error error = loadAutoscheduler(options.halideSchedule))
        return std::move(error);
      whole.apply_autoscheduler(target,
                                autoschedulerParams(options.halideSchedule,
                                                    options.pipeline.parallel));
    }
    std::vector<Halide::Argument> arguments(pipeline->arguments.begin(),
                                            pipeline->arguments.end());
    module = whole.compile_to_module(arguments, pipelineName(kernel.getName()),
                                     target);
  } catch (const Halide::Error &e) {
    return halideError(what, e);
  }
  auto bitcode = bitcodeOf(*module, what);
  if (!bitcode)
    return bitcode.takeError();
  return parseHalideBitcode(llvm::MemoryBufferRef(*bitcode, "kernel.bc"),
                            context);
}

/// Halide's runtime for `target` (a Halide target string) as bitcode,
/// compiled by Halide once per process and target: kernels are compiled
/// without it (`-no_runtime`) and each module links a copy. Compiling the
/// runtime with every kernel was most of a small kernel's compile time.
llvm::Expected<std::shared_ptr<const std::string>>
runtimeBitcode(const std::string &target) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const std::string>> compiled;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto found = compiled.find(target); found != compiled.end())
    return found->second;
  std::string what = "compiling the runtime for " + target;
  // What Halide::compile_standalone_runtime does, to bitcode: a module
  // without pipelines, for a target with the runtime.
  std::optional<Halide::Module> runtime;
  try {
    runtime.emplace("attnc_halide_runtime", Halide::Target(target));
  } catch (const Halide::Error &e) {
    return halideError(what, e);
  }
  auto bitcode = bitcodeOf(*runtime, what);
  if (!bitcode)
    return bitcode.takeError();
  auto shared = std::make_shared<const std::string>(std::move(*bitcode));
  compiled.emplace(target, shared);
  return shared;
}

/// The ABI wrappers of one kernel: NAME(args...) builds a halide_buffer_t
/// per buffer and calls the pipeline, then writes the rows of each state
/// it updates (`stateWrites`) unless a cache position was out of range;
/// NAME_prepare has nothing to prepare (the pipeline reads the params as
/// they are) and NAME_prepared ignores `packed`. Each gets its packed
/// entry, as in translateToLLVMIR.
void addWrappers(llvm::Module &module, const KernelSignature &signature,
                 const std::vector<halide::StateWrite> &stateWrites) {
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(context);
  llvm::Type *i8 = llvm::Type::getInt8Ty(context);
  llvm::Type *i16 = llvm::Type::getInt16Ty(context);
  llvm::Type *i32 = llvm::Type::getInt32Ty(context);
  llvm::Type *i64 = llvm::Type::getInt64Ty(context);
  // HalideRuntime.h: halide_dimension_t {min, extent, stride, flags} and
  // halide_buffer_t {device, device_interface, host, flags, type,
  // dimensions, dim, padding}, type = {code, bits, lanes}.
  auto *dimensionType = llvm::StructType::get(context, {i32, i32, i32, i32});
  auto *halideType = llvm::StructType::get(context, {i8, i8, i16});
  auto *bufferType = llvm::StructType::get(
      context, {i64, ptr, ptr, i64, halideType, i32, ptr, ptr});

  size_t count = signature.arguments.size();
  auto *kernelType = llvm::FunctionType::get(
      i32, std::vector<llvm::Type *>(count, ptr), false);
  auto *kernel = llvm::Function::Create(
      kernelType, llvm::GlobalValue::ExternalLinkage,
      abi::entrySymbol(signature.name, Entry::Run), module);
  llvm::Function *pipeline = module.getFunction(pipelineName(signature.name));
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", kernel));
  auto buffer = [&](llvm::Value *host, const std::vector<int64_t> &shape,
                    ElementType type) {
    llvm::Value *buf = b.CreateAlloca(bufferType);
    llvm::Value *dims = b.CreateAlloca(
        dimensionType, b.getInt32(std::max<size_t>(shape.size(), 1)));
    int64_t stride = 1;
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t extent = shape[shape.size() - 1 - d];
      llvm::Value *dim = b.CreateConstInBoundsGEP1_32(dimensionType, dims,
                                                      static_cast<unsigned>(d));
      int64_t fields[] = {0, extent, stride, 0};
      for (unsigned f = 0; f < 4; ++f)
        b.CreateStore(b.getInt32(static_cast<uint32_t>(fields[f])),
                      b.CreateStructGEP(dimensionType, dim, f));
      stride *= extent;
    }
    auto field = [&](unsigned i) {
      return b.CreateStructGEP(bufferType, buf, i);
    };
    b.CreateStore(b.getInt64(0), field(0));
    b.CreateStore(
        llvm::ConstantPointerNull::get(llvm::cast<llvm::PointerType>(ptr)),
        field(1));
    b.CreateStore(host, field(2));
    b.CreateStore(b.getInt64(0), field(3));
    // The type the pipeline's parameter has (bf16/f16 buffers as uint16).
    Halide::Type element = halide::halideStorageTypeOf(type);
    b.CreateStore(
        llvm::ConstantStruct::get(
            halideType,
            {b.getInt8(static_cast<uint8_t>(element.code())),
             b.getInt8(static_cast<uint8_t>(element.bits())), b.getInt16(1)}),
        field(4));
    b.CreateStore(b.getInt32(static_cast<uint32_t>(shape.size())), field(5));
    b.CreateStore(dims, field(6));
    b.CreateStore(
        llvm::ConstantPointerNull::get(llvm::cast<llvm::PointerType>(ptr)),
        field(7));
    return buf;
  };
  std::vector<llvm::Value *> buffers;
  for (auto [i, argument] : llvm::enumerate(signature.arguments))
    buffers.push_back(buffer(kernel->getArg(static_cast<unsigned>(i)),
                             argument.shape, argument.type));
  // Each state's new rows and where they go: Halide's heap (the rows of a
  // long prefill do not fit a stack) and the stack.
  llvm::FunctionCallee halideMalloc =
      module.getOrInsertFunction("halide_malloc", ptr, ptr, i64);
  llvm::FunctionCallee halideFree =
      module.getOrInsertFunction("halide_free", b.getVoidTy(), ptr, ptr);
  llvm::Value *null =
      llvm::ConstantPointerNull::get(llvm::cast<llvm::PointerType>(ptr));
  std::vector<llvm::Value *> rowBuffers, atBuffers;
  llvm::Value *allocated = b.getTrue();
  for (const halide::StateWrite &write : stateWrites) {
    int64_t rowsBytes = mlir::attn::bytesOf(write.type);
    for (int64_t extent : write.rowsShape)
      rowsBytes *= extent;
    llvm::Value *rows =
        b.CreateCall(halideMalloc, {null, b.getInt64(rowsBytes)});
    allocated = b.CreateAnd(allocated, b.CreateIsNotNull(rows));
    llvm::Value *at = b.CreateAlloca(
        i32, b.getInt32(static_cast<uint32_t>(write.rowsShape[0])));
    rowBuffers.push_back(rows);
    atBuffers.push_back(at);
    buffers.push_back(buffer(rows, write.rowsShape, write.type));
    buffers.push_back(buffer(at, {write.rowsShape[0]}, ElementType::I32));
  }
  llvm::Value *status = b.CreateAlloca(i32);
  b.CreateStore(b.getInt32(0), status);
  buffers.push_back(buffer(status, {}, ElementType::I32));
  auto *ret = llvm::BasicBlock::Create(context, "ret", kernel);
  auto *run = llvm::BasicBlock::Create(context, "run", kernel);
  llvm::BasicBlock *noMemory = b.GetInsertBlock();
  b.CreateCondBr(allocated, run, ret);
  b.SetInsertPoint(run);
  llvm::Value *result = b.CreateCall(pipeline, buffers);
  llvm::Value *failed = b.CreateICmpNE(result, b.getInt32(0));
  // Halide's own error codes are negative and would read as the ABI's; its
  // out of memory is the ABI's.
  llvm::Value *code = b.CreateSelect(
      failed,
      b.CreateSelect(
          b.CreateICmpEQ(result, b.getInt32(halide_error_code_out_of_memory)),
          b.getInt32(ATTNC_STATUS_OUT_OF_MEMORY),
          b.getInt32(ATTNC_STATUS_HALIDE_ERROR)),
      b.CreateLoad(i32, status));
  // The rows go in unless the pipeline failed or a position was out of
  // range (the status says which): then no state is written.
  llvm::Value *write = b.CreateAnd(
      b.CreateNot(failed),
      b.CreateICmpNE(code, b.getInt32(ATTNC_STATUS_CACHE_POSITION)));
  for (auto [state, rows, at] : llvm::zip(stateWrites, rowBuffers, atBuffers)) {
    // for (e = 0; e < B; ++e) memcpy(state + (e * L + at[e]) * W,
    //                                rows + e * T * W, T * W elements).
    int64_t entries = state.rowsShape[0], newRows = state.rowsShape[1];
    int64_t width = state.rowsShape[2], length = state.stateShape[1];
    int64_t element = mlir::attn::bytesOf(state.type);
    llvm::Value *base = kernel->getArg(static_cast<unsigned>(state.argument));
    auto *loop = llvm::BasicBlock::Create(context, "write_rows", kernel);
    auto *done = llvm::BasicBlock::Create(context, "rows_written", kernel);
    llvm::BasicBlock *before = b.GetInsertBlock();
    b.CreateCondBr(write, loop, done);
    b.SetInsertPoint(loop);
    llvm::PHINode *e = b.CreatePHI(i64, 2);
    e->addIncoming(b.getInt64(0), before);
    llvm::Value *first =
        b.CreateSExt(b.CreateLoad(i32, b.CreateGEP(i32, at, e)), i64);
    llvm::Value *row = b.CreateAdd(b.CreateMul(e, b.getInt64(length)), first);
    llvm::Value *dst =
        b.CreateGEP(i8, base, b.CreateMul(row, b.getInt64(width * element)));
    llvm::Value *src = b.CreateGEP(
        i8, rows, b.CreateMul(e, b.getInt64(newRows * width * element)));
    b.CreateMemCpy(dst, llvm::MaybeAlign(element), src,
                   llvm::MaybeAlign(element),
                   b.getInt64(newRows * width * element));
    llvm::Value *next = b.CreateAdd(e, b.getInt64(1));
    e->addIncoming(next, b.GetInsertBlock());
    b.CreateCondBr(b.CreateICmpSLT(next, b.getInt64(entries)), loop, done);
    b.SetInsertPoint(done);
  }
  llvm::BasicBlock *ran = b.GetInsertBlock();
  b.CreateBr(ret);
  b.SetInsertPoint(ret);
  llvm::PHINode *returned = b.CreatePHI(i32, 2);
  returned->addIncoming(b.getInt32(ATTNC_STATUS_OUT_OF_MEMORY), noMemory);
  returned->addIncoming(code, ran);
  // halide_free reads the block's header: never of null.
  for (llvm::Value *rows : rowBuffers) {
    auto *free = llvm::BasicBlock::Create(context, "free_rows", kernel);
    auto *freed = llvm::BasicBlock::Create(context, "rows_freed", kernel);
    b.CreateCondBr(b.CreateIsNotNull(rows), free, freed);
    b.SetInsertPoint(free);
    b.CreateCall(halideFree, {null, rows});
    b.CreateBr(freed);
    b.SetInsertPoint(freed);
  }
  b.CreateRet(returned);
  addPackedEntry(module, *kernel);

  // NAME_prepare(params..., packed): nothing to prepare.
  size_t prepareParameters =
      abi::parametersOf(Entry::Prepare, signature.roles()).size();
  auto *prepare = llvm::Function::Create(
      llvm::FunctionType::get(
          i32, std::vector<llvm::Type *>(prepareParameters, ptr), false),
      llvm::GlobalValue::ExternalLinkage,
      abi::entrySymbol(signature.name, Entry::Prepare), module);
  b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", prepare));
  b.CreateRet(b.getInt32(0));
  addPackedEntry(module, *prepare);

  // NAME_prepared(inputs and params..., packed, outputs...) = NAME(...).
  llvm::SmallVector<abi::Parameter> parameters =
      abi::parametersOf(Entry::Prepared, signature.roles());
  auto *prepared = llvm::Function::Create(
      llvm::FunctionType::get(
          i32, std::vector<llvm::Type *>(parameters.size(), ptr), false),
      llvm::GlobalValue::ExternalLinkage,
      abi::entrySymbol(signature.name, Entry::Prepared), module);
  b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", prepared));
  std::vector<llvm::Value *> args;
  for (auto [i, parameter] : llvm::enumerate(parameters))
    if (parameter.kind == abi::Parameter::Kind::Buffer)
      args.push_back(prepared->getArg(static_cast<unsigned>(i)));
  b.CreateRet(b.CreateCall(kernel, args));
  addPackedEntry(module, *prepared);
}

/// Aligns every stack allocation and every constant array of `module` to
/// at least `bytes`. Halide marks the vector loads and stores of its
/// buffers as aligned to the vector (predicated ones, of a vector past a
/// buffer's end, too) but allocates a stack buffer smaller than a vector
/// with its element's alignment, and embeds constant buffers (tables)
/// aligned for AVX2: on AVX-512 a masked access to such a buffer is an
/// aligned `vmovaps` that faults.
void alignBuffers(llvm::Module &module, uint64_t bytes) {
  llvm::Align align(bytes);
  for (llvm::GlobalVariable &global : module.globals())
    if (!global.isDeclaration() && global.getValueType()->isArrayTy() &&
        global.getAlign().valueOrOne() < align)
      global.setAlignment(align);
  for (llvm::Function &function : module)
    for (llvm::BasicBlock &block : function)
      for (llvm::Instruction &instruction : block)
        if (auto *alloca = llvm::dyn_cast<llvm::AllocaInst>(&instruction))
          if (alloca->getAlign() < align)
            alloca->setAlignment(align);
}

/// Drops what no exported entry reaches (most of Halide's runtime), before
/// it is optimized and compiled.
void removeUnused(llvm::Module &module) {
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;
  llvm::PassBuilder builder;
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);
  llvm::ModulePassManager passes;
  passes.addPass(llvm::GlobalDCEPass());
  passes.run(module, modules);
}

} // namespace

bool attnc::haveHalideBackend() { return true; }

std::string attnc::halideVersion() {
  return std::to_string(HALIDE_VERSION_MAJOR) + "." +
         std::to_string(HALIDE_VERSION_MINOR) + "." +
         std::to_string(HALIDE_VERSION_PATCH);
}

llvm::Error attnc::checkHalideOptions(const CompileOptions &options) {
  if (options.target.kind != TargetKind::Cpu)
    return llvm::createStringError(
        "the Halide backend builds CPU kernels; --target=nvptx needs "
        "--backend=mlir");
  if (!llvm::is_contained(kHalideSchedules, options.halideSchedule))
    return llvm::createStringError(
        "unknown --halide-schedule '" + options.halideSchedule +
        "'; valid: attnc, Adams2019, Mullapudi2016, Li2018");
  llvm::Triple triple(targetTriple(options.target));
  if (!(triple.getArch() == llvm::Triple::x86_64 ||
        triple.getArch() == llvm::Triple::aarch64) ||
      !triple.isOSLinux())
    return llvm::createStringError(
        "the Halide backend supports x86-64 and AArch64 Linux, not " +
        triple.str());
  return llvm::Error::success();
}

llvm::Expected<std::string>
attnc::describeHalideSchedule(const CompileOptions &options) {
  return describeEachCpu(
      options.target,
      [&](const TargetOptions &one,
          const mlir::attn::CpuTargetDescription &description)
          -> llvm::Expected<CpuScheduleText> {
        auto machine = createTargetMachine(one);
        if (!machine)
          return machine.takeError();
        CpuScheduleText text;
        text.heading =
            "halide target: " + halideTarget(**machine, description) + "\n";
        if (options.halideSchedule == "attnc") {
          text.heading += "schedule: attnc's\n";
          text.lines = halide::describeSchedules(scheduleTargetOf(
              **machine, description, options.pipeline.parallel));
          return text;
        }
        text.heading +=
            "schedule: Halide's " + options.halideSchedule + " autoscheduler\n";
        for (const auto &[key, value] :
             autoschedulerParams(options.halideSchedule,
                                 options.pipeline.parallel)
                 .extra)
          text.lines += key + " = " + value + "\n";
        return text;
      });
}

std::string
attnc::halideTarget(const llvm::TargetMachine &machine,
                    const mlir::attn::CpuTargetDescription &description) {
  auto has = [&](llvm::StringRef feature) {
    return hasFeature(machine, feature);
  };
  std::string target;
  if (machine.getTargetTriple().isAArch64()) {
    target = "arm-64-linux";
    if (has("dotprod"))
      target += "-arm_dot_prod";
    if (has("fullfp16"))
      target += "-arm_fp16";
    return target;
  }
  target = "x86-64-linux";
  // Halide's feature names, each only when LLVM's subtarget (this machine's
  // features for `native`) has it.
  if (has("sse4.1"))
    target += "-sse41";
  if (has("avx"))
    target += "-avx";
  if (has("f16c"))
    target += "-f16c";
  if (has("fma"))
    target += "-fma";
  if (has("avx2"))
    target += "-avx2";
  if (has("avx512f") && has("avx512cd")) {
    target += "-avx512";
    if (has("avx512vl") && has("avx512dq") && has("avx512bw"))
      target += "-avx512_skylake";
    // Only where the dot product is used: with it Halide compiles for
    // `znver4`, whose `sse4a` Intel's CPUs lack.
    if (halideBf16Dot(machine, description))
      target += "-avx512_zen4";
  }
  return target;
}

llvm::Expected<std::unique_ptr<llvm::Module>>
attnc::translateWithHalide(mlir::ModuleOp module, const CompileOptions &options,
                           llvm::LLVMContext &context,
                           llvm::TargetMachine &machine) {
  if (llvm::Error error = checkHalideOptions(options))
    return std::move(error);
  auto description = describeCpuTarget(options.target);
  if (!description)
    return description.takeError();
  auto signatures = kernelSignatures(module);
  if (!signatures)
    return signatures.takeError();
  // The MLIR backend's numerics (docs/spec.md §2, v3): ops on bf16/f16
  // compute in f32 between attn.cast ops, which become Halide casts.
  mlir::PassManager widen(module.getContext());
  widen.addPass(mlir::attn::createAttnComputeInF32());
  if (mlir::failed(widen.run(module)))
    return llvm::createStringError("attn-compute-in-f32 failed");

  options.enterStage("building Halide pipelines (" + options.halideSchedule +
                     " schedule)");
  std::unique_ptr<llvm::Module> combined;
  std::vector<std::vector<halide::StateWrite>> stateWrites;
  for (const KernelSignature &signature : *signatures) {
    auto kernel = module.lookupSymbol<mlir::func::FuncOp>(signature.name);
    auto compiled = compileKernel(kernel, options, *description, machine,
                                  context, stateWrites.emplace_back());
    if (!compiled)
      return compiled.takeError();
    if (!combined)
      combined = std::move(*compiled);
    else if (llvm::Linker::linkModules(*combined, std::move(*compiled)))
      return llvm::createStringError("linking the Halide pipeline of '" +
                                     signature.name + "' failed");
  }
  if (!combined)
    return llvm::createStringError("the module has no kernel");
  auto runtime = runtimeBitcode(halideTarget(machine, *description));
  if (!runtime)
    return runtime.takeError();
  auto runtimeModule = parseHalideBitcode(
      llvm::MemoryBufferRef(**runtime, "attnc_halide_runtime.bc"), context);
  if (!runtimeModule)
    return runtimeModule.takeError();
  if (llvm::Linker::linkModules(*combined, std::move(*runtimeModule)))
    return llvm::createStringError("linking Halide's runtime failed");
  combined->setTargetTriple(machine.getTargetTriple());
  combined->setDataLayout(machine.createDataLayout());

  // Parallel loops on attnc_rt's pool (x86-64: the glue's bitcode is for
  // it; elsewhere Halide's own pool runs them).
  if (options.pipeline.parallel && machine.getTargetTriple().isX86()) {
    auto glue = llvm::parseBitcodeFile(
        llvm::MemoryBufferRef(llvm::StringRef(reinterpret_cast<const char *>(
                                                  kAttncHalideParForBitcode),
                                              kAttncHalideParForBitcodeSize),
                              "attnc_halide_par_for.bc"),
        context);
    if (!glue)
      return glue.takeError();
    (*glue)->setTargetTriple(machine.getTargetTriple());
    (*glue)->setDataLayout(machine.createDataLayout());
    if (llvm::Linker::linkModules(*combined, std::move(*glue)))
      return llvm::createStringError("linking halide_do_par_for failed");
  }

  // Halide's default error handler prints and aborts; a kernel reports
  // failures by its status instead (ATTNC_STATUS_HALIDE_ERROR), and the message
  // still goes to stderr.
  if (llvm::Function *error = combined->getFunction("halide_error"))
    if (llvm::Function *print = combined->getFunction("halide_print")) {
      error->deleteBody();
      llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", error));
      b.CreateCall(print, {error->getArg(0), error->getArg(1)});
      b.CreateRetVoid();
    }

  std::set<std::string> exported;
  for (auto [signature, writes] : llvm::zip(*signatures, stateWrites)) {
    addWrappers(*combined, signature, writes);
    for (const std::string &symbol :
         abi::exportedSymbols(signature.name, abi::ObjectKind::Cpu))
      exported.insert(symbol);
  }
  // Everything else is internal: Halide's runtime in each object is its
  // own, and unused parts of it go.
  llvm::internalizeModule(*combined, [&](const llvm::GlobalValue &value) {
    return exported.count(value.getName().str()) > 0;
  });
  removeUnused(*combined);
  // A zmm register's 64 bytes: the widest vector Halide stores here.
  alignBuffers(*combined, 64);
  optimizeModule(*combined, machine, options.target.optLevel);
  return combined;
}
