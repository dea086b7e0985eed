//===- AttnShapeRules.cpp - Shape and dtype rules of the attn ops ---------===//

#include "attn/IR/AttnShapeRules.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <tuple>
#include <utility>

using namespace mlir::attn;
using namespace mlir::attn::rules;
using llvm::StringRef;
using llvm::Twine;

namespace {

constexpr int64_t kAnyRank = -1;

std::string elementName(std::optional<ElementType> type) {
  return type ? nameOf(*type).str() : "an unsupported element type";
}

/// What an operand must hold: a float or an integer type of the table that
/// ops accept.
enum class ElementClass { Float, Integer };

bool accepts(ElementClass expected, std::optional<ElementType> type) {
  return type && describe(*type).isSupported &&
         isFloat(*type) == (expected == ElementClass::Float);
}

/// `an f32`, `an i32` (`an f32, bf16 or f16` once they are supported).
std::string expectedTypes(ElementClass expected) {
  llvm::SmallVector<StringRef> names;
  for (const ElementTypeInfo &info : elementTypes())
    if (accepts(expected, info.type))
      names.push_back(info.name);
  std::string list;
  for (auto [i, name] : llvm::enumerate(names))
    list += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + name.str();
  // The article goes by how the first letter is said ("an f32", "a bf16").
  bool vowelSound =
      !list.empty() && StringRef("aefhilmnorsx").contains(list.front());
  return (vowelSound ? "an " : "a ") + list;
}

/// A float attribute as a person wrote it (`0.1`, not `1.000000e-01`).
std::string formatNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

std::string rankText(int64_t minRank, int64_t maxRank) {
  if (minRank == maxRank)
    return "rank " + std::to_string(minRank);
  if (maxRank == kAnyRank)
    return "rank >= " + std::to_string(minRank);
  return "rank " + std::to_string(minRank) + " or " + std::to_string(maxRank);
}

/// Checks one op: each failed check reports through RuleError and marks the
/// op as failed; callers stop at the first failure that later checks need.
class Checker {
public:
  explicit Checker(RuleError error) : error(error) {}

  bool fail(StringRef argument, const Twine &message) {
    error(argument, message);
    return false;
  }

  /// `t` has an element type of class `expected`, a rank in [minRank,
  /// maxRank] (maxRank kAnyRank: unbounded), positive dims and a sane
  /// element count.
  bool tensor(StringRef name, const TensorShape &t, ElementClass expected,
              int64_t minRank, int64_t maxRank) {
    if (!accepts(expected, t.element))
      return fail(name, "'" + name + "' must be " + expectedTypes(expected) +
                            " tensor, got " + formatShape(t));
    if (t.rank() < minRank || (maxRank != kAnyRank && t.rank() > maxRank))
      return fail(name, "'" + name + "' must have " +
                            rankText(minRank, maxRank) + ", got " +
                            formatShape(t));
    int64_t elements = 1;
    for (int64_t d : t.dims) {
      if (d <= 0)
        return fail(name, "'" + name + "' has a dimension of size " + Twine(d) +
                              " (" + formatShape(t) +
                              "); every dimension must be positive");
      if (d > kMaxElements / elements)
        return fail(name, "'" + name + "' is too large (" + formatShape(t) +
                              "); at most 2^40 elements are supported");
      elements *= d;
    }
    return true;
  }

  /// What an op makes -- its result, or a tensor it materializes on the
  /// way (attention's scores) -- stays within the element limit: operands
  /// that are each within it can still multiply past it. Blamed on the op
  /// (no argument).
  bool within(const Twine &what, llvm::ArrayRef<int64_t> dims) {
    int64_t elements = 1;
    for (int64_t d : dims) {
      if (d > 0 && elements > kMaxElements / d) {
        std::string shape;
        for (int64_t x : dims)
          shape += (shape.empty() ? "" : ", ") + std::to_string(x);
        return fail("", what + " would be [" + shape +
                            "]; at most 2^40 elements are supported");
      }
      elements *= d;
    }
    return true;
  }

  /// `result` if it is within the element limit.
  RuleResult result(TensorShape result) {
    if (result.rank() > kMaxRank) {
      fail("", "its result would have rank " + Twine(result.rank()) +
                   "; at most rank " + Twine(kMaxRank) + " is supported");
      return std::nullopt;
    }
    if (!within("its result", result.dims))
      return std::nullopt;
    return result;
  }

  bool positive(StringRef name, int64_t value) {
    if (value > 0)
      return true;
    return fail(name, name + "=" + Twine(value) + " must be positive");
  }

