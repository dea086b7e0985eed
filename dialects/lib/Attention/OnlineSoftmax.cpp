//===- OnlineSoftmax.cpp - The online softmax, written once ---------------===//

#include "attn/Attention/OnlineSoftmax.h"
#include "attn/Attention/SoftmaxExp.h"
#include "attn/IR/AttnTypes.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/TypeUtilities.h"

#include <limits>

using namespace mlir;
using namespace mlir::attn;

/// `value` as `type`: a float scalar, or a vector of them.
static Value constantLike(OpBuilder &b, Location loc, Type type, float value) {
  FloatAttr element = b.getFloatAttr(getElementTypeOrSelf(type), value);
  if (auto vector = dyn_cast<VectorType>(type))
    return arith::ConstantOp::create(b, loc,
                                     DenseElementsAttr::get(vector, element));
  return arith::ConstantOp::create(b, loc, element);
}

/// `x` broadcast to the type of `like` (itself when they match).
static Value broadcastLike(OpBuilder &b, Location loc, Value x, Value like) {
  if (x.getType() == like.getType())
    return x;
  return vector::BroadcastOp::create(b, loc, like.getType(), x);
}

/// for (i = first; i < last; ++i) values = body(i, values), with `b`'s
/// insertion point in the body while `body` runs.
static SmallVector<Value>
forWithValues(OpBuilder &b, Location loc, Value first, Value last,
              ValueRange init,
              function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = scf::ForOp::create(
      b, loc, first, last, one, init,
      [&](OpBuilder &nested, Location, Value c, ValueRange values) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        scf::YieldOp::create(b, loc, body(c, values));
      });
  return SmallVector<Value>(loop.getResults());
}

Value attn::maxIdentity(OpBuilder &b, Location loc, Type type, ScoreMax kind) {
  return constantLike(b, loc, type,
                      kind == ScoreMax::Plain
                          ? std::numeric_limits<float>::lowest()
                          : -std::numeric_limits<float>::infinity());
}

Value attn::maxOf(OpBuilder &b, Location loc, Value x, Value y, ScoreMax kind) {
  if (kind == ScoreMax::Plain)
    return arith::MaxNumFOp::create(b, loc, x, y, kPlainMaxFlags);
  return arith::MaximumFOp::create(b, loc, x, y);
}

Value attn::reduceMax(OpBuilder &b, Location loc, Value lanes, ScoreMax kind) {
  if (kind == ScoreMax::Plain)
    return vector::ReductionOp::create(b, loc, vector::CombiningKind::MAXNUMF,
                                       lanes, kPlainMaxFlags);
  return vector::ReductionOp::create(b, loc, vector::CombiningKind::MAXIMUMF,
                                     lanes);
}

Value attn::reduceSum(OpBuilder &b, Location loc, Value lanes) {
  return vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, lanes);
}

OnlineStep attn::advanceMax(OpBuilder &b, Location loc, Value oldMax,
                            Value blockMax, ScoreMax kind, StepGuard guard,
                            Value visible) {
  OnlineStep step;
  step.oldMax = oldMax;
  step.guard = guard;
  Type type = oldMax.getType();
  if (guard == StepGuard::Visible) {
    // A key the row does not see counts as -inf: the max stays.
    blockMax = arith::SelectOp::create(
        b, loc, visible, blockMax,
        constantLike(b, loc, type, -std::numeric_limits<float>::infinity()));
    step.condition = visible;
  }
  step.newMax = maxOf(b, loc, oldMax, blockMax, kind);
  step.base = step.newMax;
  if (guard == StepGuard::Seen) {
    step.condition = arith::CmpFOp::create(
        b, loc, arith::CmpFPredicate::OGT, step.newMax,
        constantLike(b, loc, type, -std::numeric_limits<float>::infinity()));
    step.base = arith::SelectOp::create(b, loc, step.condition, step.newMax,
                                        constantLike(b, loc, type, 0.0f));
  }
  return step;
}

Value attn::rescaleFactor(OpBuilder &b, Location loc, const OnlineStep &step) {
  Value alpha = softmaxExp(
      b, loc, arith::SubFOp::create(b, loc, step.oldMax, step.newMax));
  if (step.guard == StepGuard::None)
    return alpha;
  // Before the row's first key exp(-inf - -inf) would be NaN.
  return arith::SelectOp::create(b, loc, step.condition, alpha,
                                 constantLike(b, loc, alpha.getType(), 1.0f));
}

