//===- AttentionMask.h - Which keys a query row sees ------------*- C++ -*-===//
//
// The one description of attention masks (docs/spec.md §2), read by every
// lowering of masked_softmax and attention: attn-decompose,
// attn-lower-to-linalg, the CPU and GPU flash loops and both Halide
// translators.
//
// Key j is visible from query row i iff begin(i) <= j < end(i), where
//   end(i)   = min(valid_len, Tk) -- valid_len of the batch entry (1-D) or
//              of the row (2-D), Tk without lengths -- and with `causal`
//              also min(end, i + 1);
//   begin(i) = max(0, i + 1 - W) with a sliding window W (only with
//              causal), else 0.
// A masked score is replaced by kMaskedScore, as D2L's masked_softmax does:
// a row with no visible key (end <= begin) comes out uniform, never NaN.
//
// Flash loops skip masked keys instead of replacing their scores. That is
// exact when each skipped key's weight exp(kMaskedScore - m) is 0 in f32,
// m the row's largest visible score, i.e. unless m < kMaskedScore +
// kExpUnderflow while the row has masked keys (end < Tk or begin > 0):
// such rows are recomputed with the replacement (needsExactRecompute).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_IR_ATTENTIONMASK_H
#define ATTN_IR_ATTENTIONMASK_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstdint>
#include <optional>

namespace mlir::attn {

/// D2L's masked_softmax replaces the score of a masked key by this value
/// (not -inf: a row with no visible key is uniform, not NaN).
constexpr float kMaskedScore = -1e6f;

/// exp(x) is 0 in f32 for x below -kExpUnderflow (ln 2^-150 is -103.97):
/// a masked key's weight exp(kMaskedScore - m) vanishes, and skipping the
/// key is exact, unless the row's largest visible score m is below
/// kMaskedScore + kExpUnderflow (exactly representable: -999896).
constexpr float kExpUnderflow = 104.0f;

/// The window W when it hides keys from some of `queries` rows (W < Tq);
/// none otherwise: with W >= Tq every row's window reaches key 0.
std::optional<int64_t> hidingWindow(std::optional<int64_t> window,
                                    int64_t queries);

/// end(row): `validLen` (an index value; null without lengths) clamped to
/// `keys`, and with `causal` to row + 1. May be <= 0.
Value visibleEnd(OpBuilder &b, Location loc, Value validLen, Value row,
                 int64_t keys, bool causal);

/// begin(row) = max(0, row + 1 - W) with a window; null (0) without. `row`
/// is an index or a vector of them.
Value visibleBegin(OpBuilder &b, Location loc, Value row,
                   std::optional<int64_t> window);

/// begin <= key < end, for scalars or vectors of one integer type; a null
/// bound does not limit. `widen`, if given, turns a bound (an index) into
/// key's type (a cast, a splat) where it is compared.
Value isKeyVisible(OpBuilder &b, Location loc, Value key, Value begin,
                   Value end, function_ref<Value(Value)> widen = nullptr);

/// D2L's replacement: `score` where `visible`, else kMaskedScore (a scalar,
/// or broadcast to a vector score).
Value maskScore(OpBuilder &b, Location loc, Value visible, Value score);

/// A row without visible keys: end <= begin (null begin: 0).
Value isEmptyRow(OpBuilder &b, Location loc, Value begin, Value end);

/// An operand of an attention product as attn.fused_attention's
/// `products(bf16)` takes it: `x` (f32, scalar or vector) rounded to
/// `products` and widened back; `x` itself when `products` is null. Read
/// by the CPU and GPU flash loops.
Value productOperand(OpBuilder &b, Location loc, Value x, FloatType products);

/// Whether a row whose masked keys a flash loop skipped must be recomputed
/// with their replaced scores: its largest visible score `rowMax` is below
/// kMaskedScore + kExpUnderflow and it has masked keys (end < keys or
/// begin > 0). Rows without visible keys are isEmptyRow's.
Value needsExactRecompute(OpBuilder &b, Location loc, Value rowMax, Value begin,
                          Value end, int64_t keys);

/// The same visibility for expression types with C++'s comparison and
/// logical operators (Halide::Expr, integers): `always` is the true value
/// of the result type.
template <typename Int, typename Bool>
Bool keyVisible(const Int &key, const Int &row,
                const std::optional<Int> &validLen, bool causal,
                std::optional<int64_t> window, Bool always) {
  std::optional<Bool> visible;
  auto require = [&](Bool condition) {
    visible = visible ? Bool(*visible && condition) : condition;
  };
  if (validLen)
    require(key < *validLen);
  if (causal)
    require(key <= row);
  if (window)
    require(key > row - static_cast<int>(*window));
  return visible ? *visible : always;
}

} // namespace mlir::attn

#endif // ATTN_IR_ATTENTIONMASK_H
