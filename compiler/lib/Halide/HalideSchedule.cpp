//===- HalideSchedule.cpp - attnc's own schedules of Halide stages --------===//

#include "HalideSchedule.h"

#include <algorithm>

using namespace attnc::halide;
using Halide::Func;
using Halide::TailStrategy;
using Halide::Var;

namespace {

/// Runs the outermost loop of `f`'s stage `stage` on the thread pool.
template <typename Stage>
void parallelOuter(Stage stage, const std::vector<Var> &vars,
                   const ScheduleTarget &target) {
  if (target.parallel && vars.size() > 1)
    stage.parallel(vars.back());
}

} // namespace

int attnc::halide::registerBlockRows(const ScheduleTarget &target) {
  // Rows of two vectors of accumulators, leaving four registers for the
  // operands: 12 of 16 AVX2 registers, 24 of 32 AVX-512 ones.
  return std::clamp((target.vectorRegisters - 4) / 2, 1, 12);
}

std::string attnc::halide::describeSchedules(const ScheduleTarget &target) {
  int lanes = target.vectorLanes;
  return "pointwise stages: on their own, vectorized by " +
         std::to_string(lanes) +
         " f32 lanes\n"
         "GEMM: register blocks of " +
         std::to_string(registerBlockRows(target)) + " rows x " +
         std::to_string(2 * lanes) +
         " columns (2 vectors), the right operand's columns packed once per "
         "block\n" +
         (target.bf16Dot ? "bf16 GEMMs: k's pairs on vdpbf16ps, the odd k "
                           "first, from the bias\n"
                         : "bf16 GEMMs: FMAs on widened values, k in order\n") +
         "row reductions (softmax, layer norm): row by row, the reductions "
         "inside each row\n"
         "attention: flash-style, the scores of a block of up to " +
         std::to_string(registerBlockRows(target)) +
         " query rows computed and reduced inside it (whole when the weights "
         "are an output)\n" +
         (target.parallel ? "outermost loops on attnc_rt's thread pool\n"
                          : "serial\n");
}

void attnc::halide::schedulePointwise(Func f, const std::vector<Var> &vars,
                                      const ScheduleTarget &target) {
  f.compute_root();
  if (!vars.empty())
    f.vectorize(vars.front(), target.vectorLanes, TailStrategy::GuardWithIf);
  parallelOuter(f, vars, target);
}

namespace {

/// The register blocks of a GEMM `y` (rows x 2 vectors of columns), their
/// accumulators `acc` in registers; the loop `y` computes a panel at.
Var blockGemm(Func y, Var col, Var row, const std::vector<Var> &batch, Func acc,
              const ScheduleTarget &target) {
  int lanes = target.vectorLanes;
  int columns = 2 * lanes;
  int rows = registerBlockRows(target);
  Var co("co"), ro("ro"), ci("ci"), ri("ri");
  std::vector<Halide::VarOrRVar> order = {ci, ri, ro, co};
  order.insert(order.end(), batch.begin(), batch.end());
  y.compute_root()
      .tile(col, row, co, ro, ci, ri, columns, rows, TailStrategy::GuardWithIf)
      .reorder(order)
      .vectorize(ci, lanes)
      .unroll(ri);
  if (target.parallel)
    y.parallel(batch.empty() ? co : batch.back());
  // The accumulators of one block, kept in registers over the reduction.
  acc.compute_at(y, ro).vectorize(col, lanes).unroll(col).unroll(row);
  return co;
}

} // namespace

void attnc::halide::scheduleGemm(Func y, Var col, Var row,
                                 const std::vector<Var> &batch, Func acc,
                                 Halide::RDom r, Func panel,
                                 const ScheduleTarget &target) {
  int lanes = target.vectorLanes;
  Var co = blockGemm(y, col, row, batch, acc, target);
  acc.update()
      .reorder(col, row, r.x)
      .vectorize(col, lanes)
      .unroll(col)
      .unroll(row);
  // A block of columns of the right operand, contiguous: the block reads
  // it row by row, and every block of rows reads it again from cache.
  panel.compute_at(y, co).vectorize(panel.args()[0], lanes,
                                    TailStrategy::GuardWithIf);
}

