//===- Bf16PairGemms.cpp - bf16 GEMMs read as bf16, k in pairs ------------===//
//
// attn-bf16-pair-gemms (semantics in Passes.td and Bf16PairGemm.h).
//
//===----------------------------------------------------------------------===//

#include "Bf16PairGemm.h"

#include "attn/CPU/Passes.h"
#include "attn/IR/AttnDialect.h"
#include "attn/Target/CpuTarget.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNBF16PAIRGEMMS
#include "attn/CPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// A linalg.generic that only widens a bf16 tensor to f32 (attn-compute-in-
/// f32's extension, lowered): returns its input, or null.
Value widenedBf16(linalg::GenericOp generic) {
  if (generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1 ||
      generic.getNumReductionLoops() != 0 ||
      !llvm::all_of(generic.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return {};
  Value input = generic.getDpsInputs()[0];
  if (!getElementTypeOrSelf(input.getType()).isBF16() ||
      !getElementTypeOrSelf(generic->getResult(0).getType()).isF32())
    return {};
  Block &body = generic.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto extend = yield.getOperand(0).getDefiningOp<arith::ExtFOp>();
  if (!extend || extend->getBlock() != &body ||
      extend.getIn() != body.getArgument(0) || body.getOperations().size() != 2)
    return {};
  return input;
}

/// The bf16 tensor that `value` (f32) widens, through reshapes and
/// transposes of the widened tensor, or null. With `builder`, the reshapes
/// and transposes are rebuilt on the bf16 tensor (before the ops they
/// copy); without, it only checks.
Value bf16SourceOf(Value value, OpBuilder *builder) {
  Operation *def = value.getDefiningOp();
  if (!def)
    return {};
  if (auto generic = dyn_cast<linalg::GenericOp>(def))
    return widenedBf16(generic);
  auto rebuiltType = [](Value v) {
    return cast<RankedTensorType>(v.getType())
        .clone(BFloat16Type::get(v.getContext()));
  };
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(def)) {
    Value source = bf16SourceOf(collapse.getSrc(), builder);
    if (!source || !builder)
      return source;
    builder->setInsertionPoint(collapse);
    return tensor::CollapseShapeOp::create(*builder, collapse.getLoc(), source,
                                           collapse.getReassociationIndices());
  }
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(def)) {
    Value source = bf16SourceOf(expand.getSrc(), builder);
    if (!source || !builder)
      return source;
    builder->setInsertionPoint(expand);
    return tensor::ExpandShapeOp::create(
        *builder, expand.getLoc(), rebuiltType(expand.getResult()), source,
        expand.getReassociationIndices(), expand.getMixedOutputShape());
  }
  if (auto transpose = dyn_cast<linalg::TransposeOp>(def)) {
    if (!transpose.hasPureTensorSemantics())
      return {};
    Value source = bf16SourceOf(transpose.getInput(), builder);
    if (!source || !builder)
      return source;
    builder->setInsertionPoint(transpose);
    Location loc = transpose.getLoc();
    auto type = rebuiltType(transpose->getResult(0));
    Value init = tensor::EmptyOp::create(*builder, loc, type.getShape(),
                                         type.getElementType());
    return linalg::TransposeOp::create(*builder, loc, source, init,
                                       transpose.getPermutation())
        ->getResult(0);
  }
  return {};
}

/// `pair` (the low half the even k) in one f32 slot, as bits.
Value packPair(OpBuilder &b, Location loc, Value even, Value odd) {
  Type i16 = b.getI16Type(), i32 = b.getI32Type();
  auto widen = [&](Value half) {
    return arith::ExtUIOp::create(b, loc, i32,
                                  arith::BitcastOp::create(b, loc, i16, half));
  };
  Value high = arith::ShLIOp::create(
      b, loc, widen(odd), arith::ConstantIntOp::create(b, loc, i32, 16));
  Value bits = arith::OrIOp::create(b, loc, high, widen(even));
  return arith::BitcastOp::create(b, loc, b.getF32Type(), bits);
}

