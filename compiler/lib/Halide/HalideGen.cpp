//===- HalideGen.cpp - One attn-level kernel as a Halide pipeline ---------===//
//
// Each attn op becomes Halide Funcs with the semantics AttnOps.td states,
// written here from those semantics (not from attn-decompose or the MLIR
// lowerings), so that the two backends check each other. Composites are
// translated as wholes: multi-head attention reads its heads through index
// maps (no split/merge copies), attention computes its mask from indices,
// and a block calling a block is the callee's Funcs on the call's operands.
// Attention is in HalideAttention.cpp.
//
//===----------------------------------------------------------------------===//

#include "HalideSchedule.h"
#include "HalideTranslator.h"

#include "attn/IR/AttentionMask.h"
#include "attn/IR/AttnDialect.h"
#include "attn/IR/AttnOps.h"
#include "attn/IR/AttnShapeRules.h"
#include "attn/IR/AttnTypes.h"
#include "attn/IR/PositionalEncoding.h"
#include "attn/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <limits>
#include <optional>

using namespace attnc::halide;

namespace {

/// exp(x) for the activations' x / (1 + exp(-x)) forms. Halide's exp is
/// inline code, right from -inf to 1.4e9 (+inf from 88.73 on), but beyond,
/// where its exponent overflows an int, it is 0 (and exp(NaN) is 0): x is
/// capped at 89, whose exp is +inf, so that x / (1 + exp(-x)) is -0 for
/// x = -huge and NaN for -inf, as in torch. A NaN x is the caller's:
/// min(NaN, 89) is not NaN.
Expr expNoWrap(Expr x) { return Halide::exp(Halide::min(x, 89.0f)); }

/// `value`, or x where x is NaN: for the activations whose formula loses a
/// NaN (max, Halide's exp(NaN) = 0), which torch propagates.
Expr keepNan(Expr x, Expr value) { return Halide::select(isNan(x), x, value); }

/// torch.relu: max(x, 0), NaN for NaN (Halide's max is maxnum, which
/// returns the number).
Expr reluOf(Expr x) { return keepNan(x, Halide::max(x, 0.0f)); }

/// tanh(x) = sign(x) (1 - e) / (1 + e) with e = exp(-2|x|): Halide's exp is
/// inline code, its tanh a call of libm's tanhf, and kernels need libc only.
Expr tanhWithoutLibm(Expr x) {
  Expr e = expNoWrap(-2.0f * Halide::abs(x));
  Expr magnitude = (1.0f - e) / (1.0f + e);
  return keepNan(x, Halide::select(x < 0.0f, -magnitude, magnitude));
}

} // namespace

//===----------------------------------------------------------------------===//
// Op translations
//===----------------------------------------------------------------------===//

/// x[..., I] @ w[O, I]ᵀ + b[O] as a 2-D GEMM over the rows of x (its
/// leading dimensions flattened), a reduction over I; w is read transposed,
/// as wt[I, O], which the schedule computes one panel of columns at a time
/// (packing).
Tensor Translator::linear(const Tensor &x, const Tensor &w, const Tensor *b) {
  int64_t in = w.shape[1], out = w.shape[0];
  std::vector<int64_t> shape = x.shape;
  shape.back() = out;
  // Row `row` of the flattened x is x[unflatten(row)].
  std::vector<int64_t> rowShape(x.shape.begin(), x.shape.end() - 1);
  auto unflatten = [rowShape](Expr row) {
    std::vector<Expr> index(rowShape.size());
    for (size_t d = rowShape.size(); d-- > 0;) {
      int extent = static_cast<int>(rowShape[d]);
      index[d] = d == 0 ? row : row % extent;
      row = row / extent;
    }
    return index;
  };
  Var o("o"), k("k"), row("row");
  Func acc(fresh("linear_acc")), y2(fresh("linear"));
  std::vector<Expr> xIndex = unflatten(row);
  if (sumsBf16Pairs(x, w, in)) {
    // vdpbf16ps's sums, as the MLIR backend's (docs/precision.md): from the
    // bias, each pair of k added to it, the odd k first (the instruction's
    // order). wt's pairs are adjacent: wt(e, o, p) = w[o, 2p + e].
    Var e("e"), p("p");
    Func wt(fresh("wt_pairs"));
    wt(e, o, p) = w.bf16At({o, 2 * p + e});
    RDom r(0, static_cast<int>(in / 2), 0, 2, "r");
    xIndex.push_back(2 * r.x + r.y);
    acc(o, row) = b ? (*b)({o}) : Expr(0.0f);
    acc(o, row) += Halide::cast<float>(x.bf16At(xIndex)) *
                   Halide::cast<float>(wt(r.y, o, r.x));
    y2(o, row) = acc(o, row);
    addStage(y2, [y2, o, row, acc, r, wt](const ScheduleTarget &t) mutable {
      scheduleBf16PairGemm(y2, o, row, {}, acc, r, wt, t);
    });
  } else {
    Func wt(fresh("wt"));
    wt(o, k) = w({o, k});
    RDom r(0, static_cast<int>(in), "r");
    xIndex.push_back(r.x);
    acc(o, row) = 0.0f;
    acc(o, row) += x(xIndex) * wt(o, r.x);
    y2(o, row) = b ? acc(o, row) + (*b)({o}) : acc(o, row);
    addStage(y2, [y2, o, row, acc, r, wt](const ScheduleTarget &t) mutable {
      scheduleGemm(y2, o, row, {}, acc, r, wt, t);
    });
  }
  // The result in x's leading shape: an index map.
  std::vector<Var> vars = makeVars(x.rank());
  Expr flat = Expr(0);
  for (size_t d = 0; d + 1 < vars.size(); ++d)
    flat = flat * static_cast<int>(x.shape[d]) + vars[d];
  return define("linear_view", shape, vars, y2(vars.back(), flat),
                Schedule::Inline);
}

