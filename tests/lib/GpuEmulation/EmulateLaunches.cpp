//===- EmulateLaunches.cpp - gpu.launch as CPU loops, for tests -----------===//
//
// A launch whose threads never wait for each other runs as loops over its
// blocks and threads, each thread to its end before the next starts. One
// whose threads meet at `gpu.barrier`s (and share workgroup memory) is cut
// at its barriers instead, as MCUDA and PoCL run CUDA/OpenCL kernels on a
// CPU: per block, each stretch between barriers is a loop over the threads,
// a value one stretch computes and a later one reads is kept per thread in
// an array, and a loop whose body holds a barrier runs once per block
// around the stretches of its body (its bounds must be the same in every
// thread, as CUDA requires of a barrier's control flow: computed from block
// ids, constants and memory the launch does not write, once per block).
// A `gpu.shuffle` is cut at like a barrier: the stretch before it stores
// each thread's value, and the shuffle reads the value of the lane it names
// in the thread's warp (32 consecutive threads). An `nvgpu.mma.sync` too:
// each thread computes its own elements of D from the fragments of A and B
// that the lanes of its warp hold (attn/GPU/MmaFragments.h), the products
// summed in k order onto C.
//
//===----------------------------------------------------------------------===//

#include "GpuEmulation.h"

#include "attn/GPU/MmaFragments.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace attnc::test {
#define GEN_PASS_DEF_ATTNGPUEMULATELAUNCHES
#include "GpuEmulationPasses.h.inc"
} // namespace attnc::test

using namespace mlir;
namespace mma = mlir::attn::mma;

namespace {

/// Where the threads of a block meet: a barrier, or a shuffle or an mma
/// (every lane of a warp at once).
bool meets(Operation *op) {
  return isa<gpu::BarrierOp, gpu::ShuffleOp, nvgpu::MmaSyncOp>(op);
}

/// A barrier, shuffle or mma, or an op whose regions hold one.
bool synchronizes(Operation *op) {
  return op
      ->walk([](Operation *nested) {
        return meets(nested) ? WalkResult::interrupt() : WalkResult::advance();
      })
      .wasInterrupted();
}

/// The lanes of a warp, as the emulation groups threads.
constexpr int64_t kWarpSize = 32;

/// Which values of a launch are the same in every thread of a block: those
/// defined above it, block ids and sizes, constants, the counters of loops
/// with such bounds, and what ops without regions compute from such values
/// alone, without side effects or by reading memory that the launch never
/// writes (valid_lens, say). A loop's iter_args count as varying.
class Uniformity {
public:
  explicit Uniformity(gpu::LaunchOp launch);
  bool isUniform(Value value);
  /// Whether every result of `op` (one with results and no regions) is
  /// uniform: it can run once per block.
  bool isUniformOp(Operation *op);

private:
  bool readsOnlyUnwritten(Operation *op);

  gpu::LaunchOp launch;
  /// The buffers the launch writes (through views: their sources), or all
  /// of them when an op's effects are unknown.
  llvm::SmallPtrSet<Value, 8> written;
  bool writesAnything = false;
  llvm::DenseMap<Value, bool> known;
};

/// `buffer` with views looked through.
Value sourceBuffer(Value buffer) {
  while (auto view = buffer.getDefiningOp<ViewLikeOpInterface>())
    buffer = view.getViewSource();
  return buffer;
}

Uniformity::Uniformity(gpu::LaunchOp launch) : launch(launch) {
  launch.getBody().walk([&](Operation *op) {
    if (op->hasTrait<OpTrait::HasRecursiveMemoryEffects>() ||
        isa<gpu::BarrierOp, gpu::TerminatorOp>(op))
      return;
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects) {
      writesAnything = true;
      return;
    }
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (const MemoryEffects::EffectInstance &effect : instances) {
      if (isa<MemoryEffects::Read>(effect.getEffect()))
        continue;
      if (Value value = effect.getValue())
        written.insert(sourceBuffer(value));
      else if (!isa<MemoryEffects::Allocate>(effect.getEffect()))
        writesAnything = true;
    }
  });
}

