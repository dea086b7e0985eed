//===- attn-opt.cpp - The mlir-opt of the attn dialect --------------------===//
//
// Parses MLIR with the attn dialect, runs passes (attn and upstream), prints
// the result: the tool every lit test of a pass or verifier goes through.
//
//===----------------------------------------------------------------------===//

#include "attnc/InitAttn.h"

#include "GpuEmulation.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  attnc::registerAllPasses();
  // The tests' own: attn-gpu-emulate-launches.
  attnc::test::registerGpuEmulation();
  mlir::DialectRegistry registry;
  attnc::registerAllDialects(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "attn-opt: the attn dialect's optimizer driver\n", registry));
}
