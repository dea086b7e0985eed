//===- HalideBackend.h - attn-level module -> kernels through Halide -*- C++
//-*-===//
//
// --backend=halide: every kernel of an attn-level module (the ops as the
// front end emits them, composites included) becomes one Halide pipeline,
// scheduled by attnc's own schedules or by one of Halide's autoschedulers,
// compiled by Halide to LLVM bitcode for the target's CPU features, and
// linked with ABI wrappers into an LLVM 22 module that exports what the
// MLIR backend's objects export (NAME, NAME_prepare, NAME_prepared and their
// packed entries): a host cannot tell which backend built its object.
// docs/halide.md describes it. Without Halide at build time these return an
// error saying so.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_HALIDE_HALIDEBACKEND_H
#define ATTNC_HALIDE_HALIDEBACKEND_H

#include "attnc/Codegen/CompileOptions.h"

#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
} // namespace llvm

namespace mlir {
class ModuleOp;
namespace attn {
struct CpuTargetDescription;
} // namespace attn
} // namespace mlir

namespace attnc {

/// Whether this attnc was built with Halide.
bool haveHalideBackend();

/// Halide's version (`21.0.0`), or empty without Halide.
std::string halideVersion();

/// Succeeds when the Halide backend can build kernels for `options`: Halide
/// is in this build, the schedule is one of kHalideSchedules, and the
/// target is a CPU of a triple Halide supports (x86-64, AArch64 Linux).
llvm::Error checkHalideOptions(const CompileOptions &options);

/// --print-schedule with --backend=halide: for each CPU of the options'
/// --mcpu, its description, the Halide target string and what the schedule
/// (attnc's, or an autoscheduler's parameters) chooses.
llvm::Expected<std::string>
describeHalideSchedule(const CompileOptions &options);

/// The Halide target string for `machine`'s CPU features
/// (`x86-64-linux-sse41-avx-f16c-fma-avx2`, ...): built from attnc's own
/// feature detection, never Halide's `host` (which keys on the CPU model
/// and claims AVX-512 where a VM masks it). `avx512_zen4`, Halide's only
/// feature with the bf16 dot product, is added where attnc's schedule runs
/// the bf16 GEMMs on it: where the MLIR backend's do
/// (mlir::attn::CpuSchedule::bf16Dot), on a CPU with every feature it
/// enables.
std::string halideTarget(const llvm::TargetMachine &machine,
                         const mlir::attn::CpuTargetDescription &description);

/// The kernels of `module` (attn level) built through Halide into LLVM IR
/// for `machine`: each kernel's entries as the MLIR backend's
/// translateToLLVMIR makes them, Halide's runtime linked in and internal.
llvm::Expected<std::unique_ptr<llvm::Module>>
translateWithHalide(mlir::ModuleOp module, const CompileOptions &options,
                    llvm::LLVMContext &context, llvm::TargetMachine &machine);

} // namespace attnc

#endif // ATTNC_HALIDE_HALIDEBACKEND_H