bool Uniformity::readsOnlyUnwritten(Operation *op) {
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects || writesAnything)
    return false;
  SmallVector<MemoryEffects::EffectInstance> instances;
  effects.getEffects(instances);
  return llvm::all_of(instances, [&](const MemoryEffects::EffectInstance &e) {
    return isa<MemoryEffects::Read>(e.getEffect()) && e.getValue() &&
           !written.contains(sourceBuffer(e.getValue()));
  });
}

bool Uniformity::isUniformOp(Operation *op) {
  if (op->getNumResults() == 0 || op->getNumRegions() != 0 ||
      isa<gpu::ThreadIdOp, gpu::LaneIdOp, gpu::ShuffleOp, nvgpu::MmaSyncOp>(op))
    return false;
  if (!isMemoryEffectFree(op) && !readsOnlyUnwritten(op))
    return false;
  return llvm::all_of(op->getOperands(),
                      [&](Value operand) { return isUniform(operand); });
}

bool Uniformity::isUniform(Value value) {
  auto memo = known.find(value);
  if (memo != known.end())
    return memo->second;
  // Pessimistic while being decided (a cycle through a loop's state).
  known[value] = false;
  bool result;
  if (Operation *def = value.getDefiningOp()) {
    result = !launch->isAncestor(def) || isUniformOp(def);
  } else {
    auto arg = cast<BlockArgument>(value);
    Operation *owner = arg.getOwner()->getParentOp();
    if (owner == launch.getOperation()) {
      gpu::KernelDim3 ids = launch.getThreadIds();
      result = value != ids.x && value != ids.y && value != ids.z;
    } else if (!launch->isAncestor(owner)) {
      result = true;
    } else {
      auto loop = dyn_cast<scf::ForOp>(owner);
      result = loop && value == loop.getInductionVar() &&
               isUniform(loop.getLowerBound()) &&
               isUniform(loop.getUpperBound()) && isUniform(loop.getStep());
    }
  }
  known[value] = result;
  return result;
}

/// Runs the threads of one block of a launch with barriers, stretch by
/// stretch (see the file comment).
class BarrierSplitter {
public:
  BarrierSplitter(gpu::LaunchOp launch, int64_t threads, Operation *outermost,
                  Uniformity &uniformity)
      : launch(launch), threads(threads), outermost(outermost),
        uniformity(uniformity) {}

  /// Emits `block`'s ops (not its terminator) at `b`, which is inside the
  /// block loops and outside any thread loop.
  LogicalResult lowerBlock(Block &block, OpBuilder &b);

  /// Values the same in every thread of a block (Uniformity), as computed
  /// once per block: block ids and sizes, constants, workgroup buffers, the
  /// counters of loops holding barriers, what is computed from them.
  IRMapping uniform;

private:
  /// The per-thread array that holds `value` between stretches.
  Value slotOf(Value value);
  /// Within a thread loop: `value` (an operand) as this thread sees it.
  void resolve(Value value, Operation *owner, OpBuilder &b, IRMapping &local,
               Value thread);
  /// A loop over the threads at `b`; `body` fills it given the thread's
  /// linear id and a mapping with its thread ids.
  void threadLoop(OpBuilder &b,
                  function_ref<void(OpBuilder &, Value, IRMapping &)> body);
  LogicalResult lowerStretch(ArrayRef<Operation *> ops, Block &block,
                             OpBuilder &b);
  LogicalResult lowerLoop(scf::ForOp loop, OpBuilder &b);
  void lowerShuffle(gpu::ShuffleOp shuffle, OpBuilder &b);
  void lowerMma(nvgpu::MmaSyncOp op, OpBuilder &b);
  /// Within a thread loop: `value` as thread `from` holds it (a value the
  /// same in every thread, or defined above the launch, as this one does).
  Value valueIn(Value value, Value from, Operation *owner, OpBuilder &b,
                IRMapping &local, Value thread);

  gpu::LaunchOp launch;
  int64_t threads;
  Operation *outermost;
  Uniformity &uniformity;
  llvm::DenseMap<Value, Value> slots;
};

