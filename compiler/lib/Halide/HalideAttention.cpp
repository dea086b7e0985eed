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
#include <limits>

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
  bool cached = static_cast<bool>(core.rowOffset);
  Expr row = cached ? Expr(i) + core.rowOffset(batchExprs) : Expr(i);
  Expr visible = mlir::attn::keyVisible(
      Expr(j), row, validLen, core.causal,
      core.window > 0 ? std::optional<int64_t>(core.window) : std::nullopt,
      Halide::cast(Halide::Bool(), 1));
  // D2L replaces a masked score by -1e6; with a cache a token's keys are
  // the rows it sees (its own among them) and the others weigh 0, so a
  // masked score only has to lose the max (Halide's float math assumes no
  // infinities: the lowest finite float, not -inf).
  Expr masked = cached ? Expr(-std::numeric_limits<float>::max())
                       : Expr(mlir::attn::kMaskedScore);
  Func scores(fresh("masked_scores"));
  scores(args({j, i})) =
      Halide::select(visible, dot(args({j, i})) * scale, masked);
  RDom rj(0, static_cast<int>(core.keys), "rj");
  Func maxOf(fresh("score_max")), expOf(fresh("score_exp")),
      sumOf(fresh("score_sum"));
  maxOf(args({i})) = Halide::maximum(scores(exprArgs({rj.x, i})));
  Expr exp = softmaxExp(scores(args({j, i})) - maxOf(exprArgs({i})));
  expOf(args({j, i})) = cached ? Halide::select(visible, exp, 0.0f) : exp;
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
/// With a KV cache (docs/spec.md §2 v3): the new keys and values, rotated at
/// positions pos[b] + t and rounded to the cache's type, are the rows the
/// call writes; the queries attend over the cache's first pos[b] rows and
/// those, read where they are.
Translator::MhaResults Translator::multiheadAttention(
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
  bool cached = op.hasCache();
  const Tensor *pos = cached ? get(op.getCachePos()) : nullptr;
  int64_t cacheRows = cached ? get(op.getCacheK())->shape[1] : 0;
  // The position of row t of batch entry b: t, or pos[b] + t with a cache
  // (clamped into the tables: a position out of range makes the kernel
  // return ATTNC_STATUS_CACHE_POSITION, whatever it computed).
  int positions = static_cast<int>(cached ? cacheRows : std::max(tq, tk));
  auto positionOf = [pos, positions](Expr t, Expr b) -> Expr {
    if (!pos)
      return t;
    return Halide::clamp((*pos)({b}) + t, 0, positions - 1);
  };
  // Feature c of head `head` of row t of batch entry b; with rope, q and k
  // are read rotated (`rotated`), v as it is.
  std::function<Expr(const Tensor &, Expr, Expr, Expr, Expr)> plain =
      [id](const Tensor &x, Expr c, Expr t, Expr head, Expr b) {
        return x({b, t, head * id + c});
      };
  auto rotated = plain;
  if (op.getRope()) {
    // Hugging Face Llama's rotate_half on each head.
    int64_t half = d / 2;
    mlir::attn::RopeTables tables =
        mlir::attn::ropeTables(positions, d, op.getRopeBase().convertToFloat());
    std::vector<int> sizes = {static_cast<int>(half), positions};
    Halide::Buffer<float> cosValues(sizes, fresh("rope_cos"));
    Halide::Buffer<float> sinValues(sizes, fresh("rope_sin"));
    for (int64_t t = 0; t < positions; ++t)
      for (int64_t j = 0; j < half; ++j) {
        cosValues(static_cast<int>(j), static_cast<int>(t)) =
            tables.cos[t * half + j];
        sinValues(static_cast<int>(j), static_cast<int>(t)) =
            tables.sin[t * half + j];
      }
    Func cosTable = constant(cosValues), sinTable = constant(sinValues);
    int ih = static_cast<int>(half);
    rotated = [plain, cosTable, sinTable, ih,
               positionOf](const Tensor &x, Expr c, Expr t, Expr head, Expr b) {
      Expr lower = c < ih;
      // Clamped: bounds inference takes both sides of a select, and the
      // head's features are [0, 2 * half).
      Expr j = Halide::clamp(Halide::select(lower, c, c - ih), 0, ih - 1);
      Expr partner =
          Halide::clamp(Halide::select(lower, c + ih, c - ih), 0, 2 * ih - 1);
      Expr sign = Halide::select(lower, -1.0f, 1.0f);
      Expr at = positionOf(t, b);
      return plain(x, c, t, head, b) * cosTable(j, at) +
             sign * plain(x, partner, t, head, b) * sinTable(j, at);
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
  MhaResults results;
  std::function<Expr(Expr, Expr, const std::vector<Expr> &)> keyOf, valueOf;
  int ig = static_cast<int>(group);
  if (cached) {
    // The rows written, [B, T, G*d] in the cache's type (rotated keys).
    auto newRows = [&](const Tensor &x, const Tensor &cache,
                       const std::string &name, bool rotate) {
      std::vector<Var> vars = makeVars(3); // [b, t, w]
      Expr value = (rotate ? rotated : plain)(x, vars[2] % id, vars[1],
                                              vars[2] / id, vars[0]);
      return define(name, {batch, tk, kvHeads * d}, vars,
                    roundedTo(cache.func.type(), value), Schedule::Pointwise);
    };
    const Tensor &cacheK = *get(op.getCacheK());
    const Tensor &cacheV = *get(op.getCacheV());
    Tensor rowsK = newRows(k, cacheK, "cache_k_rows", rope);
    Tensor rowsV = newRows(v, cacheV, "cache_v_rows", false);
    results.cacheK = updatedCache(cacheK, rowsK, *pos);
    results.cacheV = updatedCache(cacheV, rowsV, *pos);
    // Head g's feature c of cache row j, in f32; 0 past the new rows (rows
    // no token sees, which may hold anything, NaN included).
    auto readCache = [pos, id, ig, tk](const Tensor &updated) {
      return [updated, pos, id, ig, tk](Expr c, Expr j,
                                        const std::vector<Expr> &n) -> Expr {
        Expr end = (*pos)({n[1]}) + static_cast<int>(tk);
        Expr x = Halide::cast(Halide::Float(32),
                              updated({n[1], j, (n[0] / ig) * id + c}));
        return Halide::select(j < end, x, 0.0f);
      };
    };
    keyOf = readCache(results.cacheK);
    valueOf = readCache(results.cacheV);
  } else {
    Tensor kh = headsOf(k, kvHeads, tk, "k_heads", rope);
    Tensor vh = headsOf(v, kvHeads, tk, "v_heads", false);
    keyOf = [kh, ig](Expr c, Expr j, const std::vector<Expr> &n) {
      return kh({n[1], n[0] / ig, j, c});
    };
    valueOf = [vh, ig](Expr c, Expr j, const std::vector<Expr> &n) {
      return vh({n[1], n[0] / ig, j, c});
    };
  }
  AttentionCore core;
  // batch = {h, b}
  core.q = [qh](Expr c, Expr i, const std::vector<Expr> &n) {
    return qh({n[1], n[0], i, c});
  };
  core.k = keyOf;
  core.v = valueOf;
  if (const Tensor *lens = get(op.getValidLens())) {
    Tensor l = *lens;
    core.lens = [l](Expr i, const std::vector<Expr> &n) {
      return l.rank() == 1 ? l({n[1]}) : l({n[1], i});
    };
  }
  if (pos) {
    Tensor p = *pos;
    core.rowOffset = [p](const std::vector<Expr> &n) { return p({n[1]}); };
  }
  core.batch = {heads, batch};
  core.queries = tq;
  core.keys = cached ? cacheRows : tk;
  core.headDim = d;
  core.valueDim = d;
  core.causal = op.getCausal() || cached;
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
  results.out = linear(merged, *get(op.getWO()), get(op.getBO()));
  // Weights in split_heads' order: row b*H + h.
  std::vector<Var> wv = makeVars(3);
  int ihd = static_cast<int>(heads);
  results.weights = Tensor{Func(), {}};
  if (op.getReturnWeights())
    results.weights = define(
        "attention_weights", {batch * heads, tq, core.keys}, wv,
        weights(wv[2], wv[1], wv[0] % ihd, wv[0] / ihd), Schedule::Pointwise);
  return results;
}

Tensor Translator::updatedCache(const Tensor &cache, const Tensor &rows,
                                const Tensor &pos) {
  int64_t entries = cache.shape[0], length = cache.shape[1];
  int newRows = static_cast<int>(rows.shape[1]);
  // How many entries' rows would fall outside the cache: the kernel then
  // writes nothing and returns ATTNC_STATUS_CACHE_POSITION.
  countBadPositions(pos, entries, length - newRows);
  std::vector<Var> vars = makeVars(3); // [b, j, w]
  Expr p = pos({vars[0]});
  Expr inRows = vars[1] >= p && vars[1] < p + newRows;
  Expr row = Halide::clamp(vars[1] - p, 0, newRows - 1);
  Tensor updated = define("updated_cache", cache.shape, vars,
                          Halide::select(inRows, rows({vars[0], row, vars[2]}),
                                         cache(asExprs(vars))),
                          Schedule::Inline);
  std::vector<Var> b = makeVars(1);
  Func at(fresh("cache_rows_at"));
  at(b[0]) = pos({b[0]});
  updated.cacheWrite = CacheWrite{rows.func, at, rows.shape};
  return updated;
}
