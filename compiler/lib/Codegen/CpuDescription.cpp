//===- CpuDescription.cpp - What the CPU schedules read of a target -------===//

#include "attnc/Codegen/CpuDescription.h"
#include "attnc/Codegen/Dispatch.h"
#include "attnc/Codegen/TargetMachine.h"

#include "attn/Target/CpuTarget.h"

#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

using namespace attnc;

namespace {

/// The sizes of this machine's L1 data cache and of its L2 per core, from
/// Linux's sysfs; zero when not known.
std::pair<int64_t, int64_t> hostCacheSizes() {
  int64_t l1d = 0, l2 = 0;
  for (int index = 0; index < 8; ++index) {
    std::string dir =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    auto read = [&](const char *name) -> std::string {
      // sysfs files report a size they do not have: read them as streams.
      auto buffer = llvm::MemoryBuffer::getFileAsStream(dir + "/" + name);
      return buffer ? (*buffer)->getBuffer().trim().str() : std::string();
    };
    std::string level = read("level"), type = read("type"), size = read("size");
    if (level.empty())
      break;
    llvm::StringRef text(size);
    int64_t scale = text.consume_back("K")   ? 1024
                    : text.consume_back("M") ? 1024 * 1024
                                             : 1;
    int64_t value = 0;
    if (text.getAsInteger(10, value))
      continue;
    if (level == "1" && type == "Data")
      l1d = value * scale;
    else if (level == "2" && type != "Instruction")
      l2 = value * scale;
  }
  return {l1d, l2};
}

} // namespace

llvm::Expected<mlir::attn::CpuTargetDescription>
attnc::describeCpuTarget(const TargetOptions &options) {
  auto machine = createTargetMachine(options);
  if (!machine)
    return machine.takeError();
  const llvm::MCSubtargetInfo *subtarget = (*machine)->getMCSubtargetInfo();
  const llvm::Triple &triple = (*machine)->getTargetTriple();
  auto has = [&](llvm::StringRef feature) {
    return subtarget->checkFeatures(("+" + feature).str());
  };
  mlir::attn::CpuTargetDescription target;
  target.arch = triple.getArchName().str();
  target.cpu = (*machine)->getTargetCPU().str();
  llvm::ArrayRef<llvm::StringRef> interesting;
  if (triple.isX86()) {
    static const llvm::StringRef x86[] = {
        "sse2",       "sse4.1",     "sse4.2",   "avx",
        "avx2",       "fma",        "f16c",     "avx512f",
        "avx512bw",   "avx512dq",   "avx512vl", "avx512bf16",
        "avx512vnni", "avx512fp16", "amx-tile", "amx-bf16"};
    interesting = x86;
    // The widest registers the features allow: AVX-512 has 32 of 512 bits,
    // AVX 16 of 256, SSE2 16 of 128.
    target.vectorBits = has("avx512f") ? 512 : has("avx") ? 256 : 128;
    target.vectorRegisters = has("avx512f") ? 32 : 16;
    target.fma = has("fma") || has("avx512f");
  } else if (triple.isAArch64()) {
    static const llvm::StringRef arm[] = {"neon", "fullfp16", "dotprod", "bf16",
                                          "sve"};
    interesting = arm;
    target.vectorBits = 128;
    target.vectorRegisters = 32;
    target.fma = true;
  } else {
    target.vectorBits = 128;
    target.vectorRegisters = 16;
    target.fma = false;
  }
  target.fmaUnits = target.fma ? 2 : 0;
  target.features.clear();
  for (llvm::StringRef feature : interesting)
    // AMX's tile state is the OS's to grant: Linux's arch_prctl, which the
    // kernels call (attn-tile-and-vectorize).
    if (has(feature) && (!feature.starts_with("amx") || triple.isOSLinux()))
      target.features.push_back(feature.str());
  llvm::sort(target.features);
  target.cacheLineBytes = 64;
  target.l1dBytes = 32 * 1024;
  target.l2BytesPerCore = 1024 * 1024;
  if (options.cpu == "native" && isHostTriple(options)) {
    auto [l1d, l2] = hostCacheSizes();
    if (l1d)
      target.l1dBytes = l1d;
    if (l2)
      target.l2BytesPerCore = l2;
  }
  return target;
}

llvm::Expected<std::string> attnc::describeEachCpu(
    const TargetOptions &options,
    llvm::function_ref<llvm::Expected<CpuScheduleText>(
        const TargetOptions &, const mlir::attn::CpuTargetDescription &)>
        describe) {
  std::string text;
  llvm::raw_string_ostream os(text);
  for (const std::string &cpu : cpuList(options)) {
    TargetOptions one = options;
    one.cpu = cpu;
    auto description = describeCpuTarget(one);
    if (!description)
      return description.takeError();
    auto schedule = describe(one, *description);
    if (!schedule)
      return schedule.takeError();
    os << "target: " << description->summary() << "\n" << schedule->heading;
    for (llvm::StringRef line : llvm::split(schedule->lines, '\n'))
      if (!line.empty())
        os << "  " << line << "\n";
  }
  return text;
}

llvm::Error attnc::attachCpuTarget(mlir::ModuleOp module,
                                   const TargetOptions &options) {
  if (module->hasAttr(mlir::DLTIDialect::kTargetSystemDescAttrName))
    return llvm::Error::success();
  TargetOptions first = options;
  first.cpu = cpuList(options).front();
  auto target = describeCpuTarget(first);
  if (!target)
    return target.takeError();
  mlir::attn::attachCpuTarget(module, *target);
  return llvm::Error::success();
}

llvm::Error attnc::checkRunsOnHost(const TargetOptions &options) {
  auto machine = createTargetMachine(options);
  if (!machine)
    return machine.takeError();
  if (!isHostTriple(options))
    return llvm::createStringError(
        "code for --triple=" + options.triple + " cannot run on this " +
        llvm::sys::getDefaultTargetTriple() +
        " machine (compile it with 'attnc SPEC --triple=" + options.triple +
        " -o OBJ' and run it there)");
  if (options.cpu == "native")
    return llvm::Error::success();
  // The CPU's features against the host's, by feature (never by CPU name:
  // a VM may report a CPU whose AVX-512 is switched off). Features the host
  // query does not report (tuning flags) are not ISA and are skipped, and
  // so are system instructions that only intrinsics reach (VMs hide some:
  // a Zen 3 VM without mwaitx and rdpru runs Zen 3 code).
  const llvm::MCSubtargetInfo *subtarget = (*machine)->getMCSubtargetInfo();
  llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
  llvm::SmallVector<llvm::StringRef> missing;
  for (const llvm::SubtargetFeatureKV &feature :
       subtarget->getAllProcessorFeatures()) {
    auto it = host.find(feature.Key);
    if (it != host.end() && !it->second &&
        !isIntrinsicsOnlyFeature(feature.Key) &&
        subtarget->checkFeatures(("+" + llvm::StringRef(feature.Key)).str()))
      missing.push_back(feature.Key);
  }
  if (missing.empty())
    return llvm::Error::success();
  return llvm::createStringError(
      "this machine (" + llvm::sys::getHostCPUName() +
      ") lacks features of --mcpu=" + options.cpu + ": " +
      llvm::join(missing, ", ") +
      "; its code would stop with an illegal instruction (use --mcpu=native "
      "to run here)");
}