  /// `valid_lens` of an attention over N batches and Tq queries: i32 of shape
  /// [N] or [N, Tq]. `nName` names N in messages (`B` or `N`).
  bool validLens(const TensorShape &vl, int64_t n, int64_t tq,
                 StringRef nName) {
    if (!tensor("valid_lens", vl, ElementClass::Integer, 1, 2))
      return false;
    if (vl.dims[0] != n)
      return fail("valid_lens", "'valid_lens' must have " + Twine(n) +
                                    " rows (" + nName + "), got " +
                                    formatShape(vl));
    if (vl.rank() == 2 && vl.dims[1] != tq)
      return fail("valid_lens",
                  "a 2-D 'valid_lens' must be " + elementName(vl.element) +
                      "[" + Twine(n) + ", " + Twine(tq) +
                      "] (one length per query), got " + formatShape(vl));
    return true;
  }

private:
  RuleError error;
};

struct LinearNames {
  StringRef x, w, b;
};

/// x[..., I] @ w[O, I]^T + b[O] -> [..., O], with operand names as the caller
/// spells them (`linear` and the two halves of `ffn` share this rule).
RuleResult linearRule(Checker &c, const TensorShape &x, const TensorShape &w,
                      const TensorShape *b, LinearNames names) {
  if (!c.tensor(names.x, x, ElementClass::Float, 1, kAnyRank) ||
      !c.tensor(names.w, w, ElementClass::Float, 2, 2))
    return std::nullopt;
  int64_t in = x.dims.back(), out = w.dims[0];
  if (w.dims[1] != in) {
    c.fail(names.w, "'" + names.w + "' must be " + elementName(w.element) +
                        "[O, " + Twine(in) +
                        "] to match the last dimension of '" + names.x + "' (" +
                        formatShape(x) + "), got " + formatShape(w));
    return std::nullopt;
  }
  if (b) {
    if (!c.tensor(names.b, *b, ElementClass::Float, 1, 1))
      return std::nullopt;
    if (b->dims[0] != out) {
      c.fail(names.b, "'" + names.b + "' must be " + elementName(b->element) +
                          "[" + Twine(out) + "] (one bias per row of '" +
                          names.w + "'), got " + formatShape(*b));
      return std::nullopt;
    }
  }
  TensorShape result = x;
  result.dims.back() = out;
  return c.result(std::move(result));
}

/// gamma[D] and beta[D] of a layer norm over the last axis of `x`, and eps.
bool layerNormParams(Checker &c, const TensorShape &x, const TensorShape &gamma,
                     const TensorShape &beta, double eps) {
  int64_t d = x.dims.back();
  for (auto [name, t] :
       {std::pair<StringRef, const TensorShape *>{"gamma", &gamma},
        {"beta", &beta}}) {
    if (!c.tensor(name, *t, ElementClass::Float, 1, 1))
      return false;
    if (t->dims[0] != d)
      return c.fail(name, "'" + name + "' must be " + elementName(t->element) +
                              "[" + Twine(d) +
                              "] (the last dimension of 'x'), got " +
                              formatShape(*t));
  }
  if (!(eps > 0) || !std::isfinite(eps))
    return c.fail("eps",
                  "eps=" + formatNumber(eps) + " must be a positive number");
  return true;
}

} // namespace

std::string mlir::attn::rules::formatShape(const TensorShape &shape) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << elementName(shape.element) << "[";
  llvm::interleaveComma(shape.dims, os);
  os << "]";
  return text;
}

RuleResult mlir::attn::rules::inferCast(const TensorShape &x, ElementType dtype,
                                        RuleError error) {
  Checker c(error);
  if (!c.tensor("x", x, ElementClass::Float, 0, kAnyRank))
    return std::nullopt;
  if (!accepts(ElementClass::Float, dtype)) {
    c.fail("dtype", "dtype=" + nameOf(dtype) + " must be " +
                        expectedTypes(ElementClass::Float) + " type");
    return std::nullopt;
  }
  return TensorShape{dtype, x.dims};
}

RuleResult mlir::attn::rules::inferLinear(const TensorShape &x,
                                          const TensorShape &w,
                                          const TensorShape *b,
                                          RuleError error) {
  Checker c(error);
  return linearRule(c, x, w, b, {"x", "w", "b"});
}

RuleResult mlir::attn::rules::inferMatmul(const TensorShape &a,
                                          const TensorShape &b, bool transposeB,
                                          RuleError error) {
  Checker c(error);
  if (!c.tensor("a", a, ElementClass::Float, 3, 3) ||
      !c.tensor("b", b, ElementClass::Float, 3, 3))
    return std::nullopt;
  if (a.dims[0] != b.dims[0]) {
    c.fail("b", "batch sizes differ: 'a' is " + formatShape(a) + ", 'b' is " +
                    formatShape(b));
    return std::nullopt;
  }
  int64_t bK = transposeB ? b.dims[2] : b.dims[1];
  int64_t p = transposeB ? b.dims[1] : b.dims[2];
  if (bK != a.dims[2]) {
    c.fail("b", "contraction sizes differ: 'a' is " + formatShape(a) +
                    " and 'b'" + (transposeB ? " (transposed)" : "") + " is " +
                    formatShape(b) + "; " + Twine(a.dims[2]) +
                    " != " + Twine(bK));
    return std::nullopt;
  }
  return c.result(TensorShape{a.element, {a.dims[0], a.dims[1], p}});
}