/// a[N, M, K] @ b[N, K, P] (or b[N, P, K]ᵀ with transpose_b): a GEMM per
/// batch entry, b read through a panel (bt[n, k, j]).
Tensor Translator::matmul(const Tensor &a, const Tensor &b, bool transposeB) {
  int64_t k = a.shape[2], p = transposeB ? b.shape[1] : b.shape[2];
  Var j("j"), m("m"), n("n"), bk("k");
  Func acc(fresh("matmul_acc")), y(fresh("matmul"));
  acc(j, m, n) = 0.0f;
  if (sumsBf16Pairs(a, b, k)) {
    // As linear's: bt(e, j, pair, n) = b's column j at k = 2 pair + e.
    Var e("e"), pair("pair");
    Func bt(fresh("bt_pairs"));
    Expr at = 2 * pair + e;
    bt(e, j, pair, n) =
        transposeB ? b.bf16At({n, j, at}) : b.bf16At({n, at, j});
    RDom r(0, static_cast<int>(k / 2), 0, 2, "r");
    acc(j, m, n) += Halide::cast<float>(a.bf16At({n, m, 2 * r.x + r.y})) *
                    Halide::cast<float>(bt(r.y, j, r.x, n));
    y(j, m, n) = acc(j, m, n);
    addStage(y, [y, j, m, n, acc, r, bt](const ScheduleTarget &t) mutable {
      scheduleBf16PairGemm(y, j, m, {n}, acc, r, bt, t);
    });
  } else {
    Func bt(fresh("bt"));
    bt(j, bk, n) = transposeB ? b({n, j, bk}) : b({n, bk, j});
    RDom r(0, static_cast<int>(k), "r");
    acc(j, m, n) += a({n, m, r.x}) * bt(j, r.x, n);
    y(j, m, n) = acc(j, m, n);
    addStage(y, [y, j, m, n, acc, r, bt](const ScheduleTarget &t) mutable {
      scheduleGemm(y, j, m, {n}, acc, r, bt, t);
    });
  }
  return Tensor{y, {a.shape[0], a.shape[1], p}};
}

/// f of the operands, each read with NumPy broadcasting against `shape`
/// (trailing axes aligned; a size-1 axis reads index 0).
Tensor Translator::elementwise(
    const std::string &name, std::vector<int64_t> shape,
    const std::vector<const Tensor *> &operands,
    const std::function<Expr(const std::vector<Expr> &)> &f) {
  std::vector<Var> vars = makeVars(static_cast<int>(shape.size()));
  std::vector<Expr> values;
  for (const Tensor *t : operands) {
    std::vector<Expr> index;
    size_t offset = shape.size() - t->shape.size();
    for (size_t i = 0; i < t->shape.size(); ++i)
      index.push_back(t->shape[i] == 1 && shape[offset + i] != 1
                          ? Expr(0)
                          : Expr(vars[offset + i]));
    values.push_back((*t)(index));
  }
  return define(name, std::move(shape), vars, f(values), Schedule::Pointwise);
}

Tensor Translator::roundedThrough(const Tensor &x, mlir::FloatType type) {
  if (!type)
    return x;
  Halide::Type to = halideTypeOf(type);
  // Two stages, as attn.cast's: one expression cast(f32, cast(f16, x))
  // gave wrong values with F16C (x86-64-v3: 4 ulps off, strict_float or
  // not), the f16 stage and then its widening do not.
  Tensor narrow =
      elementwise("rounded", x.shape, {&x}, [to](const std::vector<Expr> &v) {
        return roundedTo(to, v[0]);
      });
  Tensor widened = elementwise("widened", x.shape, {&narrow},
                               [](const std::vector<Expr> &v) {
                                 return Halide::cast(Halide::Float(32), v[0]);
                               });
  if (to.is_bfloat())
    widened.bf16 = narrow.func;
  return widened;
}

