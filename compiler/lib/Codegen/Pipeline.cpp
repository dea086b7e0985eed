//===- Pipeline.cpp - The attn -> LLVM dialect lowering pipeline ----------===//

#include "attnc/Codegen/Pipeline.h"

#include "attn/CPU/Passes.h"
#include "attn/GPU/Passes.h"
#include "attn/IR/AttnDialect.h"
#include "attn/IR/AttnOps.h"
#include "attn/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/StringMap.h"

#include <mutex>

using namespace mlir;
using namespace attnc;

/// attn -> linalg/tensor/arith/math on tensors, with `attention` lowered
/// as attn-decompose's option says, a KV cache's through the decode kernel
/// when the target has one, and a prompt's prefill on the flash kernel when
/// `prefillFlash` (otherwise prefill-flash-rows=0). Shared by every target.
static void addAttnToLinalg(OpPassManager &pm, const std::string &attention,
                            bool decodeKernel, bool prefillFlash) {
  // bf16/f16 ops compute in f32 between casts (docs/spec.md §2, v3).
  pm.addPass(attn::createAttnComputeInF32());
  attn::AttnDecomposeOptions decompose;
  decompose.attentionLowering = attention;
  decompose.decodeKernel = decodeKernel;
  if (!prefillFlash)
    decompose.prefillFlashRows = 0;
  pm.addPass(attn::createAttnDecompose(decompose));
  pm.addPass(attn::createAttnLowerToLinalg());
  // Elementwise arith on tensors (the causal lengths' minsi) -> linalg.
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

/// Tensors -> buffers, for every target. Function boundaries get plain
/// identity-layout memrefs, outputs become out-parameters written in place.
static void addBufferization(OpPassManager &pm) {
  pm.addPass(attn::createAttnFuseElementwise());
  pm.addPass(createCanonicalizerPass());
  // A value returned twice gets a copy (after the last CSE, which would
  // merge the copies again).
  pm.addNestedPass<func::FuncOp>(attn::createAttnDistinctResults());
  bufferization::OneShotBufferizePassOptions bufferization;
  bufferization.bufferizeFunctionBoundaries = true;
  bufferization.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferization));
  // Folds expand_shape(collapse_shape(alloc)) back to the alloc, so that a
  // result computed in a reshaped view is still written into the output
  // argument directly rather than copied there.
  pm.addPass(createCanonicalizerPass());
  // A state's updated value must be its own buffer (an error otherwise).
  pm.addPass(attn::createAttnDropStateResults());
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  outParams.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
}

/// Functions, control flow and `ub` to the LLVM dialect, for every target.
/// Function arguments become bare pointers: the object's ABI is
/// `int NAME(const float *..., float *...)`.
static void addFunctionsToLLVM(OpPassManager &pm) {
  ConvertFuncToLLVMPassOptions funcToLLVM;
  funcToLLVM.useBarePtrCallConv = true;
  pm.addPass(createConvertFuncToLLVMPass(funcToLLVM));
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
}

std::string attnc::cpuAttentionLowering(const CpuPipelineOptions &options) {
  return options.vectorize ? options.attention : std::string("decomposed");
}

namespace {
/// The lowerings registerCpuLowering adds, by name.
llvm::StringMap<CpuLowering> &cpuLowerings() {
  static llvm::StringMap<CpuLowering> lowerings;
  return lowerings;
}
std::mutex cpuLoweringsMutex;
} // namespace

void attnc::registerCpuLowering(llvm::StringRef name, CpuLowering lowering) {
  std::lock_guard<std::mutex> lock(cpuLoweringsMutex);
  cpuLowerings().try_emplace(name, std::move(lowering));
}

const CpuLowering *attnc::lookupCpuLowering(llvm::StringRef name) {
  std::lock_guard<std::mutex> lock(cpuLoweringsMutex);
  auto found = cpuLowerings().find(name);
  return found == cpuLowerings().end() ? nullptr : &found->second;
}

llvm::Error attnc::checkCpuLowering(const CpuPipelineOptions &options) {
  if (options.lowering.empty() || lookupCpuLowering(options.lowering))
    return llvm::Error::success();
  return llvm::createStringError("no CPU lowering named '" + options.lowering +
                                 "' is registered (registerCpuLowering)");
}

bool attnc::cpuPrefillFlash(const CpuPipelineOptions &options) {
  if (options.lowering.empty())
    return true;
  const CpuLowering *lowering = lookupCpuLowering(options.lowering);
  return lowering && lowering->prefillFlash;
}

/// `FILE:LINE:COL` of a spec's op, or empty.
static std::string placeOf(Operation *op) {
  auto at = dyn_cast<FileLineColLoc>(op->getLoc());
  if (!at)
    return "";
  return (at.getFilename().getValue() + ":" + llvm::Twine(at.getLine()) + ":" +
          llvm::Twine(at.getColumn()))
      .str();
}

