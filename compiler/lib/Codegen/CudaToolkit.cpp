//===- CudaToolkit.cpp - The CUDA toolkit and compute capabilities --------===//

#include "attnc/Codegen/GpuCompile.h"
#include "attnc/Codegen/TargetMachine.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

using namespace attnc;

llvm::Expected<CudaToolkit> attnc::findCudaToolkit() {
  std::vector<std::string> roots;
  for (const char *variable : {"CUDA_HOME", "CUDA_PATH"})
    if (std::optional<std::string> value = llvm::sys::Process::GetEnv(variable))
      if (!value->empty())
        roots.push_back(*value);
  roots.push_back("/usr/local/cuda");
  roots.push_back("/usr/lib/cuda");
  for (const std::string &root : roots) {
    llvm::SmallString<256> libdevice(root);
    llvm::sys::path::append(libdevice, "nvvm", "libdevice", "libdevice.10.bc");
    if (!llvm::sys::fs::is_regular_file(libdevice))
      continue;
    CudaToolkit toolkit;
    toolkit.root = root;
    toolkit.libdevice = libdevice.str().str();
    auto tool = [&](const char *name) {
      llvm::SmallString<256> path(root);
      llvm::sys::path::append(path, "bin", name);
      return llvm::sys::fs::can_execute(path);
    };
    toolkit.canAssemble = tool("ptxas") && tool("fatbinary");
    return toolkit;
  }
  return llvm::createStringError(
      "--target=nvptx needs the CUDA toolkit's libdevice "
      "(nvvm/libdevice/libdevice.10.bc), looked for under " +
      llvm::join(roots, ", ") + "; set CUDA_HOME to the toolkit");
}

std::string attnc::gpuChip(const TargetOptions &options) {
  return options.cpu.empty() || options.cpu == "native" ? "sm_90a"
                                                        : options.cpu;
}

/// The compute capability number of `chip` (`sm_90a` -> 90), or 0.
static unsigned chipNumber(llvm::StringRef chip) {
  unsigned number = 0;
  if (!chip.consume_front("sm_"))
    return 0;
  chip.consume_back("a");
  chip.consume_back("f");
  return chip.getAsInteger(10, number) ? 0 : number;
}

llvm::Error attnc::checkGpuTarget(const TargetOptions &options) {
  if (!options.triple.empty() &&
      llvm::Triple(llvm::Triple::normalize(options.triple)) !=
          llvm::Triple(
              llvm::Triple::normalize(llvm::sys::getDefaultTargetTriple())))
    return llvm::createStringError(
        "--target=nvptx builds host code for this machine; --triple does "
        "not apply");
  llvm::Triple host{llvm::sys::getDefaultTargetTriple()};
  if (host.getArch() != llvm::Triple::x86_64 || !host.isOSLinux())
    return llvm::createStringError(
        "--target=nvptx needs an x86-64 Linux host (its CUDA loader is built "
        "for one), not " +
        host.str());
  std::string chip = gpuChip(options);
  if (chip.find(',') != std::string::npos)
    return llvm::createStringError(
        "--target=nvptx takes one compute capability, not a list: '" + chip +
        "'");
  initializeTargets();
  std::string message;
  const llvm::Target *nvptx = llvm::TargetRegistry::lookupTarget(
      llvm::Triple("nvptx64-nvidia-cuda"), message);
  if (!nvptx)
    return llvm::createStringError("LLVM has no NVPTX back end: " + message);
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget(nvptx->createMCSubtargetInfo(
      llvm::Triple("nvptx64-nvidia-cuda"), "", ""));
  if (chipNumber(chip) < 75 || !subtarget || !subtarget->isCPUStringValid(chip))
    return llvm::createStringError(
        "unknown GPU '" + chip +
        "' for --target=nvptx: give a compute capability sm_75 or newer "
        "(sm_80, sm_90, sm_90a, ...)");
  return llvm::Error::success();
}

std::string attnc::ptxFeatures(llvm::StringRef chip) {
  unsigned number = chipNumber(chip);
  if (number >= 100)
    return "+ptx86";
  if (number >= 90)
    return "+ptx80";
  return "+ptx78";
}