/// result[b*H + h, t, i] = x[b, t, h*d + i]: an index map.
Tensor Translator::splitHeads(const Tensor &x, int64_t heads) {
  int64_t d = x.shape[2] / heads;
  std::vector<Var> vars = makeVars(3);
  Expr h = vars[0] % static_cast<int>(heads);
  Expr b = vars[0] / static_cast<int>(heads);
  return define("split_heads", {x.shape[0] * heads, x.shape[1], d}, vars,
                x({b, vars[1], h * static_cast<int>(d) + vars[2]}),
                Schedule::Inline);
}

/// result[b, t, h*d + i] = x[b*H + h, t, i]: an index map.
Tensor Translator::mergeHeads(const Tensor &x, int64_t heads) {
  int64_t d = x.shape[2];
  std::vector<Var> vars = makeVars(3);
  Expr h = vars[2] / static_cast<int>(d), i = vars[2] % static_cast<int>(d);
  return define("merge_heads", {x.shape[0] / heads, x.shape[1], d * heads},
                vars, x({vars[0] * static_cast<int>(heads) + h, vars[1], i}),
                Schedule::Inline);
}

/// softmax over the last axis, max-subtracted; with `validLens` (x is
/// [N, Tq, Tk], lengths [N] or [N, Tq]) D2L's masked_softmax: entries
/// j >= len replaced by -1e6 first.
Tensor Translator::softmax(const Tensor &x, const Tensor *validLens) {
  int rank = x.rank();
  int64_t width = x.shape.back();
  std::vector<Var> vars = makeVars(rank);
  std::vector<Expr> index = asExprs(vars);
  std::vector<Var> rowVars(vars.begin(), vars.end() - 1);
  std::vector<Var> hRow = reversedVars(rowVars);
  Func masked(fresh("masked"));
  Expr value = x(index);
  if (validLens) {
    Expr len = validLens->rank() == 1 ? (*validLens)({vars[0]})
                                      : (*validLens)({vars[0], vars[1]});
    Expr visible = mlir::attn::keyVisible(
        Expr(vars.back()), Expr(vars[1]), std::optional<Expr>(len),
        /*causal=*/false, /*window=*/std::nullopt, Halide::cast<bool>(1));
    value = Halide::select(visible, value, Expr(mlir::attn::kMaskedScore));
  }
  masked(reversedVars(vars)) = value;
  RDom r(0, static_cast<int>(width), "r");
  std::vector<Expr> atR;
  atR.push_back(r.x);
  for (auto it = hRow.begin(); it != hRow.end(); ++it)
    atR.push_back(*it);
  Func maxOf(fresh("row_max")), expOf(fresh("row_exp")),
      sumOf(fresh("row_sum"));
  maxOf(hRow) = Halide::maximum(masked(atR));
  std::vector<Var> hv = reversedVars(vars);
  std::vector<Expr> hRowExprs(hRow.begin(), hRow.end());
  expOf(hv) = softmaxExp(masked(hv) - maxOf(hRowExprs));
  sumOf(hRow) = Halide::sum(expOf(atR));
  Func y(fresh("softmax"));
  y(hv) = expOf(hv) / sumOf(hRowExprs);
  addStage(y, [y, hv, maxOf, expOf, sumOf](const ScheduleTarget &t) mutable {
    scheduleRowReduction(y, hv, {maxOf, expOf, sumOf}, t);
  });
  return Tensor{y, x.shape};
}

namespace {

/// positionalEncodingEntry's arithmetic as Halide Exprs (f64 and i64; the
/// caller wraps the result in strict_float so that Halide's simplifier
/// keeps the rounding steps).
struct HalideOps {
  using Float64 = Expr;
  using Int64 = Expr;
  Expr constant(double c) { return Expr(c); }
  Expr add(const Expr &x, const Expr &y) { return x + y; }
  Expr sub(const Expr &x, const Expr &y) { return x - y; }
  Expr mul(const Expr &x, const Expr &y) { return x * y; }
  Expr roundToInt(const Expr &x) { return Halide::cast<int64_t>(x); }
  Expr addInt(const Expr &x, const Expr &y) { return x + y; }
  Expr andInt(const Expr &x, int64_t mask) { return x & Expr(mask); }
  Expr select(const Expr &pick, const Expr &x, const Expr &y) {
    return Halide::select(pick != Expr(int64_t(0)), x, y);
  }
};

} // namespace

