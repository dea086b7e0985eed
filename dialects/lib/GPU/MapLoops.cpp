//===- MapLoops.cpp - Loop nests of a kernel -> gpu.launch ----------------===//
//
// Every shape is static, so each top-level loop nest has a known iteration
// count: one thread per iteration of its parallel dimensions, linearized
// (innermost fastest, so that neighbouring threads touch neighbouring
// elements), with the reductions sequential inside the thread. What no
// parallel loop covers runs in a launch of one thread, so that the host code
// left over never touches device memory.
//
//===----------------------------------------------------------------------===//

#include "attn/GPU/Passes.h"
#include "attn/Target/GpuTarget.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "llvm/Support/MathExtras.h"

#include <limits>

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNGPUMAPLOOPS
#include "attn/GPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

/// Ops that stay in the host code: they allocate, describe buffers, compute
/// scalars, order GPU work, or read a result back (attn-gpu-device-memory).
bool staysOnHost(Operation *op) {
  if (isa<gpu::GPUDialect>(op->getDialect()))
    return true;
  // A call runs another kernel's host code, which launches its own work.
  if (isa<func::ReturnOp, func::CallOp, memref::AllocOp, memref::AllocaOp,
          memref::DeallocOp, memref::GetGlobalOp, memref::LoadOp,
          ViewLikeOpInterface>(op))
    return true;
  return op->getNumRegions() == 0 && isMemoryEffectFree(op);
}

/// A launch of `blocks` x `threads` (x dimension only), asynchronous with no
/// dependencies yet: attn-gpu-device-memory chains them.
gpu::LaunchOp createLaunch(OpBuilder &b, Location loc, int64_t blocks,
                           int64_t threads) {
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value grid = arith::ConstantIndexOp::create(b, loc, blocks);
  Value block = arith::ConstantIndexOp::create(b, loc, threads);
  auto launch = gpu::LaunchOp::create(b, loc, grid, one, one, block, one, one,
                                      /*dynamicSharedMemorySize=*/nullptr,
                                      b.getType<gpu::AsyncTokenType>(),
                                      /*asyncDependencies=*/ValueRange{});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(&launch.getBody().front());
  gpu::TerminatorOp::create(b, loc);
  return launch;
}

/// The loop's iteration count per dimension, or failure (with a diagnostic)
/// when a bound is not a constant.
FailureOr<SmallVector<int64_t>> tripCounts(scf::ParallelOp loop) {
  SmallVector<int64_t> counts;
  for (auto [lb, ub, step] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    std::optional<int64_t> low = getConstantIntValue(lb);
    std::optional<int64_t> high = getConstantIntValue(ub);
    std::optional<int64_t> by = getConstantIntValue(step);
    if (!low || !high || !by || *by <= 0)
      return loop.emitOpError("has a bound that is not a constant; GPU "
                              "kernels need static shapes");
    counts.push_back(*high > *low ? llvm::divideCeil(*high - *low, *by) : 0);
  }
  return counts;
}

LogicalResult mapParallelLoop(scf::ParallelOp loop,
                              const attn::GpuTargetDescription &target,
                              int64_t blockSize) {
  if (!loop.getInitVals().empty())
    return loop.emitOpError("with reductions is not mapped to the GPU");
  FailureOr<SmallVector<int64_t>> counts = tripCounts(loop);
  if (failed(counts))
    return failure();
  int64_t total = 1;
  for (int64_t count : *counts) {
    if (count != 0 && total > std::numeric_limits<int32_t>::max() / count)
      return loop.emitOpError("has more than 2^31 iterations");
    total *= count;
  }
  if (total == 0) {
    loop.erase();
    return success();
  }
  int64_t threads = attn::threadsPerBlock(target, total, blockSize);
  int64_t blocks = llvm::divideCeil(total, threads);

  Location loc = loop.getLoc();
  OpBuilder b(loop);
  gpu::LaunchOp launch = createLaunch(b, loc, blocks, threads);
  b.setInsertionPointToStart(&launch.getBody().front());
  Value linear = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, launch.getBlockIds().x,
                            arith::ConstantIndexOp::create(b, loc, threads)),
      launch.getThreadIds().x);
  Value inRange =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, linear,
                            arith::ConstantIndexOp::create(b, loc, total));
  auto guard = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
  b.setInsertionPointToStart(guard.thenBlock());

  // Delinearize, innermost dimension fastest.
  IRMapping mapping;
  Value rest = linear;
  for (int64_t d = static_cast<int64_t>(counts->size()) - 1; d >= 0; --d) {
    Value count = arith::ConstantIndexOp::create(b, loc, (*counts)[d]);
    Value index = d == 0 ? rest : arith::RemUIOp::create(b, loc, rest, count);
    if (d != 0)
      rest = arith::DivUIOp::create(b, loc, rest, count);
    Value iv = arith::AddIOp::create(
        b, loc, loop.getLowerBound()[d],
        arith::MulIOp::create(b, loc, index, loop.getStep()[d]));
    mapping.map(loop.getInductionVars()[d], iv);
  }
  for (Operation &op : loop.getBody()->without_terminator())
    b.clone(op, mapping);
  loop.erase();
  return success();
}