Value BarrierSplitter::slotOf(Value value) {
  Value &slot = slots[value];
  if (!slot) {
    OpBuilder b(outermost);
    slot = memref::AllocaOp::create(
        b, value.getLoc(), MemRefType::get({threads}, value.getType()));
  }
  return slot;
}

void BarrierSplitter::resolve(Value value, Operation *owner, OpBuilder &b,
                              IRMapping &local, Value thread) {
  Operation *def = value.getDefiningOp();
  Block *home = def ? def->getBlock() : cast<BlockArgument>(value).getOwner();
  // Defined within the op being cloned: the clone maps it itself.
  if (owner->isAncestor(home->getParentOp()) || local.contains(value))
    return;
  if (uniform.contains(value)) {
    local.map(value, uniform.lookup(value));
    return;
  }
  auto slot = slots.find(value);
  if (slot != slots.end())
    local.map(value, memref::LoadOp::create(b, value.getLoc(), slot->second,
                                            ValueRange{thread}));
  // Anything else is defined above the launch.
}

void BarrierSplitter::threadLoop(
    OpBuilder &b, function_ref<void(OpBuilder &, Value, IRMapping &)> body) {
  Location loc = launch.getLoc();
  auto loop =
      scf::ForOp::create(b, loc, arith::ConstantIndexOp::create(b, loc, 0),
                         arith::ConstantIndexOp::create(b, loc, threads),
                         arith::ConstantIndexOp::create(b, loc, 1));
  OpBuilder tb = OpBuilder::atBlockTerminator(loop.getBody());
  Value thread = loop.getInductionVar();
  // Thread ids, x fastest.
  gpu::KernelDim3 sizes = launch.getBlockSizeOperandValues();
  Value x = arith::RemUIOp::create(tb, loc, thread, sizes.x);
  Value rest = arith::DivUIOp::create(tb, loc, thread, sizes.x);
  Value y = arith::RemUIOp::create(tb, loc, rest, sizes.y);
  Value z = arith::DivUIOp::create(tb, loc, rest, sizes.y);
  IRMapping local;
  local.map(launch.getThreadIds().x, x);
  local.map(launch.getThreadIds().y, y);
  local.map(launch.getThreadIds().z, z);
  body(tb, thread, local);
}

LogicalResult BarrierSplitter::lowerStretch(ArrayRef<Operation *> ops,
                                            Block &block, OpBuilder &b) {
  if (ops.empty())
    return success();
  llvm::SmallPtrSet<Operation *, 16> inStretch(ops.begin(), ops.end());
  threadLoop(b, [&](OpBuilder &tb, Value thread, IRMapping &local) {
    gpu::KernelDim3 threadIds = {local.lookup(launch.getThreadIds().x),
                                 local.lookup(launch.getThreadIds().y),
                                 local.lookup(launch.getThreadIds().z)};
    for (Operation *op : ops) {
      if (auto id = dyn_cast<gpu::ThreadIdOp>(op)) {
        Value dims[] = {threadIds.x, threadIds.y, threadIds.z};
        local.map(id.getResult(), dims[static_cast<int>(id.getDimension())]);
      } else {
        op->walk([&](Operation *nested) {
          for (Value operand : nested->getOperands())
            resolve(operand, op, tb, local, thread);
        });
        tb.clone(*op, local);
      }
      // Results read by a later stretch (or a loop's yield) are kept.
      for (Value result : op->getResults()) {
        bool readLater = llvm::any_of(result.getUsers(), [&](Operation *user) {
          Operation *top = block.findAncestorOpInBlock(*user);
          return !top || !inStretch.contains(top);
        });

        if (readLater)
          memref::StoreOp::create(tb, result.getLoc(), local.lookup(result),
                                  slotOf(result), ValueRange{thread});
      }
    }
  });
  return success();
}
LogicalResult BarrierSplitter::lowerLoop(scf::ForOp loop, OpBuilder &b) {
  Location loc = loop.getLoc();
  // checkSplittable made sure that the bounds are the same in every
  // thread: each is mapped already or defined above the launch.
  SmallVector<Value> bounds;
  for (Value bound :
       {loop.getLowerBound(), loop.getUpperBound(), loop.getStep()})
    bounds.push_back(uniform.lookupOrDefault(bound));
  // The loop's state, per thread, between iterations.
  for (auto [arg, result] :
       llvm::zip(loop.getRegionIterArgs(), loop.getResults()))
    slots[result] = slotOf(arg);
  if (loop.getNumRegionIterArgs())
    threadLoop(b, [&](OpBuilder &tb, Value thread, IRMapping &local) {
      for (auto [arg, init] :
           llvm::zip(loop.getRegionIterArgs(), loop.getInitArgs())) {
        resolve(init, loop, tb, local, thread);
        memref::StoreOp::create(tb, loc, local.lookupOrDefault(init),
                                slotOf(arg), ValueRange{thread});
      }
    });
  auto once = scf::ForOp::create(b, loc, bounds[0], bounds[1], bounds[2]);
  uniform.map(loop.getInductionVar(), once.getInductionVar());
  OpBuilder body = OpBuilder::atBlockTerminator(once.getBody());
  if (failed(lowerBlock(*loop.getBody(), body)))
    return failure();
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  if (loop.getNumRegionIterArgs())
    threadLoop(body, [&](OpBuilder &tb, Value thread, IRMapping &local) {
      // Every value read before any is overwritten (a yield may swap).
      SmallVector<Value> values;
      for (Value value : yield.getOperands()) {
        resolve(value, yield, tb, local, thread);
        values.push_back(local.lookupOrDefault(value));
      }
      for (auto [arg, value] : llvm::zip(loop.getRegionIterArgs(), values))
        memref::StoreOp::create(tb, loc, value, slotOf(arg),
                                ValueRange{thread});
    });
  return success();
}