RuleResult mlir::attn::rules::inferElementwiseUnary(const TensorShape &x,
                                                    RuleError error) {
  Checker c(error);
  if (!c.tensor("x", x, ElementClass::Float, 0, kAnyRank))
    return std::nullopt;
  return x;
}

RuleResult mlir::attn::rules::inferGelu(const TensorShape &x,
                                        bool /*approximate*/, RuleError error) {
  return inferElementwiseUnary(x, error);
}

RuleResult mlir::attn::rules::inferScale(const TensorShape &x, double factor,
                                         RuleError error) {
  Checker c(error);
  if (!c.tensor("x", x, ElementClass::Float, 0, kAnyRank))
    return std::nullopt;
  if (!std::isfinite(factor)) {
    c.fail("factor", "the scale factor must be a finite number, got " +
                         formatNumber(factor));
    return std::nullopt;
  }
  return x;
}

RuleResult mlir::attn::rules::inferElementwiseBinary(const TensorShape &lhs,
                                                     const TensorShape &rhs,
                                                     RuleError error) {
  Checker c(error);
  if (!c.tensor("a", lhs, ElementClass::Float, 0, kAnyRank) ||
      !c.tensor("b", rhs, ElementClass::Float, 0, kAnyRank))
    return std::nullopt;
  TensorShape result{lhs.element, {}};
  int64_t rank = std::max(lhs.rank(), rhs.rank());
  result.dims.resize(rank);
  for (int64_t axis = 1; axis <= rank; ++axis) {
    int64_t l = axis <= lhs.rank() ? lhs.dims[lhs.rank() - axis] : 1;
    int64_t r = axis <= rhs.rank() ? rhs.dims[rhs.rank() - axis] : 1;
    if (l != r && l != 1 && r != 1) {
      c.fail("b", "operands cannot be broadcast together: 'a' is " +
                      formatShape(lhs) + ", 'b' is " + formatShape(rhs) +
                      " (axis -" + Twine(axis) + ": " + Twine(l) + " vs " +
                      Twine(r) + "; sizes must be equal or 1)");
      return std::nullopt;
    }
    result.dims[rank - axis] = std::max(l, r);
  }
  return c.result(std::move(result));
}

RuleResult mlir::attn::rules::inferRmsNorm(const TensorShape &x,
                                           const TensorShape &gamma, double eps,
                                           RuleError error) {
  Checker c(error);
  if (!c.tensor("x", x, ElementClass::Float, 1, kAnyRank) ||
      !c.tensor("gamma", gamma, ElementClass::Float, 1, 1))
    return std::nullopt;
  int64_t d = x.dims.back();
  if (gamma.dims[0] != d) {
    c.fail("gamma", "'gamma' must be " + elementName(gamma.element) + "[" +
                        Twine(d) + "] (the last dimension of 'x'), got " +
                        formatShape(gamma));
    return std::nullopt;
  }
  if (!(eps > 0) || !std::isfinite(eps)) {
    c.fail("eps", "eps=" + formatNumber(eps) + " must be a positive number");
    return std::nullopt;
  }
  return x;
}

RuleResult mlir::attn::rules::inferSoftmax(const TensorShape &x,
                                           RuleError error) {
  Checker c(error);
  if (!c.tensor("x", x, ElementClass::Float, 1, kAnyRank))
    return std::nullopt;
  return x;
}

RuleResult mlir::attn::rules::inferDropout(const TensorShape &x, double p,
                                           RuleError error) {
  Checker c(error);
  if (!c.tensor("x", x, ElementClass::Float, 0, kAnyRank))
    return std::nullopt;
  if (!(p >= 0.0 && p < 1.0)) {
    c.fail("p",
           "dropout probability p=" + formatNumber(p) + " must be in [0, 1)");
    return std::nullopt;
  }
  return x;
}

RuleResult mlir::attn::rules::inferSplitHeads(const TensorShape &x,
                                              int64_t heads, RuleError error) {
  Checker c(error);
  if (!c.tensor("x", x, ElementClass::Float, 3, 3) ||
      !c.positive("heads", heads))
    return std::nullopt;
  if (x.dims[2] % heads != 0) {
    c.fail("heads", "heads=" + Twine(heads) +
                        " does not divide the model dimension " +
                        Twine(x.dims[2]) + " of 'x' (" + formatShape(x) + ")");
    return std::nullopt;
  }
  return TensorShape{x.element,
                     {x.dims[0] * heads, x.dims[1], x.dims[2] / heads}};
}