/// memref.copy as a parallel loop nest of loads and stores (then mapped like
/// any other): a copy between device buffers of any layout.
scf::ParallelOp copyAsLoop(memref::CopyOp copy) {
  OpBuilder b(copy);
  Location loc = copy.getLoc();
  auto type = cast<MemRefType>(copy.getSource().getType());
  SmallVector<Value> lbs, ubs, steps;
  for (int64_t size : type.getShape()) {
    lbs.push_back(arith::ConstantIndexOp::create(b, loc, 0));
    ubs.push_back(arith::ConstantIndexOp::create(b, loc, size));
    steps.push_back(arith::ConstantIndexOp::create(b, loc, 1));
  }
  auto loop = scf::ParallelOp::create(
      b, loc, lbs, ubs, steps, [&](OpBuilder &nb, Location nl, ValueRange ivs) {
        Value value = memref::LoadOp::create(nb, nl, copy.getSource(), ivs);
        memref::StoreOp::create(nb, nl, value, copy.getTarget(), ivs);
      });
  copy.erase();
  return loop;
}

/// Moves the ops of `run` (consecutive top-level ops) into a launch of one
/// thread. Their results must not be used after the run.
LogicalResult runInOneThread(ArrayRef<Operation *> run) {
  llvm::SmallPtrSet<Operation *, 8> inRun(run.begin(), run.end());
  for (Operation *op : run)
    for (Value result : op->getResults())
      for (Operation *user : result.getUsers()) {
        Operation *top = user;
        while (top && !inRun.contains(top))
          top = top->getParentOp();
        if (!top)
          return op->emitOpError("computes a value that host code uses; it "
                                 "cannot run on the GPU");
      }
  OpBuilder b(run.front());
  gpu::LaunchOp launch = createLaunch(b, run.front()->getLoc(), 1, 1);
  Operation *terminator = launch.getBody().front().getTerminator();
  for (Operation *op : run)
    op->moveBefore(terminator);
  return success();
}

struct AttnGpuMapLoopsPass
    : mlir::attn::impl::AttnGpuMapLoopsBase<AttnGpuMapLoopsPass> {
  using AttnGpuMapLoopsBase::AttnGpuMapLoopsBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (blockSize < 0 || blockSize % 32 != 0 || blockSize > 1024) {
      func.emitError("attn-gpu-map-loops: block-size must be 0 (the "
                     "target's) or a multiple of 32 in [32, 1024], not ")
          << static_cast<int64_t>(blockSize);
      return signalPassFailure();
    }
    if (!func.getBody().hasOneBlock()) {
      func.emitOpError("has control flow between its loop nests; "
                       "attn-gpu-map-loops needs one block");
      return signalPassFailure();
    }
    attn::GpuTargetDescription target = attn::describeGpu(chip);
    Block &body = func.getBody().front();
    for (auto copy : llvm::make_early_inc_range(body.getOps<memref::CopyOp>()))
      copyAsLoop(copy);

    SmallVector<Operation *> run;
    auto flush = [&]() -> LogicalResult {
      if (run.empty())
        return success();
      LogicalResult result = runInOneThread(run);
      run.clear();
      return result;
    };
    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
        if (failed(flush()) || failed(mapParallelLoop(loop, target, blockSize)))
          return signalPassFailure();
        continue;
      }
      // Scalar code on what a run computes (a loop of one iteration that
      // canonicalization unrolled) belongs to the run.
      bool usesRun = llvm::any_of(op.getOperands(), [&](Value operand) {
        return llvm::is_contained(run, operand.getDefiningOp());
      });
      bool joinsRun = usesRun && isMemoryEffectFree(&op) &&
                      !op.hasTrait<OpTrait::IsTerminator>();
      if (staysOnHost(&op) && !joinsRun) {
        if (failed(flush()))
          return signalPassFailure();
        continue;
      }
      run.push_back(&op);
    }
    if (failed(flush()))
      return signalPassFailure();
  }
};

} // namespace
