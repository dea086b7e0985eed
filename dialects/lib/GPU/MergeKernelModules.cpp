//===- MergeKernelModules.cpp - One gpu.module for every kernel -----------===//

#include "attn/GPU/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/DenseMap.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNGPUMERGEKERNELMODULES
#include "attn/GPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

struct AttnGpuMergeKernelModulesPass
    : mlir::attn::impl::AttnGpuMergeKernelModulesBase<
          AttnGpuMergeKernelModulesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> kernelModules(
        module.getOps<gpu::GPUModuleOp>());
    if (kernelModules.empty())
      return;
    // Outlining names each module after its kernel and may give every
    // kernel the same name inside its module: a kernel is renamed after its
    // module (unique in the parent).
    llvm::DenseMap<std::pair<StringAttr, StringAttr>, StringAttr> renamed;
    for (gpu::GPUModuleOp kernelModule : kernelModules) {
      SmallVector<gpu::GPUFuncOp> kernels(
          kernelModule.getOps<gpu::GPUFuncOp>());
      for (gpu::GPUFuncOp kernel : kernels) {
        StringAttr name = kernel.getNameAttr();
        StringAttr unique =
            kernels.size() == 1
                ? kernelModule.getNameAttr()
                : StringAttr::get(&getContext(), kernelModule.getName() + "_" +
                                                     kernel.getName());
        renamed[{kernelModule.getNameAttr(), name}] = unique;
        kernel.setName(unique);
      }
    }
    gpu::GPUModuleOp merged = kernelModules.front();
    SymbolTable mergedSymbols(merged);
    for (gpu::GPUModuleOp other : llvm::drop_begin(kernelModules)) {
      for (Operation &op :
           llvm::make_early_inc_range(other.getBody()->getOperations())) {
        auto name =
            op.getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName());
        if (name && mergedSymbols.lookup(name)) {
          // Outlining copies a constant into each module that uses it.
          if (isa<gpu::GPUFuncOp>(op)) {
            op.emitOpError("has the name of another kernel");
            return signalPassFailure();
          }
          op.erase();
          continue;
        }
        op.moveBefore(merged.getBody(), merged.getBody()->end());
        if (name)
          mergedSymbols.insert(&op);
      }
    }
    StringAttr mergedName = StringAttr::get(&getContext(), "kernels");
    bool failedLaunch = false;
    module.walk([&](gpu::LaunchFuncOp launch) {
      StringAttr kernel = renamed.lookup(
          {launch.getKernelModuleName(), launch.getKernelName()});
      if (!kernel) {
        launch.emitOpError("launches a kernel that is not outlined");
        failedLaunch = true;
        return;
      }
      launch.setKernelAttr(
          SymbolRefAttr::get(mergedName, {FlatSymbolRefAttr::get(kernel)}));
    });
    if (failedLaunch)
      return signalPassFailure();
    merged.setName(mergedName);
    for (gpu::GPUModuleOp other : llvm::drop_begin(kernelModules))
      other.erase();
  }
};

} // namespace
