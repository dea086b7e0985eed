//===- NaiveReference.cpp - Naive reference of every attn op --------------===//

#include "NaiveReference.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"

#include <algorithm>
#include <cmath>
#include <string>

using llvm::Twine;

namespace attnc::ref {

namespace {

[[noreturn]] void fail(const Twine &msg) {
  llvm::reportFatalUsageError("naive reference: " + msg);
}

void check(bool cond, const Twine &msg) {
  if (!cond)
    fail(msg);
}

std::string shapeStr(const std::vector<int64_t> &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

void checkRank(const Tensor &t, int64_t rank, const char *what) {
  check(t.rank() == rank, Twine(what) + " must have rank " + Twine(rank) +
                              ", got " + shapeStr(t.shape));
}

} // namespace

size_t shapeNumElements(const std::vector<int64_t> &shape) {
  size_t n = 1;
  for (int64_t d : shape) {
    check(d >= 0, "negative dimension in " + shapeStr(shape));
    n *= size_t(d);
  }
  return n;
}

Tensor::Tensor(std::vector<int64_t> s, std::vector<float> d)
    : shape(std::move(s)), data(std::move(d)) {
  check(shapeNumElements(shape) == data.size(),
        "tensor of shape " + shapeStr(shape) + " given " + Twine(data.size()) +
            " values");
}

Tensor::Tensor(std::vector<int64_t> s)
    : shape(std::move(s)), data(shapeNumElements(shape), 0.0f) {}

IntTensor::IntTensor(std::vector<int64_t> s, std::vector<int32_t> d)
    : shape(std::move(s)), data(std::move(d)) {
  check(shapeNumElements(shape) == data.size(),
        "int tensor of shape " + shapeStr(shape) + " given " +
            Twine(data.size()) + " values");
}

//===----------------------------------------------------------------------===//
// Primitive ops
//===----------------------------------------------------------------------===//

Tensor linear(const Tensor &x, const Tensor &w, const Tensor *b) {
  check(x.rank() >= 1, "linear: x must have rank >= 1");
  checkRank(w, 2, "linear: w");
  int64_t in = x.dim(-1), out = w.dim(0);
  check(w.dim(1) == in, "linear: w " + shapeStr(w.shape) +
                            " does not match x " + shapeStr(x.shape));
  if (b)
    check(b->rank() == 1 && b->dim(0) == out,
          "linear: b " + shapeStr(b->shape) + " does not match w " +
              shapeStr(w.shape));
  std::vector<int64_t> shape = x.shape;
  shape.back() = out;
  Tensor y(shape);
  size_t rows = in ? x.numElements() / in : shapeNumElements(shape) / out;
  for (size_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double acc = b ? b->data[o] : 0.0;
      for (int64_t i = 0; i < in; ++i)
        acc += double(x.data[r * in + i]) * double(w.data[o * in + i]);
      y.data[r * out + o] = float(acc);
    }
  return y;
}

Tensor matmul(const Tensor &a, const Tensor &b, bool transposeB) {
  checkRank(a, 3, "matmul: a");
  checkRank(b, 3, "matmul: b");
  int64_t n = a.dim(0), m = a.dim(1), k = a.dim(2);
  int64_t bk = transposeB ? b.dim(2) : b.dim(1);
  int64_t p = transposeB ? b.dim(1) : b.dim(2);
  check(b.dim(0) == n && bk == k, "matmul: shapes " + shapeStr(a.shape) +
                                      " and " + shapeStr(b.shape) +
                                      " do not match");
  Tensor y({n, m, p});
  for (int64_t bi = 0; bi < n; ++bi)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < p; ++j) {
        double acc = 0;
        for (int64_t l = 0; l < k; ++l) {
          float bv = transposeB ? b.data[(bi * p + j) * k + l]
                                : b.data[(bi * k + l) * p + j];
          acc += double(a.data[(bi * m + i) * k + l]) * double(bv);
        }
        y.data[(bi * m + i) * p + j] = float(acc);
      }
  return y;
}

Tensor scale(const Tensor &x, float s) {
  Tensor y = x;
  for (float &v : y.data)
    v *= s;
  return y;
}

namespace {

std::vector<int64_t> broadcastShapeOf(const std::vector<int64_t> &a,
                                      const std::vector<int64_t> &b,
                                      const char *op) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> r(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Axis i from the right.
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    check(da == db || da == 1 || db == 1,
          Twine(op) + ": shapes " + shapeStr(a) + " and " + shapeStr(b) +
              " do not broadcast");
    r[rank - 1 - i] = da == 1 ? db : da;
  }
  return r;
}

/// Elementwise f(a, b) in double with NumPy broadcasting, rounded to f32.
template <typename F>
Tensor broadcastBinary(const Tensor &a, const Tensor &b, const char *op, F f) {
  std::vector<int64_t> shape = broadcastShapeOf(a.shape, b.shape, op);
  Tensor x = a.shape == shape ? a : broadcastTo(a, shape);
  Tensor z = b.shape == shape ? b : broadcastTo(b, shape);
  for (size_t i = 0; i < x.data.size(); ++i)
    x.data[i] = float(f(double(x.data[i]), double(z.data[i])));
  return x;
}

template <typename F> Tensor unary(const Tensor &x, F f) {
  Tensor y = x;
  for (float &v : y.data)
    v = float(f(double(v)));
  return y;
}

} // namespace

