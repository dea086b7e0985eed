//===- HalideSchedule.h - attnc's own schedules of Halide stages -*- C++
//-*-===//
//
// --halide-schedule=attnc: how each class of stage that HalideGen builds is
// placed and vectorized, with tiles from the target's registers (the same
// description the MLIR backend's CPU schedules read). The autoschedulers
// (--halide-schedule=Adams2019, ...) replace all of this.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_LIB_HALIDE_HALIDESCHEDULE_H
#define ATTNC_LIB_HALIDE_HALIDESCHEDULE_H

#include "HalideGen.h"

namespace attnc::halide {

/// A pointwise stage `f` of Halide-order vars `vars`: computed on its own,
/// vectorized along its innermost dimension.
void schedulePointwise(Halide::Func f, const std::vector<Halide::Var> &vars,
                       const ScheduleTarget &target);

/// A transposing copy `f(x, y)`: tiles, vectorized along x.
void scheduleTranspose(Halide::Func f, Halide::Var x, Halide::Var y,
                       const ScheduleTarget &target);

/// A GEMM `y(vars) = acc(vars) (+ bias)`, `acc` reducing over `r`, with the
/// output's columns innermost: register blocks of rows x vectors, the
/// accumulators of a block computed inside it.
void scheduleGemm(Halide::Func y, const std::vector<Halide::Var> &vars,
                  Halide::Func acc, Halide::RDom r,
                  const ScheduleTarget &target);

/// A stage `y` computed row by row from per-row reductions `rows` (max,
/// sums, means) and row-shaped helpers, computed inside each row.
void scheduleRowReduction(Halide::Func y, const std::vector<Halide::Var> &vars,
                          const std::vector<Halide::Func> &rows,
                          const ScheduleTarget &target);

/// The Funcs of one attention core (HalideGen's attentionCore).
struct AttentionStages {
  /// out(c, i, batch...) = accumulate / sum: the stage itself.
  Halide::Func out, accumulate;
  /// kt(j, c, batch...): the keys transposed; queries(c, i, batch...).
  Halide::Func keysTransposed, queries;
  /// dot(j, i, batch...) and the masked, scaled scores.
  Halide::Func dot, scores;
  /// Per row: the scores' max and the sum of exp; exp(j, i, batch...).
  Halide::Func max, exp, sum;
  Halide::Var c, i, j;
  std::vector<Halide::Var> batch;
  /// The reductions of dot (over the head dim) and accumulate (the keys).
  Halide::RDom headDim, keys;
  /// The weights are read by another output: the scores are computed
  /// whole, not per block of query rows.
  bool weightsNeeded = false;
};

/// Flash-style where it can: the scores of a block of query rows are
/// computed, exponentiated and reduced inside that block, never as a
/// [Tq, Tk] buffer (unless the weights are an output).
void scheduleAttention(const AttentionStages &stages,
                       const ScheduleTarget &target);

} // namespace attnc::halide

#endif // ATTNC_LIB_HALIDE_HALIDESCHEDULE_H