/// The two bf16 halves of a packed slot (even k, odd k).
std::pair<Value, Value> unpackPair(OpBuilder &b, Location loc, Value slot) {
  Type i16 = b.getI16Type(), i32 = b.getI32Type(), bf16 = b.getBF16Type();
  Value bits = arith::BitcastOp::create(b, loc, i32, slot);
  auto half = [&](Value v) {
    return arith::BitcastOp::create(b, loc, bf16,
                                    arith::TruncIOp::create(b, loc, i16, v));
  };
  Value odd = arith::ShRUIOp::create(
      b, loc, bits, arith::ConstantIntOp::create(b, loc, i32, 16));
  return {half(bits), half(odd)};
}

/// B [K, N] bf16 (or its transpose [N, K], `transposed`) as f32 slots of
/// pairs: [K/2, N], or [N/16, K/2, 16] (`tiles`). The loops run over the
/// source's rows in memory order.
Value packB(OpBuilder &b, Location loc, Value source, bool transposed,
            int64_t depth, int64_t columns, bool tiles) {
  MLIRContext *context = b.getContext();
  // Loops: (n, p) over [N, K], (p, n) over [K, N]; with tiles, n is
  // (tile, column in the tile), the tile outermost.
  unsigned loops = tiles ? 3 : 2;
  SmallVector<AffineExpr> d;
  for (unsigned i = 0; i < loops; ++i)
    d.push_back(getAffineDimExpr(i, context));
  AffineExpr n, p;
  if (tiles) {
    n = transposed ? d[0] * 16 + d[1] : d[0] * 16 + d[2];
    p = transposed ? d[2] : d[1];
  } else {
    n = transposed ? d[0] : d[1];
    p = transposed ? d[1] : d[0];
  }
  auto map = [&](ArrayRef<AffineExpr> results) {
    return AffineMap::get(loops, 0, results, context);
  };
  AffineExpr even = 2 * p, odd = 2 * p + 1;
  AffineMap output = !tiles       ? map({p, n})
                     : transposed ? map({d[0], d[2], d[1]})
                                  : map({d[0], d[1], d[2]});
  SmallVector<AffineMap> maps =
      transposed
          ? SmallVector<AffineMap>{map({n, even}), map({n, odd}), output}
          : SmallVector<AffineMap>{map({even, n}), map({odd, n}), output};
  SmallVector<int64_t> shape =
      tiles ? SmallVector<int64_t>{columns / 16, depth / 2, 16}
            : SmallVector<int64_t>{depth / 2, columns};
  Value init = tensor::EmptyOp::create(b, loc, shape, b.getF32Type());
  auto generic = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{source, source}, ValueRange{init},
      maps,
      SmallVector<utils::IteratorType>(loops, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        linalg::YieldOp::create(nb, nl, packPair(nb, nl, args[0], args[1]));
      });
  return generic->getResult(0);
}

/// `value` [rows, columns] viewed as [rows / 2, 2, columns] (`dim` 0) or
/// [rows, columns / 2, 2] (`dim` 1): the pairs of k as a dimension.
Value pairsOf(OpBuilder &b, Location loc, Value value, int dim) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t rows = type.getDimSize(0), columns = type.getDimSize(1);
  if (dim == 0)
    return tensor::ExpandShapeOp::create(
        b, loc, type.clone({rows / 2, 2, columns}), value,
        SmallVector<ReassociationIndices>{{0, 1}, {2}});
  return tensor::ExpandShapeOp::create(
      b, loc, type.clone({rows, columns / 2, 2}), value,
      SmallVector<ReassociationIndices>{{0}, {1, 2}});
}

