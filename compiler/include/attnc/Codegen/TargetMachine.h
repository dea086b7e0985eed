//===- TargetMachine.h - LLVM dialect -> LLVM IR -> machine code *- C++ -*-===//
//
// The back half of code generation, shared by `attnc` (objects, assembly)
// and the runtime (objects loaded by the JIT): one TargetMachine per CPU
// name, LLVM IR optimized for it, machine code emitted by it.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_CODEGEN_TARGETMACHINE_H
#define ATTNC_CODEGEN_TARGETMACHINE_H

#include "attnc/Codegen/CompileOptions.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace llvm {
class Function;
class LLVMContext;
class Module;
class TargetMachine;
class raw_pwrite_stream;
} // namespace llvm

namespace mlir {
class ModuleOp;
namespace attn {
struct CpuTargetDescription;
} // namespace attn
} // namespace mlir

namespace attnc {

/// Registers every target of the LLVM attnc links (Debian's libLLVM has
/// them all: --triple cross-compiles, NVPTX makes GPU code). Idempotent.
void initializeTargets();

/// The triple `options` compile for, normalized: `options.triple`, or this
/// machine's when that is empty.
std::string targetTriple(const TargetOptions &options);

/// True when `options` compile for this machine's triple (their code may
/// run here).
bool isHostTriple(const TargetOptions &options);

/// The LLVM CPU name of `options.cpu` (one CPU): for `native`, the host's
/// name on the host triple and `generic` on another.
std::string resolveCpuName(const TargetOptions &options);

/// The CPUs of `options.cpu`, a comma-separated list (best first: one
/// variant each in a multi-ISA object), or the one CPU.
std::vector<std::string> cpuList(const TargetOptions &options);

/// A TargetMachine for targetTriple(options) and `options.cpu` (one CPU,
/// not a list); an error names an unknown triple or CPU.
llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(const TargetOptions &options);

/// Succeeds unless `options.cpu` is a list for a triple that multi-ISA
/// objects do not support (only x86-64 has the dispatcher).
llvm::Error checkCpuList(const TargetOptions &options);

/// Succeeds when createTargetMachine would for every CPU of the list, and
/// checkCpuList does.
llvm::Error checkTarget(const TargetOptions &options);

/// What the CPU schedules need to know of `options`'s target (vector width
/// and registers, FMA, caches, features), from LLVM's subtarget for that
/// CPU: for `native`, from this machine's features, never its name.
llvm::Expected<mlir::attn::CpuTargetDescription>
describeCpuTarget(const TargetOptions &options);

/// What --print-schedule says of one CPU beyond its description: heading
/// lines (`schedule:`), then the schedule's own lines.
struct CpuScheduleText {
  std::string heading;
  std::string lines;
};

/// --print-schedule for every CPU of `options.cpu`: `target: SUMMARY`
/// (describeCpuTarget), then `describe`'s heading and its lines indented by
/// two spaces.
llvm::Expected<std::string>
describeEachCpu(const TargetOptions &options,
                llvm::function_ref<llvm::Expected<CpuScheduleText>(
                    const TargetOptions &one,
                    const mlir::attn::CpuTargetDescription &description)>
                    describe);

/// Attaches describeCpuTarget(options) to `module` (for a --mcpu list: the
/// first CPU's) unless it carries a description already (hand-written IR
/// pins its own).
llvm::Error attachCpuTarget(mlir::ModuleOp module,
                            const TargetOptions &options);

/// Succeeds when code for `options` can run on this machine: the triple is
/// the host's, the CPU name is known and the host has every ISA feature of
/// that CPU.
llvm::Error checkRunsOnHost(const TargetOptions &options);

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

/// LLVM's middle end on `module` at `optLevel` (0..3) for `machine`.
void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine,
                    unsigned optLevel);

enum class MachineCodeKind { Object, Assembly };

/// Emits `module` as an object file or assembly text into `out`.
llvm::Error emitMachineCode(llvm::Module &module, llvm::TargetMachine &machine,
                            MachineCodeKind kind, llvm::raw_pwrite_stream &out);

} // namespace attnc

#endif // ATTNC_CODEGEN_TARGETMACHINE_H