std::vector<int64_t> broadcastShape(const std::vector<int64_t> &a,
                                    const std::vector<int64_t> &b) {
  return broadcastShapeOf(a, b, "broadcast");
}

Tensor broadcastTo(const Tensor &x, const std::vector<int64_t> &shape) {
  check(x.shape.size() <= shape.size() &&
            broadcastShapeOf(x.shape, shape, "broadcastTo") == shape,
        "broadcastTo: " + shapeStr(x.shape) + " does not broadcast to " +
            shapeStr(shape));
  Tensor y(shape);
  size_t rank = shape.size(), offset = rank - x.shape.size();
  // x's stride for each axis of `shape` (0 where it stretches or is
  // missing).
  std::vector<size_t> stride(rank, 0);
  size_t s = 1;
  for (size_t i = x.shape.size(); i-- > 0;) {
    stride[offset + i] = x.shape[i] == 1 ? 0 : s;
    s *= size_t(x.shape[i]);
  }
  std::vector<int64_t> index(rank, 0);
  for (size_t flat = 0; flat < y.numElements(); ++flat) {
    size_t src = 0;
    for (size_t i = 0; i < rank; ++i)
      src += size_t(index[i]) * stride[i];
    y.data[flat] = x.data[src];
    for (size_t i = rank; i-- > 0;) {
      if (++index[i] < shape[i])
        break;
      index[i] = 0;
    }
  }
  return y;
}

Tensor add(const Tensor &a, const Tensor &b) {
  return broadcastBinary(a, b, "add", [](double x, double y) { return x + y; });
}

Tensor mul(const Tensor &a, const Tensor &b) {
  return broadcastBinary(a, b, "mul", [](double x, double y) { return x * y; });
}

Tensor sub(const Tensor &a, const Tensor &b) {
  return broadcastBinary(a, b, "sub", [](double x, double y) { return x - y; });
}

Tensor relu(const Tensor &x) {
  Tensor y = x;
  for (float &v : y.data)
    v = v > 0.0f || std::isnan(v) ? v : 0.0f;
  return y;
}

Tensor silu(const Tensor &x) {
  return unary(x, [](double v) { return v / (1.0 + std::exp(-v)); });
}

Tensor tanh(const Tensor &x) {
  return unary(x, [](double v) { return std::tanh(v); });
}

Tensor sigmoid(const Tensor &x) {
  return unary(x, [](double v) { return 1.0 / (1.0 + std::exp(-v)); });
}

