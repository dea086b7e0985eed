//===- HalideAttention.cpp - Attention as Halide Funcs --------------------===//
//
// D2L DotProductAttention and MultiHeadAttention (with the v2 keywords) as
// Funcs: scores, the mask computed from indices with D2L's -1e6
// replacement, the max-subtracted softmax, @ v. Multi-head attention reads
// its heads through index maps (no split/merge copies) and applies rope
// where q and k are read.
//
//===----------------------------------------------------------------------===//

#include "HalideSchedule.h"
#include "HalideTranslator.h"

#include "attn/IR/AttentionMask.h"
#include "attn/IR/Rope.h"
#include "attn/Transforms/Passes.h"

#include <algorithm>
#include <cmath>

using namespace attnc::halide;

std::pair<Func, Func> Translator::attentionCore(const AttentionCore &core) {
  Var c("c"), i("i"), j("j");
  std::vector<Var> batch;
  for (size_t n = 0; n < core.batch.size(); ++n)
    batch.emplace_back("n" + std::to_string(n));
  std::vector<Expr> batchExprs(batch.begin(), batch.end());
  auto args = [&](std::initializer_list<Var> first) {
    std::vector<Var> all(first);
    all.insert(all.end(), batch.begin(), batch.end());
    return all;
  };
  auto exprArgs = [&](std::initializer_list<Expr> first) {
    std::vector<Expr> all(first);
    all.insert(all.end(), batchExprs.begin(), batchExprs.end());
    return all;
  };
  // An operand of a product: rounded to bf16 with products(bf16) (one
  // expression: the F16C double-cast trouble of roundedThrough is f16's).
  auto operand = [&](Expr x) -> Expr {
    if (!core.products)
      return x;
    return Halide::cast(Halide::Float(32),
                        roundedTo(halideTypeOf(core.products), x));
  };
  // kt(j, c, batch): the keys transposed, so that a score row is contiguous.
  Func kt(fresh("keys_t"));
  kt(args({j, c})) = operand(core.k(c, j, batchExprs));
  Func qf(fresh("queries"));
  qf(args({c, i})) = operand(core.q(c, i, batchExprs));
  RDom rc(0, static_cast<int>(core.headDim), "rc");
  Func dot(fresh("scores"));
  dot(args({j, i})) = 0.0f;
  dot(args({j, i})) += qf(exprArgs({rc.x, i})) * kt(exprArgs({j, rc.x}));
  // D2L: scores / sqrt(d), as 1/sqrt(d) rounded to f32 times the score.
  float scale =
      static_cast<float>(1.0 / std::sqrt(static_cast<double>(core.headDim)));
  std::optional<Expr> validLen;
  if (core.lens)
    validLen = core.lens(i, batchExprs);
  Expr visible = mlir::attn::keyVisible(
      Expr(j), Expr(i), validLen, core.causal,
      core.window > 0 ? std::optional<int64_t>(core.window) : std::nullopt,
      Halide::cast(Halide::Bool(), 1));
  Func scores(fresh("masked_scores"));
  scores(args({j, i})) = Halide::select(visible, dot(args({j, i})) * scale,
                                        Expr(mlir::attn::kMaskedScore));
  RDom rj(0, static_cast<int>(core.keys), "rj");
  Func maxOf(fresh("score_max")), expOf(fresh("score_exp")),
      sumOf(fresh("score_sum"));
  maxOf(args({i})) = Halide::maximum(scores(exprArgs({rj.x, i})));
  expOf(args({j, i})) = softmaxExp(scores(args({j, i})) - maxOf(exprArgs({i})));
  sumOf(args({i})) = Halide::sum(expOf(exprArgs({rj.x, i})));
  Func weights(fresh("weights"));
  weights(args({j, i})) = expOf(args({j, i})) / sumOf(exprArgs({i}));
  Func out(fresh("attention"));
  out(args({c, i})) = 0.0f;
  // The weights exp(s - max) of the row's max, rounded with products(bf16)
  // before @ v as the fused kernels round theirs; divided by the sum after.
  out(args({c, i})) += operand(expOf(exprArgs({rj.x, i}))) *
                       operand(core.v(c, rj.x, batchExprs));
  Func normalized(fresh("attention_out"));
  normalized(args({c, i})) = out(args({c, i})) / sumOf(exprArgs({i}));
  AttentionStages stages;
  stages.out = normalized;
  stages.accumulate = out;
  stages.keysTransposed = kt;
  stages.queries = qf;
  stages.dot = dot;
  stages.scores = scores;
  stages.max = maxOf;
  stages.exp = expOf;
  stages.sum = sumOf;
  stages.c = c;
  stages.i = i;
  stages.j = j;
  stages.batch = batch;
  stages.headDim = rc;
  stages.keys = rj;
  stages.weightsNeeded = core.weightsNeeded;
  stages.queryRows = core.queries;
  addStage(normalized, [stages](const ScheduleTarget &target) mutable {
    scheduleAttention(stages, target);
  });
  return {normalized, weights};
}

