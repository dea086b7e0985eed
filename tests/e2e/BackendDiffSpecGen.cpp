//===- BackendDiffSpecGen.cpp - Random valid .attn specs ------------------===//

#include "BackendDiffSpecGen.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <utility>

namespace attnc::diff {
namespace {

/// Sizes drawn from: small, odd and prime ones among powers of two.
const std::vector<int64_t> kBatch = {1, 2, 3};
const std::vector<int64_t> kSeq = {1,  2,  3,  4,  5,  7,  8,  11, 13,
                                   16, 17, 19, 23, 29, 31, 32, 37, 40};
const std::vector<int64_t> kFeat = {1,  2,  3,  4,  5,  7,  8,  9,  13, 16, 17,
                                    24, 31, 32, 33, 40, 48, 61, 64, 67, 96};
const std::vector<int64_t> kSmall = {1, 2, 3, 4, 5, 7};
/// At most this many elements in a generated tensor (keeps runs short).
constexpr int64_t kMaxElements = 60000;

int64_t elements(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

/// The shortest literal that reads back as exactly `value` once stored as
/// f32 (float attributes are f32).
std::string floatText(double value) {
  float f = static_cast<float>(value);
  char buffer[48];
  for (int precision = 6; precision <= 9; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*g", precision,
                  static_cast<double>(f));
    if (std::strtof(buffer, nullptr) == f)
      break;
  }
  std::string text = buffer;
  if (text.find_first_of(".e") == std::string::npos)
    text += ".0";
  return text;
}

std::string join(const std::vector<std::string> &parts) {
  std::string text;
  for (size_t i = 0; i < parts.size(); ++i)
    text += (i ? ", " : "") + parts[i];
  return text;
}

template <typename T> void shuffle(Rng &r, std::vector<T> &values) {
  for (size_t i = values.size(); i > 1; --i)
    std::swap(values[i - 1], values[r.integer(0, int64_t(i) - 1)]);
}

std::vector<int64_t> divisors(int64_t n, int64_t atMost) {
  std::vector<int64_t> result;
  for (int64_t d = 1; d <= std::min(n, atMost); ++d)
    if (n % d == 0)
      result.push_back(d);
  return result;
}

/// NumPy broadcasting of two shapes that are known to broadcast.
Shape broadcast(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape result(rank);
  for (size_t axis = 1; axis <= rank; ++axis) {
    int64_t l = axis <= a.size() ? a[a.size() - axis] : 1;
    int64_t r = axis <= b.size() ? b[b.size() - axis] : 1;
    result[rank - axis] = std::max(l, r);
  }
  return result;
}

/// A shape that broadcasts to `s`: some leading axes dropped, some axes 1.
Shape stretchable(Rng &r, const Shape &s) {
  size_t drop = r.chance(0.5) ? 0 : size_t(r.integer(0, int64_t(s.size())));
  Shape result(s.begin() + drop, s.end());
  for (int64_t &d : result)
    if (r.chance(0.25))
      d = 1;
  return result;
}

/// A random shape of rank in [minRank, maxRank]: feature-like last axis,
/// sequence-like axis before it, small leading axes.
Shape randomShape(Rng &r, int minRank, int maxRank) {
  int rank = int(r.integer(minRank, maxRank));
  Shape s(rank);
  for (int i = 0; i < rank; ++i)
    s[i] = i == rank - 1   ? r.pick(kFeat)
           : i == rank - 2 ? r.pick(kSeq)
                           : r.pick(kSmall);
  for (size_t i = 0; elements(s) > kMaxElements; i = (i + 1) % s.size())
    s[i] = std::max<int64_t>(1, s[i] / 2);
  return s;
}

//===----------------------------------------------------------------------===//
// One block being written
//===----------------------------------------------------------------------===//

class Block {
public:
  Block(std::string name, Rng &rng) : name(std::move(name)), rng(rng) {}

  /// Declares `dim NAME = value` (rendered before everything else).
  void dim(const std::string &dimName, int64_t value) {
    dims.push_back({dimName, value});
  }
  /// `value` as a declared dim's name (most of the time), else a literal.
  std::string ref(int64_t value) {
    for (auto &[dimName, v] : dims)
      if (v == value && rng.chance(0.8))
        return dimName;
    return std::to_string(value);
  }
  std::string typeText(bool isInt, const Shape &s) {
    std::vector<std::string> refs;
    for (int64_t d : s)
      refs.push_back(ref(d));
    return std::string(isInt ? "i32[" : "f32[") + join(refs) + "]";
  }

  /// An f32 input uniform in [lo, hi).
  std::string input(const std::string &n, const Shape &s, float lo = -1.0f,
                    float hi = 1.0f) {
    GenArgument a;
    a.name = n;
    a.shape = s;
    a.lo = lo;
    a.hi = hi;
    return declare(std::move(a));
  }
  /// An f32 param uniform in [lo, hi) (biases, gammas, tables, ...).
  std::string param(const std::string &n, const Shape &s, float lo = -1.0f,
                    float hi = 1.0f) {
    GenArgument a;
    a.name = n;
    a.param = true;
    a.shape = s;
    a.lo = lo;
    a.hi = hi;
    return declare(std::move(a));
  }
  /// A weight matrix [O, I]: uniform in +-1/sqrt(I), torch's nn.Linear init
  /// (a subset of [-1, 1) that keeps chained activations O(1)).
  std::string weight(const std::string &n, const Shape &s) {
    float bound = 1.0f / std::sqrt(static_cast<float>(s.back()));
    return param(n, s, -bound, bound);
  }
  /// An i32 argument filled as `fill` says, `bound` its keys (lengths,
  /// positions) or vocab (ids).
  std::string integers(const std::string &n, const Shape &s,
                       GenArgument::Fill fill, int64_t bound) {
    GenArgument a;
    a.name = n;
    a.isInt = true;
    a.shape = s;
    a.fill = fill;
    (fill == GenArgument::Fill::Ids ? a.vocab : a.keys) = bound;
    return declare(std::move(a));
  }
  /// i32 attention lengths for `keys` keys.
  std::string lengths(const std::string &n, const Shape &s, int64_t keys) {
    return integers(n, s, GenArgument::Fill::Lengths, keys);
  }
  /// i32 cache positions in [0, last].
  std::string positions(const std::string &n, const Shape &s, int64_t last) {
    return integers(n, s, GenArgument::Fill::Positions, last);
  }
  /// i32 embedding ids in [0, vocab).
  std::string ids(const std::string &n, const Shape &s, int64_t vocab) {
    return integers(n, s, GenArgument::Fill::Ids, vocab);
  }
  /// An f32 state (a KV cache) uniform in [-1, 1).
  std::string state(const std::string &n, const Shape &s) {
    GenArgument a;
    a.name = n;
    a.state = true;
    a.shape = s;
    return declare(std::move(a));
  }