void BarrierSplitter::lowerShuffle(gpu::ShuffleOp shuffle, OpBuilder &b) {
  Location loc = shuffle.getLoc();
  threadLoop(b, [&](OpBuilder &tb, Value thread, IRMapping &local) {
    auto index = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(tb, loc, v);
    };
    auto asIndex = [&](Value i32) -> Value {
      resolve(i32, shuffle, tb, local, thread);
      return arith::IndexCastOp::create(tb, loc, tb.getIndexType(),
                                        local.lookupOrDefault(i32));
    };
    Value offset = asIndex(shuffle.getOffset());
    Value width = asIndex(shuffle.getWidth());
    Value lane = arith::RemUIOp::create(tb, loc, thread, index(kWarpSize));
    Value source;
    switch (shuffle.getMode()) {
    case gpu::ShuffleMode::XOR:
      source = arith::XOrIOp::create(tb, loc, lane, offset);
      break;
    case gpu::ShuffleMode::DOWN:
      source = arith::AddIOp::create(tb, loc, lane, offset);
      break;
    case gpu::ShuffleMode::UP:
      // Below lane 0 wraps around to a large index: not below `width`.
      source = arith::SubIOp::create(tb, loc, lane, offset);
      break;
    case gpu::ShuffleMode::IDX:
      source = offset;
      break;
    }
    Value sourceThread = arith::AddIOp::create(
        tb, loc, arith::SubIOp::create(tb, loc, thread, lane), source);
    auto below = [&](Value x, Value bound) -> Value {
      return arith::CmpIOp::create(tb, loc, arith::CmpIPredicate::ult, x,
                                   bound);
    };
    // A lane outside the width (or the block) gives the thread's own value,
    // as shfl.sync does; `valid` says so.
    Value valid = arith::AndIOp::create(tb, loc, below(source, width),
                                        below(sourceThread, index(threads)));
    Value from = arith::SelectOp::create(tb, loc, valid, sourceThread, thread);
    Value value = shuffle.getValue();
    Value result;
    auto slot = slots.find(value);
    if (slot != slots.end()) {
      result = memref::LoadOp::create(tb, loc, slot->second, ValueRange{from});
    } else {
      // The same in every thread (or defined above the launch).
      resolve(value, shuffle, tb, local, thread);
      result = local.lookupOrDefault(value);
    }
    memref::StoreOp::create(tb, loc, result, slotOf(shuffle.getShuffleResult()),
                            ValueRange{thread});
    if (!shuffle.getValid().use_empty())
      memref::StoreOp::create(
          tb, loc, arith::AndIOp::create(tb, loc, valid, below(lane, width)),
          slotOf(shuffle.getValid()), ValueRange{thread});
  });
}