RuleResult mlir::attn::rules::inferMergeHeads(const TensorShape &x,
                                              int64_t heads, RuleError error) {
  Checker c(error);
  if (!c.tensor("x", x, ElementClass::Float, 3, 3) ||
      !c.positive("heads", heads))
    return std::nullopt;
  if (x.dims[0] % heads != 0) {
    c.fail("heads",
           "heads=" + Twine(heads) + " does not divide the leading dimension " +
               Twine(x.dims[0]) + " (B*heads) of 'x' (" + formatShape(x) + ")");
    return std::nullopt;
  }
  return TensorShape{x.element,
                     {x.dims[0] / heads, x.dims[1], x.dims[2] * heads}};
}

RuleResult mlir::attn::rules::inferMaskedSoftmax(const TensorShape &x,
                                                 const TensorShape &validLens,
                                                 RuleError error) {
  Checker c(error);
  if (!c.tensor("x", x, ElementClass::Float, 3, 3) ||
      !c.validLens(validLens, x.dims[0], x.dims[1], "N"))
    return std::nullopt;
  return x;
}

RuleResult
mlir::attn::rules::inferAttention(const TensorShape &q, const TensorShape &k,
                                  const TensorShape &v,
                                  const TensorShape *validLens, bool /*causal*/,
                                  bool /*returnWeights*/, RuleError error) {
  Checker c(error);
  if (!c.tensor("q", q, ElementClass::Float, 3, 3) ||
      !c.tensor("k", k, ElementClass::Float, 3, 3) ||
      !c.tensor("v", v, ElementClass::Float, 3, 3))
    return std::nullopt;
  if (k.dims[0] != q.dims[0] || v.dims[0] != q.dims[0]) {
    c.fail(k.dims[0] != q.dims[0] ? "k" : "v",
           "'q', 'k' and 'v' must have the same batch size N, got " +
               formatShape(q) + ", " + formatShape(k) + ", " + formatShape(v));
    return std::nullopt;
  }
  if (k.dims[2] != q.dims[2]) {
    c.fail("k", "'k' must have the feature size of 'q' (" + Twine(q.dims[2]) +
                    "), got " + formatShape(k));
    return std::nullopt;
  }
  if (v.dims[1] != k.dims[1]) {
    c.fail("v", "'v' must have as many rows as 'k' (" + Twine(k.dims[1]) +
                    " keys), got " + formatShape(v));
    return std::nullopt;
  }
  if (validLens && !c.validLens(*validLens, q.dims[0], q.dims[1], "N"))
    return std::nullopt;
  // Decomposed, the scores are a [N, Tq, Tk] tensor.
  if (!c.within("its scores (q @ k^T)", {q.dims[0], q.dims[1], k.dims[1]}))
    return std::nullopt;
  return c.result(TensorShape{q.element, {q.dims[0], q.dims[1], v.dims[2]}});
}

/// multihead_attention's KV cache (docs/spec.md §2 "State and decoding"):
/// cache_k and cache_v are [B, L, kv_heads * d] of one float type (any:
/// the new rows are rounded to it),
/// cache_pos i32[B]; the T new tokens are q's, k's and v's rows; the cache
/// is the mask (no valid_lens), which is causal.
static bool checkCaches(Checker &c, const TensorShape &q, const TensorShape &k,
                        const TensorShape *cacheK, const TensorShape *cacheV,
                        const TensorShape *cachePos, int64_t kvHidden,
                        const TensorShape *validLens, bool causal,
                        bool returnWeights) {
  for (auto [name, given] :
       {std::pair<StringRef, const TensorShape *>{"cache_k", cacheK},
        {"cache_v", cacheV},
        {"cache_pos", cachePos}})
    if (!given)
      return c.fail(name,
                    "'cache_k', 'cache_v' and 'cache_pos' go together: '" +
                        name + "' is missing");
  if (validLens)
    return c.fail("valid_lens",
                  "'valid_lens' cannot be given with a cache: the cache "
                  "length is the mask (new token t of entry b sees cache rows "
                  "0 .. cache_pos[b] + t)");
  if (!causal)
    return c.fail("causal", "a cache implies causal attention: causal=false "
                            "is an error (new token t of entry b sees cache "
                            "rows 0 .. cache_pos[b] + t)");
  if (k.dims[1] != q.dims[1])
    return c.fail("k", "with a cache, 'k' and 'v' are the rows of the " +
                           Twine(q.dims[1]) +
                           " new tokens, as many as 'q' has, got " +
                           formatShape(k));
  int64_t batch = q.dims[0];
  for (auto [name, cache] :
       {std::pair<StringRef, const TensorShape *>{"cache_k", cacheK},
        {"cache_v", cacheV}}) {
    if (!c.tensor(name, *cache, ElementClass::Float, 3, 3))
      return false;
    if (cache->dims[0] != batch || cache->dims[2] != kvHidden)
      return c.fail(name, "'" + name + "' must be [" + Twine(batch) + ", L, " +
                              Twine(kvHidden) +
                              "] (B, the cache length, kv heads x head "
                              "dim), got " +
                              formatShape(*cache));
  }
  if (cacheV->dims != cacheK->dims || cacheV->element != cacheK->element)
    return c.fail("cache_v", "'cache_v' must have the type of 'cache_k' (" +
                                 formatShape(*cacheK) + "), got " +
                                 formatShape(*cacheV));
  if (cacheK->dims[1] < q.dims[1])
    return c.fail("cache_k", "the cache holds " + Twine(cacheK->dims[1]) +
                                 " rows, fewer than the " + Twine(q.dims[1]) +
                                 " new tokens");
  if (!c.tensor("cache_pos", *cachePos, ElementClass::Integer, 1, 1))
    return false;
  if (cachePos->dims[0] != batch)
    return c.fail("cache_pos", "'cache_pos' must be i32[" + Twine(batch) +
                                   "] (one position per batch entry), got " +
                                   formatShape(*cachePos));
  return true;
}