  /// `NAME = expr` with a fresh name; `s` is the value's shape.
  std::string let(const std::string &expr, const Shape &s) {
    return letAs("t" + std::to_string(++counter), expr, s);
  }
  std::string letAs(const std::string &n, const std::string &expr,
                    const Shape &s) {
    markUses(expr);
    statements.push_back(n + " = " + expr);
    define(n, s);
    return n;
  }
  /// `NAME, NAME = expr` for an op with two results.
  std::pair<std::string, std::string>
  let2(const std::string &expr, const Shape &first, const Shape &second) {
    markUses(expr);
    std::string a = "t" + std::to_string(++counter);
    std::string b = "t" + std::to_string(++counter);
    statements.push_back(a + ", " + b + " = " + expr);
    define(a, first);
    define(b, second);
    return {a, b};
  }
  /// A statement written as is (block calls), defining `results`.
  void raw(const std::string &statement,
           const std::vector<std::pair<std::string, Shape>> &results) {
    markUses(statement.substr(statement.find('=')));
    statements.push_back(statement);
    for (auto &[n, s] : results)
      define(n, s);
  }
  void output(const std::string &n) {
    used.insert(n);
    explicitOutputs.push_back(n);
  }
  const Shape &shape(const std::string &n) const { return shapes.at(n); }
  const std::string &blockName() const { return name; }
  const std::vector<GenArgument> &arguments() const { return args; }

  /// The outputs: the explicit ones, then every computed value no
  /// statement reads. An input or param that nothing reads is a generator
  /// bug (reported through `error`).
  std::vector<GenOutput> outputs(std::string &error) const {
    std::vector<GenOutput> result;
    for (const std::string &n : explicitOutputs)
      result.push_back({n, shapes.at(n)});
    for (const std::string &n : order) {
      if (used.count(n))
        continue;
      bool declared = std::any_of(args.begin(), args.end(),
                                  [&](const auto &a) { return a.name == n; });
      if (declared)
        error += "argument '" + n + "' of block '" + name + "' is unused; ";
      else
        result.push_back({n, shapes.at(n)});
    }
    return result;
  }

  std::string text(std::string &error) const {
    std::string t = "block " + name + " {\n";
    if (!dims.empty()) {
      std::vector<std::string> defs;
      for (auto &[n, v] : dims)
        defs.push_back(n + " = " + std::to_string(v));
      t += "  dim " + join(defs) + "\n";
    }
    for (const std::string &d : declarations)
      t += "  " + d + "\n";
    for (const std::string &s : statements)
      t += "  " + s + "\n";
    std::vector<std::string> names;
    for (const GenOutput &o : outputs(error))
      names.push_back(o.name);
    t += "  output " + join(names) + "\n}\n";
    return t;
  }

private:
  std::string declare(GenArgument a) {
    declarations.push_back(std::string(a.param   ? "param "
                                       : a.state ? "state "
                                                 : "input ") +
                           a.name + ": " + typeText(a.isInt, a.shape));
    define(a.name, a.shape);
    std::string n = a.name;
    args.push_back(std::move(a));
    return n;
  }
  void define(const std::string &n, const Shape &s) {
    shapes[n] = s;
    order.push_back(n);
  }
  /// Marks every defined name that `expr` mentions as used.
  void markUses(const std::string &expr) {
    for (size_t i = 0; i < expr.size();) {
      unsigned char c = expr[i];
      if (std::isdigit(c)) {
        while (i < expr.size() &&
               (std::isalnum(static_cast<unsigned char>(expr[i])) ||
                expr[i] == '.'))
          ++i;
        continue;
      }
      if (!std::isalpha(c) && c != '_') {
        ++i;
        continue;
      }
      size_t start = i;
      while (
          i < expr.size() &&
          (std::isalnum(static_cast<unsigned char>(expr[i])) || expr[i] == '_'))
        ++i;
      std::string id = expr.substr(start, i - start);
      if (shapes.count(id))
        used.insert(id);
    }
  }

