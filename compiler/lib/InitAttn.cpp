//===- InitAttn.cpp - Dialect and pass registration for every tool --------===//

#include "attnc/InitAttn.h"

#include "attn/CPU/Passes.h"
#include "attn/IR/AttnDialect.h"
#include "attn/Transforms/Passes.h"
#include "attnc/Codegen/Pipeline.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"

void attnc::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<mlir::attn::AttnDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
}

void attnc::registerAllPasses() {
  mlir::registerAllPasses();
  mlir::attn::registerAttnPasses();
  mlir::attn::registerAttnCPUPasses();
  registerCpuLoweringPipeline();
}