/// `  FILE:LINE:COL: OP in 'FUNC': `, a --print-schedule line's start.
static void printOpAndPlace(llvm::raw_ostream &os, Operation *op) {
  os << "  ";
  if (std::string place = placeOf(op); !place.empty())
    os << place << ": ";
  auto func = op->getParentOfType<func::FuncOp>();
  os << op->getName().stripDialect() << " in '" << func.getName() << "': ";
}

std::string attnc::describeAttentionLowerings(ModuleOp module,
                                              const std::string &attention,
                                              bool decodeKernel,
                                              bool prefillFlash) {
  std::optional<attn::AttentionLowering> lowering =
      attn::parseAttentionLowering(attention);
  if (!lowering)
    return "";
  std::string text;
  llvm::raw_string_ostream os(text);
  module.walk([&](Operation *op) {
    std::optional<attn::AttentionLoweringChoice> choice =
        attn::attentionLoweringOf(op, *lowering, /*fuseThreshold=*/4096,
                                  decodeKernel, prefillFlash);
    if (!choice)
      return;
    if (text.empty())
      os << "attention ops (attn-decompose, attention=" << attention << "):\n";
    printOpAndPlace(os, op);
    os << (choice->fused ? "fused" : "decomposed") << " (" << choice->reason
       << ")\n";
  });
  return text;
}

std::string attnc::describeRoundingPoints(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.walk([&](Operation *op) {
    if (!isa<attn::AttnDialect>(op->getDialect()))
      return;
    for (Value result : op->getResults()) {
      Type element = getElementTypeOrSelf(result.getType());
      if (!element.isBF16() && !element.isF16())
        continue;
      if (text.empty())
        os << "rounding points (each op computes in f32 and rounds its "
              "result once; inside\n"
              "an op only the input of a composite's last GEMM and a bf16 "
              "attention's\n"
              "product operands; a result used by one\n"
              "elementwise op only goes to it in f32; docs/precision.md):\n";
      printOpAndPlace(os, op);
      if (attn::keepsResultInF32(result)) {
        Operation *user = *result.getUsers().begin();
        os << "result kept in f32 for its epilogue, the "
           << user->getName().stripDialect();
        if (std::string place = placeOf(user); !place.empty())
          os << " at " << place;
        os << "\n";
      } else {
        os << "result rounded to " << element << "\n";
      }
      if (FloatType inner = attn::innerRoundingOf(op)) {
        printOpAndPlace(os, op);
        os << (isa<attn::FfnOp>(op) ? "its hidden layer" : "its merged heads")
           << " rounded to " << inner << " before "
           << (isa<attn::FfnOp>(op) ? "w2" : "w_o") << "\n";
      }
      if (FloatType products = attn::attentionProductsOf(op)) {
        printOpAndPlace(os, op);
        os << "its q, k, v and softmax weights rounded to " << products
           << " before the two products\n";
      }
      return;
    }
  });
  return text;
}

void attnc::addAttnToCpuBuffers(OpPassManager &pm,
                                const CpuBufferStages &stages) {
  addAttnToLinalg(pm, stages.attention, /*decodeKernel=*/true,
                  stages.prefillFlash);
  // GEMMs of two bf16 operands read them as bf16, k in pairs, B packed in
  // pairs by NAME_prepare.
  if (stages.bf16Pairs)
    pm.addPass(attn::createAttnBf16PairGemms());
  // NAME_prepare (weights transposed once per bound params, with
  // hoistPrepare), NAME_prepared (the rest) and NAME calling the two.
  attn::AttnSplitPrepareOptions prepare;
  prepare.hoist = stages.hoistPrepare;
  pm.addPass(attn::createAttnSplitPrepare(prepare));
  // A block's calls of other blocks: each call's params prepared once, in
  // the caller's NAME_prepare; the callees' code once, whoever calls it.
  pm.addPass(attn::createAttnPrepareCalls());
  pm.addPass(createSymbolDCEPass());
  addBufferization(pm);
  // NAME hands its outputs to NAME_prepared instead of copying them, and a
  // call of another block reads (writes) its region of the packed params in
  // place.
  pm.addNestedPass<func::FuncOp>(attn::createAttnForwardCallOutputs());
  pm.addPass(attn::createAttnForwardCallSlices());
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addPass(createCanonicalizerPass());
}