std::pair<Tensor, Tensor> Translator::attention(mlir::attn::AttentionOp op,
                                                const Tensor &q,
                                                const Tensor &k,
                                                const Tensor &v,
                                                const Tensor *validLens) {
  AttentionCore core;
  core.q = [q](Expr c, Expr i, const std::vector<Expr> &n) {
    return q({n[0], i, c});
  };
  core.k = [k](Expr c, Expr j, const std::vector<Expr> &n) {
    return k({n[0], j, c});
  };
  core.v = [v](Expr c, Expr j, const std::vector<Expr> &n) {
    return v({n[0], j, c});
  };
  if (validLens) {
    Tensor lens = *validLens;
    core.lens = [lens](Expr i, const std::vector<Expr> &n) {
      return lens.rank() == 1 ? lens({n[0]}) : lens({n[0], i});
    };
  }
  core.batch = {q.shape[0]};
  core.queries = q.shape[1];
  core.keys = k.shape[1];
  core.headDim = q.shape[2];
  core.valueDim = v.shape[2];
  core.causal = op.getCausal();
  core.weightsNeeded = op.getReturnWeights();
  core.products = mlir::attn::attentionProductsOf(op);
  auto [out, weights] = attentionCore(core);
  Tensor weightsTensor{weights, {q.shape[0], q.shape[1], k.shape[1]}};
  if (op.getReturnWeights())
    weightsTensor = copyOf(weightsTensor, "attention_weights");
  return {Tensor{out, {q.shape[0], q.shape[1], v.shape[2]}}, weightsTensor};
}