/// C[m, n] += sum over pairs, in vdpbf16ps's order (Bf16PairGemm.h): from
/// A [M, K] and B [K, N] widened to f32, or from A [M, K] bf16 and B's
/// slots (`form`). A (and a widened B) are read as [M, K/2, 2] ([K/2, 2, N])
/// so that the pair index is a loop of its own.
Value pairGemm(OpBuilder &b, Location loc, Value lhs, Value rhs, Value out,
               Bf16PairForm form) {
  MLIRContext *context = b.getContext();
  AffineExpr m, n, p;
  bindDims(context, m, n, p);
  auto map = [&](ArrayRef<AffineExpr> results) {
    return AffineMap::get(3, 0, results, context);
  };
  AffineExpr odd = getAffineConstantExpr(1, context),
             even = getAffineConstantExpr(0, context);
  Value lhsPairs = pairsOf(b, loc, lhs, 1);
  SmallVector<Value> inputs = {lhsPairs, lhsPairs};
  SmallVector<AffineMap> maps = {map({m, p, odd}), map({m, p, even})};
  switch (form) {
  case Bf16PairForm::Widened: {
    Value rhsPairs = pairsOf(b, loc, rhs, 0);
    inputs.append({rhsPairs, rhsPairs});
    maps.append({map({p, odd, n}), map({p, even, n})});
    break;
  }
  case Bf16PairForm::Slots:
    inputs.push_back(rhs);
    maps.push_back(map({p, n}));
    break;
  case Bf16PairForm::Tiles:
    inputs.push_back(rhs);
    maps.push_back(map({n.floorDiv(16), p, n % 16}));
    break;
  }
  maps.push_back(map({m, n}));
  bool widened = form == Bf16PairForm::Widened;
  auto generic = linalg::GenericOp::create(
      b, loc, out.getType(), inputs, ValueRange{out}, maps,
      {utils::IteratorType::parallel, utils::IteratorType::parallel,
       utils::IteratorType::reduction},
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Type f32 = nb.getF32Type();
        auto widen = [&](Value x) -> Value {
          return x.getType().isF32() ? x
                                     : arith::ExtFOp::create(nb, nl, f32, x);
        };
        Value oddB = args[2], evenB = args[widened ? 3 : 2];
        if (!widened)
          std::tie(evenB, oddB) = unpackPair(nb, nl, args[2]);
        auto product = [&](Value x, Value y) {
          return arith::MulFOp::create(nb, nl, widen(x), widen(y));
        };
        Value sum =
            arith::AddFOp::create(nb, nl, args.back(), product(args[0], oddB));
        sum = arith::AddFOp::create(nb, nl, sum, product(args[1], evenB));
        linalg::YieldOp::create(nb, nl, sum);
      });
  generic->setAttr(AttnDialect::kBf16PairGemmAttr, UnitAttr::get(context));
  return generic->getResult(0);
}

/// Erases the ops that define `roots`, and those that define their operands
/// in turn, that nothing uses any more (the widenings and transposes a
/// rewrite left behind).
void eraseDeadChains(ArrayRef<Value> roots) {
  llvm::SetVector<Operation *> chain;
  SmallVector<Value> work(roots.begin(), roots.end());
  while (!work.empty()) {
    Operation *op = work.pop_back_val().getDefiningOp();
    if (op && chain.insert(op))
      llvm::append_range(work, op->getOperands());
  }
  llvm::SmallPtrSet<Operation *, 16> erased;
  for (bool changed = true; changed;) {
    changed = false;
    for (Operation *op : chain)
      if (!erased.contains(op) && isOpTriviallyDead(op)) {
        erased.insert(op);
        op->erase();
        changed = true;
      }
  }
}

/// Rewrites `matmul` when both operands are widened bf16 and k is even,
/// in the form the target's schedule takes.
void rewriteMatmul(linalg::MatmulOp matmul, const CpuSchedule &schedule) {
  if (!matmul.hasPureTensorSemantics() ||
      matmul.getIndexingMapsArray() !=
          linalg::MatmulOp::getDefaultIndexingMaps(matmul.getContext()))
    return;
  Value lhs = matmul.getDpsInputs()[0], rhs = matmul.getDpsInputs()[1];
  Value out = matmul.getDpsInits()[0];
  auto lhsType = dyn_cast<RankedTensorType>(lhs.getType());
  auto rhsType = dyn_cast<RankedTensorType>(rhs.getType());
  if (!lhsType || !rhsType || !lhsType.hasStaticShape() ||
      !rhsType.hasStaticShape() || !getElementTypeOrSelf(out.getType()).isF32())
    return;
  int64_t depth = rhsType.getDimSize(0), columns = rhsType.getDimSize(1);
  if (depth < 2 || depth % 2 != 0 || !bf16SourceOf(lhs, nullptr) ||
      !bf16SourceOf(rhs, nullptr))
    return;
  // AMX tiles of one shape only (16 rows of 64 bytes: C, A and B alike):
  // LLVM's tile allocation runs out of its 8 registers when edge tiles of
  // other shapes join them.
  bool tiles =
      lhsType.getDimSize(0) % 16 == 0 && columns % 16 == 0 && depth % 32 == 0;
  bool memoryBound = lhsType.getDimSize(0) < schedule.memoryBoundRows;
  Bf16PairForm form =
      schedule.bf16Amx && tiles ? Bf16PairForm::Tiles
      : schedule.bf16Dot != CpuSchedule::Bf16Dot::None || memoryBound
          ? Bf16PairForm::Slots
          : Bf16PairForm::Widened;
  OpBuilder b(matmul);
  Location loc = matmul.getLoc();
  Value result;
  SmallVector<Value> roots = {lhs, rhs};
  if (form == Bf16PairForm::Widened) {
    result = pairGemm(b, loc, lhs, rhs, out, form);
  } else {
    Value narrowLhs = bf16SourceOf(lhs, &b);
    Value narrowRhs = bf16SourceOf(rhs, &b);
    // A transpose of the weight [N, K] is read through the pack's maps.
    Value rebuilt = narrowRhs;
    bool transposed = false;
    if (auto transpose = narrowRhs.getDefiningOp<linalg::TransposeOp>()) {
      narrowRhs = transpose.getInput();
      transposed = true;
    }
    b.setInsertionPoint(matmul);
    Value packed = packB(b, loc, narrowRhs, transposed, depth, columns,
                         form == Bf16PairForm::Tiles);
    result = pairGemm(b, loc, narrowLhs, packed, out, form);
    roots.push_back(rebuilt);
  }
  matmul->getResult(0).replaceAllUsesWith(result);
  matmul->erase();
  eraseDeadChains(roots);
}

