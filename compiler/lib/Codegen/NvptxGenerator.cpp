//===- NvptxGenerator.cpp - NVIDIA GPU objects through NVPTX --------------===//

#include "Generators.h"

#include "attnc/Codegen/Compile.h"
#include "attnc/Codegen/GpuCompile.h"
#include "attnc/Codegen/Pipeline.h"

#include "attn/Target/GpuTarget.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/raw_ostream.h"

using namespace attnc;

namespace {

class NvptxGenerator final : public CodeGenerator {
public:
  explicit NvptxGenerator(const CompileOptions &options)
      : CodeGenerator(options) {}

  mlir::attn::abi::ObjectKind objectKind() const override {
    return mlir::attn::abi::ObjectKind::Gpu;
  }

  llvm::Error check() const override {
    return checkGpuTarget(compileOptions.target);
  }

  llvm::Error checkOutput(OutputKind) const override {
    // Every kind of code needs libdevice (only the header does not).
    llvm::Expected<CudaToolkit> toolkit = findCudaToolkit();
    return toolkit ? llvm::Error::success() : toolkit.takeError();
  }

  llvm::Error checkLoadsHere() const override {
    if (llvm::Error error = CodeGenerator::checkLoadsHere())
      return error;
    return check();
  }

  // Whether a GPU is there is the object's to say, when called (its status).
  llvm::Error checkRunsHere() const override { return checkLoadsHere(); }

  llvm::Expected<std::string> describeSchedule() const override {
    if (llvm::Error error = check())
      return std::move(error);
    namespace attn = mlir::attn;
    attn::GpuTargetDescription gpu = attn::describeGpu(headerChip());
    attn::GpuGemmTile tile = attn::gemmTile(gpu);
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "target: " << gpu.summary() << "\n"
       << "schedule:\n"
       << "  threads per block: " << gpu.preferredBlockSize
       << ", or fewer (down to " << gpu.warpSize
       << ") so that a launch covers the " << gpu.multiprocessors
       << " multiprocessors twice\n"
       << "  attention: a block of up to " << attn::kAttentionMaxQueryRows
       << " query rows, a thread per row (more when its query and value rows "
          "pass "
       << attn::kAttentionRowFloats << " floats), key and value tiles of up to "
       << attn::kAttentionMaxKeyRows << " rows in "
       << attn::kAttentionTileBytes / 1024 << " KiB of shared memory\n"
       << "  GEMM: " << tile.rows << " x " << tile.cols
       << " tiles per block of " << tile.threads() << " threads, k-slices of "
       << tile.depth << " in shared memory, " << tile.threadRows << " x "
       << tile.threadCols
       << " outputs per thread; below a quarter of a tile's rows or columns, "
          "one thread per block of up to 4 x 4 outputs\n"
       << "  row reductions (softmax, layer norm): a warp per row of "
       << attn::warpPerRowMinLength(gpu)
       << " elements or more, its lanes combined with shuffles; a thread per "
          "shorter row\n"
       << "  KV cache attention: a warp per row (query head x new token), up "
          "to "
       << attn::kDecodeWarps
       << " per block, the cache rows in chunks (at least "
       << attn::kDecodeMinChunkKeys << ", a multiple of " << gpu.warpSize
       << ") for about " << attn::kDecodeBlocksPerMultiprocessor
       << " blocks per multiprocessor, combined in chunk order\n";
    if (!attn::hasTensorCoreMma(gpu)) {
      os << "  tensor cores: none used (mma.sync m16n8k16 needs sm_80)\n";
      return text;
    }
    attn::GpuTensorCoreTile cores = attn::tensorCoreTile(gpu);
    attn::GpuMmaAttentionTile flash;
    if (compileOptions.pipeline.tf32)
      os << "  f32 GEMM (--gpu-math=tf32): tensor cores (mma.sync m16n8k8, "
            "operands rounded to tf32), tiles as below\n";
    os << "  bf16/f16 GEMM: tensor cores (mma.sync m16n8k16, f32 "
          "accumulators), "
       << cores.rows << " x " << cores.cols << " tiles per block of "
       << cores.warps() << " warps, " << cores.warpRows << " x "
       << cores.warpCols << " per warp, k-slices of " << cores.depth
       << " in shared memory\n"
       << "  bf16 attention: tensor cores, " << flash.warps << " warps of 16 "
       << "query rows per block, key tiles of up to " << flash.keyRows
       << " keys in bf16 in shared memory\n";
    return text;
  }

  std::string derivedFingerprint() const override {
    // The device code depends on the chip, the toolkit's libdevice and
    // whether ptxas added a cubin; the host code is plain x86-64.
    llvm::Expected<CudaToolkit> toolkit = findCudaToolkit();
    std::string where = toolkit ? toolkit->root + " assemble=" +
                                      std::to_string(toolkit->canAssemble)
                                : llvm::toString(toolkit.takeError());
    return "chip=" + headerChip() + " toolkit=" + where;
  }

  // The GPU passes read their description from the chip, not the module.
  std::string describeKernels(mlir::ModuleOp module) const override {
    return describeAttentionLowerings(module, compileOptions.pipeline.attention,
                                      /*decodeKernel=*/true,
                                      /*prefillFlash=*/false);
  }

  llvm::Error annotate(mlir::ModuleOp) const override {
    return llvm::Error::success();
  }

  llvm::Expected<CompiledKernels> generate(mlir::ModuleOp module,
                                           OutputKind kind) const override {
    auto signatures = kernelSignatures(module);
    if (!signatures)
      return signatures.takeError();
    auto code = compileForGpu(module, compileOptions, kind);
    if (!code)
      return code.takeError();
    return CompiledKernels{std::move(*code), std::move(*signatures)};
  }

protected:
  // GPU objects have no prepare step: nothing to lower for the header.
  llvm::Expected<std::vector<KernelSignature>>
  headerSignatures(mlir::ModuleOp module) const override {
    return kernelSignatures(module);
  }

  std::string headerChip() const override {
    return gpuChip(compileOptions.target);
  }
};

} // namespace

std::unique_ptr<CodeGenerator>
attnc::createNvptxGenerator(const CompileOptions &options) {
  return std::unique_ptr<CodeGenerator>(new NvptxGenerator(options));
}