/// D2L MultiHeadAttention with the v2 keywords: projections, the heads of
/// the projections read in place (head h of batch b is features
/// [h*d, (h+1)*d) of row b; with kv_heads, key/value head h / (H / G)),
/// rope where q and k are read, the merged output, the output projection.
std::pair<Tensor, Tensor> Translator::multiheadAttention(
    mlir::attn::MultiheadAttentionOp op,
    const std::function<const Tensor *(mlir::Value)> &get) {
  int64_t heads = static_cast<int64_t>(op.getHeads());
  int64_t kvHeads = op.getNumKvHeads();
  const Tensor &wq = *get(op.getWQ());
  int64_t hd = wq.shape[0], d = hd / heads, group = heads / kvHeads;
  Tensor q = linear(*get(op.getQ()), wq, get(op.getBQ()));
  Tensor k = linear(*get(op.getK()), *get(op.getWK()), get(op.getBK()));
  Tensor v = linear(*get(op.getV()), *get(op.getWV()), get(op.getBV()));
  int64_t tq = q.shape[1], tk = k.shape[1], batch = q.shape[0];
  int id = static_cast<int>(d);
  // Feature c of head `head` of row t of batch entry b; with rope, q and k
  // are read rotated (`rotated`), v as it is.
  std::function<Expr(const Tensor &, Expr, Expr, Expr, Expr)> plain =
      [id](const Tensor &x, Expr c, Expr t, Expr head, Expr b) {
        return x({b, t, head * id + c});
      };
  auto rotated = plain;
  if (op.getRope()) {
    // Hugging Face Llama's rotate_half on each head, position = row.
    int64_t half = d / 2;
    mlir::attn::RopeTables tables = mlir::attn::ropeTables(
        std::max(tq, tk), d, op.getRopeBase().convertToFloat());
    std::vector<int> sizes = {static_cast<int>(half),
                              static_cast<int>(std::max(tq, tk))};
    Halide::Buffer<float> cosValues(sizes, fresh("rope_cos"));
    Halide::Buffer<float> sinValues(sizes, fresh("rope_sin"));
    for (int64_t t = 0; t < std::max(tq, tk); ++t)
      for (int64_t j = 0; j < half; ++j) {
        cosValues(static_cast<int>(j), static_cast<int>(t)) =
            tables.cos[t * half + j];
        sinValues(static_cast<int>(j), static_cast<int>(t)) =
            tables.sin[t * half + j];
      }
    Func cosTable = constant(cosValues), sinTable = constant(sinValues);
    int ih = static_cast<int>(half);
    rotated = [plain, cosTable, sinTable, ih](const Tensor &x, Expr c, Expr t,
                                              Expr head, Expr b) {
      Expr lower = c < ih;
      // Clamped: bounds inference takes both sides of a select, and the
      // head's features are [0, 2 * half).
      Expr j = Halide::clamp(Halide::select(lower, c, c - ih), 0, ih - 1);
      Expr partner =
          Halide::clamp(Halide::select(lower, c + ih, c - ih), 0, 2 * ih - 1);
      Expr sign = Halide::select(lower, -1.0f, 1.0f);
      return plain(x, c, t, head, b) * cosTable(j, t) +
             sign * plain(x, partner, t, head, b) * sinTable(j, t);
    };
  }
  // The rotated projections are computed once (a stage each): the scores
  // read every query and key row many times.
  auto headsOf = [&](const Tensor &x, int64_t count, int64_t rows,
                     const std::string &name, bool rotate) {
    std::vector<Var> vars = makeVars(4); // [b, head, t, c]
    return define(
        name, {batch, count, rows, d}, vars,
        (rotate ? rotated : plain)(x, vars[3], vars[2], vars[1], vars[0]),
        rotate ? Schedule::Pointwise : Schedule::Inline);
  };
  bool rope = op.getRope();
  Tensor qh = headsOf(q, heads, tq, "q_heads", rope);
  Tensor kh = headsOf(k, kvHeads, tk, "k_heads", rope);
  Tensor vh = headsOf(v, kvHeads, tk, "v_heads", false);
  int ig = static_cast<int>(group);
  AttentionCore core;
  // batch = {h, b}
  core.q = [qh](Expr c, Expr i, const std::vector<Expr> &n) {
    return qh({n[1], n[0], i, c});
  };
  core.k = [kh, ig](Expr c, Expr j, const std::vector<Expr> &n) {
    return kh({n[1], n[0] / ig, j, c});
  };
  core.v = [vh, ig](Expr c, Expr j, const std::vector<Expr> &n) {
    return vh({n[1], n[0] / ig, j, c});
  };
  if (const Tensor *lens = get(op.getValidLens())) {
    Tensor l = *lens;
    core.lens = [l](Expr i, const std::vector<Expr> &n) {
      return l.rank() == 1 ? l({n[1]}) : l({n[1], i});
    };
  }
  core.batch = {heads, batch};
  core.queries = tq;
  core.keys = tk;
  core.headDim = d;
  core.valueDim = d;
  core.causal = op.getCausal();
  core.window = op.getSlidingWindow().value_or(0);
  core.weightsNeeded = op.getReturnWeights();
  core.products = mlir::attn::attentionProductsOf(op);
  auto [out, weights] = attentionCore(core);
  // merge_heads as an index map: feature h*d + c of row (b, i).
  std::vector<Var> mv = makeVars(3);
  Tensor merged =
      define("merged", {batch, tq, hd}, mv,
             out(mv[2] % id, mv[1], mv[2] / id, mv[0]), Schedule::Inline);
  merged = roundedThrough(merged, mlir::attn::innerRoundingOf(op));
  Tensor y = linear(merged, *get(op.getWO()), get(op.getBO()));
  // Weights in split_heads' order: row b*H + h.
  std::vector<Var> wv = makeVars(3);
  int ihd = static_cast<int>(heads);
  Tensor weightsTensor{Func(), {}};
  if (op.getReturnWeights())
    weightsTensor = define("attention_weights", {batch * heads, tq, tk}, wv,
                           weights(wv[2], wv[1], wv[0] % ihd, wv[0] / ihd),
                           Schedule::Pointwise);
  return {y, weightsTensor};
}
