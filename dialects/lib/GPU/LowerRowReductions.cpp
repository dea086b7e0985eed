//===- LowerRowReductions.cpp - Row reductions, a warp per row ------------===//
//
// A linalg.generic that reduces the last dimension of its iteration space
// into an output indexed by the others (softmax's row maximum and sum,
// layer norm's mean and variance, RMS norm's sum of squares) becomes a
// launch of its own with a warp per output element:
//
//   row = the warp's index; lane = its lane
//   p = identity of the combiner
//   for r = lane; r < N; r += 32:  p = combine(f(inputs at (row, r)), p)
//   for o = 16, 8, 4, 2, 1:        p = combine(p, shuffle xor(p, o))
//   lane 0: out[row] = combine(p, out[row])
//
// Neighbouring lanes read neighbouring elements of a row (one thread per row
// would have each lane of a warp read its own row, a row apart). Every lane
// of a warp past the last row runs the loop and the shuffles on row 0 (each
// `gpu.shuffle` needs all 32 lanes) and stores nothing.
//
//===----------------------------------------------------------------------===//

#include "attn/GPU/Passes.h"
#include "attn/Target/GpuTarget.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <limits>

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNGPULOWERROWREDUCTIONS
#include "attn/GPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

/// A row reduction the launch computes: `combiner` (in the body) combines
/// `element` (computed from the inputs alone) with the output's value `out`.
struct RowReduction {
  linalg::GenericOp op;
  Operation *combiner;
  Value element;
  BlockArgument out;
  /// The combiner's identity: where each lane's partial result starts.
  float identity;
  /// Iterations of the parallel dimensions, and of the reduced one.
  SmallVector<int64_t> rowShape;
  int64_t length;
};

/// The identity of a combiner of f32 values attnc's lowering produces, or
/// nothing for any other op.
std::optional<float> identityOf(Operation *combiner) {
  if (isa<arith::AddFOp>(combiner))
    return 0.0f;
  if (isa<arith::MaximumFOp, arith::MaxNumFOp>(combiner))
    return -std::numeric_limits<float>::infinity();
  if (isa<arith::MinimumFOp, arith::MinNumFOp>(combiner))
    return std::numeric_limits<float>::infinity();
  return std::nullopt;
}

/// `op` as a row reduction, or nothing when it is not one this pass
/// lowers (it then stays a loop nest of a thread per output).
std::optional<RowReduction>
matchRowReduction(linalg::GenericOp op, func::FuncOp func,
                  const attn::GpuTargetDescription &target) {
  // A launch of its own is host code: at the function's top level.
  if (op->getParentOp() != func.getOperation() ||
      !op.hasPureBufferSemantics() || op.getNumDpsInits() != 1)
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  unsigned rank = iterators.size();
  if (rank == 0 || iterators.back() != utils::IteratorType::reduction ||
      llvm::count(iterators, utils::IteratorType::reduction) != 1)
    return std::nullopt;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type || !type.hasStaticShape() ||
        !op.getMatchingIndexingMap(&operand).isProjectedPermutation(
            /*allowZeroInResults=*/true))
      return std::nullopt;
  }
  OpOperand *init = op.getDpsInitOperand(0);
  if (op.getMatchingIndexingMap(init).isFunctionOfDim(rank - 1) ||
      !getElementTypeOrSelf(init->get().getType()).isF32())
    return std::nullopt;

  // The body: what the inputs give, combined once with the output's value.
  Block *body = op.getBlock();
  BlockArgument out = op.getMatchingBlockArgument(init);
  if (!out.hasOneUse())
    return std::nullopt;
  Operation *combiner = *out.user_begin();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  std::optional<float> identity = identityOf(combiner);
  if (!identity || yield.getValues().size() != 1 ||
      yield.getValues()[0] != combiner->getResult(0))
    return std::nullopt;
  Value element = combiner->getOperand(0) == out ? combiner->getOperand(1)
                                                 : combiner->getOperand(0);
  for (Operation &nested : body->without_terminator())
    if (nested.getNumRegions() != 0 || !isMemoryEffectFree(&nested))
      return std::nullopt;

  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic) ||
      !attn::usesWarpPerRow(target, ranges.back()))
    return std::nullopt;
  return RowReduction{
      op,           combiner,
      element,      out,
      *identity,    SmallVector<int64_t>(ranges.begin(), ranges.end() - 1),
      ranges.back()};
}

/// The indices `map` (a projected permutation, zeros allowed) takes at
/// `ivs`.
SmallVector<Value> indicesAt(OpBuilder &b, Location loc, AffineMap map,
                             ValueRange ivs) {
  SmallVector<Value> indices;
  for (AffineExpr expr : map.getResults()) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr))
      indices.push_back(ivs[dim.getPosition()]);
    else
      indices.push_back(arith::ConstantIndexOp::create(b, loc, 0));
  }
  return indices;
}

/// The combiner applied to `element` and `acc` in the places of the body's
/// element and output value (the operands keep the body's order).
Value combine(OpBuilder &b, const RowReduction &reduction, Value element,
              Value acc) {
  IRMapping operands;
  operands.map(reduction.element, element);
  operands.map(reduction.out, acc);
  return b.clone(*reduction.combiner, operands)->getResult(0);
}