RuleResult mlir::attn::rules::inferMultiheadAttention(
    const TensorShape &q, const TensorShape &k, const TensorShape &v,
    const TensorShape &wQ, const TensorShape &wK, const TensorShape &wV,
    const TensorShape &wO, const TensorShape *validLens, const TensorShape *bQ,
    const TensorShape *bK, const TensorShape *bV, const TensorShape *bO,
    const TensorShape *cacheK, const TensorShape *cacheV,
    const TensorShape *cachePos, int64_t heads, int64_t kvHeads, bool causal,
    int64_t window, bool rope, double ropeBase, bool returnWeights,
    RuleError error) {
  Checker c(error);
  if (!c.tensor("q", q, ElementClass::Float, 3, 3) ||
      !c.tensor("k", k, ElementClass::Float, 3, 3) ||
      !c.tensor("v", v, ElementClass::Float, 3, 3) ||
      !c.positive("heads", heads))
    return std::nullopt;
  if (k.dims[0] != q.dims[0] || v.dims[0] != q.dims[0]) {
    c.fail(k.dims[0] != q.dims[0] ? "k" : "v",
           "'q', 'k' and 'v' must have the same batch size B, got " +
               formatShape(q) + ", " + formatShape(k) + ", " + formatShape(v));
    return std::nullopt;
  }
  if (v.dims[1] != k.dims[1]) {
    c.fail("v", "'v' must have as many rows as 'k' (" + Twine(k.dims[1]) +
                    " keys), got " + formatShape(v));
    return std::nullopt;
  }
  if (!c.tensor("w_q", wQ, ElementClass::Float, 2, 2))
    return std::nullopt;
  int64_t hidden = wQ.dims[0];
  // With kv_heads = G (grouped-query attention) w_k and w_v have G heads of
  // head_dim rows each; heads must first divide the hidden size for that.
  bool grouped = kvHeads != kNotGiven;
  int64_t kvHidden = hidden;
  if (grouped) {
    if (!c.positive("kv_heads", kvHeads))
      return std::nullopt;
    if (heads % kvHeads != 0) {
      c.fail("kv_heads", "kv_heads=" + Twine(kvHeads) +
                             " does not divide heads=" + Twine(heads) +
                             " (each kv head serves heads / kv_heads query "
                             "heads)");
      return std::nullopt;
    }
    if (hidden % heads != 0) {
      c.fail("heads", "heads=" + Twine(heads) +
                          " does not divide the model dimension " +
                          Twine(hidden) + " (hidden size of 'w_q')");
      return std::nullopt;
    }
    kvHidden = kvHeads * (hidden / heads);
  }
  // Each projection maps its input's features to the hidden size of w_q
  // (w_k and w_v: kv_heads heads of it).
  struct Projection {
    StringRef name, input;
    const TensorShape &w, &x;
    int64_t rows;
  };
  for (const Projection &p : {Projection{"w_q", "q", wQ, q, hidden},
                              Projection{"w_k", "k", wK, k, kvHidden},
                              Projection{"w_v", "v", wV, v, kvHidden},
                              Projection{"w_o", "", wO, wQ, hidden}}) {
    if (!c.tensor(p.name, p.w, ElementClass::Float, 2, 2))
      return std::nullopt;
    int64_t in = p.input.empty() ? hidden : p.x.dims.back();
    if (p.w.dims[0] != p.rows || p.w.dims[1] != in) {
      std::string rows =
          p.rows == hidden || !grouped
              ? "hidden size " + std::to_string(hidden) + " of 'w_q'"
              : "kv_heads=" + std::to_string(kvHeads) + " x head dim " +
                    std::to_string(hidden / heads);
      c.fail(p.name, "'" + p.name + "' must be " + elementName(p.w.element) +
                         "[" + Twine(p.rows) + ", " + Twine(in) + "] (" + rows +
                         ", " +
                         (p.input.empty() ? Twine("hidden size")
                                          : "features of '" + p.input + "'") +
                         "), got " + formatShape(p.w));
      return std::nullopt;
    }
  }
  if (hidden % heads != 0) {
    c.fail("heads", "heads=" + Twine(heads) +
                        " does not divide the model dimension " +
                        Twine(hidden) + " (hidden size of 'w_q')");
    return std::nullopt;
  }
  if (validLens && !c.validLens(*validLens, q.dims[0], q.dims[1], "B"))
    return std::nullopt;
  // One bias per row of its projection's weight.
  struct Bias {
    StringRef name, weight;
    const TensorShape *b;
    int64_t rows;
  };
  for (const Bias &bias :
       {Bias{"b_q", "w_q", bQ, hidden}, Bias{"b_k", "w_k", bK, kvHidden},
        Bias{"b_v", "w_v", bV, kvHidden}, Bias{"b_o", "w_o", bO, hidden}}) {
    if (!bias.b)
      continue;
    if (!c.tensor(bias.name, *bias.b, ElementClass::Float, 1, 1))
      return std::nullopt;
    if (bias.b->dims[0] != bias.rows) {
      c.fail(bias.name, "'" + bias.name + "' must be " +
                            elementName(bias.b->element) + "[" +
                            Twine(bias.rows) + "] (one bias per row of '" +
                            bias.weight + "'), got " + formatShape(*bias.b));
      return std::nullopt;
    }
  }
  if (window != kNotGiven) {
    if (window < 1) {
      c.fail("window", "window=" + Twine(window) +
                           " must be at least 1 (key j is visible from query "
                           "i when i - window < j <= i)");
      return std::nullopt;
    }
    if (!causal) {
      c.fail("window", "window=" + Twine(window) +
                           " needs causal=true (the sliding window is causal: "
                           "i - window < j <= i)");
      return std::nullopt;
    }
  }
  int64_t headDim = hidden / heads;
  if (rope && headDim % 2 != 0) {
    c.fail("rope", "rope=true needs an even head dimension, got " +
                       Twine(headDim) + " (hidden size " + Twine(hidden) +
                       " / heads=" + Twine(heads) +
                       "; rotate_half pairs element j with j + d/2)");
    return std::nullopt;
  }
  if (!(ropeBase > 0) || !std::isfinite(ropeBase)) {
    c.fail("rope_base", "rope_base=" + formatNumber(ropeBase) +
                            " must be a positive number");
    return std::nullopt;
  }
  if (!rope && static_cast<float>(ropeBase) != kDefaultRopeBase) {
    c.fail("rope_base", "rope_base=" + formatNumber(ropeBase) +
                            " is used only with rope=true");
    return std::nullopt;
  }
  if ((cacheK || cacheV || cachePos) &&
      !checkCaches(c, q, k, cacheK, cacheV, cachePos, kvHidden, validLens,
                   causal, returnWeights))
    return std::nullopt;
  // The projections of k and v are [B, Tk, hidden]; decomposed, the scores
  // are a [B * heads, Tq, Tk] tensor (with a cache, [B * heads, Tq, L]).
  if (!c.within("its projection of k and v", {q.dims[0], k.dims[1], hidden}))
    return std::nullopt;
  if (!c.within("its scores (q @ k^T)", {q.dims[0], heads, q.dims[1],
                                         cacheK ? cacheK->dims[1] : k.dims[1]}))
    return std::nullopt;
  return c.result(TensorShape{q.element, {q.dims[0], q.dims[1], hidden}});
}

