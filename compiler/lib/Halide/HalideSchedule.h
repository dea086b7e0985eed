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

/// The rows of a GEMM register block (of two vectors each) and of a block
/// of attention's query rows.
int registerBlockRows(const ScheduleTarget &target);

/// --print-schedule: what the schedules below choose for `target`, a line
/// per class of stage.
std::string describeSchedules(const ScheduleTarget &target);

/// A pointwise stage `f` of Halide-order vars `vars`: computed on its own,
/// vectorized along its innermost dimension.
void schedulePointwise(Halide::Func f, const std::vector<Halide::Var> &vars,
                       const ScheduleTarget &target);

/// A GEMM `y(col, row, batch...) = acc(...) (+ bias)`, `acc` reducing over
/// `r` and reading its right operand through `panel(col, k, batch...)`:
/// register blocks of rows x 2 vectors (12 of 16 AVX2 registers, 24 of 32
/// AVX-512 ones: MLAS's and BLIS's blocks), the panel of a block of columns
/// packed once and read by every block of rows.
void scheduleGemm(Halide::Func y, Halide::Var col, Halide::Var row,
                  const std::vector<Halide::Var> &batch, Halide::Func acc,
                  Halide::RDom r, Halide::Func panel,
                  const ScheduleTarget &target);

/// scheduleGemm's blocks for a GEMM of bf16 pairs (ScheduleTarget::bf16Dot):
/// `r` is (pair, element of the pair) and `panel(element, col, pair,
/// batch...)` holds the pairs adjacent, so that each vector of columns takes
/// a pair's two products in one vdpbf16ps.
void scheduleBf16PairGemm(Halide::Func y, Halide::Var col, Halide::Var row,
                          const std::vector<Halide::Var> &batch,
                          Halide::Func acc, Halide::RDom r, Halide::Func panel,
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
  /// Query rows per batch entry.
  int64_t queryRows = 1;
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
