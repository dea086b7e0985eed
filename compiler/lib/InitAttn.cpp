//===- InitAttn.cpp - Dialect and pass registration for every tool --------===//

#include "attnc/InitAttn.h"

#include "attn/CPU/Passes.h"
#include "attn/GPU/Passes.h"
#include "attn/IR/AttnDialect.h"
#include "attn/Transforms/Passes.h"
#include "attnc/Codegen/Pipeline.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

void attnc::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<mlir::attn::AttnDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // gpu-module-to-binary translates each gpu.module to LLVM IR (NVVM) and
  // serializes it through the #nvvm.target attribute.
  mlir::registerAllToLLVMIRTranslations(registry);
  mlir::NVVM::registerNVVMTargetInterfaceExternalModels(registry);
}

void attnc::registerAllPasses() {
  mlir::registerAllPasses();
  mlir::attn::registerAttnPasses();
  mlir::attn::registerAttnCPUPasses();
  mlir::attn::registerAttnGPUPasses();
  registerCpuLoweringPipeline();
}
