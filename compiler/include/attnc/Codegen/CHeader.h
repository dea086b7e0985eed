//===- CHeader.h - The C header of compiled kernels -------------*- C++ -*-===//
//
// `attnc --emit=header`: one emitter for every object kind. The entries,
// their parameters, the status codes and every macro name come from the
// kernel ABI (attn/Target/KernelAbi.h); the buffers' C types from the
// element-type table (attn/Target/ElementType.h).
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_CODEGEN_CHEADER_H
#define ATTNC_CODEGEN_CHEADER_H

#include "attnc/Codegen/KernelSignature.h"

#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace attnc {

/// What the header declares the kernels for.
struct HeaderTarget {
  mlir::attn::abi::ObjectKind kind = mlir::attn::abi::ObjectKind::Cpu;
  /// The compute capability of a GPU object (`sm_90a`).
  std::string gpuChip;
  /// A CPU object with parallel loops (--parallel): it needs attnc's
  /// thread pool, libattnc_rt.a, at link time.
  bool parallel = false;
  /// A GPU object whose f32 GEMMs run in tf32 (--gpu-math=tf32).
  bool tf32 = false;
};

/// The C header of one kernel: include guard, `extern "C"`, every dim and
/// buffer shape as macros, the status codes and the prototypes of the
/// entries an object of `target.kind` exports (docs/spec.md §5). `origin` names
/// the spec it was compiled from.
std::string emitCHeader(const KernelSignature &signature,
                        llvm::StringRef origin, const HeaderTarget &target);

/// The C header declaring every kernel of `signatures`.
std::string emitCHeader(const std::vector<KernelSignature> &signatures,
                        llvm::StringRef origin, const HeaderTarget &target);

} // namespace attnc

#endif // ATTNC_CODEGEN_CHEADER_H
