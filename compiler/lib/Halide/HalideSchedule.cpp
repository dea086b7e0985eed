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

void attnc::halide::schedulePointwise(Func f, const std::vector<Var> &vars,
                                      const ScheduleTarget &target) {
  f.compute_root();
  if (!vars.empty())
    f.vectorize(vars.front(), target.vectorLanes, TailStrategy::GuardWithIf);
  parallelOuter(f, vars, target);
}

void attnc::halide::scheduleTranspose(Func f, Var x, Var y,
                                      const ScheduleTarget &target) {
  Var xo("xo"), yo("yo"), xi("xi"), yi("yi");
  int lanes = target.vectorLanes;
  f.compute_root()
      .tile(x, y, xo, yo, xi, yi, lanes, lanes, TailStrategy::GuardWithIf)
      .vectorize(xi)
      .unroll(yi);
  if (target.parallel)
    f.parallel(yo);
}

void attnc::halide::scheduleGemm(Func y, const std::vector<Var> &vars, Func acc,
                                 Halide::RDom r, const ScheduleTarget &target) {
  int lanes = target.vectorLanes;
  y.compute_root();
  if (vars.size() < 2) {
    y.vectorize(vars.front(), lanes, TailStrategy::GuardWithIf);
    acc.compute_root().vectorize(vars.front(), lanes,
                                 TailStrategy::GuardWithIf);
    return;
  }
  // A block of `rows` x (2 vectors) accumulators: 12 of 16 AVX2 registers,
  // 24 of 32 AVX-512 ones (the register blocks of MLAS and BLIS).
  int columns = 2 * lanes;
  int rows = std::clamp((target.vectorRegisters - 4) / 2, 1, 12);
  Var col = vars[0], row = vars[1];
  Var co("co"), ro("ro"), ci("ci"), ri("ri");
  y.tile(col, row, co, ro, ci, ri, columns, rows, TailStrategy::GuardWithIf)
      .vectorize(ci, lanes)
      .unroll(ri);
  parallelOuter(y, vars, target);
  if (target.parallel && vars.size() == 2)
    y.parallel(ro);
  acc.compute_at(y, co).vectorize(col, lanes).unroll(col).unroll(row);
  acc.update()
      .reorder(col, row, r.x)
      .vectorize(col, lanes)
      .unroll(col)
      .unroll(row);
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
  const std::vector<Var> &batch = s.batch;
  Func out = s.out;
  Var io("io"), ii("ii");
  out.compute_root()
      .split(s.i, io, ii, 8, TailStrategy::GuardWithIf)
      .reorder(s.c, ii, io)
      .vectorize(s.c, lanes, TailStrategy::GuardWithIf);
  if (target.parallel)
    out.parallel(batch.back());
  Func kt = s.keysTransposed;
  kt.compute_root().vectorize(s.j, lanes, TailStrategy::GuardWithIf);
  if (target.parallel)
    kt.parallel(batch.back());
  Func dot = s.dot, max = s.max, exp = s.exp, sum = s.sum,
       accumulate = s.accumulate;
  if (s.weightsNeeded) {
    // The weights are an output: every score is kept.
    for (Func f : {dot, exp}) {
      f.compute_root().vectorize(s.j, lanes, TailStrategy::GuardWithIf);
      if (target.parallel)
        f.parallel(batch.back());
    }
    max.compute_root();
    sum.compute_root();
  } else {
    dot.compute_at(out, io).vectorize(s.j, lanes, TailStrategy::GuardWithIf);
    max.compute_at(out, io);
    exp.compute_at(out, io).vectorize(s.j, lanes, TailStrategy::GuardWithIf);
    sum.compute_at(out, io);
  }
  // Innermost a vector of keys (dot) or of value features (accumulate),
  // the reduction around it, the query rows outside.
  dot.update()
      .reorder(s.j, s.headDim.x, s.i)
      .vectorize(s.j, lanes, TailStrategy::GuardWithIf);
  accumulate.compute_at(out, io).vectorize(s.c, lanes,
                                           TailStrategy::GuardWithIf);
  accumulate.update()
      .reorder(s.c, s.keys.x, s.i)
      .vectorize(s.c, lanes, TailStrategy::GuardWithIf);
}
