//===- Dispatch.h - Objects that pick their code by the running CPU -*- C++
//-*-===//
//
// An x86-64 object holds one variant of its kernels per --mcpu CPU (best
// first) and exports, under the kernels' names, dispatchers that call the
// first variant whose instruction set the running machine has -- read from
// CPUID and from XGETBV (the registers the OS saves), as MLAS does -- and
// return ATTNC_STATUS_UNSUPPORTED_CPU when there is none: never an illegal
// instruction. A single-CPU object gets the same guard. ATTNC_CPU_VARIANT=I
// in the environment picks variant I instead (if the machine can run it),
// so that every path can be tested.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_CODEGEN_DISPATCH_H
#define ATTNC_CODEGEN_DISPATCH_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace llvm {
class MCSubtargetInfo;
class Module;
} // namespace llvm

namespace attnc {

/// The CPUID bits (and XCR0 state bits) one variant needs.
struct CpuRequirements {
  static constexpr unsigned kWords = 12;
  std::array<uint32_t, kWords> words{};
  uint32_t xcr0 = 0;
  /// The CPU, for messages and variant names.
  std::string cpu;
  /// `-feature` for each ISA feature of the CPU that is not required (one
  /// only intrinsics reach, or one attnc has no CPUID bit for): the
  /// variant is compiled without it, so it never needs it.
  std::vector<std::string> disabled;
};

/// System instructions that only intrinsics reach (compiled code never
/// uses them; VMs hide some): neither required of the machine nor enabled.
bool isIntrinsicsOnlyFeature(llvm::StringRef feature);

/// The requirements of the ISA features `subtarget` enables.
CpuRequirements cpuRequirements(const llvm::MCSubtargetInfo &subtarget,
                                llvm::StringRef cpu);

/// Renames every function `variant` defines for export to NAME.attnc.SUFFIX
/// (internal once addDispatchers ran), tags every defined function with the
/// variant's target-cpu and target-features (always both: an absent
/// attribute would mean the emitting TargetMachine's), and returns the
/// exported names, in order.
std::vector<std::string> makeVariant(llvm::Module &variant,
                                     llvm::StringRef suffix,
                                     llvm::StringRef cpu,
                                     llvm::StringRef features);

/// Adds to `module` (which holds every variant, linked) the selector and a
/// dispatcher per name of `exported`: variant i is NAME.attnc.SUFFIX[i].
void addDispatchers(llvm::Module &module, llvm::ArrayRef<std::string> exported,
                    llvm::ArrayRef<std::string> suffixes,
                    llvm::ArrayRef<CpuRequirements> variants);

} // namespace attnc

#endif // ATTNC_CODEGEN_DISPATCH_H
