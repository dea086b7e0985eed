//===- OnlineSoftmax.h - The online softmax, written once -------*- C++ -*-===//
//
// The attention algorithm's arithmetic as IR-building pieces, used by every
// kernel that computes softmax(q kᵀ) v without the whole score row: the CPU
// flash loops (f32, bf16 pairs, AMX), the CPU decode kernel, the GPU flash
// kernel (per key and on tensor cores) and the GPU decode kernel. Each
// kernel keeps its own loops, layouts and cross-lane reductions (vector
// reductions, shuffle trees, gpu.shuffle); the steps below are the same
// for all of them.
//
// The online softmax (Milakov and Gimelshein; FlashAttention) of one row,
// for each block of scores s (a key, a vector of keys, a tile):
//
//   m' = max(m, max s)               advanceMax
//   alpha = exp(m - m')              rescaleFactor
//   p = exp(s - m')                  stepWeight (softmaxExp)
//   l' = l alpha + sum p             advanceSum
//   acc' = acc alpha + p v           rescaled, accumulated
//
// and at the row's end out = acc / l (normalized), or for a row split over
// chunks of keys (Flash-Decoding) the chunks' (m, l, acc) combined first
// (combinePartials). Values are f32 scalars or vectors (rows, lanes, a
// fragment); a scalar that meets a vector is broadcast.
//
// Masked keys: a kernel that replaces their scores by kMaskedScore
// (attn/IR/AttentionMask.h) needs no guard; one that skips them (-inf)
// guards the step where exp(-inf - -inf) would be NaN: by the row having
// seen a key (m' > -inf) or by the key being visible.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_ATTENTION_ONLINESOFTMAX_H
#define ATTN_ATTENTION_ONLINESOFTMAX_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <utility>

namespace mlir::attn {

/// How a running max compares scores.
enum class ScoreMax {
  /// arith.maxnumf without NaN and signed-zero fix-ups (vmaxps): a NaN
  /// score still reaches the output through exp and the sum. The CPU flash
  /// loops, whose max starts at the lowest float (maxIdentity).
  Plain,
  /// arith.maximumf (IEEE), from -inf.
  Ieee,
};

/// The fast-math flags of ScoreMax::Plain.
constexpr arith::FastMathFlags kPlainMaxFlags =
    arith::FastMathFlags::nnan | arith::FastMathFlags::nsz;

/// The max's start: the lowest f32 (Plain) or -inf (Ieee), as `type` (f32 or
/// a vector of f32).
Value maxIdentity(OpBuilder &b, Location loc, Type type, ScoreMax kind);

/// max(x, y), elementwise.
Value maxOf(OpBuilder &b, Location loc, Value x, Value y, ScoreMax kind);

/// The max of a vector's lanes.
Value reduceMax(OpBuilder &b, Location loc, Value lanes, ScoreMax kind);

/// The sum of a vector's lanes.
Value reduceSum(OpBuilder &b, Location loc, Value lanes);

/// What guards a step against exp(-inf - -inf).
enum class StepGuard {
  /// Nothing: the scores are finite (masked ones replaced).
  None,
  /// The row has seen a visible key (m' > -inf): until then alpha is 1 and
  /// the scores subtract 0.
  Seen,
  /// The key is visible (advanceMax's `visible`): a key the row does not see
  /// leaves the state as it was (alpha 1, weight 0).
  Visible,
};

/// A step's new max and what its exps subtract.
struct OnlineStep {
  Value oldMax, newMax;
  /// What the scores subtract: m', or 0 while the row has seen no key.
  Value base;
  StepGuard guard = StepGuard::None;
  /// The i1 of the guard (seen, or visible); null for StepGuard::None.
  Value condition;
};

/// m' = max(oldMax, blockMax). With StepGuard::Visible, `visible` is the
/// key's visibility and blockMax its score (which counts only if visible).
OnlineStep advanceMax(OpBuilder &b, Location loc, Value oldMax, Value blockMax,
                      ScoreMax kind, StepGuard guard = StepGuard::None,
                      Value visible = Value());

/// alpha = exp(m - m'), 1 where the guard does not hold.
Value rescaleFactor(OpBuilder &b, Location loc, const OnlineStep &step);

/// p = exp(score - base) (score a scalar or vector, base broadcast), 0 for
/// a key that is not visible (StepGuard::Visible).
Value stepWeight(OpBuilder &b, Location loc, Value score,
                 const OnlineStep &step);

/// l' = l alpha + blockSum.
Value advanceSum(OpBuilder &b, Location loc, Value sum, Value alpha,
                 Value blockSum);

/// acc alpha (alpha broadcast to acc's shape).
Value rescaled(OpBuilder &b, Location loc, Value acc, Value alpha);

/// acc + weight value as one FMA (weight broadcast to value's shape).
Value accumulated(OpBuilder &b, Location loc, Value acc, Value weight,
                  Value value);

/// One key's step (StepGuard::Visible when `visible` is given, else None):
/// the row's (max, sum) after the key, the factor of its accumulators and
/// the key's weight (unrounded: with bf16 products the caller rounds the
/// weight where it multiplies v; the sum takes it as it is).
struct KeyStep {
  Value max, sum, alpha, weight;
};
KeyStep onlineKeyStep(OpBuilder &b, Location loc, Value max, Value sum,
                      Value score, Value visible = Value());

/// The exact softmax of one row, in one online pass over keys [0, keyEnd)
/// in key order: the rows a flash loop cannot finish by skipping masked keys
/// (attn/IR/AttentionMask.h's needsExactRecompute). `scoreOf(j)` is key j's
/// scaled score, masked ones replaced by kMaskedScore (D2L); with
/// `visibleOf`, masked keys weigh 0 instead (the op's `exclusive`).
/// `accumulate(acc, alpha, weight, j)` returns the row's accumulators after
/// key j (weight unrounded), from `accInit` (empty: the caller keeps them in
/// memory). Returns (max, sum, acc...); the caller divides by the sum.
SmallVector<Value>
exactRow(OpBuilder &b, Location loc, Value keyEnd, ValueRange accInit,
         function_ref<Value(Value)> scoreOf,
         function_ref<Value(Value)> visibleOf,
         function_ref<SmallVector<Value>(ValueRange, Value, Value, Value)>
             accumulate);

/// out = acc / sum (sum broadcast).
Value normalized(OpBuilder &b, Location loc, Value acc, Value sum);

/// One chunk's partial result: its max, its sum of weights and its
/// accumulators (each a scalar or vector of f32).
struct ChunkPartial {
  Value sum;
  SmallVector<Value> out;
};

/// The split-KV combine (Flash-Decoding) of chunks [first, last) of one
/// row, in chunk order (fixed by the shapes: the same bits on any number of
/// threads): M = max m_c; then with f = exp(m_c - M), L = sum l_c f and
/// O = sum f O_c, as FMAs. `maxOf(c)` reads chunk c's max (for M, and again
/// for f), `partialOf(c)` its sum and accumulators; `outZeros` are the
/// accumulators' zeros (their types). Returns (L, O...), O not divided.
SmallVector<Value> combinePartials(OpBuilder &b, Location loc, Value first,
                                   Value last, function_ref<Value(Value)> maxOf,
                                   function_ref<ChunkPartial(Value)> partialOf,
                                   ValueRange outZeros);

} // namespace mlir::attn

#endif // ATTN_ATTENTION_ONLINESOFTMAX_H
