//===- CpuDescription.h - What the CPU schedules read of a target -*- C++
//-*-===//
//
// The CPU target description (attn/Target/CpuTarget.h) of a compilation's
// TargetOptions, from LLVM's subtarget for its CPU, and what
// --print-schedule says of it; attached to a module for its passes.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_CODEGEN_CPUDESCRIPTION_H
#define ATTNC_CODEGEN_CPUDESCRIPTION_H

#include "attnc/Codegen/CompileOptions.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
namespace attn {
struct CpuTargetDescription;
} // namespace attn
} // namespace mlir

namespace attnc {

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

} // namespace attnc

#endif // ATTNC_CODEGEN_CPUDESCRIPTION_H
