//===- EmulateLaunches.cpp - gpu.launch as CPU loops, for tests -----------===//

#include "attn/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNGPUEMULATELAUNCHES
#include "attn/GPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

LogicalResult emulate(gpu::LaunchOp launch) {
  if (launch.getAsyncToken() && !launch.getAsyncToken().use_empty())
    return launch.emitOpError("is ordered by async tokens; emulate it before "
                              "attn-gpu-device-memory");
  if (!launch.getWorkgroupAttributions().empty() ||
      !launch.getPrivateAttributions().empty() || launch.hasClusterSize())
    return launch.emitOpError("uses workgroup memory or clusters; its "
                              "threads cannot run one after another");
  WalkResult cooperative = launch.getBody().walk([](Operation *op) {
    return isa<gpu::BarrierOp, gpu::ShuffleOp, gpu::SubgroupReduceOp,
               gpu::AllReduceOp>(op)
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  if (cooperative.wasInterrupted())
    return launch.emitOpError("has threads that cooperate (barriers, "
                              "shuffles, reductions); they cannot run one "
                              "after another");

  OpBuilder b(launch);
  Location loc = launch.getLoc();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
  gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
  IRMapping mapping;
  // The body's size arguments are the launch's operands.
  gpu::KernelDim3 gridArgs = launch.getGridSize();
  gpu::KernelDim3 blockArgs = launch.getBlockSize();
  mapping.map(gridArgs.x, grid.x);
  mapping.map(gridArgs.y, grid.y);
  mapping.map(gridArgs.z, grid.z);
  mapping.map(blockArgs.x, block.x);
  mapping.map(blockArgs.y, block.y);
  mapping.map(blockArgs.z, block.z);

  // Blocks z, y, x outermost, then threads z, y, x.
  Value sizes[] = {grid.z, grid.y, grid.x, block.z, block.y, block.x};
  Value ids[] = {launch.getBlockIds().z,  launch.getBlockIds().y,
                 launch.getBlockIds().x,  launch.getThreadIds().z,
                 launch.getThreadIds().y, launch.getThreadIds().x};
  for (int i = 0; i < 6; ++i) {
    auto loop = scf::ForOp::create(b, loc, zero, sizes[i], one);
    mapping.map(ids[i], loop.getInductionVar());
    b.setInsertionPointToStart(loop.getBody());
  }
  Block &body = launch.getBody().front();
  // gpu.block_dim / gpu.grid_dim / ids as ops (canonical forms of the
  // arguments) map to the same values.
  for (Operation &op : body.without_terminator()) {
    if (auto dim = dyn_cast<gpu::BlockDimOp>(op)) {
      mapping.map(dim.getResult(),
                  sizes[3 + 2 - static_cast<int>(dim.getDimension())]);
      continue;
    }
    if (auto dim = dyn_cast<gpu::GridDimOp>(op)) {
      mapping.map(dim.getResult(),
                  sizes[2 - static_cast<int>(dim.getDimension())]);
      continue;
    }
    if (auto id = dyn_cast<gpu::ThreadIdOp>(op)) {
      mapping.map(
          id.getResult(),
          mapping.lookup(ids[3 + 2 - static_cast<int>(id.getDimension())]));
      continue;
    }
    if (auto id = dyn_cast<gpu::BlockIdOp>(op)) {
      mapping.map(id.getResult(),
                  mapping.lookup(ids[2 - static_cast<int>(id.getDimension())]));
      continue;
    }
    b.clone(op, mapping);
  }
  launch.erase();
  return success();
}

struct AttnGpuEmulateLaunchesPass
    : mlir::attn::impl::AttnGpuEmulateLaunchesBase<AttnGpuEmulateLaunchesPass> {
  void runOnOperation() override {
    SmallVector<gpu::LaunchOp> launches;
    getOperation().walk(
        [&](gpu::LaunchOp launch) { launches.push_back(launch); });
    for (gpu::LaunchOp launch : launches)
      if (failed(emulate(launch)))
        return signalPassFailure();
  }
};

} // namespace