TensorShape mlir::attn::rules::attentionWeightsShape(const TensorShape &q,
                                                     const TensorShape &k) {
  return TensorShape{q.element, {q.dims[0], q.dims[1], k.dims[1]}};
}

TensorShape mlir::attn::rules::multiheadAttentionWeightsShape(
    const TensorShape &q, const TensorShape &k, int64_t heads) {
  return TensorShape{q.element, {q.dims[0] * heads, q.dims[1], k.dims[1]}};
}

RuleResult mlir::attn::rules::inferPositionalEncoding(const TensorShape &x,
                                                      const TensorShape *offset,
                                                      int64_t maxLen,
                                                      RuleError error) {
  Checker c(error);
  if (!c.tensor("x", x, ElementClass::Float, 3, 3) ||
      !c.positive("max_len", maxLen))
    return std::nullopt;
  // offset: each entry's first position (a decode step's cache_pos).
  if (offset) {
    if (!c.tensor("offset", *offset, ElementClass::Integer, 1, 1))
      return std::nullopt;
    if (offset->dims[0] != x.dims[0]) {
      c.fail("offset", "'offset' must be i32[" + Twine(x.dims[0]) +
                           "], one position per entry of x (" + formatShape(x) +
                           "), got " + formatShape(*offset));
      return std::nullopt;
    }
  }
  if (x.dims[2] % 2 != 0) {
    c.fail("x", "positional encoding needs an even model dimension D, got " +
                    Twine(x.dims[2]) + " (" + formatShape(x) + ")");
    return std::nullopt;
  }
  if (x.dims[1] > maxLen) {
    c.fail("max_len", "sequence length T=" + Twine(x.dims[1]) +
                          " exceeds max_len=" + Twine(maxLen));
    return std::nullopt;
  }
  return x;
}

