//===- ComputeInF32.cpp - Every op on bf16/f16 computes in f32 ------------===//
//
// attn-compute-in-f32 (semantics in Passes.td): the one place of the rule
// "each op computes in f32 and rounds its result once" (a result whose one
// use is an elementwise op goes to it in f32: keepsResultInF32) for every
// lowering after it (the linalg path, the fused attention loops, the GPU,
// Halide), which then see f32 ops between casts.
//
//===----------------------------------------------------------------------===//

#include "attn/IR/AttnDialect.h"
#include "attn/IR/AttnOps.h"
#include "attn/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNCOMPUTEINF32
#include "attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

bool isLowPrecision(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor &&
         (tensor.getElementType().isBF16() || tensor.getElementType().isF16());
}

RankedTensorType inF32(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return tensor.clone(Float32Type::get(type.getContext()));
}

bool isElementwise(Operation *op) {
  return isa<AddOp, SubOp, MulOp, ReluOp, GeluOp, SiluOp, TanhOp, SigmoidOp>(
      op);
}

} // namespace

bool mlir::attn::keepsResultInF32(Value result) {
  return isLowPrecision(result.getType()) && result.getDefiningOp() &&
         isa<AttnDialect>(result.getDefiningOp()->getDialect()) &&
         !isa<CastOp>(result.getDefiningOp()) && result.hasOneUse() &&
         isElementwise(*result.getUsers().begin());
}

namespace {

/// The bf16/f16 type a composite op computed in before attn-compute-in-f32
/// widened it (recorded on it), or its result's type before.
FloatType narrowTypeOf(Operation *op) {
  if (!isa<MultiheadAttentionOp, AttentionOp, FfnOp>(op))
    return nullptr;
  if (auto recorded =
          op->getAttrOfType<TypeAttr>(AttnDialect::kInnerRoundingAttr))
    return cast<FloatType>(recorded.getValue());
  Value result = op->getResult(0);
  if (!isLowPrecision(result.getType()))
    return nullptr;
  return cast<FloatType>(getElementTypeOrSelf(result.getType()));
}

} // namespace

FloatType mlir::attn::innerRoundingOf(Operation *op) {
  return isa<MultiheadAttentionOp, FfnOp>(op) ? narrowTypeOf(op) : nullptr;
}

FloatType mlir::attn::attentionProductsOf(Operation *op) {
  FloatType narrow = isa<MultiheadAttentionOp, AttentionOp>(op)
                         ? narrowTypeOf(op)
                         : FloatType();
  return narrow && narrow.isBF16() ? narrow : nullptr;
}

void mlir::attn::recordInnerRounding(Operation *op) {
  if (FloatType type = narrowTypeOf(op))
    op->setAttr(AttnDialect::kInnerRoundingAttr, TypeAttr::get(type));
}

namespace {

/// Widens `op`'s low-precision operands and results (the pass's rule).
void computeInF32(Operation *op) {
  recordInnerRounding(op);
  OpBuilder b(op);
  // A KV cache keeps its type: the op writes it in place (widening it
  // would make a copy), rounding the new rows to it.
  SmallVector<Value, 4> caches;
  if (auto mha = dyn_cast<MultiheadAttentionOp>(op); mha && mha.hasCache())
    caches = {mha.getCacheK(), mha.getCacheV(), mha.getUpdatedCacheK(),
              mha.getUpdatedCacheV()};
  for (OpOperand &operand : op->getOpOperands())
    if (isLowPrecision(operand.get().getType()) &&
        !llvm::is_contained(caches, operand.get()))
      operand.set(CastOp::create(b, op->getLoc(), operand.get(),
                                 TypeAttr::get(b.getF32Type())));
  b.setInsertionPointAfter(op);
  for (OpResult result : op->getResults()) {
    if (!isLowPrecision(result.getType()) ||
        llvm::is_contained(caches, Value(result)))
      continue;
    bool keep = keepsResultInF32(result);
    Type original = result.getType();
    result.setType(inF32(original));
    if (keep)
      continue;
    auto rounded = CastOp::create(
        b, op->getLoc(), result,
        TypeAttr::get(cast<RankedTensorType>(original).getElementType()));
    result.replaceAllUsesExcept(rounded, rounded);
  }
}

struct AttnComputeInF32Pass
    : mlir::attn::impl::AttnComputeInF32Base<AttnComputeInF32Pass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (!isa<AttnDialect>(op->getDialect()) || isa<CastOp>(op))
        return;
      if (llvm::any_of(op->getOperandTypes(), isLowPrecision) ||
          llvm::any_of(op->getResultTypes(), isLowPrecision))
        ops.push_back(op);
    });
    for (Operation *op : ops)
      computeInF32(op);
  }
};

} // namespace