Tensor gelu(const Tensor &x, bool tanhForm) {
  Tensor y = x;
  const double pi = 3.14159265358979323846;
  for (float &v : y.data) {
    double d = v;
    double inner =
        tanhForm ? std::tanh(std::sqrt(2.0 / pi) * (d + 0.044715 * d * d * d))
                 : std::erf(d / std::sqrt(2.0));
    v = float(0.5 * d * (1.0 + inner));
  }
  return y;
}

Tensor splitHeads(const Tensor &x, int64_t heads) {
  checkRank(x, 3, "split_heads: x");
  int64_t b = x.dim(0), t = x.dim(1), hd = x.dim(2);
  check(heads > 0 && hd % heads == 0,
        "split_heads: " + Twine(hd) +
            " is not divisible by heads=" + Twine(heads));
  int64_t d = hd / heads;
  Tensor y({b * heads, t, d});
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t ti = 0; ti < t; ++ti)
        for (int64_t e = 0; e < d; ++e)
          y.data[((bi * heads + h) * t + ti) * d + e] =
              x.data[(bi * t + ti) * hd + h * d + e];
  return y;
}

Tensor mergeHeads(const Tensor &x, int64_t heads) {
  checkRank(x, 3, "merge_heads: x");
  int64_t bh = x.dim(0), t = x.dim(1), d = x.dim(2);
  check(heads > 0 && bh % heads == 0,
        "merge_heads: " + Twine(bh) +
            " is not divisible by heads=" + Twine(heads));
  int64_t b = bh / heads, hd = heads * d;
  Tensor y({b, t, hd});
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t ti = 0; ti < t; ++ti)
        for (int64_t e = 0; e < d; ++e)
          y.data[(bi * t + ti) * hd + h * d + e] =
              x.data[((bi * heads + h) * t + ti) * d + e];
  return y;
}

namespace {

/// Softmax of one row in place (max-subtracted, double sums).
void softmaxRow(float *row, int64_t n) {
  if (n == 0)
    return;
  double mx = row[0];
  for (int64_t j = 1; j < n; ++j)
    mx = std::max(mx, double(row[j]));
  std::vector<double> e(n);
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    e[j] = std::exp(double(row[j]) - mx);
    sum += e[j];
  }
  for (int64_t j = 0; j < n; ++j)
    row[j] = float(e[j] / sum);
}

} // namespace

Tensor softmax(const Tensor &x) {
  check(x.rank() >= 1, "softmax: x must have rank >= 1");
  Tensor y = x;
  int64_t n = x.dim(-1);
  if (n == 0)
    return y;
  for (size_t r = 0; r < y.numElements() / n; ++r)
    softmaxRow(y.data.data() + r * n, n);
  return y;
}

Tensor maskedSoftmax(const Tensor &x, const IntTensor *validLens) {
  return maskedSoftmax(x, validLens, /*causal=*/false);
}

Tensor maskedSoftmax(const Tensor &x, const IntTensor *validLens, bool causal) {
  return maskedSoftmax(x, validLens, causal, /*window=*/0);
}

Tensor maskedSoftmax(const Tensor &x, const IntTensor *validLens, bool causal,
                     int64_t window) {
  checkRank(x, 3, "masked_softmax: x");
  check(window >= 0, "masked_softmax: window must be >= 0");
  int64_t n = x.dim(0), tq = x.dim(1), tk = x.dim(2);
  bool twoD = false;
  if (validLens) {
    twoD = validLens->shape.size() == 2;
    check((validLens->shape.size() == 1 && validLens->shape[0] == n) ||
              (twoD && validLens->shape[0] == n && validLens->shape[1] == tq),
          "masked_softmax: valid_lens " + shapeStr(validLens->shape) +
              " must be [" + Twine(n) + "] or [" + Twine(n) + ", " + Twine(tq) +
              "]");
  }
  Tensor y = x;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < tq; ++i) {
      float *row = y.data.data() + (b * tq + i) * tk;
      int64_t len = tk;
      if (validLens)
        len = twoD ? validLens->data[b * tq + i] : validLens->data[b];
      for (int64_t j = 0; j < tk; ++j)
        if (j >= len || ((causal || window) && j > i) ||
            (window && j <= i - window))
          row[j] = kMaskValue;
      softmaxRow(row, tk);
    }
  return y;
}