Value BarrierSplitter::valueIn(Value value, Value from, Operation *owner,
                               OpBuilder &b, IRMapping &local, Value thread) {
  auto slot = slots.find(value);
  if (slot != slots.end())
    return memref::LoadOp::create(b, value.getLoc(), slot->second,
                                  ValueRange{from});
  resolve(value, owner, b, local, thread);
  return local.lookupOrDefault(value);
}

void BarrierSplitter::lowerMma(nvgpu::MmaSyncOp op, OpBuilder &b) {
  Location loc = op.getLoc();
  auto aType = cast<VectorType>(op.getMatrixA().getType());
  int64_t perRegister = aType.getDimSize(1);
  int64_t depth = mma::depthOf(perRegister);
  threadLoop(b, [&](OpBuilder &tb, Value thread, IRMapping &local) {
    auto index = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(tb, loc, v);
    };
    Value lane = arith::RemUIOp::create(tb, loc, thread, index(kWarpSize));
    Value warp = arith::SubIOp::create(tb, loc, thread, lane);
    Value group = arith::DivUIOp::create(tb, loc, lane, index(4));
    Value pair = arith::RemUIOp::create(tb, loc, lane, index(4));
    // The first lane of the group that holds A's row group + 8 i, and of
    // the group that holds B's column (of this lane's 2 pair + j).
    Value rowLanes = arith::AddIOp::create(
        tb, loc, warp, arith::MulIOp::create(tb, loc, group, index(4)));
    Value columnLanes = arith::AddIOp::create(
        tb, loc, warp, arith::MulIOp::create(tb, loc, pair, index(8)));
    Type f32 = tb.getF32Type();
    // Per k, the lane (past the group's first) and the place in the
    // flattened fragment of the A and B elements of this lane's outputs
    // (attn/GPU/MmaFragments.h), as tables a loop over k reads.
    Type i32 = tb.getI32Type();
    auto table = [&](function_ref<int64_t(int64_t)> entry) -> Value {
      SmallVector<int32_t> entries;
      for (int64_t k = 0; k < depth; ++k)
        entries.push_back(static_cast<int32_t>(entry(k)));
      auto type = VectorType::get({depth}, i32);
      return arith::ConstantOp::create(
          tb, loc, type, DenseIntElementsAttr::get(type, entries));
    };
    auto flatType = [&](Value fragment) {
      auto type = cast<VectorType>(fragment.getType());
      return VectorType::get({type.getNumElements()}, type.getElementType());
    };
    Value result = valueIn(op.getMatrixC(), thread, op, tb, local, thread);
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 2; ++j) {
        auto inA = [&](int64_t k) {
          return mma::placeInA(mma::rowOffsetC(i), k, perRegister);
        };
        auto inB = [&](int64_t k) {
          return mma::placeInB(k, mma::columnOffsetC(j), perRegister);
        };
        Value laneA = table([&](int64_t k) { return inA(k).lane; });
        Value placeA = table([&](int64_t k) {
          return inA(k).reg * perRegister + inA(k).element;
        });
        Value laneB = table([&](int64_t k) { return inB(k).lane; });
        Value placeB = table([&](int64_t k) {
          return inB(k).reg * perRegister + inB(k).element;
        });
        Value first =
            vector::ExtractOp::create(tb, loc, result, ArrayRef<int64_t>{i, j});
        auto loop = scf::ForOp::create(
            tb, loc, index(0), index(depth), index(1), ValueRange{first},
            [&](OpBuilder &kb, Location, Value k, ValueRange sum) {
              auto at = [&](Value entries) -> Value {
                return arith::IndexCastOp::create(
                    kb, loc, kb.getIndexType(),
                    vector::ExtractOp::create(kb, loc, entries,
                                              ArrayRef<OpFoldResult>{k}));
              };
              // Element `place` of `matrix`'s fragment in lane `lanes` +
              // `lane`, widened.
              auto element = [&](Value matrix, Value lanes, Value lane,
                                 Value place) -> Value {
                Value fragment = valueIn(
                    matrix, arith::AddIOp::create(kb, loc, lanes, at(lane)), op,
                    kb, local, thread);
                Value flat = vector::ShapeCastOp::create(
                    kb, loc, flatType(fragment), fragment);
                Value x = vector::ExtractOp::create(
                    kb, loc, flat, ArrayRef<OpFoldResult>{at(place)});
                return x.getType() == f32
                           ? x
                           : arith::ExtFOp::create(kb, loc, f32, x).getResult();
              };
              Value term = arith::MulFOp::create(
                  kb, loc, element(op.getMatrixA(), rowLanes, laneA, placeA),
                  element(op.getMatrixB(), columnLanes, laneB, placeB));
              scf::YieldOp::create(
                  kb, loc,
                  ValueRange{arith::AddFOp::create(kb, loc, sum[0], term)});
            });
        result = vector::InsertOp::create(tb, loc, loop.getResult(0), result,
                                          ArrayRef<int64_t>{i, j});
      }
    memref::StoreOp::create(tb, loc, result, slotOf(op.getRes()),
                            ValueRange{thread});
  });
}