RuleResult mlir::attn::rules::inferLayerNorm(const TensorShape &x,
                                             const TensorShape &gamma,
                                             const TensorShape &beta,
                                             double eps, RuleError error) {
  Checker c(error);
  if (!c.tensor("x", x, ElementClass::Float, 1, kAnyRank) ||
      !layerNormParams(c, x, gamma, beta, eps))
    return std::nullopt;
  return x;
}

RuleResult mlir::attn::rules::inferAddNorm(const TensorShape &x,
                                           const TensorShape &y,
                                           const TensorShape &gamma,
                                           const TensorShape &beta, double eps,
                                           RuleError error) {
  Checker c(error);
  if (!c.tensor("x", x, ElementClass::Float, 1, kAnyRank) ||
      !c.tensor("y", y, ElementClass::Float, 1, kAnyRank))
    return std::nullopt;
  if (x.dims != y.dims) {
    c.fail("y", "'x' and 'y' must have the same shape, got " + formatShape(x) +
                    " and " + formatShape(y));
    return std::nullopt;
  }
  if (!layerNormParams(c, x, gamma, beta, eps))
    return std::nullopt;
  return x;
}

RuleResult mlir::attn::rules::inferFfn(const TensorShape &x,
                                       const TensorShape &w1,
                                       const TensorShape &b1,
                                       const TensorShape &w2,
                                       const TensorShape &b2, RuleError error) {
  Checker c(error);
  RuleResult hidden = linearRule(c, x, w1, &b1, {"x", "w1", "b1"});
  if (!hidden)
    return std::nullopt;
  if (!c.tensor("w2", w2, ElementClass::Float, 2, 2))
    return std::nullopt;
  if (w2.dims[1] != hidden->dims.back()) {
    c.fail("w2", "'w2' must be " + elementName(w2.element) + "[O, " +
                     Twine(hidden->dims.back()) + "] to take the " +
                     Twine(hidden->dims.back()) +
                     " hidden units of 'w1', got " + formatShape(w2));
    return std::nullopt;
  }
  return linearRule(c, *hidden, w2, &b2, {"x", "w2", "b2"});
}

RuleResult mlir::attn::rules::inferEmbedding(const TensorShape &ids,
                                             const TensorShape &table,
                                             RuleError error) {
  Checker c(error);
  if (!c.tensor("ids", ids, ElementClass::Integer, 0, kAnyRank) ||
      !c.tensor("table", table, ElementClass::Float, 2, 2))
    return std::nullopt;
  TensorShape result{table.element, ids.dims};
  result.dims.push_back(table.dims[1]);
  if (!c.tensor("ids", result, ElementClass::Float, 1, kAnyRank))
    return std::nullopt;
  return result;
}

//===----------------------------------------------------------------------===//
// Dispatch by op kind (AttnOps.def)
//===----------------------------------------------------------------------===//

namespace {

/// One rule argument in the C++ type of the rule's parameter.
template <typename T> struct RuleArgument;
template <> struct RuleArgument<const TensorShape &> {
  static const TensorShape &get(const RuleValue &v) { return *v.tensor; }
};
template <> struct RuleArgument<const TensorShape *> {
  static const TensorShape *get(const RuleValue &v) {
    return v.tensor ? &*v.tensor : nullptr;
  }
};
template <> struct RuleArgument<int64_t> {
  static int64_t get(const RuleValue &v) { return v.integer; }
};
template <> struct RuleArgument<double> {
  static double get(const RuleValue &v) { return v.number; }
};
template <> struct RuleArgument<bool> {
  static bool get(const RuleValue &v) { return v.flag; }
};
/// A dtype travels in `integer` as its ElementType.
template <> struct RuleArgument<ElementType> {
  static ElementType get(const RuleValue &v) {
    return static_cast<ElementType>(v.integer);
  }
};

/// A rule's parameters are its arguments then the RuleError.
template <typename... Params>
constexpr size_t ruleArity(RuleResult (*)(Params...)) {
  return sizeof...(Params) - 1;
}

template <typename... Params, size_t... I>
RuleResult invokeRule(RuleResult (*rule)(Params...),
                      llvm::ArrayRef<RuleValue> args, RuleError error,
                      std::index_sequence<I...>) {
  using Types = std::tuple<Params...>;
  return rule(RuleArgument<std::tuple_element_t<I, Types>>::get(args[I])...,
              error);
}

/// Calls `rule` with one argument per parameter; AttnOps.def lists as many
/// parameters as the rule takes (checked where the dispatch is generated).
template <typename... Params>
RuleResult invokeRule(RuleResult (*rule)(Params...),
                      llvm::ArrayRef<RuleValue> args, RuleError error) {
  assert(args.size() == ruleArity(rule) && "one argument per parameter");
  return invokeRule(rule, args, error,
                    std::make_index_sequence<sizeof...(Params) - 1>());
}

} // namespace