/// x + P[:T] (D2L's table, attn/IR/PositionalEncoding.h): a constant up to
/// kMaxConstantTableElements, computed from indices beyond or at each
/// entry's `offset` (as the MLIR lowering does; an offset past the table
/// makes the kernel return ATTNC_STATUS_CACHE_POSITION).
Tensor Translator::positionalEncoding(const Tensor &x, const Tensor *offset,
                                      int64_t maxLen) {
  int64_t rows = x.shape[1], width = x.shape[2];
  std::vector<Var> vars = makeVars(3);
  Expr position = vars[1];
  if (offset) {
    position = vars[1] + (*offset)({vars[0]});
    countBadPositions(*offset, x.shape[0], maxLen - rows);
  }
  if (offset || mlir::attn::positionalEncodingIsComputed(rows, width)) {
    std::vector<float> columnDivisors =
        mlir::attn::positionalEncodingColumnDivisors(width);
    Halide::Buffer<float> divisors(static_cast<int>(width), fresh("pe_div"));
    for (int64_t c = 0; c < width; ++c)
      divisors(static_cast<int>(c)) = columnDivisors[c];
    Func divisor = constant(divisors);
    Expr angle =
        Halide::cast<float>(Halide::cast<int64_t>(position)) / divisor(vars[2]);
    HalideOps ops;
    Expr entry = mlir::attn::positionalEncodingEntry(
        ops, Halide::cast<double>(angle),
        Halide::cast<int64_t>(vars[2]) & Expr(int64_t(1)));
    return define("positional_encoding", x.shape, vars,
                  x(asExprs(vars)) +
                      Halide::strict_float(Halide::cast<float>(entry)),
                  Schedule::Pointwise);
  }
  std::vector<float> table = mlir::attn::positionalEncodingTable(rows, width);
  Halide::Buffer<float> buffer(
      std::vector<int>{static_cast<int>(width), static_cast<int>(rows)},
      fresh("pe_table"));
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t c = 0; c < width; ++c)
      buffer(static_cast<int>(c), static_cast<int>(t)) = table[t * width + c];
  Func read = constant(buffer);
  return define("positional_encoding", x.shape, vars,
                x(asExprs(vars)) + read(vars[2], vars[1]), Schedule::Pointwise);
}

/// torch nn.LayerNorm over the last axis: biased variance, then
/// (x - mean) / sqrt(var + eps) * gamma + beta.
Tensor Translator::layerNorm(const Tensor &x, const Tensor &gamma,
                             const Tensor &beta, float eps) {
  int rank = x.rank();
  int64_t width = x.shape.back();
  std::vector<Var> vars = makeVars(rank);
  std::vector<Var> hv = reversedVars(vars);
  std::vector<Var> hRow(hv.begin() + 1, hv.end());
  std::vector<Expr> hRowExprs(hRow.begin(), hRow.end());
  RDom r(0, static_cast<int>(width), "r");
  std::vector<Expr> atR = {r.x};
  atR.insert(atR.end(), hRow.begin(), hRow.end());
  Func mean(fresh("mean")), var(fresh("variance"));
  float inv = 1.0f / static_cast<float>(width);
  mean(hRow) = Halide::sum(x.func(atR)) * inv;
  Expr centred = x.func(atR) - mean(hRowExprs);
  var(hRow) = Halide::sum(centred * centred) * inv;
  Func y(fresh("layer_norm"));
  // Strict: over one feature the mean is x itself, and Halide (and LLVM,
  // given Halide's no-NaN flags) would fold x - x to 0 where torch gives
  // inf - inf = NaN.
  y(hv) = Halide::strict_float(x.func(hv) - mean(hRowExprs)) /
              Halide::sqrt(var(hRowExprs) + eps) * gamma({vars.back()}) +
          beta({vars.back()});
  addStage(y, [y, hv, mean, var](const ScheduleTarget &t) mutable {
    scheduleRowReduction(y, hv, {mean, var}, t);
  });
  return Tensor{y, x.shape};
}

/// Llama's RMSNorm: x * rsqrt(mean(x*x) + eps) * gamma.
Tensor Translator::rmsNorm(const Tensor &x, const Tensor &gamma, float eps) {
  int rank = x.rank();
  int64_t width = x.shape.back();
  std::vector<Var> vars = makeVars(rank);
  std::vector<Var> hv = reversedVars(vars);
  std::vector<Var> hRow(hv.begin() + 1, hv.end());
  std::vector<Expr> hRowExprs(hRow.begin(), hRow.end());
  RDom r(0, static_cast<int>(width), "r");
  std::vector<Expr> atR = {r.x};
  atR.insert(atR.end(), hRow.begin(), hRow.end());
  Func meanSquare(fresh("mean_square"));
  meanSquare(hRow) =
      Halide::sum(x.func(atR) * x.func(atR)) / static_cast<float>(width);
  Func y(fresh("rms_norm"));
  y(hv) = x.func(hv) * (1.0f / Halide::sqrt(meanSquare(hRowExprs) + eps)) *
          gamma({vars.back()});
  addStage(y, [y, hv, meanSquare](const ScheduleTarget &t) mutable {
    scheduleRowReduction(y, hv, {meanSquare}, t);
  });
  return Tensor{y, x.shape};
}

