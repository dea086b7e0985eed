//===- LLVMTranslation.h - LLVM dialect -> LLVM IR -> machine code -*- C++
//-*-===//
//
// The back half of code generation, shared by `attnc` (objects, assembly)
// and the runtime (objects loaded by the JIT): an LLVM-dialect module
// translated to LLVM IR, optimized for a TargetMachine (TargetMachine.h),
// emitted as machine code.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_CODEGEN_LLVMTRANSLATION_H
#define ATTNC_CODEGEN_LLVMTRANSLATION_H

#include "llvm/Support/Error.h"

#include <memory>

namespace llvm {
class Function;
class LLVMContext;
class Module;
class TargetMachine;
class raw_pwrite_stream;
} // namespace llvm

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace attnc {

/// Where a kernel's temporaries come from.
enum class TemporaryAllocator {
  /// malloc and free as they are (the JIT maps them to attnc_rt's cache).
  Libc,
  /// A cache of large blocks in the object itself (addBlockCache): objects
  /// that need libc only.
  ObjectCache,
  /// attnc_rt_malloc / attnc_rt_free: objects that link libattnc_rt.
  Runtime,
};

/// Drops the attn dialect's argument and result attributes (DSL names,
/// roles) from the module's llvm.func ops: the signatures were read from the
/// attn-level module, and mlir::translateModuleToLLVMIR warns about each
/// such attribute, printing the whole function every time (quadratic in the
/// number of arguments). Every translation to LLVM IR calls this first.
void dropAttnArgumentAttrs(mlir::ModuleOp module);

/// Translates an LLVM-dialect module to LLVM IR for `machine` and optimizes
/// it at `optLevel`. Adds the packed form of every exported function (see
/// addPackedEntry) and routes malloc/free to `allocator`.
llvm::Expected<std::unique_ptr<llvm::Module>>
translateToLLVMIR(mlir::ModuleOp module, llvm::LLVMContext &context,
                  llvm::TargetMachine &machine, unsigned optLevel,
                  TemporaryAllocator allocator);

/// Routes the module's malloc/free through a cache of large blocks written
/// into the module itself (see BlockCache.cpp), so that an object that
/// needs libc only does not page-fault its temporaries in on every call.
void addBlockCache(llvm::Module &module);

/// Adds the packed form of entry `kernel` (mlir::attn::abi::
/// packedEntrySymbol: `int (void **args)`, args[i] its i-th parameter)
/// calling it to `module`.
void addPackedEntry(llvm::Module &module, llvm::Function &kernel);

/// LLVM's middle end on `module` at `optLevel` (0..3) for `machine`, then
/// carryBf16AcrossBlocksAsBits on x86 CPUs without AVX512-BF16 (no
/// __truncsfbf2 calls on any CPU).
void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine,
                    unsigned optLevel);

enum class MachineCodeKind { Object, Assembly };

/// Emits `module` as an object file or assembly text into `out`.
llvm::Error emitMachineCode(llvm::Module &module, llvm::TargetMachine &machine,
                            MachineCodeKind kind, llvm::raw_pwrite_stream &out);

} // namespace attnc

#endif // ATTNC_CODEGEN_LLVMTRANSLATION_H