Value attn::stepWeight(OpBuilder &b, Location loc, Value score,
                       const OnlineStep &step) {
  Value p =
      softmaxExp(b, loc,
                 arith::SubFOp::create(
                     b, loc, score, broadcastLike(b, loc, step.base, score)));
  if (step.guard != StepGuard::Visible)
    return p;
  return arith::SelectOp::create(b, loc, step.condition, p,
                                 constantLike(b, loc, p.getType(), 0.0f));
}

Value attn::advanceSum(OpBuilder &b, Location loc, Value sum, Value alpha,
                       Value blockSum) {
  return arith::AddFOp::create(
      b, loc, arith::MulFOp::create(b, loc, sum, alpha), blockSum);
}

Value attn::rescaled(OpBuilder &b, Location loc, Value acc, Value alpha) {
  return arith::MulFOp::create(b, loc, acc, broadcastLike(b, loc, alpha, acc));
}

Value attn::accumulated(OpBuilder &b, Location loc, Value acc, Value weight,
                        Value value) {
  if (isa<VectorType>(value.getType()))
    return vector::FMAOp::create(b, loc, broadcastLike(b, loc, weight, value),
                                 value, acc);
  return math::FmaOp::create(b, loc, weight, value, acc);
}

KeyStep attn::onlineKeyStep(OpBuilder &b, Location loc, Value max, Value sum,
                            Value score, Value visible) {
  OnlineStep step =
      advanceMax(b, loc, max, score, ScoreMax::Ieee,
                 visible ? StepGuard::Visible : StepGuard::None, visible);
  KeyStep key;
  key.max = step.newMax;
  key.alpha = rescaleFactor(b, loc, step);
  key.weight = stepWeight(b, loc, score, step);
  key.sum = advanceSum(b, loc, sum, key.alpha, key.weight);
  return key;
}

SmallVector<Value>
attn::exactRow(OpBuilder &b, Location loc, Value keyEnd, ValueRange accInit,
               function_ref<Value(Value)> scoreOf,
               function_ref<Value(Value)> visibleOf,
               function_ref<SmallVector<Value>(ValueRange, Value, Value, Value)>
                   accumulate) {
  SmallVector<Value> init = {
      maxIdentity(b, loc, computeType(b.getContext()), ScoreMax::Ieee),
      constantLike(b, loc, computeType(b.getContext()), 0.0f)};
  init.append(accInit.begin(), accInit.end());
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  return forWithValues(
      b, loc, zero, keyEnd, init,
      [&](Value j, ValueRange state) -> SmallVector<Value> {
        Value visible = visibleOf ? visibleOf(j) : Value();
        KeyStep key =
            onlineKeyStep(b, loc, state[0], state[1], scoreOf(j), visible);
        SmallVector<Value> next = {key.max, key.sum};
        llvm::append_range(
            next, accumulate(state.drop_front(2), key.alpha, key.weight, j));
        return next;
      });
}

Value attn::normalized(OpBuilder &b, Location loc, Value acc, Value sum) {
  return arith::DivFOp::create(b, loc, acc, broadcastLike(b, loc, sum, acc));
}

SmallVector<Value>
attn::combinePartials(OpBuilder &b, Location loc, Value first, Value last,
                      function_ref<Value(Value)> maxOf,
                      function_ref<ChunkPartial(Value)> partialOf,
                      ValueRange outZeros) {
  Value rowMax =
      forWithValues(
          b, loc, first, last,
          ValueRange{
              maxIdentity(b, loc, computeType(b.getContext()), ScoreMax::Ieee)},
          [&](Value c, ValueRange most) -> SmallVector<Value> {
            return {attn::maxOf(b, loc, most[0], maxOf(c), ScoreMax::Ieee)};
          })
          .front();
  SmallVector<Value> init = {
      constantLike(b, loc, computeType(b.getContext()), 0.0f)};
  init.append(outZeros.begin(), outZeros.end());
  return forWithValues(
      b, loc, first, last, init,
      [&](Value c, ValueRange acc) -> SmallVector<Value> {
        Value factor =
            softmaxExp(b, loc, arith::SubFOp::create(b, loc, maxOf(c), rowMax));
        ChunkPartial partial = partialOf(c);
        SmallVector<Value> next = {
            advanceSum(b, loc, partial.sum, factor, acc[0])};
        for (auto [out, total] : llvm::zip_equal(partial.out, acc.drop_front()))
          next.push_back(accumulated(b, loc, total, factor, out));
        return next;
      });
}