//===----------------------------------------------------------------------===//
// Composite ops
//===----------------------------------------------------------------------===//

Tensor attentionWeights(const Tensor &q, const Tensor &k,
                        const IntTensor *validLens, bool causal,
                        int64_t window) {
  checkRank(q, 3, "attention: q");
  checkRank(k, 3, "attention: k");
  int64_t n = q.dim(0), tq = q.dim(1), d = q.dim(2);
  int64_t tk = k.dim(1);
  check(k.dim(0) == n && k.dim(2) == d, "attention: q " + shapeStr(q.shape) +
                                            ", k " + shapeStr(k.shape) +
                                            " do not match");
  Tensor scores({n, tq, tk});
  double invSqrtD = 1.0 / std::sqrt(double(d));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < tq; ++i)
      for (int64_t j = 0; j < tk; ++j) {
        double acc = 0;
        for (int64_t e = 0; e < d; ++e)
          acc += double(q.data[(b * tq + i) * d + e]) *
                 double(k.data[(b * tk + j) * d + e]);
        scores.data[(b * tq + i) * tk + j] = float(acc * invSqrtD);
      }
  return maskedSoftmax(scores, validLens, causal, window);
}

Tensor attention(const Tensor &q, const Tensor &k, const Tensor &v,
                 const IntTensor *validLens, bool causal, int64_t window) {
  checkRank(v, 3, "attention: v");
  check(v.dim(0) == q.dim(0) && v.dim(1) == k.dim(1),
        "attention: k " + shapeStr(k.shape) + ", v " + shapeStr(v.shape) +
            " do not match");
  return matmul(attentionWeights(q, k, validLens, causal, window), v);
}

Tensor rope(const Tensor &x, double base) {
  checkRank(x, 3, "rope: x");
  int64_t n = x.dim(0), t = x.dim(1), d = x.dim(2);
  check(d % 2 == 0, "rope: head dim " + Twine(d) + " must be even");
  check(base > 0, "rope: base must be > 0");
  int64_t half = d / 2;
  // HF LlamaRotaryEmbedding, all float32: inv_freq = 1 / base^(2j / d),
  // angle = position * inv_freq.
  std::vector<double> cosT(t * half), sinT(t * half);
  for (int64_t j = 0; j < half; ++j) {
    float invFreq = 1.0f / std::pow(float(base), float(2 * j) / float(d));
    for (int64_t p = 0; p < t; ++p) {
      float angle = float(p) * invFreq;
      cosT[p * half + j] = std::cos(double(angle));
      sinT[p * half + j] = std::sin(double(angle));
    }
  }
  Tensor y(x.shape);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t p = 0; p < t; ++p) {
      const float *in = x.data.data() + (r * t + p) * d;
      float *out = y.data.data() + (r * t + p) * d;
      for (int64_t j = 0; j < half; ++j) {
        double c = cosT[p * half + j], s = sinT[p * half + j];
        double x1 = in[j], x2 = in[j + half];
        out[j] = float(x1 * c - x2 * s);
        out[j + half] = float(x2 * c + x1 * s);
      }
    }
  return y;
}

namespace {

/// repeat_interleave(validLens, heads, dim=0) of a [B] or [B, Tq] length
/// tensor, for the queries q[B, Tq, ...].
IntTensor repeatPerHead(const IntTensor &validLens, const Tensor &q,
                        int64_t heads) {
  int64_t b = q.dim(0), tq = q.dim(1);
  bool twoD = validLens.shape.size() == 2;
  check((validLens.shape.size() == 1 && validLens.shape[0] == b) ||
            (twoD && validLens.shape[0] == b && validLens.shape[1] == tq),
        "multihead_attention: valid_lens " + shapeStr(validLens.shape) +
            " must be [B] or [B, Tq]");
  int64_t per = twoD ? tq : 1;
  IntTensor repeated;
  repeated.shape = validLens.shape;
  repeated.shape[0] = b * heads;
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < per; ++i)
        repeated.data.push_back(validLens.data[bi * per + i]);
  return repeated;
}