LogicalResult BarrierSplitter::lowerBlock(Block &block, OpBuilder &b) {
  gpu::KernelDim3 grid = launch.getGridSize(), size = launch.getBlockSize();
  Value gridSizes[] = {grid.x, grid.y, grid.z};
  Value blockSizes[] = {size.x, size.y, size.z};
  gpu::KernelDim3 blockIds = launch.getBlockIds();
  Value blocks[] = {blockIds.x, blockIds.y, blockIds.z};
  SmallVector<Operation *> stretch;
  for (Operation &op : block.without_terminator()) {
    // The same in every thread: once per block, outside the thread loops.
    if (op.hasTrait<OpTrait::ConstantLike>() ||
        (!isa<gpu::BlockDimOp, gpu::GridDimOp, gpu::BlockIdOp>(op) &&
         uniformity.isUniformOp(&op))) {
      b.clone(op, uniform);
      continue;
    }
    if (auto dim = dyn_cast<gpu::BlockDimOp>(op)) {
      uniform.map(
          dim.getResult(),
          uniform.lookup(blockSizes[static_cast<int>(dim.getDimension())]));
      continue;
    }
    if (auto dim = dyn_cast<gpu::GridDimOp>(op)) {
      uniform.map(
          dim.getResult(),
          uniform.lookup(gridSizes[static_cast<int>(dim.getDimension())]));
      continue;
    }
    if (auto id = dyn_cast<gpu::BlockIdOp>(op)) {
      uniform.map(id.getResult(),
                  uniform.lookup(blocks[static_cast<int>(id.getDimension())]));
      continue;
    }
    if (!synchronizes(&op)) {
      stretch.push_back(&op);
      continue;
    }
    if (failed(lowerStretch(stretch, block, b)))
      return failure();
    stretch.clear();
    if (isa<gpu::BarrierOp>(op))
      continue;
    if (auto shuffle = dyn_cast<gpu::ShuffleOp>(op)) {
      lowerShuffle(shuffle, b);
      continue;
    }
    if (auto mma = dyn_cast<nvgpu::MmaSyncOp>(op)) {
      lowerMma(mma, b);
      continue;
    }
    // checkSplittable allows no other op around a barrier, shuffle or mma.
    if (failed(lowerLoop(cast<scf::ForOp>(op), b)))
      return failure();
  }
  return lowerStretch(stretch, block, b);
}

