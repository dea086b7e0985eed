//===- TargetMachine.cpp - The LLVM target of a compilation ---------------===//

#include "attnc/Codegen/TargetMachine.h"

#include "attnc/Codegen/Dispatch.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

#include <mutex>

using namespace attnc;

void attnc::initializeTargets() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
    llvm::InitializeAllAsmParsers();
  });
}

namespace {

llvm::CodeGenOptLevel codeGenLevel(unsigned optLevel) {
  switch (optLevel) {
  case 0:
    return llvm::CodeGenOptLevel::None;
  case 1:
    return llvm::CodeGenOptLevel::Less;
  case 2:
    return llvm::CodeGenOptLevel::Default;
  default:
    return llvm::CodeGenOptLevel::Aggressive;
  }
}

} // namespace

std::string attnc::targetTriple(const TargetOptions &options) {
  return llvm::Triple::normalize(options.triple.empty()
                                     ? llvm::sys::getDefaultTargetTriple()
                                     : options.triple);
}

bool attnc::isHostTriple(const TargetOptions &options) {
  if (options.triple.empty())
    return true;
  llvm::Triple host(llvm::sys::getDefaultTargetTriple());
  llvm::Triple target(targetTriple(options));
  // x86_64-linux-gnu and x86_64-pc-linux-gnu are one machine: the vendor
  // does not change the code.
  return host.getArch() == target.getArch() && host.getOS() == target.getOS() &&
         host.getEnvironment() == target.getEnvironment();
}

std::string attnc::resolveCpuName(const TargetOptions &options) {
  if (options.cpu != "native")
    return options.cpu;
  return isHostTriple(options) ? llvm::sys::getHostCPUName().str()
                               : std::string("generic");
}

std::vector<std::string> attnc::cpuList(const TargetOptions &options) {
  std::vector<std::string> cpus;
  for (llvm::StringRef cpu : llvm::split(options.cpu, ','))
    cpus.push_back(cpu.trim().str());
  return cpus;
}

llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
attnc::createTargetMachine(const TargetOptions &options) {
  if (llvm::StringRef(options.cpu).contains(','))
    return llvm::createStringError("--mcpu=" + options.cpu +
                                   " names several CPUs where one is needed");
  if (llvm::StringRef(options.cpu).trim().empty())
    return llvm::createStringError(
        "an empty CPU name in --mcpu (write --mcpu=CPU[,CPU...])");
  initializeTargets();
  llvm::Triple triple(targetTriple(options));
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return llvm::createStringError("--triple=" + options.triple + ": " + error);

  std::string cpu = resolveCpuName(options);
  llvm::SubtargetFeatures features;
  if (options.cpu == "native" && isHostTriple(options))
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      features.AddFeature(feature.getKey(), feature.getValue());
  // Asked with no CPU, so that LLVM does not print its own warning about a
  // CPU it does not know: the error below is the one message the user sees.
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
      target->createMCSubtargetInfo(triple, "", ""));
  if (!subtarget || !subtarget->isCPUStringValid(cpu))
    return llvm::createStringError(
        "unknown CPU '" + cpu + "' for " + triple.str() +
        (triple.isX86()
             ? " (use an LLVM CPU name such as znver4, x86-64-v3, or native)"
             : " (use an LLVM CPU name of that triple, or generic)"));

  llvm::TargetOptions targetOptions;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, cpu, features.getString(), targetOptions, llvm::Reloc::PIC_,
      std::nullopt, codeGenLevel(options.optLevel)));
  if (!machine)
    return llvm::createStringError("cannot create a target machine for " +
                                   triple.str() + " " + cpu);
  return machine;
}

llvm::Error attnc::checkCpuList(const TargetOptions &options) {
  // The dispatcher reads x86's cpuid and xgetbv (Dispatch.h).
  if (cpuList(options).size() > 1 &&
      !llvm::Triple(targetTriple(options)).isX86())
    return llvm::createStringError(
        "a --mcpu list (one object, a variant per CPU) is for x86-64 only; " +
        targetTriple(options) + " takes one CPU");
  return llvm::Error::success();
}

llvm::Error attnc::checkTarget(const TargetOptions &options) {
  for (const std::string &cpu : cpuList(options)) {
    TargetOptions one = options;
    one.cpu = cpu;
    auto machine = createTargetMachine(one);
    if (!machine)
      return machine.takeError();
  }
  return checkCpuList(options);
}
