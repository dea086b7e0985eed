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

Tensor add(const Tensor &a, const Tensor &b) {
  check(a.shape == b.shape, "add: shapes " + shapeStr(a.shape) + " and " +
                                shapeStr(b.shape) + " differ");
  Tensor y = a;
  for (size_t i = 0; i < y.data.size(); ++i)
    y.data[i] += b.data[i];
  return y;
}

Tensor relu(const Tensor &x) {
  Tensor y = x;
  for (float &v : y.data)
    v = v > 0.0f ? v : 0.0f;
  return y;
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
  checkRank(x, 3, "masked_softmax: x");
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
        if (j >= len || (causal && j > i))
          row[j] = kMaskValue;
      softmaxRow(row, tk);
    }
  return y;
}

//===----------------------------------------------------------------------===//
// Composite ops
//===----------------------------------------------------------------------===//

Tensor attentionWeights(const Tensor &q, const Tensor &k,
                        const IntTensor *validLens, bool causal) {
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
  return maskedSoftmax(scores, validLens, causal);
}

Tensor attention(const Tensor &q, const Tensor &k, const Tensor &v,
                 const IntTensor *validLens, bool causal) {
  checkRank(v, 3, "attention: v");
  check(v.dim(0) == q.dim(0) && v.dim(1) == k.dim(1),
        "attention: k " + shapeStr(k.shape) + ", v " + shapeStr(v.shape) +
            " do not match");
  return matmul(attentionWeights(q, k, validLens, causal), v);
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