void attnc::addGpuKernelLoops(OpPassManager &pm,
                              const GpuKernelStages &stages) {
  attn::AttnGpuLowerDecodeAttentionOptions decode;
  decode.chip = stages.chip;
  pm.addNestedPass<func::FuncOp>(
      attn::createAttnGpuLowerDecodeAttention(decode));
  attn::AttnGpuLowerFusedAttentionOptions attention;
  attention.chip = stages.chip;
  pm.addNestedPass<func::FuncOp>(
      attn::createAttnGpuLowerFusedAttention(attention));
  attn::AttnGpuTileMatmulOptions gemms;
  gemms.chip = stages.chip;
  gemms.tf32 = stages.tf32;
  pm.addNestedPass<func::FuncOp>(attn::createAttnGpuTileMatmul(gemms));
  attn::AttnGpuLowerRowReductionsOptions reductions;
  reductions.chip = stages.chip;
  pm.addNestedPass<func::FuncOp>(
      attn::createAttnGpuLowerRowReductions(reductions));
  // No canonicalization before the mapping: it would unroll a loop of one
  // iteration into host code.
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  attn::AttnGpuMapLoopsOptions mapping;
  mapping.blockSize = stages.blockSize;
  mapping.chip = stages.chip;
  pm.addNestedPass<func::FuncOp>(attn::createAttnGpuMapLoops(mapping));
}

void attnc::addCpuLoopsToLLVM(OpPassManager &pm,
                              const CpuPipelineOptions &options) {
  // Register tiles and vectors.
  attn::AttnLowerFusedAttentionOptions flash;
  flash.parallel = options.parallel;
  flash.parallelWork = options.parallelWork;
  pm.addNestedPass<func::FuncOp>(attn::createAttnLowerFusedAttention(flash));
  if (options.vectorize) {
    attn::AttnTileAndVectorizeOptions tiling;
    tiling.rowTile = options.rowTile;
    tiling.columnTile = options.columnTile;
    tiling.parallel = options.parallel;
    tiling.parallelWork = options.parallelWork;
    pm.addNestedPass<func::FuncOp>(attn::createAttnTileAndVectorize(tiling));
    // The blocked transposes' scf.forall -> scf.parallel -> OpenMP.
    if (options.parallel)
      pm.addPass(createForallToParallelLoopPass());
  }
  pm.addPass(attn::createAttnApproximateMath());
  // bf16/f16 conversions without libgcc's or compiler-rt's helpers.
  pm.addPass(attn::createAttnExpandFloatConversions());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  // Loops, then the LLVM dialect. Function arguments become bare pointers:
  // the object's ABI is `int NAME(const float *..., float *...)`.
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(createConvertLinalgToLoopsPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // A failed malloc returns the out-of-memory status; the last point where
  // every allocation is still in the body of its function, outside loops.
  pm.addNestedPass<func::FuncOp>(attn::createAttnCheckAllocations());
  if (options.parallel) {
    pm.addPass(createConvertSCFToOpenMPPass());
    // Inlines the memref.alloca_scope that wraps each parallel body (it
    // holds no alloca; SCF-to-CF would split it into several blocks).
    pm.addPass(createCanonicalizerPass());
  }
  pm.addPass(createSCFToControlFlowPass());
  // Row reductions (softmax, layer norm) as trees of vector adds rather than
  // 768 ordered scalar adds; the order is fixed, so results are too.
  ConvertVectorToLLVMPassOptions vectorToLLVM;
  vectorToLLVM.reassociateFPReductions = true;
  // vdpbf16ps and AMX tiles (attn-tile-and-vectorize's bf16 pair GEMMs).
  vectorToLLVM.x86Vector = true;
  vectorToLLVM.amx = true;
  pm.addPass(createConvertVectorToLLVMPass(vectorToLLVM));
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertIndexToLLVMPass());
  addFunctionsToLLVM(pm);
  if (options.parallel)
    pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  // attn-forward-call-slices' calls, with their offsets; blocks only called
  // by others are not exported.
  pm.addPass(attn::createAttnResolveOffsetCalls());
  pm.addPass(createCanonicalizerPass());
}

void attnc::buildCpuLoweringPipeline(OpPassManager &pm,
                                     const CpuPipelineOptions &options) {
  if (!options.lowering.empty()) {
    // checkCpuLowering tells the user of a name that is not registered.
    if (const CpuLowering *lowering = lookupCpuLowering(options.lowering))
      lowering->build(pm, options);
    return;
  }
  CpuBufferStages buffers;
  buffers.attention = cpuAttentionLowering(options);
  addAttnToCpuBuffers(pm, buffers);
  addCpuLoopsToLLVM(pm, options);
}

