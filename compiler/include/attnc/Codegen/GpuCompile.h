//===- GpuCompile.h - attn-level module -> GPU objects and PTX --*- C++ -*-===//
//
// --target=nvptx: the kernels become PTX (and, with the CUDA toolkit's
// ptxas, a cubin) embedded in a host object for x86-64 whose exported
// entries are NAME (host pointers) and NAME_cuda (device pointers, on a
// CUstream). The object carries its own CUDA loader (compiler/lib/
// ObjectCode/attnc_cuda.c) and links with libc and libdl only. docs/gpu.md
// describes the ABI.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_CODEGEN_GPUCOMPILE_H
#define ATTNC_CODEGEN_GPUCOMPILE_H

#include "attnc/Codegen/CodeGenerator.h"
#include "attnc/Codegen/CompileOptions.h"
#include "attnc/Codegen/KernelSignature.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace attnc {

/// Where the CUDA toolkit is: libdevice (math functions in device code)
/// is needed; ptxas and fatbinary, when present, add a cubin to the PTX.
struct CudaToolkit {
  std::string root;
  std::string libdevice;
  bool canAssemble = false;
};

/// The toolkit under $CUDA_HOME, $CUDA_PATH, /usr/local/cuda or
/// /usr/lib/cuda (the first with libdevice), or an error saying where it
/// looked.
llvm::Expected<CudaToolkit> findCudaToolkit();

/// The compute capability `options` name (`native`: sm_90a).
std::string gpuChip(const TargetOptions &options);

/// Succeeds when `options` (TargetKind::Nvptx) name a compute capability
/// LLVM's NVPTX back end knows (sm_75 or newer), one of them (no list), for
/// this machine's triple (the host code and its loader are x86-64 Linux).
llvm::Error checkGpuTarget(const TargetOptions &options);

/// The PTX ISA version features for `chip` (`+ptx80` for sm_90a).
std::string ptxFeatures(llvm::StringRef chip);

/// Lowers `module` (attn level) for options.target (TargetKind::Nvptx) and
/// returns what `kind` asks for (OutputKind::Lowered: the host in the LLVM
/// dialect with the gpu.binary; LlvmIr: the host's, loader linked).
llvm::Expected<std::string> compileForGpu(mlir::ModuleOp module,
                                          const CompileOptions &options,
                                          OutputKind kind);

} // namespace attnc

#endif // ATTNC_CODEGEN_GPUCOMPILE_H