/// Checks, before anything is rewritten, that every barrier and shuffle
/// can be split at: only scf.for loops with uniform bounds between it and
/// the launch.
LogicalResult checkSplittable(gpu::LaunchOp launch, Uniformity &uniformity) {
  WalkResult result = launch.getBody().walk([&](Operation *meeting) {
    if (!meets(meeting))
      return WalkResult::advance();
    StringRef name = meeting->getName().getStringRef();
    for (Operation *parent = meeting->getParentOp(); parent != launch;
         parent = parent->getParentOp()) {
      auto loop = dyn_cast<scf::ForOp>(parent);
      if (!loop) {
        parent->emitOpError("holds a ")
            << name
            << " under control flow that threads may take differently; the "
               "emulation splits only scf.for loops";
        return WalkResult::interrupt();
      }
      for (Value bound :
           {loop.getLowerBound(), loop.getUpperBound(), loop.getStep()})
        if (!uniformity.isUniform(bound)) {
          loop.emitOpError("holds a ")
              << name
              << " but has a bound that may differ between threads; the "
                 "emulation cannot split it";
          return WalkResult::interrupt();
        }
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

/// A launch whose threads meet at barriers: block loops around stretches.
LogicalResult emulateWithBarriers(gpu::LaunchOp launch) {
  Uniformity uniformity(launch);
  if (failed(checkSplittable(launch, uniformity)))
    return failure();
  gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
  int64_t threads = 1;
  for (Value size : {block.x, block.y, block.z}) {
    std::optional<int64_t> count = getConstantIntValue(size);
    if (!count)
      return launch.emitOpError("has barriers and a block size that is not a "
                                "constant; the emulation needs to know its "
                                "threads");
    threads *= *count;
  }
  OpBuilder b(launch);
  Location loc = launch.getLoc();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
  Value sizes[] = {grid.z, grid.y, grid.x};
  Value ids[] = {launch.getBlockIds().z, launch.getBlockIds().y,
                 launch.getBlockIds().x};
  Operation *outermost = nullptr;
  IRMapping blockIds;
  for (int i = 0; i < 3; ++i) {
    auto loop = scf::ForOp::create(b, loc, zero, sizes[i], one);
    if (!outermost)
      outermost = loop;
    blockIds.map(ids[i], loop.getInductionVar());
    b.setInsertionPointToStart(loop.getBody());
  }
  BarrierSplitter splitter(launch, threads, outermost, uniformity);
  for (auto [id, loopId] : blockIds.getValueMap())
    splitter.uniform.map(id, loopId);
  gpu::KernelDim3 gridArgs = launch.getGridSize(),
                  blockArgs = launch.getBlockSize();
  gpu::KernelDim3 gridSizes = launch.getGridSizeOperandValues();
  splitter.uniform.map(gridArgs.x, gridSizes.x);
  splitter.uniform.map(gridArgs.y, gridSizes.y);
  splitter.uniform.map(gridArgs.z, gridSizes.z);
  splitter.uniform.map(blockArgs.x, block.x);
  splitter.uniform.map(blockArgs.y, block.y);
  splitter.uniform.map(blockArgs.z, block.z);
  // Workgroup memory: one buffer, reused by each block in turn.
  OpBuilder before(outermost);
  for (BlockArgument buffer : launch.getWorkgroupAttributions()) {
    auto type = cast<MemRefType>(buffer.getType());
    auto host = MemRefType::get(type.getShape(), type.getElementType(),
                                type.getLayout(), Attribute());
    splitter.uniform.map(buffer, memref::AllocaOp::create(before, loc, host));
  }
  if (failed(splitter.lowerBlock(launch.getBody().front(), b)))
    return failure();
  launch.erase();
  return success();
}

LogicalResult emulate(gpu::LaunchOp launch) {
  if (launch.getAsyncToken() && !launch.getAsyncToken().use_empty())
    return launch.emitOpError("is ordered by async tokens; emulate it before "
                              "attn-gpu-device-memory");
  if (!launch.getPrivateAttributions().empty() || launch.hasClusterSize())
    return launch.emitOpError("uses private attributions or clusters, which "
                              "the emulation does not run");
  WalkResult cooperative = launch.getBody().walk([](Operation *op) {
    return isa<gpu::SubgroupReduceOp, gpu::AllReduceOp>(op)
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  if (cooperative.wasInterrupted())
    return launch.emitOpError("has threads that reduce values together "
                              "(gpu.subgroup_reduce, gpu.all_reduce); the "
                              "emulation runs only barriers and shuffles");
  if (!launch.getWorkgroupAttributions().empty() ||
      synchronizes(launch.getOperation()))
    return emulateWithBarriers(launch);

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
    : attnc::test::impl::AttnGpuEmulateLaunchesBase<
          AttnGpuEmulateLaunchesPass> {
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
