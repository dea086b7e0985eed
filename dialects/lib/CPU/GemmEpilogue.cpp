//===- GemmEpilogue.cpp - What a GEMM does besides accumulating -----------===//

#include "GemmEpilogue.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

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

/// A scalar float constant (inside the body or hoisted out of it).
bool isScalarConstant(Value value) {
  FloatAttr constant;
  return matchPattern(value, m_Constant(&constant));
}

/// An op of an activation's body that has a lane-wise vector form: an
/// elementwise arith/math op on scalars (not index: no linalg.index, loads
/// or other ops that depend on where the element is).
bool isLaneWise(Operation &op) {
  if (!isa<arith::ArithDialect, math::MathDialect>(op.getDialect()) ||
      !op.hasTrait<OpTrait::Elementwise>() || op.getNumRegions() != 0)
    return false;
  auto scalar = [](Type type) { return type.isIntOrFloat(); };
  return llvm::all_of(op.getOperandTypes(), scalar) &&
         llvm::all_of(op.getResultTypes(), scalar);
}

/// An elementwise op of one f32 input into an output of its type, with
/// identity maps, whose body reads only the input's element, constants and
/// its own lane-wise ops, as attn-lower-to-linalg builds relu and gelu:
/// returns the input, or null.
Value activationInput(linalg::GenericOp generic) {
  if (generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1 ||
      generic.getNumReductionLoops() != 0 || generic->getNumResults() != 0 ||
      !llvm::all_of(generic.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return nullptr;
  Value input = generic.getDpsInputs()[0];
  if (input.getType() != generic.getDpsInits()[0].getType() ||
      !getElementTypeOrSelf(input.getType()).isF32())
    return nullptr;
  Block &body = generic.getRegion().front();
  // The output's old contents are not read.
  if (!body.getArgument(1).use_empty())
    return nullptr;
  auto known = [&](Value value) {
    if (value == body.getArgument(0) || isScalarConstant(value))
      return true;
    Operation *def = value.getDefiningOp();
    return def && def->getBlock() == &body;
  };
  for (Operation &op : body.without_terminator()) {
    if (isa<arith::ConstantOp>(op) && isScalarConstant(op.getResult(0)))
      continue;
    if (!isLaneWise(op) || !llvm::all_of(op.getOperands(), known))
      return nullptr;
  }
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (yield.getNumOperands() != 1 || !known(yield.getOperand(0)) ||
      !yield.getOperand(0).getType().isF32())
    return nullptr;
  return input;
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
                                          linalg::LinalgOp matmul) {
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

  // activation(C) into another buffer right after, C read by nothing else:
  // the last k slice stores activation(C) there.
  auto activation = dyn_cast_or_null<linalg::GenericOp>(nextActive(matmul));
  if (!activation || activationInput(activation) != buffer)
    return epilogue;
  Value output = activation.getDpsInits()[0];
  if (output.getType() != buffer.getType() ||
      !availableBefore(output, matmul) ||
      llvm::any_of(matmul.getDpsInputs(), [&](Value input) {
        return viewedBuffer(output) == viewedBuffer(input);
      }))
    return epilogue;
  for (Operation *user : buffer.getUsers())
    if (user != init.getDefiningOp() && user != activation.getOperation() &&
        user != matmul && !isa<memref::DeallocOp>(user))
      return epilogue;
  rewriter.setInsertionPoint(matmul);
  Value view = output;
  if (init != buffer)
    view = memref::CollapseShapeOp::create(
        rewriter, activation.getLoc(), output,
        init.getDefiningOp<memref::CollapseShapeOp>()
            .getReassociationIndices());
  epilogue.activation = activation;
  epilogue.activationOutput = view;
  return epilogue;
}

Value mlir::attn::applyActivation(OpBuilder &b, Location loc,
                                  linalg::GenericOp activation, Value vector) {
  int64_t lanes = cast<VectorType>(vector.getType()).getNumElements();
  auto vectorOf = [&](Type scalar) { return VectorType::get({lanes}, scalar); };
  Block &body = activation.getRegion().front();
  IRMapping mapping;
  mapping.map(body.getArgument(0), vector);
  auto splat = [&](Value scalar) -> Value {
    FloatAttr constant;
    (void)matchPattern(scalar, m_Constant(&constant));
    return arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(vectorOf(constant.getType()),
                               constant.getValue()));
  };
  for (Operation &op : body.without_terminator()) {
    if (isa<arith::ConstantOp>(op)) {
      mapping.map(op.getResult(0), splat(op.getResult(0)));
      continue;
    }
    // Constants hoisted out of the body (by canonicalization) are splat
    // here.
    for (Value operand : op.getOperands())
      if (!mapping.contains(operand))
        mapping.map(operand, splat(operand));
    Operation *lanewise = b.clone(op, mapping);
    for (OpResult result : lanewise->getResults())
      result.setType(vectorOf(result.getType()));
  }
  Value result = cast<linalg::YieldOp>(body.getTerminator()).getOperand(0);
  if (!mapping.contains(result))
    return splat(result);
  return mapping.lookup(result);
}