/// Row ids[...] of table[V, D]; an id outside [0, V) reads a clamped row
/// and makes the kernel's status count this embedding.
Tensor Translator::embedding(const Tensor &ids, const Tensor &table) {
  int64_t vocab = table.shape[0];
  std::vector<int64_t> shape = ids.shape;
  shape.push_back(table.shape[1]);
  std::vector<Var> vars = makeVars(static_cast<int>(shape.size()));
  std::vector<Expr> idIndex(vars.begin(), vars.end() - 1);
  Expr row = Halide::clamp(ids(idIndex), 0, static_cast<int>(vocab - 1));
  Tensor y = define("embedding", shape, vars, table({row, vars.back()}),
                    Schedule::Pointwise);
  // The ids out of range: a reduction over every id (a rank-0 id is the
  // only one).
  if (ids.rank() == 0) {
    Expr id = ids({});
    badIds.push_back(
        Halide::select(id < 0 || id >= static_cast<int>(vocab), 1, 0));
    return y;
  }
  Halide::Region region;
  for (auto it = ids.shape.rbegin(); it != ids.shape.rend(); ++it)
    region.push_back(Halide::Range(0, static_cast<int>(*it)));
  RDom r(region, "ids");
  std::vector<Expr> at;
  for (int i = ids.rank() - 1; i >= 0; --i)
    at.push_back(r[i]);
  Expr id = ids(at);
  // The status counts the embeddings given an id out of range (docs/spec.md
  // §5's header: 1 per embedding, however many of its ids).
  badIds.push_back(Halide::maximum(
      Halide::select(id < 0 || id >= static_cast<int>(vocab), 1, 0)));
  return y;
}