void checkHeads(const Tensor &q, const Tensor &wQ, int64_t heads) {
  checkRank(q, 3, "multihead_attention: q");
  check(heads > 0 && wQ.rank() == 2 && wQ.dim(0) % heads == 0,
        "multihead_attention: w_q " + shapeStr(wQ.shape) +
            " rows not divisible by heads=" + Twine(heads));
}

} // namespace

Tensor multiheadAttention(const Tensor &q, const Tensor &k, const Tensor &v,
                          int64_t heads, const Tensor &wQ, const Tensor &wK,
                          const Tensor &wV, const Tensor &wO,
                          const IntTensor *validLens, bool causal) {
  checkHeads(q, wQ, heads);
  Tensor qs = splitHeads(linear(q, wQ), heads);
  Tensor ks = splitHeads(linear(k, wK), heads);
  Tensor vs = splitHeads(linear(v, wV), heads);
  IntTensor repeated;
  if (validLens)
    repeated = repeatPerHead(*validLens, q, heads);
  Tensor o = attention(qs, ks, vs, validLens ? &repeated : nullptr, causal);
  return linear(mergeHeads(o, heads), wO);
}

Tensor multiheadAttentionWeights(const Tensor &q, const Tensor &k,
                                 int64_t heads, const Tensor &wQ,
                                 const Tensor &wK, const IntTensor *validLens,
                                 bool causal) {
  checkHeads(q, wQ, heads);
  Tensor qs = splitHeads(linear(q, wQ), heads);
  Tensor ks = splitHeads(linear(k, wK), heads);
  IntTensor repeated;
  if (validLens)
    repeated = repeatPerHead(*validLens, q, heads);
  return attentionWeights(qs, ks, validLens ? &repeated : nullptr, causal);
}

namespace {

/// [B*G, T, d] kv heads -> [B*H, T, d]: row b*H + h is row b*G + h / (H/G)
/// (HF repeat_kv).
Tensor repeatKv(const Tensor &x, int64_t heads, int64_t kvHeads) {
  int64_t bg = x.dim(0), t = x.dim(1), d = x.dim(2);
  if (kvHeads == heads)
    return x;
  int64_t b = bg / kvHeads, group = heads / kvHeads;
  Tensor y({b * heads, t, d});
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t h = 0; h < heads; ++h)
      std::copy_n(x.data.begin() + (bi * kvHeads + h / group) * t * d, t * d,
                  y.data.begin() + (bi * heads + h) * t * d);
  return y;
}

struct MhaHeads {
  Tensor q, k;         // [B*H, Tq, d], [B*H, Tk, d] (kv heads repeated)
  IntTensor validLens; // repeated per query head
  bool hasValidLens = false;
  int64_t kvHeads;
};

MhaHeads projectQk(const Tensor &q, const Tensor &k, int64_t heads,
                   const Tensor &wQ, const Tensor &wK, const MhaOptions &o) {
  checkHeads(q, wQ, heads);
  checkRank(k, 3, "multihead_attention: k");
  int64_t d = wQ.dim(0) / heads;
  int64_t g = o.kvHeads ? o.kvHeads : heads;
  check(g > 0 && heads % g == 0,
        "multihead_attention: heads=" + Twine(heads) +
            " is not a multiple of kv_heads=" + Twine(g));
  check(wK.rank() == 2 && wK.dim(0) == g * d,
        "multihead_attention: w_k " + shapeStr(wK.shape) + " must have " +
            Twine(g * d) + " rows (kv_heads * head dim)");
  check(!o.rope || d % 2 == 0, "multihead_attention: rope needs an even head "
                               "dim, got " +
                                   Twine(d));
  MhaHeads r;
  r.kvHeads = g;
  r.q = splitHeads(linear(q, wQ, o.bQ), heads);
  Tensor ks = splitHeads(linear(k, wK, o.bK), g);
  if (o.rope) {
    r.q = rope(r.q, o.ropeBase);
    ks = rope(ks, o.ropeBase);
  }
  r.k = repeatKv(ks, heads, g);
  if (o.validLens) {
    r.validLens = repeatPerHead(*o.validLens, q, heads);
    r.hasValidLens = true;
  }
  return r;
}

} // namespace