void attnc::halide::scheduleBf16PairGemm(Func y, Var col, Var row,
                                         const std::vector<Var> &batch,
                                         Func acc, Halide::RDom r, Func panel,
                                         const ScheduleTarget &target) {
  int lanes = target.vectorLanes;
  Var co = blockGemm(y, col, row, batch, acc, target);
  // A pair's two products inside each vector of columns: Halide's
  // VectorReduce of 2 lanes into 1, which it emits as vdpbf16ps.
  acc.update()
      .reorder(r.y, col, row, r.x)
      .atomic()
      .vectorize(r.y)
      .vectorize(col, lanes)
      .unroll(col)
      .unroll(row);
  panel.compute_at(y, co)
      .vectorize(panel.args()[0])
      .vectorize(panel.args()[1], lanes, TailStrategy::GuardWithIf);
}

void attnc::halide::scheduleRowReduction(Func y, const std::vector<Var> &vars,
                                         const std::vector<Func> &rows,
                                         const ScheduleTarget &target) {
  y.compute_root().vectorize(vars.front(), target.vectorLanes,
                             TailStrategy::GuardWithIf);
  parallelOuter(y, vars, target);
  for (Func f : rows) {
    if (vars.size() < 2) {
      f.compute_root();
      continue;
    }
    f.compute_at(y, vars[1]);
    if (f.dimensions() == static_cast<int>(vars.size()))
      f.vectorize(vars.front(), target.vectorLanes, TailStrategy::GuardWithIf);
  }
}

void attnc::halide::scheduleAttention(const AttentionStages &s,
                                      const ScheduleTarget &target) {
  int lanes = target.vectorLanes;
  // Query rows per block: the register block of the two products (rows x
  // 2 vectors of keys or of value features), never more rows than there
  // are (the blocks shift inwards at the end and keep their size).
  int rows = static_cast<int>(
      std::min<int64_t>(registerBlockRows(target), s.queryRows));
  Func out = s.out;
  Var io("io"), ii("ii"), entry("entry");
  std::vector<Halide::VarOrRVar> order = {s.c, ii, io};
  order.insert(order.end(), s.batch.begin(), s.batch.end());
  out.compute_root()
      .split(s.i, io, ii, rows, TailStrategy::ShiftInwards)
      .reorder(order)
      .vectorize(s.c, lanes, TailStrategy::GuardWithIf);
  // One loop over the batch entries (all heads of all batches), in
  // parallel: heads are independent.
  Var batchLoop = s.batch.front();
  if (s.batch.size() == 2) {
    out.fuse(s.batch[0], s.batch[1], entry);
    batchLoop = entry;
  }
  if (target.parallel)
    out.parallel(batchLoop);
  // The keys of one entry, transposed, while its rows are computed (all of
  // them first when the scores are kept).
  Func keys = s.keysTransposed;
  if (s.weightsNeeded)
    keys.compute_root();
  else
    keys.compute_at(out, batchLoop);
  keys.vectorize(s.j, lanes, TailStrategy::GuardWithIf);
  Func dot = s.dot, max = s.max, exp = s.exp, sum = s.sum,
       accumulate = s.accumulate;
  if (s.weightsNeeded) {
    // The weights are an output too, which reads the scores' exp and sum:
    // every score is kept.
    for (Func f : {dot, exp}) {
      f.compute_root().vectorize(s.j, lanes, TailStrategy::GuardWithIf);
      if (target.parallel)
        f.parallel(s.batch.back());
    }
    max.compute_root();
    sum.compute_root();
    dot.update()
        .reorder(s.j, s.headDim.x, s.i)
        .vectorize(s.j, lanes, TailStrategy::GuardWithIf);
  } else {
    // Flash-style: the scores of one block of rows, never [Tq, Tk].
    dot.compute_at(out, io).vectorize(s.j, lanes, TailStrategy::GuardWithIf);
    max.compute_at(out, io);
    exp.compute_at(out, io).vectorize(s.j, lanes, TailStrategy::GuardWithIf);
    sum.compute_at(out, io);
    Var jo("jo"), ji("ji");
    dot.update()
        .split(s.j, jo, ji, 2 * lanes, TailStrategy::GuardWithIf)
        .reorder(ji, s.i, s.headDim.x, jo)
        .vectorize(ji, lanes)
        .unroll(ji)
        .unroll(s.i);
  }
  Var co("co"), ci("ci");
  accumulate.compute_at(out, io).vectorize(s.c, lanes,
                                           TailStrategy::GuardWithIf);
  auto update = accumulate.update()
                    .split(s.c, co, ci, 2 * lanes, TailStrategy::GuardWithIf)
                    .reorder(ci, s.i, s.keys.x, co)
                    .vectorize(ci, lanes)
                    .unroll(ci);
  if (!s.weightsNeeded)
    update.unroll(s.i);
}