  std::string name;
  Rng &rng;
  std::vector<std::pair<std::string, int64_t>> dims;
  std::vector<std::string> declarations, statements;
  std::vector<GenArgument> args;
  std::map<std::string, Shape> shapes;
  std::vector<std::string> order;
  std::set<std::string> used;
  std::vector<std::string> explicitOutputs;
  int counter = 0;
};

/// Features of a case, for its kind string: `mha(cross,causal,...)`.
struct Kind {
  std::string base;
  std::vector<std::string> features;
  void add(const std::string &f) { features.push_back(f); }
  std::string text() const {
    return features.empty() ? base : base + "(" + join(features) + ")";
  }
};

//===----------------------------------------------------------------------===//
// Building blocks
//===----------------------------------------------------------------------===//

/// valid_lens of an attention over `n` rows and `tq` queries: none (""),
/// i32[n] or i32[n, tq], for `tk` keys.
std::string maybeLengths(Block &b, Rng &r, Kind &kind, int64_t n, int64_t tq,
                         int64_t tk, const std::string &lensName = "vl",
                         double none = 0.3) {
  if (r.chance(none))
    return "";
  bool twoD = r.chance(0.5);
  kind.add(twoD ? "vl2d" : "vl1d");
  return b.lengths(lensName, twoD ? Shape{n, tq} : Shape{n}, tk);
}

struct MhaConfig {
  int64_t heads = 1, headDim = 1;
  /// 0: not given.
  int64_t kvHeads = 0, window = 0;
  bool causal = false, rope = false, returnWeights = false;
  /// 0: the default.
  double ropeBase = 0;
  bool bias[4] = {false, false, false, false};
};

/// A random multihead_attention configuration; `hidden` 0: free (at most
/// 96), else heads * headDim == hidden.
MhaConfig randomMha(Rng &r, int64_t hidden, int64_t tk, bool weights = true) {
  MhaConfig c;
  bool wantRope = r.chance(0.35);
  if (hidden == 0) {
    c.heads = r.pick(std::vector<int64_t>{1, 2, 3, 4, 5, 6, 8});
    std::vector<int64_t> dims;
    for (int64_t d : {1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 16, 24, 32})
      if (c.heads * d <= 96 && (!wantRope || d % 2 == 0))
        dims.push_back(d);
    c.headDim = r.pick(dims);
  } else {
    std::vector<int64_t> heads;
    for (int64_t h : divisors(hidden, 16))
      if (!wantRope || (hidden / h) % 2 == 0)
        heads.push_back(h);
    if (heads.empty())
      heads = divisors(hidden, 16);
    c.heads = r.pick(heads);
    c.headDim = hidden / c.heads;
  }
  if (r.chance(0.4))
    c.kvHeads = r.pick(divisors(c.heads, c.heads));
  c.causal = r.chance(0.4);
  if (c.causal && r.chance(0.5))
    c.window = r.integer(1, tk + 2);
  c.rope = wantRope && c.headDim % 2 == 0;
  if (c.rope && r.chance(0.4))
    c.ropeBase = r.pick(std::vector<double>{100.0, 500000.0, 10.0});
  for (bool &b : c.bias)
    b = r.chance(0.4);
  c.returnWeights = weights && r.chance(0.25);
  return c;
}

/// The call multihead_attention(q, k, v, ...), its params (suffixed `s`)
/// declared.
std::string mhaExpr(Block &b, Rng &r, Kind &kind, const MhaConfig &c,
                    const std::string &q, const std::string &k,
                    const std::string &v, const std::string &lens,
                    const std::string &s, const std::string &cache = "") {
  int64_t hd = c.heads * c.headDim;
  int64_t kvd = (c.kvHeads ? c.kvHeads : c.heads) * c.headDim;
  Shape qs = b.shape(q), ks = b.shape(k);
  std::vector<std::string> kw = {
      "heads=" + b.ref(c.heads), "w_q=" + b.weight("Wq" + s, {hd, qs.back()}),
      "w_k=" + b.weight("Wk" + s, {kvd, ks.back()}),
      "w_v=" + b.weight("Wv" + s, {kvd, b.shape(v).back()}),
      "w_o=" + b.weight("Wo" + s, {hd, hd})};
  kind.add("H=" + std::to_string(c.heads) + "x" + std::to_string(c.headDim));
  if (!lens.empty())
    kw.push_back("valid_lens=" + lens);
  const char *biasNames[] = {"q", "k", "v", "o"};
  const int64_t biasRows[] = {hd, kvd, kvd, hd};
  for (int i = 0; i < 4; ++i)
    if (c.bias[i]) {
      kw.push_back(std::string("b_") + biasNames[i] + "=" +
                   b.param(std::string("b") + biasNames[i] + s, {biasRows[i]}));
      kind.add(std::string("b_") + biasNames[i]);
    }
  if (c.kvHeads) {
    kw.push_back("kv_heads=" + b.ref(c.kvHeads));
    kind.add("kv_heads=" + std::to_string(c.kvHeads));
  }
  if (!cache.empty()) {
    // A cache implies causal: written or not.
    kw.push_back(cache);
    if (r.chance(0.5))
      kw.push_back("causal=true");
  } else if (c.causal) {
    kw.push_back("causal=true");
    kind.add("causal");
  } else if (r.chance(0.2)) {
    kw.push_back("causal=false");
  }
  if (c.window) {
    kw.push_back("window=" + b.ref(c.window));
    kind.add("window=" + std::to_string(c.window));
  }
  if (c.rope) {
    kw.push_back("rope=true");
    kind.add("rope");
    if (c.ropeBase) {
      kw.push_back("rope_base=" + floatText(c.ropeBase));
      kind.add("rope_base=" + floatText(c.ropeBase));
    }
  }
  if (c.returnWeights) {
    kw.push_back("return_weights=true");
    kind.add("weights");
  }
  shuffle(r, kw);
  return "multihead_attention(" + q + ", " + k + ", " + v + ", " + join(kw) +
         ")";
}

/// multihead_attention(q, k, v, ...) bound to a name (two with
/// return_weights): its output and weights ("" without).
std::pair<std::string, std::string>
emitMha(Block &b, Rng &r, Kind &kind, const MhaConfig &c, const std::string &q,
        const std::string &k, const std::string &v, const std::string &lens,
        const std::string &s = "") {
  std::string expr = mhaExpr(b, r, kind, c, q, k, v, lens, s);
  Shape qs = b.shape(q);
  Shape y = {qs[0], qs[1], c.heads * c.headDim};
  if (!c.returnWeights)
    return {b.let(expr, y), ""};
  return b.let2(expr, y, {qs[0] * c.heads, qs[1], b.shape(k)[1]});
}

/// An elementwise activation of `x` (an expression), and its name.
std::string activation(Rng &r, const std::string &x, std::string &which) {
  switch (r.integer(0, 5)) {
  case 0:
    which = "relu";
    return "relu(" + x + ")";
  case 1:
    which = "gelu";
    return r.chance(0.5) ? "gelu(" + x + ")"
                         : "gelu(" + x + ", approximate=false)";
  case 2:
    which = "gelu_tanh";
    return "gelu(" + x + ", approximate=true)";
  case 3:
    which = "silu";
    return "silu(" + x + ")";
  case 4:
    which = "tanh";
    return "tanh(" + x + ")";
  default:
    which = "sigmoid";
    return "sigmoid(" + x + ")";
  }
}

/// `x`, or scale(x, f) for a factor that widens [-1, 1) (ops whose
/// interesting range is wider: activations, softmax).
std::string maybeWiden(Rng &r, Kind &kind, const std::string &x) {
  if (r.chance(0.4))
    return x;
  double f = r.pick(std::vector<double>{2.0, 4.0, 8.0, -6.0, 12.5});
  kind.add("x" + floatText(f));
  return "scale(" + x + ", " + floatText(f) + ")";
}

std::string epsKeyword(Rng &r, Kind &kind) {
  if (r.chance(0.5))
    return "";
  double eps = r.pick(std::vector<double>{1e-5, 1e-6, 1e-3, 0.1, 1.0});
  kind.add("eps=" + floatText(eps));
  return ", eps=" + floatText(eps);
}

//===----------------------------------------------------------------------===//
// The kinds of case
//===----------------------------------------------------------------------===//

void genMha(Block &b, Rng &r, Kind &kind) {
  int64_t bs = r.pick(kBatch), tq = r.pick(kSeq);
  bool cross = r.chance(0.35);
  int64_t tk = cross ? r.pick(kSeq) : tq;
  b.dim("B", bs);
  b.dim("T", tq);
  if (cross)
    b.dim("Tk", tk);
  MhaConfig c = randomMha(r, 0, tk);
  int64_t hd = c.heads * c.headDim;
  std::string q, k, v;
  if (!cross) {
    int64_t dm = r.chance(0.5) ? hd : r.pick(kFeat);
    b.dim("D", dm);
    q = k = v = b.input("X", {bs, tq, dm});
    if (dm % 2 == 0 && r.chance(0.3)) {
      kind.add("pos_enc");
      q = k = v = b.let("positional_encoding(" + q + ")", {bs, tq, dm});
    }
  } else {
    kind.add("cross");
    q = b.input("X", {bs, tq, r.chance(0.5) ? hd : r.pick(kFeat)});
    k = v = b.input("M", {bs, tk, r.pick(kFeat)});
    if (r.chance(0.3)) {
      kind.add("separate_v");
      v = b.input("V", {bs, tk, r.pick(kFeat)});
    }
  }
  std::string lens = maybeLengths(b, r, kind, bs, tq, tk);
  auto [y, a] = emitMha(b, r, kind, c, q, k, v, lens);
  b.output(y);
  if (!a.empty())
    b.output(a);
}

void genAttention(Block &b, Rng &r, Kind &kind) {
  int64_t n = r.integer(1, 6), tq = r.pick(kSeq);
  int64_t tk = r.chance(0.5) ? tq : r.pick(kSeq);
  int64_t d = r.pick(kFeat), dv = r.chance(0.5) ? d : r.pick(kFeat);
  if (tk != tq)
    kind.add("cross");
  std::string q = b.input("Q", {n, tq, d});
  std::string k = b.input("K", {n, tk, d});
  std::string v = b.input("V", {n, tk, dv});
  std::string qe = r.chance(0.2) ? "scale(" + q + ", 3.0)" : q;
  std::vector<std::string> args = {qe, k, v};
  std::string lens = maybeLengths(b, r, kind, n, tq, tk);
  if (!lens.empty())
    args.push_back(r.chance(0.5) ? lens : "valid_lens=" + lens);
  if (r.chance(0.4)) {
    args.push_back("causal=true");
    kind.add("causal");
  }
  bool weights = r.chance(0.3);
  if (weights) {
    args.push_back("return_weights=true");
    kind.add("weights");
  }
  std::string expr = "attention(" + join(args) + ")";
  if (weights) {
    auto [y, a] = b.let2(expr, {n, tq, dv}, {n, tq, tk});
    b.output(y);
    b.output(a);
  } else {
    b.output(b.let(expr, {n, tq, dv}));
  }
}

void genLinear(Block &b, Rng &r, Kind &kind) {
  Shape x = randomShape(r, 1, 4);
  int64_t in = x.back(), out = r.pick(kFeat);
  std::string xs = b.input("X", x);
  std::string w = b.weight("W", {out, in});
  std::string expr = "linear(" + xs + ", " + w;
  if (r.chance(0.5)) {
    std::string keyword = r.chance(0.7) ? "" : "b=";
    expr += ", " + keyword + b.param("bias", {out});
    kind.add("bias");
  }
  expr += ")";
  if (r.chance(0.35)) {
    std::string which;
    expr = activation(r, expr, which);
    kind.add(which);
  }
  Shape y = x;
  y.back() = out;
  b.output(b.let(expr, y));
}

void genMatmul(Block &b, Rng &r, Kind &kind) {
  int64_t n = r.integer(1, 6), m = r.pick(kSeq), k = r.pick(kFeat),
          p = r.pick(kFeat);
  bool tb = r.chance(0.5);
  std::string a = b.input("A", {n, m, k});
  std::string bb = b.input("Bm", tb ? Shape{n, p, k} : Shape{n, k, p});
  std::string flag;
  if (tb) {
    kind.add("transpose_b");
    flag = ", transpose_b=true";
  } else if (r.chance(0.3)) {
    flag = ", transpose_b=false";
  }
  b.output(b.let("matmul(" + a + ", " + bb + flag + ")", {n, m, p}));
}

void genScale(Block &b, Rng &r, Kind &kind) {
  Shape s = randomShape(r, 0, 4);
  double f =
      r.chance(0.5)
          ? r.pick(std::vector<double>{0.125, -2.5, 3.0, 1e-3, -1.0, 7.0, 0.5})
          : double(r.uniform(-4.0f, 4.0f));
  std::string x = b.input("X", s);
  b.output(b.let("scale(" + x + ", " + (r.chance(0.2) ? "factor=" : "") +
                     floatText(f) + ")",
                 s));
}

void genBroadcast(Block &b, Rng &r, Kind &kind) {
  Shape s = randomShape(r, 1, 4);
  Shape sa = r.chance(0.5) ? s : stretchable(r, s);
  Shape sb = stretchable(r, s);
  if (r.chance(0.5))
    std::swap(sa, sb);
  const char *ops[] = {"add", "mul", "sub"};
  std::string op = ops[r.integer(0, 2)];
  kind.base = op;
  std::string a = b.input("A", sa);
  std::string c = r.chance(0.3) ? b.param("C", sb) : b.input("C", sb);
  if (sa != sb)
    kind.add("broadcast");
  b.output(b.let(op + "(" + a + ", " + c + ")", broadcast(sa, sb)));
}

void genUnary(Block &b, Rng &r, Kind &kind) {
  Shape s = randomShape(r, 0, 4);
  std::string x = b.input("X", s);
  std::string which;
  std::string expr = activation(r, maybeWiden(r, kind, x), which);
  kind.base = which;
  b.output(b.let(expr, s));
}

void genSoftmax(Block &b, Rng &r, Kind &kind) {
  Shape s = randomShape(r, 1, 4);
  if (r.chance(0.5))
    s.back() = r.pick(kSeq);
  std::string x = b.input("X", s);
  b.output(b.let("softmax(" + maybeWiden(r, kind, x) + ")", s));
}

void genMaskedSoftmax(Block &b, Rng &r, Kind &kind) {
  int64_t n = r.integer(1, 6), tq = r.pick(kSeq), tk = r.pick(kSeq);
  std::string x = b.input("X", {n, tq, tk});
  std::string lens = maybeLengths(b, r, kind, n, tq, tk, "vl", 0.0);
  b.output(b.let("masked_softmax(" + maybeWiden(r, kind, x) + ", " + lens + ")",
                 {n, tq, tk}));
}

void genHeads(Block &b, Rng &r, Kind &kind) {
  int64_t bs = r.pick(kBatch), t = r.pick(kSeq),
          h = r.pick(std::vector<int64_t>{1, 2, 3, 4, 5, 8}),
          d = r.pick(std::vector<int64_t>{1, 2, 3, 5, 7, 8, 12});
  b.dim("H", h);
  switch (r.integer(0, 2)) {
  case 0: {
    kind.base = "split_heads";
    std::string x = b.input("X", {bs, t, h * d});
    b.output(b.let("split_heads(" + x + ", heads=" + b.ref(h) + ")",
                   {bs * h, t, d}));
    break;
  }
  case 1: {
    kind.base = "merge_heads";
    std::string x = b.input("X", {bs * h, t, d});
    b.output(b.let("merge_heads(" + x + ", heads=" + b.ref(h) + ")",
                   {bs, t, h * d}));
    break;
  }
  default: {
    kind.base = "split_merge_heads";
    std::string x = b.input("X", {bs, t, h * d});
    std::string s =
        b.let("split_heads(" + x + ", heads=" + b.ref(h) + ")", {bs * h, t, d});
    std::string which;
    std::string m = b.let(activation(r, s, which), {bs * h, t, d});
    b.output(b.let("merge_heads(" + m + ", heads=" + b.ref(h) + ")",
                   {bs, t, h * d}));
  }
  }
}

void genPositionalEncoding(Block &b, Rng &r, Kind &kind) {
  int64_t bs = r.pick(kBatch), t = r.pick(kSeq), d = 2 * r.integer(1, 48);
  std::string x = b.input("X", {bs, t, d});
  std::string maxLen;
  switch (r.integer(0, 3)) {
  case 0:
    break;
  case 1:
    maxLen = ", max_len=" + std::to_string(t);
    break;
  case 2:
    maxLen = ", max_len=" + std::to_string(t + r.integer(0, 100));
    break;
  default:
    maxLen = ", max_len=2048";
  }
  if (!maxLen.empty())
    kind.add(maxLen.substr(2));
  b.output(b.let("positional_encoding(" + x + maxLen + ")", {bs, t, d}));
}

void genNorm(Block &b, Rng &r, Kind &kind) {
  Shape s = randomShape(r, 1, 4);
  int64_t d = s.back();
  std::string x = b.input("X", s);
  std::string xe = r.chance(0.3) ? "scale(" + x + ", 10.0)" : x;
  switch (r.integer(0, 2)) {
  case 0: {
    kind.base = "layer_norm";
    std::string g = b.param("gamma", {d}), be = b.param("beta", {d});
    b.output(b.let("layer_norm(" + xe + ", " + g + ", " + be +
                       epsKeyword(r, kind) + ")",
                   s));
    break;
  }
  case 1: {
    kind.base = "add_norm";
    std::string y = b.input("Y", s);
    std::string g = b.param("gamma", {d}), be = b.param("beta", {d});
    b.output(b.let("add_norm(" + xe + ", " + y + ", " + g + ", " + be +
                       epsKeyword(r, kind) + ")",
                   s));
    break;
  }
  default: {
    kind.base = "rms_norm";
    std::string g = b.param("gamma", {d});
    b.output(b.let("rms_norm(" + xe + ", " + g + epsKeyword(r, kind) + ")", s));
  }
  }
}

void genFfn(Block &b, Rng &r, Kind &kind) {
  Shape s = randomShape(r, 1, 4);
  int64_t d = s.back(), f = r.pick(kFeat), o = r.pick(kFeat);
  std::string x = b.input("X", s);
  std::string w1 = b.weight("W1", {f, d}), b1 = b.param("b1", {f});
  std::string w2 = b.weight("W2", {o, f}), b2 = b.param("b2", {o});
  Shape y = s;
  y.back() = o;
  b.output(b.let(
      "ffn(" + x + ", " + w1 + ", " + b1 + ", " + w2 + ", " + b2 + ")", y));
}

void genEmbedding(Block &b, Rng &r, Kind &kind) {
  Shape ids = randomShape(r, 0, 3);
  for (int64_t &d : ids)
    d = std::min<int64_t>(d, 40);
  int64_t v = r.pick(std::vector<int64_t>{1, 2, 3, 5, 7, 16, 50, 97, 128});
  int64_t d = r.pick(kFeat);
  kind.add("V=" + std::to_string(v));
  std::string i = b.ids("ids", ids, v);
  std::string t = b.param("table", {v, d});
  Shape y = ids;
  y.push_back(d);
  b.output(b.let("embedding(" + i + ", " + t + ")", y));
}

void genDropout(Block &b, Rng &r, Kind &kind) {
  Shape s = randomShape(r, 0, 4);
  double p = r.pick(std::vector<double>{0.0, 0.1, 0.25, 0.5, 0.9, 0.999});
  kind.add("p=" + floatText(p));
  std::string x = b.input("X", s);
  std::string xe = r.chance(0.3) ? "tanh(" + x + ")" : x;
  b.output(b.let("dropout(" + xe + ", p=" + floatText(p) + ")", s));
}

/// A hidden size heads * headDim <= 96 (head dims even with `evenHead`).
int64_t hiddenSize(Rng &r, bool evenHead = false) {
  int64_t h = r.pick(std::vector<int64_t>{1, 2, 3, 4, 5, 8});
  std::vector<int64_t> dims;
  for (int64_t d : {1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 16})
    if (h * d <= 96 && (!evenHead || d % 2 == 0))
      dims.push_back(d);
  return h * r.pick(dims);
}

/// D2L's TransformerEncoderBlock (eval), optionally after positional
/// encoding: `Y = add_norm(X, mha(X, X, X)), Z = add_norm(Y, ffn(Y))`.
/// The layer's params are suffixed `s`; returns Z.
std::string encoderLayer(Block &b, Rng &r, Kind &kind, const std::string &x,
                         const std::string &lens, const std::string &s,
                         bool weights) {
  Shape xs = b.shape(x);
  int64_t d = xs.back(), f = r.pick(kFeat);
  MhaConfig c = randomMha(r, d, xs[1], weights);
  std::string g1 = b.param("g1" + s, {d}), be1 = b.param("be1" + s, {d});
  std::string y;
  if (!c.returnWeights && r.chance(0.5)) {
    // The attention nested in add_norm, as D2L writes it.
    std::string att = mhaExpr(b, r, kind, c, x, x, x, lens, s);
    y = b.let("add_norm(" + x + ", " + att + ", " + g1 + ", " + be1 + ")", xs);
  } else {
    auto [att, a] = emitMha(b, r, kind, c, x, x, x, lens, s);
    y = b.let("add_norm(" + x + ", " + att + ", " + g1 + ", " + be1 + ")", xs);
    if (!a.empty())
      b.output(a);
  }
  if (r.chance(0.3))
    y = b.let("dropout(" + y + ", p=0.1)", xs);
  std::string w1 = b.weight("W1" + s, {f, d}), b1 = b.param("b1" + s, {f});
  std::string w2 = b.weight("W2" + s, {d, f}), b2 = b.param("b2" + s, {d});
  std::string g2 = b.param("g2" + s, {d}), be2 = b.param("be2" + s, {d});
  std::string ffn =
      "ffn(" + y + ", " + w1 + ", " + b1 + ", " + w2 + ", " + b2 + ")";
  return b.let("add_norm(" + y + ", " + ffn + ", " + g2 + ", " + be2 + ")", xs);
}

void genEncoderLayer(Block &b, Rng &r, Kind &kind) {
  int64_t bs = r.pick(kBatch), t = r.pick(kSeq), d = hiddenSize(r);
  b.dim("B", bs);
  b.dim("T", t);
  b.dim("D", d);
  std::string x = b.input("X", {bs, t, d});
  std::string lens = maybeLengths(b, r, kind, bs, t, t, "valid_lens");
  if (d % 2 == 0 && r.chance(0.5)) {
    kind.add("pos_enc");
    x = b.let("positional_encoding(" + x + ", max_len=1000)", {bs, t, d});
  }
  b.output(encoderLayer(b, r, kind, x, lens, "", true));
}

/// A Llama decoder layer: RMSNorm, GQA with rope (causal, maybe a window),
/// residual, RMSNorm, SiLU-gated MLP, residual.
void genLlamaLayer(Block &b, Rng &r, Kind &kind) {
  int64_t bs = r.pick(kBatch), t = r.pick(kSeq), d = hiddenSize(r, true),
          f = r.pick(kFeat);
  b.dim("B", bs);
  b.dim("T", t);
  b.dim("D", d);
  std::string x = b.input("X", {bs, t, d});
  std::string lens = maybeLengths(b, r, kind, bs, t, t, "vl", 0.6);
  MhaConfig c = randomMha(r, d, t, false);
  // Rope on every head: an even head dim (d is even, so one head works).
  std::vector<int64_t> heads;
  for (int64_t h : divisors(d, 16))
    if ((d / h) % 2 == 0)
      heads.push_back(h);
  c.heads = r.pick(heads);
  c.headDim = d / c.heads;
  c.rope = true;
  c.ropeBase = r.chance(0.5) ? 500000.0 : 0;
  c.causal = true;
  c.kvHeads = r.pick(divisors(c.heads, c.heads));
  if (!c.window && r.chance(0.4))
    c.window = r.integer(1, t + 2);
  c.bias[0] = c.bias[1] = c.bias[2] = c.bias[3] = false;
  std::string h =
      b.let("rms_norm(" + x + ", " + b.param("gn1", {d}) + ")", {bs, t, d});
  auto [att, unused] = emitMha(b, r, kind, c, h, h, h, lens);
  (void)unused;
  std::string x2 = b.let("add(" + x + ", " + att + ")", {bs, t, d});
  std::string gn2 = b.param("gn2", {d});
  std::string h2 = b.let(
      "rms_norm(" + x2 + ", " + gn2 + epsKeyword(r, kind) + ")", {bs, t, d});
  std::string gate = b.let(
      "silu(linear(" + h2 + ", " + b.weight("Wg", {f, d}) + "))", {bs, t, f});
  std::string up =
      b.let("linear(" + h2 + ", " + b.weight("Wu", {f, d}) + ")", {bs, t, f});
  std::string m = b.let("linear(mul(" + gate + ", " + up + "), " +
                            b.weight("Wd", {d, f}) + ")",
                        {bs, t, d});
  b.output(b.let("add(" + x2 + ", " + m + ")", {bs, t, d}));
}

/// A decode step or prefill chunk (docs/spec.md §2 v3): multi-head
/// attention of T new tokens with a KV cache of L rows (kv_heads, window,
/// rope, biases drawn as for any call; entries at ragged positions), alone
/// or in a pre-norm layer with a residual (GPT-2's or Llama's).
void genDecode(Block &b, Rng &r, Kind &kind) {
  int64_t bs = r.pick(kBatch), t = r.pick(std::vector<int64_t>{1, 1, 2, 3, 5});
  int64_t rows = t + r.pick(std::vector<int64_t>{0, 1, 3, 7, 16, 29});
  MhaConfig c = randomMha(r, 0, rows, false);
  c.causal = true;
  int64_t hd = c.heads * c.headDim;
  int64_t kvd = (c.kvHeads ? c.kvHeads : c.heads) * c.headDim;
  b.dim("B", bs);
  b.dim("T", t);
  b.dim("L", rows);
  b.dim("D", hd);
  kind.add("T=" + std::to_string(t) + ",L=" + std::to_string(rows));
  std::string x = b.input("X", {bs, t, hd});
  std::string pos = b.positions("pos", {bs}, rows - t);
  std::string kCache = b.state("K_cache", {bs, rows, kvd});
  std::string vCache = b.state("V_cache", {bs, rows, kvd});
  std::string cache =
      "cache_k=" + kCache + ", cache_v=" + vCache + ", cache_pos=" + pos;
  bool layer = r.chance(0.4);
  std::string h = x;
  if (hd % 2 == 0 && r.chance(0.3)) {
    // D2L's encoding at each entry's positions pos[b] + t.
    kind.add("pos_enc_offset");
    h = b.let("positional_encoding(" + h + ", offset=" + pos +
                  ", max_len=" + b.ref(rows) + ")",
              {bs, t, hd});
  }
  if (layer) {
    kind.add("layer");
    h = b.let("rms_norm(" + h + ", " + b.param("g", {hd}) + ")", {bs, t, hd});
  }
  std::string att =
      b.let(mhaExpr(b, r, kind, c, h, h, h, "", "", cache), {bs, t, hd});
  if (!layer) {
    b.output(att);
    return;
  }
  b.output(b.let("add(" + x + ", " + att + ")", {bs, t, hd}));
}

/// A GPT-2 block: pre-LayerNorm, causal attention with every bias, GELU
/// (tanh) MLP, residuals.
void genGpt2Layer(Block &b, Rng &r, Kind &kind) {
  int64_t bs = r.pick(kBatch), t = r.pick(kSeq), d = hiddenSize(r),
          f = r.pick(kFeat);
  b.dim("B", bs);
  b.dim("T", t);
  std::string x = b.input("X", {bs, t, d});
  std::string g1 = b.param("g1", {d}), be1 = b.param("be1", {d});
  std::string h =
      b.let("layer_norm(" + x + ", " + g1 + ", " + be1 + ")", {bs, t, d});
  MhaConfig c = randomMha(r, d, t);
  c.causal = true;
  c.window = 0;
  c.rope = false;
  c.ropeBase = 0;
  c.kvHeads = 0;
  c.bias[0] = c.bias[1] = c.bias[2] = c.bias[3] = true;
  auto [att, a] = emitMha(b, r, kind, c, h, h, h, "");
  std::string x2 = b.let("add(" + x + ", " + att + ")", {bs, t, d});
  std::string g2 = b.param("g2", {d}), be2 = b.param("be2", {d});
  std::string h2 =
      b.let("layer_norm(" + x2 + ", " + g2 + ", " + be2 + ")", {bs, t, d});
  std::string wfc = b.weight("Wfc", {f, d}), bfc = b.param("bfc", {f});
  std::string fc = b.let("gelu(linear(" + h2 + ", " + wfc + ", " + bfc +
                             "), approximate=true)",
                         {bs, t, f});
  std::string wproj = b.weight("Wproj", {d, f}), bproj = b.param("bproj", {d});
  std::string proj =
      b.let("linear(" + fc + ", " + wproj + ", " + bproj + ")", {bs, t, d});
  b.output(b.let("add(" + x2 + ", " + proj + ")", {bs, t, d}));
  if (!a.empty())
    b.output(a);
}

/// BERT's embeddings: token + segment + learned positions ([1, T, D],
/// broadcast), LayerNorm, dropout; sometimes an attention layer on top.
void genBertEmbedding(Block &b, Rng &r, Kind &kind) {
  int64_t bs = r.pick(kBatch), t = r.pick(kSeq), d = hiddenSize(r),
          v = r.pick(std::vector<int64_t>{5, 17, 50, 100});
  b.dim("B", bs);
  b.dim("T", t);
  b.dim("D", d);
  std::string tok = b.ids("tokens", {bs, t}, v);
  std::string seg = b.ids("segments", {bs, t}, 2);
  std::string lens = maybeLengths(b, r, kind, bs, t, t, "valid_lens");
  std::string tt = b.param("tok_table", {v, d});
  std::string st = b.param("seg_table", {2, d});
  std::string pos = b.param("pos_embedding", {1, t, d});
  std::string e =
      b.let("add(add(embedding(" + tok + ", " + tt + "), embedding(" + seg +
                ", " + st + ")), " + pos + ")",
            {bs, t, d});
  std::string g = b.param("g", {d}), be = b.param("be", {d});
  std::string ln =
      b.let("layer_norm(" + e + ", " + g + ", " + be + ")", {bs, t, d});
  std::string y = b.let("dropout(" + ln + ", p=0.1)", {bs, t, d});
  if (!lens.empty() || r.chance(0.5)) {
    kind.add("encoder");
    y = encoderLayer(b, r, kind, y, lens, "_l", false);
  }
  b.output(y);
}

/// D2L's TransformerDecoderBlock (eval, whole target sequence): causal
/// self-attention, add_norm, attention over the encoder's outputs with
/// their valid_lens, add_norm, ffn, add_norm.
void genDecoderLayer(Block &b, Rng &r, Kind &kind) {
  int64_t bs = r.pick(kBatch), tq = r.pick(kSeq), tk = r.pick(kSeq),
          d = hiddenSize(r), f = r.pick(kFeat);
  b.dim("B", bs);
  b.dim("Tq", tq);
  b.dim("Tk", tk);
  b.dim("D", d);
  std::string x = b.input("X", {bs, tq, d});
  std::string enc = b.input("enc_outputs", {bs, tk, d});
  std::string encLens =
      maybeLengths(b, r, kind, bs, tq, tk, "enc_valid_lens", 0.2);
  MhaConfig c1 = randomMha(r, d, tq, false);
  c1.causal = true;
  auto [self, u1] = emitMha(b, r, kind, c1, x, x, x, "", "1");
  (void)u1;
  std::string g1 = b.param("g1", {d}), be1 = b.param("be1", {d});
  std::string y =
      b.let("add_norm(" + x + ", " + self + ", " + g1 + ", " + be1 + ")",
            {bs, tq, d});
  MhaConfig c2 = randomMha(r, d, tk);
  c2.causal = false;
  c2.window = 0;
  auto [crossAtt, a] = emitMha(b, r, kind, c2, y, enc, enc, encLens, "2");
  std::string g2 = b.param("g2", {d}), be2 = b.param("be2", {d});
  std::string z =
      b.let("add_norm(" + y + ", " + crossAtt + ", " + g2 + ", " + be2 + ")",
            {bs, tq, d});
  std::string w1 = b.weight("W1", {f, d}), b1 = b.param("b1", {f}),
              w2 = b.weight("W2", {d, f}), b2 = b.param("b2", {d});
  std::string ffn =
      "ffn(" + z + ", " + w1 + ", " + b1 + ", " + w2 + ", " + b2 + ")";
  std::string g3 = b.param("g3", {d}), be3 = b.param("be3", {d});
  b.output(b.let("add_norm(" + z + ", " + ffn + ", " + g3 + ", " + be3 + ")",
                 {bs, tq, d}));
  if (!a.empty())
    b.output(a);
}

/// Multi-head attention from the primitives, as D2L writes it: linear,
/// split_heads, matmul(transpose_b), scale, masked_softmax (lengths
/// repeated per head by hand: i32[B*H] or i32[B*H, T]), matmul,
/// merge_heads, linear.
void genManualAttention(Block &b, Rng &r, Kind &kind) {
  int64_t bs = r.pick(kBatch), t = r.pick(kSeq), d = hiddenSize(r);
  std::vector<int64_t> hs = divisors(d, 8);
  int64_t h = r.pick(hs), hd = d / h;
  b.dim("B", bs);
  b.dim("T", t);
  b.dim("H", h);
  kind.add("H=" + std::to_string(h) + "x" + std::to_string(hd));
  std::string x = b.input("X", {bs, t, d});
  bool masked = r.chance(0.7);
  std::string lens;
  if (masked)
    lens = maybeLengths(b, r, kind, bs * h, t, t, "vl", 0.0);
  std::string hr = b.ref(h);
  auto project = [&](const std::string &w) {
    return b.let("split_heads(linear(" + x + ", " + b.weight(w, {d, d}) +
                     "), heads=" + hr + ")",
                 {bs * h, t, hd});
  };
  std::string q = project("Wq"), k = project("Wk"), v = project("Wv");
  std::string s =
      b.let("scale(matmul(" + q + ", " + k + ", transpose_b=true), " +
                floatText(1.0 / std::sqrt(double(hd))) + ")",
            {bs * h, t, t});
  std::string p = b.let(masked ? "masked_softmax(" + s + ", " + lens + ")"
                               : "softmax(" + s + ")",
                        {bs * h, t, t});
  std::string o =
      b.let("merge_heads(matmul(" + p + ", " + v + "), heads=" + hr + ")",
            {bs, t, d});
  b.output(
      b.let("linear(" + o + ", " + b.weight("Wo", {d, d}) + ")", {bs, t, d}));
  if (r.chance(0.3))
    b.output(p);
}

/// A random chain of shape-preserving ops on one tensor.
void genElementwiseChain(Block &b, Rng &r, Kind &kind) {
  Shape s = randomShape(r, 1, 4);
  int64_t d = s.back();
  std::string x = b.input("X", s);
  std::string cur = x;
  int steps = int(r.integer(2, 5));
  int params = 0;
  for (int i = 0; i < steps; ++i) {
    std::string which, expr;
    switch (r.integer(0, 7)) {
    case 0:
    case 1:
      expr = activation(r, cur, which);
      break;
    case 2: {
      const char *ops[] = {"add", "mul", "sub"};
      which = ops[r.integer(0, 2)];
      std::string other =
          b.param("P" + std::to_string(++params), stretchable(r, s));
      expr = r.chance(0.5) ? which + "(" + cur + ", " + other + ")"
                           : which + "(" + other + ", " + cur + ")";
      break;
    }
    case 3:
      which = "scale";
      expr = "scale(" + cur + ", " + floatText(r.uniform(-3.0f, 3.0f)) + ")";
      break;
    case 4: {
      which = "layer_norm";
      std::string g = b.param("P" + std::to_string(++params), {d});
      std::string be = b.param("P" + std::to_string(++params), {d});
      expr = "layer_norm(" + cur + ", " + g + ", " + be + ")";
      break;
    }
    case 5:
      which = "rms_norm";
      expr = "rms_norm(" + cur + ", " +
             b.param("P" + std::to_string(++params), {d}) + ")";
      break;
    case 6:
      which = "softmax";
      expr = "softmax(" + cur + ")";
      break;
    default:
      which = "residual";
      expr = "add(" + cur + ", " + x + ")";
    }
    kind.add(which);
    // Either a value of its own or nested in the next step's call.
    cur = r.chance(0.4) && i + 1 < steps ? expr : b.let(expr, s);
  }
  b.output(cur);
}

/// A block calling another twice (docs/spec.md §2 block calls): the callee is
/// an encoder layer or a GELU MLP with a residual and a norm; the caller's
/// params are L0_* and L1_*.
std::string genBlockCall(Rng &r, Kind &kind, GeneratedSpec &spec,
                         std::string &error) {
  int64_t bs = r.pick(kBatch), t = r.pick(kSeq), d = hiddenSize(r);
  Block callee("layer", r);
  callee.dim("B", bs);
  callee.dim("T", t);
  callee.dim("D", d);
  std::string x = callee.input("X", {bs, t, d});
  bool attention = r.chance(0.6);
  if (attention) {
    kind.add("encoder_layer");
    std::string lens = maybeLengths(callee, r, kind, bs, t, t, "valid_lens");
    callee.output(encoderLayer(callee, r, kind, x, lens, "", false));
  } else {
    kind.add("mlp");
    int64_t f = r.pick(kFeat);
    std::string w1 = callee.weight("W1", {f, d}), b1 = callee.param("b1", {f});
    std::string hmid = callee.let(
        "gelu(linear(" + x + ", " + w1 + ", " + b1 + "))", {bs, t, f});
    std::string y =
        callee.let("linear(" + hmid + ", " + callee.weight("W2", {d, f}) + ")",
                   {bs, t, d});
    callee.output(callee.let("rms_norm(add(" + x + ", " + y + "), " +
                                 callee.param("g", {d}) + ")",
                             {bs, t, d}));
  }
  std::string calleeText = callee.text(error);

  Block net("net", r);
  net.dim("N", bs);
  net.dim("L", t);
  // The callee's inputs, as the caller's.
  for (const GenArgument &a : callee.arguments()) {
    if (a.param)
      continue;
    if (!a.isInt)
      net.input(a.name, a.shape, a.lo, a.hi);
    else if (a.fill == GenArgument::Fill::Lengths)
      net.lengths(a.name, a.shape, a.keys);
    else
      net.ids(a.name, a.shape, a.vocab);
  }
  std::string cur = "X";
  for (int layer = 0; layer < 2; ++layer) {
    // The callee's inputs positionally in declaration order (or all by
    // keyword), then its params by keyword.
    bool keywords = r.chance(0.2);
    std::vector<std::string> args, params;
    for (const GenArgument &a : callee.arguments()) {
      if (a.param) {
        std::string mine = "L" + std::to_string(layer) + "_" + a.name;
        net.param(mine, a.shape, a.lo, a.hi);
        params.push_back(a.name + "=" + mine);
      } else {
        std::string value = a.name == "X" ? cur : a.name;
        args.push_back(keywords ? a.name + "=" + value : value);
      }
    }
    shuffle(r, params);
    args.insert(args.end(), params.begin(), params.end());
    std::string next = "h" + std::to_string(layer + 1);
    net.raw(next + " = layer(" + join(args) + ")", {{next, {bs, t, d}}});
    cur = next;
  }
  net.output(cur);
  spec.arguments = net.arguments();
  spec.outputs = net.outputs(error);
  spec.block = "net";
  return calleeText + "\n" + net.text(error);
}

struct Generator {
  const char *name;
  void (*build)(Block &, Rng &, Kind &);
  int weight;
};

const Generator kGenerators[] = {
    {"mha", genMha, 30},
    {"attention", genAttention, 8},
    {"linear", genLinear, 6},
    {"matmul", genMatmul, 4},
    {"scale", genScale, 2},
    {"broadcast", genBroadcast, 6},
    {"unary", genUnary, 6},
    {"softmax", genSoftmax, 3},
    {"masked_softmax", genMaskedSoftmax, 4},
    {"heads", genHeads, 3},
    {"positional_encoding", genPositionalEncoding, 3},
    {"norm", genNorm, 6},
    {"ffn", genFfn, 3},
    {"embedding", genEmbedding, 3},
    {"dropout", genDropout, 2},
    {"encoder_layer", genEncoderLayer, 6},
    {"llama_layer", genLlamaLayer, 4},
    {"gpt2_layer", genGpt2Layer, 3},
    {"bert_embedding", genBertEmbedding, 3},
    {"decoder_layer", genDecoderLayer, 3},
    {"manual_attention", genManualAttention, 3},
    {"elementwise_chain", genElementwiseChain, 4},
    {"block_call", nullptr, 3},
    {"decode", genDecode, 6},
};

} // namespace

std::vector<std::string> specKinds() {
  std::vector<std::string> kinds;
  for (const Generator &g : kGenerators)
    kinds.push_back(g.name);
  return kinds;
}

GeneratedSpec generateSpec(uint64_t seed, bool drawTypes) {
  Rng r(seed);
  int total = 0;
  for (const Generator &g : kGenerators)
    total += g.weight;
  int64_t roll = r.integer(0, total - 1);
  const Generator *chosen = &kGenerators[0];
  for (const Generator &g : kGenerators) {
    if (roll < g.weight) {
      chosen = &g;
      break;
    }
    roll -= g.weight;
  }
  GeneratedSpec spec;
  Kind kind{chosen->name, {}};
  std::string error;
  if (!chosen->build) {
    spec.text = genBlockCall(r, kind, spec, error);
  } else {
    Block b("k", r);
    chosen->build(b, r, kind);
    spec.arguments = b.arguments();
    spec.outputs = b.outputs(error);
    spec.text = b.text(error);
    spec.block = "k";
  }
  spec.kind = kind.text();
  spec.error = error;
  if (drawTypes) {
    Rng typeRng(seed ^ 0x9e3779b97f4a7c15ull);
    int64_t roll = typeRng.integer(0, 9);
    spec.floatType = roll < 2 ? "bf16" : roll < 3 ? "f16" : "f32";
  }
  // Every float type is written by Block::typeText as "f32[".
  if (spec.floatType != "f32")
    for (size_t at = 0; (at = spec.text.find("f32[", at)) != std::string::npos;
         at += spec.floatType.size())
      spec.text.replace(at, 3, spec.floatType);
  return spec;
}

} // namespace attnc::diff