Func Translator::constant(const Halide::Buffer<float> &table) const {
  if (clampReads)
    return Halide::BoundaryConditions::repeat_edge(table);
  Func f(table.name() + "_read");
  std::vector<Var> vars = makeVars(table.dimensions());
  f(vars) = table(asExprs(vars));
  return f;
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

Halide::Type attnc::halide::halideTypeOf(mlir::Type element) {
  const mlir::attn::ElementTypeInfo &info =
      mlir::attn::describe(*mlir::attn::elementTypeOf(element));
  return Halide::Type(static_cast<halide_type_code_t>(info.halideCode),
                      static_cast<int>(info.bytes * 8), 1);
}

Halide::Type
attnc::halide::halideStorageTypeOf(mlir::attn::ElementType element) {
  const mlir::attn::ElementTypeInfo &info = mlir::attn::describe(element);
  if (info.isFloat && info.bytes == 2)
    return Halide::UInt(16);
  return Halide::Type(static_cast<halide_type_code_t>(info.halideCode),
                      static_cast<int>(info.bytes * 8), 1);
}

Halide::Expr attnc::halide::storedAs(const Halide::Expr &value) {
  if (value.type().is_float() && value.type().bits() == 16)
    return Halide::reinterpret(Halide::UInt(16), value);
  return value;
}

Halide::Expr attnc::halide::loadedAs(const Halide::Expr &bits,
                                     Halide::Type value) {
  if (value == bits.type())
    return bits;
  return Halide::reinterpret(value, bits);
}

llvm::Expected<std::vector<Tensor>>
Translator::translate(mlir::func::FuncOp func, std::vector<Tensor> arguments) {
  namespace attn = mlir::attn;
  llvm::DenseMap<mlir::Value, Tensor> values;
  for (auto [arg, tensor] : llvm::zip(func.getArguments(), arguments))
    values.try_emplace(arg, tensor);
  auto get = [&](mlir::Value value) -> const Tensor * {
    if (!value)
      return nullptr;
    auto it = values.find(value);
    return it == values.end() ? nullptr : &it->second;
  };
  for (mlir::Operation &op : func.getBody().front()) {
    auto set = [&](mlir::Value value, Tensor tensor) {
      values.try_emplace(value, std::move(tensor));
    };
    auto unary = [&](mlir::Value x, const std::string &name,
                     std::function<Expr(Expr)> f) {
      const Tensor *t = get(x);
      set(op.getResult(0),
          elementwise(name, t->shape, {t},
                      [f](const std::vector<Expr> &v) { return f(v[0]); }));
    };
    auto binary = [&](mlir::Value a, mlir::Value b, const std::string &name,
                      std::function<Expr(Expr, Expr)> f) {
      set(op.getResult(0),
          elementwise(
              name, shapeOf(op.getResult(0)), {get(a), get(b)},
              [f](const std::vector<Expr> &v) { return f(v[0], v[1]); }));
    };
    if (auto ret = llvm::dyn_cast<mlir::func::ReturnOp>(&op)) {
      std::vector<Tensor> results;
      for (mlir::Value v : ret.getOperands())
        results.push_back(*get(v));
      return results;
    } else if (auto cast = llvm::dyn_cast<attn::CastOp>(&op)) {
      Halide::Type to = halideTypeOf(
          llvm::cast<mlir::ShapedType>(cast.getType()).getElementType());
      unary(cast.getX(), "cast", [to](Expr x) { return roundedTo(to, x); });
      // A bf16 tensor widened: its GEMMs may read the bf16 values.
      const Tensor *source = get(cast.getX());
      if (to == Halide::Float(32) && source->func.type().is_bfloat())
        values.find(cast.getResult())->second.bf16 = source->func;
    } else if (auto linear = llvm::dyn_cast<attn::LinearOp>(&op)) {
      set(linear.getResult(),
          this->linear(*get(linear.getX()), *get(linear.getW()),
                       get(linear.getB())));
    } else if (auto mm = llvm::dyn_cast<attn::MatmulOp>(&op)) {
      set(mm.getResult(),
          matmul(*get(mm.getA()), *get(mm.getB()), mm.getTransposeB()));
    } else if (auto scale = llvm::dyn_cast<attn::ScaleOp>(&op)) {
      float factor = scale.getFactor().convertToFloat();
      unary(scale.getX(), "scale", [factor](Expr x) { return x * factor; });
    } else if (auto add = llvm::dyn_cast<attn::AddOp>(&op)) {
      binary(add.getA(), add.getB(), "add",
             [](Expr a, Expr b) { return a + b; });
    } else if (auto mul = llvm::dyn_cast<attn::MulOp>(&op)) {
      binary(mul.getA(), mul.getB(), "mul",
             [](Expr a, Expr b) { return a * b; });
    } else if (auto sub = llvm::dyn_cast<attn::SubOp>(&op)) {
      binary(sub.getA(), sub.getB(), "sub",
             [](Expr a, Expr b) { return a - b; });
    } else if (auto relu = llvm::dyn_cast<attn::ReluOp>(&op)) {
      unary(relu.getX(), "relu", reluOf);
    } else if (auto gelu = llvm::dyn_cast<attn::GeluOp>(&op)) {
      if (gelu.getApproximate())
        // torch's 'tanh' form, 0.5 x (1 + tanh(u)) with
        // u = sqrt(2/pi) (x + 0.044715 x^3), as x / (1 + exp(-2u)).
        unary(gelu.getX(), "gelu", [](Expr x) {
          float beta = static_cast<float>(M_SQRT2 * M_2_SQRTPI * 0.5);
          Expr u = beta * (x + 0.044715f * x * x * x);
          return x / (1.0f + expNoWrap(-2.0f * u));
        });
      else
        unary(gelu.getX(), "gelu", [](Expr x) {
          // Halide's erf is NaN from |x| ~ 1e11 on and at +-inf (its
          // 1 - P(x)^-16 form overflows) and exactly +-1 from 3.93: the
          // clamp changes no other result, and gelu(huge) = x, gelu(-huge)
          // = 0, gelu(-inf) = NaN, as in torch.
          Expr scaled =
              Halide::clamp(x * static_cast<float>(M_SQRT1_2), -10.0f, 10.0f);
          return x * 0.5f * (1.0f + Halide::erf(scaled));
        });
    } else if (auto silu = llvm::dyn_cast<attn::SiluOp>(&op)) {
      unary(silu.getX(), "silu",
            [](Expr x) { return x / (1.0f + expNoWrap(-x)); });
    } else if (auto tanh = llvm::dyn_cast<attn::TanhOp>(&op)) {
      unary(tanh.getX(), "tanh", [](Expr x) { return tanhWithoutLibm(x); });
    } else if (auto sigmoid = llvm::dyn_cast<attn::SigmoidOp>(&op)) {
      unary(sigmoid.getX(), "sigmoid",
            [](Expr x) { return keepNan(x, 1.0f / (1.0f + expNoWrap(-x))); });
    } else if (auto split = llvm::dyn_cast<attn::SplitHeadsOp>(&op)) {
      set(split.getResult(), splitHeads(*get(split.getX()), split.getHeads()));
    } else if (auto merge = llvm::dyn_cast<attn::MergeHeadsOp>(&op)) {
      set(merge.getResult(), mergeHeads(*get(merge.getX()), merge.getHeads()));
    } else if (auto sm = llvm::dyn_cast<attn::SoftmaxOp>(&op)) {
      set(sm.getResult(), softmax(*get(sm.getX()), nullptr));
    } else if (auto msm = llvm::dyn_cast<attn::MaskedSoftmaxOp>(&op)) {
      set(msm.getResult(), softmax(*get(msm.getX()), get(msm.getValidLens())));
    } else if (auto at = llvm::dyn_cast<attn::AttentionOp>(&op)) {
      auto [out, weights] = attention(at, *get(at.getQ()), *get(at.getK()),
                                      *get(at.getV()), get(at.getValidLens()));
      set(at.getResult(), out);
      if (at.getAttentionWeights())
        set(at.getAttentionWeights(), weights);
    } else if (auto mha = llvm::dyn_cast<attn::MultiheadAttentionOp>(&op)) {
      MhaResults results = multiheadAttention(mha, get);
      set(mha.getResult(), results.out);
      if (mha.getAttentionWeights())
        set(mha.getAttentionWeights(), results.weights);
      if (mha.hasCache()) {
        set(mha.getUpdatedCacheK(), results.cacheK);
        set(mha.getUpdatedCacheV(), results.cacheV);
      }
    } else if (auto pe = llvm::dyn_cast<attn::PositionalEncodingOp>(&op)) {
      set(pe.getResult(),
          positionalEncoding(*get(pe.getX()), get(pe.getOffset()),
                             static_cast<int64_t>(pe.getMaxLen())));
    } else if (auto ln = llvm::dyn_cast<attn::LayerNormOp>(&op)) {
      set(ln.getResult(),
          layerNorm(*get(ln.getX()), *get(ln.getGamma()), *get(ln.getBeta()),
                    ln.getEps().convertToFloat()));
    } else if (auto an = llvm::dyn_cast<attn::AddNormOp>(&op)) {
      // D2L AddNorm: layer_norm(y + x).
      const Tensor *x = get(an.getX()), *y = get(an.getY());
      Tensor sum =
          elementwise("add_norm_sum", x->shape, {y, x},
                      [](const std::vector<Expr> &v) { return v[0] + v[1]; });
      set(an.getResult(),
          layerNorm(sum, *get(an.getGamma()), *get(an.getBeta()),
                    an.getEps().convertToFloat()));
    } else if (auto rms = llvm::dyn_cast<attn::RmsNormOp>(&op)) {
      set(rms.getResult(), rmsNorm(*get(rms.getX()), *get(rms.getGamma()),
                                   rms.getEps().convertToFloat()));
    } else if (auto ffn = llvm::dyn_cast<attn::FfnOp>(&op)) {
      // D2L PositionWiseFFN: dense2(relu(dense1(x))).
      Tensor hidden =
          this->linear(*get(ffn.getX()), *get(ffn.getW1()), get(ffn.getB1()));
      Tensor relu =
          elementwise("ffn_relu", hidden.shape, {&hidden},
                      [](const std::vector<Expr> &v) { return reluOf(v[0]); });
      relu = roundedThrough(relu, mlir::attn::innerRoundingOf(ffn));
      set(ffn.getResult(),
          this->linear(relu, *get(ffn.getW2()), get(ffn.getB2())));
    } else if (auto emb = llvm::dyn_cast<attn::EmbeddingOp>(&op)) {
      set(emb.getResult(), embedding(*get(emb.getIds()), *get(emb.getTable())));
    } else if (auto dropout = llvm::dyn_cast<attn::DropoutOp>(&op)) {
      set(dropout.getResult(), *get(dropout.getX()));
    } else if (auto call = llvm::dyn_cast<mlir::func::CallOp>(&op)) {
      auto callee =
          mlir::SymbolTable::lookupNearestSymbolFrom<mlir::func::FuncOp>(
              call, call.getCalleeAttr());
      if (!callee || callee.isExternal())
        return unsupported(&op);
      std::vector<Tensor> operands;
      for (mlir::Value v : call.getOperands())
        operands.push_back(*get(v));
      auto results = translate(callee, std::move(operands));
      if (!results)
        return results.takeError();
      for (auto [value, tensor] : llvm::zip(call.getResults(), *results))
        set(value, tensor);
    } else {
      return unsupported(&op);
    }
    for (mlir::Value result : op.getResults())
      if (!get(result))
        return unsupported(&op);
  }
  return llvm::createStringError("function '" + func.getName().str() +
                                 "' has no return");
}

llvm::Expected<KernelPipeline>
attnc::halide::buildKernelPipeline(mlir::func::FuncOp kernel, bool clampReads,
                                   bool bf16Pairs) {
  KernelPipeline pipeline;
  Translator translator(pipeline, clampReads, bf16Pairs);
  // Halide indexes buffers with 32-bit ints.
  auto tooLarge = [&](mlir::Type type,
                      const std::string &what) -> std::optional<llvm::Error> {
    auto shaped = llvm::cast<mlir::ShapedType>(type);
    if (shaped.getNumElements() <= std::numeric_limits<int32_t>::max())
      return std::nullopt;
    return llvm::createStringError(
        "the Halide backend indexes buffers with 32-bit ints: " + what +
        " of kernel '" + kernel.getName().str() + "' has " +
        std::to_string(shaped.getNumElements()) +
        " elements (at most 2^31 - 1; --backend=mlir has no such limit)");
  };
  for (auto [i, type] : llvm::enumerate(kernel.getArgumentTypes()))
    if (auto error = tooLarge(type, "argument " + std::to_string(i)))
      return std::move(*error);
  for (auto [i, type] : llvm::enumerate(kernel.getResultTypes()))
    if (auto error = tooLarge(type, "output " + std::to_string(i)))
      return std::move(*error);
  std::vector<Tensor> arguments;
  for (auto [i, arg] : llvm::enumerate(kernel.getArguments())) {
    auto type = llvm::cast<mlir::ShapedType>(arg.getType());
    auto name = kernel.getArgAttrOfType<mlir::StringAttr>(
        i, mlir::attn::AttnDialect::kNameAttr);
    if (!mlir::attn::elementTypeOf(type.getElementType()))
      return llvm::createStringError(
          "argument " + std::to_string(i) + " of kernel '" +
          kernel.getName().str() + "' has an element type kernels do not take");
    Halide::ImageParam param(
        halideStorageTypeOf(*mlir::attn::elementTypeOf(type.getElementType())),
        static_cast<int>(type.getRank()),
        "arg_" + std::to_string(i) + "_" +
            (name ? name.str() : std::string("arg")));
    pipeline.arguments.push_back(param);
    pipeline.argumentShapes.push_back(shapeOf(arg));
    std::vector<Var> vars = makeVars(static_cast<int>(type.getRank()));
    Func read("read_arg_" + std::to_string(i));
    std::vector<Var> hv = reversedVars(vars);
    Expr bits = clampReads ? Halide::BoundaryConditions::repeat_edge(param)(hv)
                           : param(hv);
    read(hv) = loadedAs(bits, halideTypeOf(type.getElementType()));
    arguments.push_back(Tensor{read, shapeOf(arg)});
  }
  auto results = translator.translate(kernel, std::move(arguments));
  if (!results)
    return results.takeError();
  // Each output is a Func of its own, computed on its own: an output that
  // is an argument, an index map or another output gets a copy.
  std::vector<Func> seen;
  std::vector<std::pair<StateWrite, CacheWrite>> writes;
  for (auto [i, result] : llvm::enumerate(*results)) {
    unsigned index = static_cast<unsigned>(i);
    if (auto state = kernel.getResultAttrOfType<mlir::IntegerAttr>(
            index, mlir::attn::AttnDialect::kUpdatesAttr)) {
      // A state the kernel returns unchanged needs no write.
      if (!result.cacheWrite)
        continue;
      StateWrite write;
      write.argument = static_cast<unsigned>(state.getInt());
      write.stateShape = result.shape;
      write.rowsShape = result.cacheWrite->rowsShape;
      write.type = *mlir::attn::elementTypeOf(
          mlir::getElementTypeOrSelf(kernel.getResultTypes()[index]));
      writes.emplace_back(write, *result.cacheWrite);
      continue;
    }
    bool computed = false;
    for (const Stage &stage : pipeline.stages)
      computed |= stage.func.name() == result.func.name();
    bool repeated = false;
    for (const Func &f : seen)
      repeated |= f.name() == result.func.name();
    Tensor out = result;
    // A bf16/f16 output is stored as its bits: a Func of its own.
    Halide::Type type = result.func.type();
    bool storedOtherwise = type.is_float() && type.bits() == 16;
    if (!computed || repeated || storedOtherwise)
      out = translator.copyOf(result, "output_" + std::to_string(i));
    seen.push_back(out.func);
    pipeline.outputs.push_back(out.func);
    pipeline.outputShapes.push_back(out.shape);
  }
  for (auto [i, write] : llvm::enumerate(writes)) {
    Tensor rows{write.second.rows, write.first.rowsShape};
    std::string name = "state_rows_" + std::to_string(i);
    pipeline.outputs.push_back(translator.copyOf(rows, name).func);
    pipeline.outputShapes.push_back(write.first.rowsShape);
    pipeline.outputs.push_back(write.second.at);
    pipeline.outputShapes.push_back({write.first.rowsShape[0]});
    pipeline.stateWrites.push_back(write.first);
  }
  pipeline.outputs.push_back(translator.statusFunc());
  pipeline.outputShapes.push_back({});
  return pipeline;
}

void attnc::halide::constrainShapes(KernelPipeline &pipeline) {
  auto constrain = [](auto dims, const std::vector<int64_t> &shape) {
    Halide::Region estimates;
    int stride = 1;
    for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
      int extent = static_cast<int>(shape[shape.size() - 1 - d]);
      dims(d).set_bounds(0, extent).set_stride(stride);
      estimates.push_back(Halide::Range(0, extent));
      stride *= extent;
    }
    return estimates;
  };
  for (size_t a = 0; a < pipeline.arguments.size(); ++a) {
    Halide::ImageParam &param = pipeline.arguments[a];
    param.set_estimates(constrain([&](int d) { return param.dim(d); },
                                  pipeline.argumentShapes[a]));
  }
  for (size_t o = 0; o < pipeline.outputs.size(); ++o) {
    Halide::Func &func = pipeline.outputs[o];
    Halide::OutputImageParam buffer = func.output_buffer();
    Halide::Region estimates = constrain([&](int d) { return buffer.dim(d); },
                                         pipeline.outputShapes[o]);
    func.set_estimates(estimates);
  }
}