#define ATTN_TENSOR(name, Getter) +1
#define ATTN_OPTIONAL_TENSOR(name, Getter) +1
#define ATTN_KEYWORD_TENSOR(name, Getter) +1
#define ATTN_POSITIONAL_FLOAT(name, Getter) +1
#define ATTN_INT(name, Getter) +1
#define ATTN_INT_DEFAULT(name, Getter, value) +1
#define ATTN_FLOAT(name, Getter) +1
#define ATTN_FLOAT_DEFAULT(name, Getter, value) +1
#define ATTN_FLAG(name, Getter) +1
#define ATTN_DTYPE(name, Getter) +1
#define ATTN_OP(Kind, name, Class, rule, PARAMS)                               \
  static_assert(ruleArity(&rule) == 0 PARAMS,                                  \
                "AttnOps.def: " #rule " must take one argument per parameter " \
                "of " name);
#include "attn/IR/AttnOps.def"

namespace {

/// The DSL names of each op's parameters, in order (for promotion's
/// messages).
llvm::ArrayRef<StringRef> parameterNames(OpKind kind) {
#define ATTN_TENSOR(name, Getter) #name,
#define ATTN_OPTIONAL_TENSOR(name, Getter) #name,
#define ATTN_KEYWORD_TENSOR(name, Getter) #name,
#define ATTN_POSITIONAL_FLOAT(name, Getter) #name,
#define ATTN_INT(name, Getter) #name,
#define ATTN_INT_DEFAULT(name, Getter, value) #name,
#define ATTN_FLOAT(name, Getter) #name,
#define ATTN_FLOAT_DEFAULT(name, Getter, value) #name,
#define ATTN_FLAG(name, Getter) #name,
#define ATTN_DTYPE(name, Getter) #name,
  switch (kind) {
#define ATTN_OP(Kind, name, Class, rule, PARAMS)                               \
  case OpKind::Kind: {                                                         \
    static const StringRef names[] = {PARAMS ""};                              \
    return llvm::ArrayRef(names).drop_back();                                  \
  }
#include "attn/IR/AttnOps.def"
  }
  return {};
}

/// Whether the op names its result's type itself (a dtype parameter).
bool choosesItsType(OpKind kind) {
#define ATTN_DTYPE(name, Getter) true ||
  switch (kind) {
#define ATTN_OP(Kind, name, Class, rule, PARAMS)                               \
  case OpKind::Kind:                                                           \
    return PARAMS false;
#include "attn/IR/AttnOps.def"
  }
  return false;
}

/// The float type an op computes its result in (docs/spec.md §2 v3,
/// "Promotion"): its float operands' one type, or f32 where f32 meets one
/// low-precision type (weight-only low precision). bf16 with f16 is an
/// error, blamed on the operand that brought the second low type. Nullopt
/// without float operands (the rule then says what is missing) or after an
/// error.
std::optional<std::optional<ElementType>>
promotedType(OpKind kind, llvm::ArrayRef<RuleValue> args, RuleError error) {
  llvm::ArrayRef<StringRef> names = parameterNames(kind);
  std::optional<ElementType> low;
  StringRef lowName;
  bool anyF32 = false;
  for (auto [i, arg] : llvm::enumerate(args)) {
    if (!arg.tensor || !arg.tensor->element || !isFloat(*arg.tensor->element))
      continue;
    ElementType type = *arg.tensor->element;
    if (type == ElementType::F32) {
      anyF32 = true;
      continue;
    }
    StringRef name = i < names.size() ? names[i] : StringRef("an operand");
    if (low && *low != type) {
      error(name, "'" + name + "' is " + nameOf(type) + " but '" + lowName +
                      "' is " + nameOf(*low) +
                      "; one op takes one low-precision type: cast one of "
                      "them (cast(" +
                      name + ", dtype=" + nameOf(*low) + "))");
      return std::nullopt;
    }
    low = type;
    lowName = name;
  }
  if (!low)
    return std::optional<ElementType>(anyF32 ? std::optional(ElementType::F32)
                                             : std::nullopt);
  return std::optional<ElementType>(anyF32 ? ElementType::F32 : *low);
}

} // namespace

RuleResult mlir::attn::rules::applyRule(OpKind kind,
                                        llvm::ArrayRef<RuleValue> args,
                                        RuleError error) {
  std::optional<std::optional<ElementType>> promoted =
      promotedType(kind, args, error);
  if (!promoted)
    return std::nullopt;
  RuleResult result;
  switch (kind) {
#define ATTN_OP(Kind, name, Class, rule, PARAMS)                               \
  case OpKind::Kind:                                                           \
    result = invokeRule(&rule, args, error);                                   \
    break;
#include "attn/IR/AttnOps.def"
  }
  // A float result is in the promoted type, whichever operand the rule
  // took its shape from (unless the op names its type).
  if (result && *promoted && result->element && isFloat(*result->element) &&
      !choosesItsType(kind))
    result->element = **promoted;
  return result;
}
