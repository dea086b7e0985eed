//===- TargetMachine.h - The LLVM target of a compilation -------*- C++ -*-===//
//
// The triple and CPU names a compilation's TargetOptions resolve to, their
// checks, and one llvm::TargetMachine per CPU name. What the schedules read
// of a CPU is CpuDescription.h; LLVM IR and machine code LLVMTranslation.h.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_CODEGEN_TARGETMACHINE_H
#define ATTNC_CODEGEN_TARGETMACHINE_H

#include "attnc/Codegen/CompileOptions.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace llvm {
class TargetMachine;
} // namespace llvm

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

} // namespace attnc

#endif // ATTNC_CODEGEN_TARGETMACHINE_H
