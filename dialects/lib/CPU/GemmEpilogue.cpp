//===- GemmEpilogue.cpp - What a GEMM does besides accumulating -----------===//

#include "GemmEpilogue.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::attn;

namespace {

/// The buffer `value` views, through reshapes.
Value viewedBuffer(Value value) {
  for (;;) {
    if (auto collapse = value.getDefiningOp<memref::CollapseShapeOp>())
      value = collapse.getSrc();
    else if (auto expand = value.getDefiningOp<memref::ExpandShapeOp>())
      value = expand.getSrc();
    else
      return value;
  }
}

/// Ops that neither read nor write the contents of a buffer.
bool isInert(Operation *op) {
  return isa<memref::CollapseShapeOp, memref::ExpandShapeOp, memref::AllocOp,
             arith::ConstantOp>(op);
}

Operation *previousActive(Operation *op) {
  for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode())
    if (!isInert(prev))
      return prev;
  return nullptr;
}

Operation *nextActive(Operation *op) {
  for (Operation *next = op->getNextNode(); next; next = next->getNextNode())
    if (!isInert(next))
      return next;
  return nullptr;
}

bool isPositiveZero(Value value) {
  FloatAttr constant;
  return matchPattern(value, m_Constant(&constant)) &&
         constant.getValue().isPosZero();
}

/// max(x, +0.0) elementwise with identity maps, as attn-lower-to-linalg
/// builds relu: returns the input, or null.
Value reluInput(linalg::GenericOp generic) {
  if (generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1 ||
      generic.getNumReductionLoops() != 0 ||
      !llvm::all_of(generic.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return nullptr;
  Block &body = generic.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto max = yield.getValues()[0].getDefiningOp<arith::MaximumFOp>();
  if (!max || max->getBlock() != &body || max.getLhs() != body.getArgument(0) ||
      !isPositiveZero(max.getRhs()))
    return nullptr;
  for (Operation &op : body.without_terminator())
    if (&op != max.getOperation() && !isa<arith::ConstantOp>(op))
      return nullptr;
  return generic.getDpsInputs()[0];
}

/// Whether `value` is available before `op` (same block or an argument of
/// an enclosing block).
bool availableBefore(Value value, Operation *op) {
  if (auto arg = dyn_cast<BlockArgument>(value))
    return arg.getOwner()->getParentOp()->isAncestor(op);
  Operation *def = value.getDefiningOp();
  return def->getBlock() == op->getBlock() && def->isBeforeInBlock(op);
}

} // namespace

GemmEpilogue mlir::attn::foldGemmEpilogue(RewriterBase &rewriter,
                                          linalg::MatmulOp matmul) {
  GemmEpilogue epilogue;
  Value init = matmul.getDpsInits()[0];
  Value buffer = viewedBuffer(init);
  auto bufferType = dyn_cast<MemRefType>(buffer.getType());
  if (!buffer.getDefiningOp<memref::AllocOp>() || !bufferType ||
      !bufferType.getLayout().isIdentity())
    return epilogue;
  // A collapse of the leading dims, or the buffer itself.
  if (init != buffer) {
    auto collapse = init.getDefiningOp<memref::CollapseShapeOp>();
    if (!collapse || collapse.getSrc() != buffer || !collapse->hasOneUse() ||
        collapse.getReassociationIndices().back().size() != 1)
      return epilogue;
  }
  int64_t rank = bufferType.getRank(), columns = bufferType.getShape().back();

  // The accumulator's initial contents, written right before the matmul.
  Operation *initOp = previousActive(matmul);
  if (auto fill = dyn_cast_or_null<linalg::FillOp>(initOp)) {
    if (fill.getDpsInits()[0] == buffer &&
        isPositiveZero(fill.getDpsInputs()[0]))
      epilogue.zeroInit = true;
  } else if (auto broadcast = dyn_cast_or_null<linalg::BroadcastOp>(initOp)) {
    auto biasType = dyn_cast<MemRefType>(broadcast.getInput().getType());
    SmallVector<int64_t> leading =
        llvm::to_vector(llvm::seq<int64_t>(0, rank - 1));
    if (broadcast.getInit() == buffer && biasType && biasType.getRank() == 1 &&
        biasType.getShape()[0] == columns &&
        broadcast.getDimensions() == ArrayRef(leading))
      epilogue.bias = broadcast.getInput();
  }
  if (epilogue.zeroInit || epilogue.bias)
    rewriter.eraseOp(initOp);

  // relu(C) into another buffer right after, C read by nothing else: the
  // last k slice stores max(C, 0) there.
  auto relu = dyn_cast_or_null<linalg::GenericOp>(nextActive(matmul));
  if (!relu || reluInput(relu) != buffer)
    return epilogue;
  Value output = relu.getDpsInits()[0];
  Value lhs = matmul.getDpsInputs()[0], rhs = matmul.getDpsInputs()[1];
  if (output.getType() != buffer.getType() ||
      !availableBefore(output, matmul) ||
      viewedBuffer(output) == viewedBuffer(lhs) ||
      viewedBuffer(output) == viewedBuffer(rhs))
    return epilogue;
  for (Operation *user : buffer.getUsers())
    if (user != init.getDefiningOp() && user != relu.getOperation() &&
        user != matmul.getOperation() && !isa<memref::DeallocOp>(user))
      return epilogue;
  rewriter.setInsertionPoint(matmul);
  Value view = output;
  if (init != buffer)
    view = memref::CollapseShapeOp::create(
        rewriter, relu.getLoc(), output,
        init.getDefiningOp<memref::CollapseShapeOp>()
            .getReassociationIndices());
  epilogue.reluOutput = view;
  rewriter.eraseOp(relu);
  return epilogue;
}