void attnc::buildGpuLoweringPipeline(OpPassManager &pm,
                                     const GpuPipelineOptions &options) {
  // On buffers, as loops: one kernel per loop nest; fused attention and
  // the large GEMMs as launches of their own through shared memory, row
  // reductions as launches of a warp per row.
  addAttnToLinalg(pm, options.attention, /*decodeKernel=*/true,
                  /*prefillFlash=*/false);
  addBufferization(pm);
  GpuKernelStages kernels;
  kernels.chip = options.chip;
  kernels.tf32 = options.tf32;
  kernels.blockSize = options.blockSize;
  addGpuKernelLoops(pm, kernels);
  pm.addNestedPass<func::FuncOp>(attn::createAttnGpuDeviceMemory());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());

  // Kernels: outlined into one gpu.module, NVVM, then PTX (and a cubin).
  pm.addNestedPass<func::FuncOp>(createGpuLaunchSinkIndexComputationsPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(attn::createAttnGpuMergeKernelModules());
  GpuNVVMAttachTargetOptions nvvmTarget;
  nvvmTarget.chip = options.chip;
  nvvmTarget.features = options.features;
  nvvmTarget.optLevel = options.optLevel;
  if (!options.libdevice.empty())
    nvvmTarget.linkLibs.push_back(options.libdevice);
  pm.addPass(createGpuNVVMAttachTarget(nvvmTarget));
  OpPassManager &device = pm.nest<gpu::GPUModuleOp>();
  device.addPass(attn::createAttnGpuAlignWorkgroupMemory());
  // Tensor-core tiles: bf16 ours (MLIR 22 cannot type it), f16 upstream's.
  device.addPass(attn::createAttnGpuLowerBf16Mma());
  device.addPass(createConvertNVGPUToNVVMPass());
  device.addPass(createSCFToControlFlowPass());
  device.addPass(createConvertGpuOpsToNVVMOps());
  device.addPass(createCanonicalizerPass());
  device.addPass(createCSEPass());
  device.addPass(createReconcileUnrealizedCastsPass());
  GpuModuleToBinaryPassOptions binary;
  binary.toolkitPath = options.toolkit;
  binary.compilationTarget = options.format;
  pm.addPass(createGpuModuleToBinaryPass(binary));

  // Host code: mgpu* calls, with bare-pointer arguments (the NAME_cuda
  // ABI: one device pointer per buffer).
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createGpuToLLVMConversionPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  addFunctionsToLLVM(pm);
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

namespace {
struct CpuPipelineCLOptions : public PassPipelineOptions<CpuPipelineCLOptions> {
  Option<int64_t> rowTile{
      *this, "row-tile",
      llvm::cl::desc("Rows of a GEMM register block (0: the target's)"),
      llvm::cl::init(0)};
  Option<int64_t> columnTile{
      *this, "column-tile",
      llvm::cl::desc(
          "Columns of a GEMM register block / vector strip (0: the target's)"),
      llvm::cl::init(0)};
  Option<bool> vectorize{*this, "vectorize",
                         llvm::cl::desc("Tile and vectorize linalg ops"),
                         llvm::cl::init(true)};
  Option<bool> parallel{*this, "parallel",
                        llvm::cl::desc("OpenMP parallel loops (attnc_rt)"),
                        llvm::cl::init(false)};
  Option<int64_t> parallelWork{
      *this, "parallel-work",
      llvm::cl::desc("With parallel: loops of at least this much work run on "
                     "threads (-1: the target's thresholds; 0: every loop)"),
      llvm::cl::init(-1)};
  Option<std::string> attention{
      *this, "attention",
      llvm::cl::desc("Attention lowering: decomposed, fused or auto"),
      llvm::cl::init("auto")};
  Option<std::string> lowering{
      *this, "lowering",
      llvm::cl::desc("A registered CPU lowering by name instead of attnc's "
                     "(attn-opt registers the tests' gpu-emulation)"),
      llvm::cl::init("")};
};
} // namespace

void attnc::registerCpuLoweringPipeline() {
  // registerPassPipeline rather than PassPipelineRegistration: a lowering
  // name that is not registered is an error of the pipeline's text.
  registerPassPipeline(
      "attn-to-llvm",
      "Lower attn ops to the LLVM dialect for the CPU (attnc's pipeline)",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        CpuPipelineCLOptions cl;
        if (failed(cl.parseFromString(text)))
          return failure();
        CpuPipelineOptions options;
        options.rowTile = cl.rowTile;
        options.columnTile = cl.columnTile;
        options.vectorize = cl.vectorize;
        options.attention = cl.attention;
        options.parallel = cl.parallel;
        options.parallelWork = cl.parallelWork;
        options.lowering = cl.lowering;
        if (llvm::Error error = checkCpuLowering(options))
          return errorHandler(llvm::toString(std::move(error)));
        buildCpuLoweringPipeline(pm, options);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> handler) {
        handler(CpuPipelineCLOptions());
      });
}