Tensor multiheadAttention(const Tensor &q, const Tensor &k, const Tensor &v,
                          int64_t heads, const Tensor &wQ, const Tensor &wK,
                          const Tensor &wV, const Tensor &wO,
                          const MhaOptions &options) {
  MhaHeads h = projectQk(q, k, heads, wQ, wK, options);
  check(wV.rank() == 2 && wV.dim(0) == wK.dim(0),
        "multihead_attention: w_v " + shapeStr(wV.shape) +
            " must have w_k's row count " + Twine(wK.dim(0)));
  Tensor vs = repeatKv(splitHeads(linear(v, wV, options.bV), h.kvHeads), heads,
                       h.kvHeads);
  Tensor o = attention(h.q, h.k, vs, h.hasValidLens ? &h.validLens : nullptr,
                       options.causal, options.window);
  return linear(mergeHeads(o, heads), wO, options.bO);
}

Tensor multiheadAttentionWeights(const Tensor &q, const Tensor &k,
                                 int64_t heads, const Tensor &wQ,
                                 const Tensor &wK, const MhaOptions &options) {
  MhaHeads h = projectQk(q, k, heads, wQ, wK, options);
  return attentionWeights(h.q, h.k, h.hasValidLens ? &h.validLens : nullptr,
                          options.causal, options.window);
}

Tensor positionalEncodingTable(int64_t maxLen, int64_t d) {
  check(d % 2 == 0, "positional_encoding: D=" + Twine(d) + " must be even");
  Tensor p({maxLen, d});
  for (int64_t j = 0; j < d / 2; ++j) {
    // torch: arange(0, D, 2, float32) / D, then pow(10000, .), all float32.
    float exponent = float(2 * j) / float(d);
    float denom = std::pow(10000.0f, exponent);
    for (int64_t i = 0; i < maxLen; ++i) {
      float arg = float(i) / denom;
      p.data[i * d + 2 * j] = std::sin(arg);
      p.data[i * d + 2 * j + 1] = std::cos(arg);
    }
  }
  return p;
}

Tensor positionalEncoding(const Tensor &x, int64_t maxLen) {
  checkRank(x, 3, "positional_encoding: x");
  int64_t b = x.dim(0), t = x.dim(1), d = x.dim(2);
  check(t <= maxLen, "positional_encoding: T=" + Twine(t) +
                         " exceeds max_len=" + Twine(maxLen));
  Tensor p = positionalEncodingTable(t, d);
  Tensor y = x;
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t i = 0; i < t * d; ++i)
      y.data[bi * t * d + i] += p.data[i];
  return y;
}

Tensor layerNorm(const Tensor &x, const Tensor &gamma, const Tensor &beta,
                 double eps) {
  check(x.rank() >= 1, "layer_norm: x must have rank >= 1");
  int64_t d = x.dim(-1);
  check(gamma.shape == std::vector<int64_t>{d} &&
            beta.shape == std::vector<int64_t>{d},
        "layer_norm: gamma/beta must be [" + Twine(d) + "]");
  Tensor y = x;
  if (d == 0)
    return y;
  for (size_t r = 0; r < x.numElements() / d; ++r) {
    const float *row = x.data.data() + r * d;
    double mean = 0;
    for (int64_t i = 0; i < d; ++i)
      mean += row[i];
    mean /= double(d);
    double var = 0;
    for (int64_t i = 0; i < d; ++i)
      var += (row[i] - mean) * (row[i] - mean);
    var /= double(d);
    double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t i = 0; i < d; ++i)
      y.data[r * d + i] =
          float((row[i] - mean) * inv * gamma.data[i] + beta.data[i]);
  }
  return y;
}