struct AttnBf16PairGemmsPass
    : mlir::attn::impl::AttnBf16PairGemmsBase<AttnBf16PairGemmsPass> {
  void runOnOperation() override {
    FailureOr<CpuSchedule> schedule = cpuScheduleOf(getOperation());
    if (failed(schedule))
      return signalPassFailure();
    SmallVector<linalg::MatmulOp> matmuls;
    getOperation()->walk(
        [&](linalg::MatmulOp matmul) { matmuls.push_back(matmul); });
    for (linalg::MatmulOp matmul : matmuls)
      rewriteMatmul(matmul, *schedule);
  }
};

} // namespace

std::optional<Bf16PairGemm>
mlir::attn::matchBf16PairGemm(linalg::GenericOp op) {
  if (!op->hasAttr(AttnDialect::kBf16PairGemmAttr) ||
      op.getNumDpsInits() != 1 || op.getNumDpsInputs() < 3 ||
      op.getNumDpsInputs() > 4)
    return std::nullopt;
  Value lhs = op.getDpsInputs()[0], rhs = op.getDpsInputs()[2],
        out = op.getDpsInits()[0];
  auto lhsType = dyn_cast<ShapedType>(lhs.getType());
  auto rhsType = dyn_cast<ShapedType>(rhs.getType());
  auto outType = dyn_cast<ShapedType>(out.getType());
  if (op.getDpsInputs()[1] != lhs || !lhsType || !rhsType || !outType ||
      !lhsType.hasStaticShape() || !rhsType.hasStaticShape() ||
      !outType.hasStaticShape() || lhsType.getRank() != 3 ||
      outType.getRank() != 2 || !rhsType.getElementType().isF32() ||
      !outType.getElementType().isF32())
    return std::nullopt;
  int64_t rows = outType.getDimSize(0), columns = outType.getDimSize(1),
          pairs = lhsType.getDimSize(1);
  Bf16PairForm form;
  ArrayRef<int64_t> b = rhsType.getShape();
  if (op.getNumDpsInputs() == 4) {
    form = Bf16PairForm::Widened;
    if (op.getDpsInputs()[3] != rhs ||
        b != ArrayRef<int64_t>{pairs, 2, columns})
      return std::nullopt;
  } else if (rhsType.getRank() == 2) {
    form = Bf16PairForm::Slots;
    if (b != ArrayRef<int64_t>{pairs, columns})
      return std::nullopt;
  } else {
    form = Bf16PairForm::Tiles;
    if (rows % 16 != 0 || columns % 16 != 0 || pairs % 16 != 0 ||
        b != ArrayRef<int64_t>{columns / 16, pairs, 16})
      return std::nullopt;
  }
  Type lhsElement = lhsType.getElementType();
  if (lhsType.getDimSize(0) != rows || lhsType.getDimSize(2) != 2 ||
      !(form == Bf16PairForm::Widened ? lhsElement.isF32()
                                      : lhsElement.isBF16()))
    return std::nullopt;
  return Bf16PairGemm{lhs, rhs, out, rows, columns, pairs, form};
}
