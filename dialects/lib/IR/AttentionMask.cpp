//===- AttentionMask.cpp - Which keys a query row sees --------------------===//

#include "attn/IR/AttentionMask.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::attn;

std::optional<int64_t> mlir::attn::hidingWindow(std::optional<int64_t> window,
                                                int64_t queries) {
  if (window && *window < queries)
    return window;
  return std::nullopt;
}

Value mlir::attn::visibleEnd(OpBuilder &b, Location loc, Value validLen,
                             Value row, int64_t keys, bool causal) {
  Value end =
      validLen
          ? Value(arith::MinSIOp::create(
                b, loc, validLen, arith::ConstantIndexOp::create(b, loc, keys)))
          : Value(arith::ConstantIndexOp::create(b, loc, keys));
  if (causal)
    end = arith::MinSIOp::create(
        b, loc, end,
        arith::AddIOp::create(b, loc, row,
                              arith::ConstantIndexOp::create(b, loc, 1)));
  return end;
}

Value mlir::attn::visibleBegin(OpBuilder &b, Location loc, Value row,
                               std::optional<int64_t> window) {
  if (!window)
    return Value();
  // An index, or a vector of them (a row per lane).
  auto constant = [&](int64_t value) -> Value {
    if (auto type = dyn_cast<VectorType>(row.getType()))
      return arith::ConstantOp::create(
          b, loc, type, DenseElementsAttr::get(type, b.getIndexAttr(value)));
    return arith::ConstantIndexOp::create(b, loc, value);
  };
  Value begin = arith::SubIOp::create(
      b, loc, arith::AddIOp::create(b, loc, row, constant(1)),
      constant(*window));
  return arith::MaxSIOp::create(b, loc, begin, constant(0));
}

Value mlir::attn::isKeyVisible(OpBuilder &b, Location loc, Value key,
                               Value begin, Value end,
                               function_ref<Value(Value)> widen) {
  auto bound = [&](Value value) { return widen ? widen(value) : value; };
  Value visible;
  if (end)
    visible = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, key,
                                    bound(end));
  if (begin) {
    Value atOrAfter = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge,
                                            key, bound(begin));
    visible = visible ? Value(arith::AndIOp::create(b, loc, visible, atOrAfter))
                      : atOrAfter;
  }
  assert(visible && "a key visibility needs a bound");
  return visible;
}

Value mlir::attn::maskScore(OpBuilder &b, Location loc, Value visible,
                            Value score) {
  Type type = score.getType();
  Value masked = arith::ConstantOp::create(
      b, loc, b.getFloatAttr(getElementTypeOrSelf(type), kMaskedScore));
  if (auto vector = dyn_cast<VectorType>(type))
    masked = vector::BroadcastOp::create(b, loc, vector, masked);
  return arith::SelectOp::create(b, loc, visible, score, masked);
}

Value mlir::attn::isEmptyRow(OpBuilder &b, Location loc, Value begin,
                             Value end) {
  return arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::sle, end,
      begin ? begin : arith::ConstantIndexOp::create(b, loc, 0));
}

Value mlir::attn::needsExactRecompute(OpBuilder &b, Location loc, Value rowMax,
                                      Value begin, Value end, int64_t keys) {
  Value tiny = arith::CmpFOp::create(
      b, loc, arith::CmpFPredicate::OLT, rowMax,
      arith::ConstantOp::create(
          b, loc,
          b.getFloatAttr(rowMax.getType(), kMaskedScore + kExpUnderflow)));
  Value masked =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, end,
                            arith::ConstantIndexOp::create(b, loc, keys));
  if (begin)
    masked = arith::OrIOp::create(
        b, loc, masked,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, begin,
                              arith::ConstantIndexOp::create(b, loc, 0)));
  return arith::AndIOp::create(b, loc, tiny, masked);
}

Value mlir::attn::productOperand(OpBuilder &b, Location loc, Value x,
                                 FloatType products) {
  if (!products)
    return x;
  Type narrow = products;
  if (auto vector = dyn_cast<VectorType>(x.getType()))
    narrow = vector.clone(products);
  Value narrowed = arith::TruncFOp::create(b, loc, narrow, x);
  return arith::ExtFOp::create(b, loc, x.getType(), narrowed);
}