Tensor rmsNorm(const Tensor &x, const Tensor &gamma, double eps) {
  check(x.rank() >= 1, "rms_norm: x must have rank >= 1");
  int64_t d = x.dim(-1);
  check(gamma.shape == std::vector<int64_t>{d}, "rms_norm: gamma must be [" +
                                                    Twine(d) + "], got " +
                                                    shapeStr(gamma.shape));
  Tensor y = x;
  if (d == 0)
    return y;
  for (size_t r = 0; r < x.numElements() / d; ++r) {
    const float *row = x.data.data() + r * d;
    double ms = 0;
    for (int64_t i = 0; i < d; ++i)
      ms += double(row[i]) * double(row[i]);
    ms /= double(d);
    double inv = 1.0 / std::sqrt(ms + eps);
    for (int64_t i = 0; i < d; ++i)
      y.data[r * d + i] = float(double(row[i]) * inv * double(gamma.data[i]));
  }
  return y;
}

Tensor addNorm(const Tensor &x, const Tensor &y, const Tensor &gamma,
               const Tensor &beta, double eps) {
  return layerNorm(add(y, x), gamma, beta, eps);
}

Tensor ffn(const Tensor &x, const Tensor &w1, const Tensor &b1,
           const Tensor &w2, const Tensor &b2) {
  return linear(relu(linear(x, w1, &b1)), w2, &b2);
}

Tensor geluFfn(const Tensor &x, const Tensor &w1, const Tensor &b1,
               const Tensor &w2, const Tensor *b2, bool tanhForm) {
  return linear(gelu(linear(x, w1, &b1), tanhForm), w2, b2);
}

llvm::Expected<Tensor> embedding(const IntTensor &ids, const Tensor &table) {
  checkRank(table, 2, "embedding: table");
  int64_t v = table.dim(0), d = table.dim(1);
  std::vector<int64_t> shape = ids.shape;
  shape.push_back(d);
  Tensor y(shape);
  for (size_t i = 0; i < ids.numElements(); ++i) {
    int32_t id = ids.data[i];
    if (id < 0 || id >= v)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "embedding: id " + Twine(id) + " at flat index " + Twine(i) +
              " is out of range; expected 0 <= id < " + Twine(v));
    std::copy_n(table.data.begin() + id * d, d, y.data.begin() + i * d);
  }
  return y;
}

Tensor dropout(const Tensor &x, double p) {
  check(p >= 0.0 && p < 1.0, "dropout: p must be in [0, 1)");
  return x;
}

Tensor encoderBlock(const Tensor &x, const IntTensor *validLens, int64_t heads,
                    const EncoderBlockParams &p, double eps) {
  Tensor a =
      multiheadAttention(x, x, x, heads, p.wQ, p.wK, p.wV, p.wO, validLens);
  Tensor y = addNorm(x, a, p.ln1Gamma, p.ln1Beta, eps);
  return addNorm(y, ffn(y, p.ffnW1, p.ffnB1, p.ffnW2, p.ffnB2), p.ln2Gamma,
                 p.ln2Beta, eps);
}

Tensor formulaTensor(std::vector<int64_t> shape, uint32_t salt, double scale,
                     double offset) {
  Tensor t(std::move(shape));
  uint32_t base = salt * 0x9E3779B9u;
  for (size_t i = 0; i < t.numElements(); ++i) {
    uint32_t h = uint32_t(i) + base;
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    t.data[i] = float(offset + (double(h) / 4294967296.0 - 0.5) * scale);
  }
  return t;
}

double maxAbsDiff(const Tensor &a, const Tensor &b) {
  check(a.shape == b.shape, "maxAbsDiff: shapes " + shapeStr(a.shape) +
                                " and " + shapeStr(b.shape) + " differ");
  double m = 0;
  for (size_t i = 0; i < a.data.size(); ++i) {
    double d = std::fabs(double(a.data[i]) - double(b.data[i]));
    if (!(d <= m)) // NaN propagates as infinity.
      m = std::isnan(d) ? INFINITY : d;
  }
  return m;
}

} // namespace attnc::ref
