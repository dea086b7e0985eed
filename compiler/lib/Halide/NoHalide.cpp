//===- NoHalide.cpp - The Halide backend in a build without Halide --------===//
//
// Built instead of the backend when CMake did not find Halide 21
// (cmake/AttncHalide.cmake): every entry says so.
//
//===----------------------------------------------------------------------===//

#include "attnc/Halide/HalideBackend.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/IR/Module.h"

using namespace attnc;

static llvm::Error notInThisBuild() {
  return llvm::createStringError(
      "this attnc was built without Halide: --backend=halide needs Halide 21 "
      "(scripts/setup.sh installs it from PyPI into .venv; then reconfigure)");
}

bool attnc::haveHalideBackend() { return false; }

std::string attnc::halideVersion() { return ""; }

llvm::Error attnc::checkHalideOptions(const CompileOptions &) {
  return notInThisBuild();
}

llvm::Expected<std::string>
attnc::describeHalideSchedule(const CompileOptions &) {
  return notInThisBuild();
}

std::string attnc::halideTarget(const llvm::TargetMachine &,
                                const mlir::attn::CpuTargetDescription &) {
  return "";
}

llvm::Expected<std::unique_ptr<llvm::Module>>
attnc::translateWithHalide(mlir::ModuleOp, const CompileOptions &,
                           llvm::LLVMContext &, llvm::TargetMachine &) {
  return notInThisBuild();
}