void lower(const RowReduction &reduction,
           const attn::GpuTargetDescription &target) {
  linalg::GenericOp op = reduction.op;
  Location loc = op.getLoc();
  OpBuilder b(op);
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  int64_t warp = target.warpSize;
  int64_t rows = 1;
  for (int64_t size : reduction.rowShape)
    rows *= size;
  int64_t threads = attn::threadsPerBlock(target, rows * warp);
  int64_t blocks = llvm::divideCeil(rows * warp, threads);

  Value one = index(1);
  auto launch = gpu::LaunchOp::create(
      b, loc, index(blocks), one, one, index(threads), one, one,
      /*dynamicSharedMemorySize=*/nullptr, b.getType<gpu::AsyncTokenType>(),
      /*asyncDependencies=*/ValueRange{});
  b.setInsertionPointToStart(&launch.getBody().front());
  Value thread = launch.getThreadIds().x;
  Value lane = arith::RemUIOp::create(b, loc, thread, index(warp));
  Value row = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, launch.getBlockIds().x,
                            index(threads / warp)),
      arith::DivUIOp::create(b, loc, thread, index(warp)));
  Value live = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row,
                                     index(rows));
  Value safeRow = arith::SelectOp::create(b, loc, live, row, index(0));

  // The row's indices, innermost fastest (as attn-gpu-map-loops numbers
  // the iterations of a loop nest).
  SmallVector<Value> ivs(reduction.rowShape.size());
  Value rest = safeRow;
  for (int64_t d = static_cast<int64_t>(ivs.size()) - 1; d >= 0; --d) {
    if (d == 0) {
      ivs[d] = rest;
      break;
    }
    Value size = index(reduction.rowShape[d]);
    ivs[d] = arith::RemUIOp::create(b, loc, rest, size);
    rest = arith::DivUIOp::create(b, loc, rest, size);
  }

  // The lane's partial result over columns lane, lane + 32, ...
  Value identity =
      arith::ConstantOp::create(b, loc, b.getF32FloatAttr(reduction.identity));
  auto columns = scf::ForOp::create(b, loc, lane, index(reduction.length),
                                    index(warp), ValueRange{identity});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(columns.getBody());
    SmallVector<Value> at(ivs);
    at.push_back(columns.getInductionVar());
    IRMapping body;
    for (OpOperand *input : op.getDpsInputOperands()) {
      Value value = memref::LoadOp::create(
          b, loc, input->get(),
          indicesAt(b, loc, op.getMatchingIndexingMap(input), at));
      body.map(op.getMatchingBlockArgument(input), value);
    }
    for (Operation &nested : op.getBlock()->without_terminator()) {
      if (&nested == reduction.combiner)
        continue;
      if (auto dim = dyn_cast<linalg::IndexOp>(nested)) {
        body.map(dim.getResult(), at[dim.getDim()]);
        continue;
      }
      b.clone(nested, body);
    }
    Value acc = columns.getRegionIterArgs()[0];
    Value element = body.lookupOrDefault(reduction.element);
    scf::YieldOp::create(b, loc, combine(b, reduction, element, acc));
  }

  // The warp's lanes combined: after the step of offset o, each lane holds
  // the result of the 2o lanes around it; after o = 1, of all 32.
  Value partial = columns.getResult(0);
  for (int64_t offset = warp / 2; offset >= 1; offset /= 2) {
    Value other = gpu::ShuffleOp::create(
                      b, loc, partial, static_cast<int32_t>(offset),
                      static_cast<int32_t>(warp), gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    partial = combine(b, reduction, other, partial);
  }

  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, index(0));
  auto store =
      scf::IfOp::create(b, loc, arith::AndIOp::create(b, loc, live, first),
                        /*withElseRegion=*/false);
  b.setInsertionPointToStart(store.thenBlock());
  OpOperand *init = op.getDpsInitOperand(0);
  SmallVector<Value> outAt =
      indicesAt(b, loc, op.getMatchingIndexingMap(init), ivs);
  Value old = memref::LoadOp::create(b, loc, init->get(), outAt);
  memref::StoreOp::create(b, loc, combine(b, reduction, partial, old),
                          init->get(), outAt);
  b.setInsertionPointToEnd(&launch.getBody().front());
  gpu::TerminatorOp::create(b, loc);
}

struct AttnGpuLowerRowReductionsPass
    : mlir::attn::impl::AttnGpuLowerRowReductionsBase<
          AttnGpuLowerRowReductionsPass> {
  using AttnGpuLowerRowReductionsBase::AttnGpuLowerRowReductionsBase;

  void runOnOperation() override {
    attn::GpuTargetDescription target = attn::describeGpu(chip);
    func::FuncOp func = getOperation();
    SmallVector<RowReduction> reductions;
    func.walk([&](linalg::GenericOp op) {
      if (std::optional<RowReduction> reduction =
              matchRowReduction(op, func, target))
        reductions.push_back(*reduction);
    });
    for (const RowReduction &reduction : reductions) {
      lower(reduction, target);
      reduction.op->erase();
    }
  }
};

} // namespace
