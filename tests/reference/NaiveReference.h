//===- NaiveReference.h - Naive reference of every attn op -----*- C++ -*-===//
//
// An independent, deliberately simple implementation of the DSL ops of
// docs/spec.md section 2 over row-major host buffers: plain loops, double
// accumulation, no MLIR. It is the oracle the compiled kernels are checked
// against, and is itself checked against the D2L PyTorch goldens in
// tests/data/goldens and the v2 ops' goldens in tests/data/goldens_v2.
//
// Shapes are explicit. Calling an op with inconsistent shapes is a bug in the
// caller and aborts with a message (report_fatal_error); only run-time data
// errors (embedding ids out of range) are returned as llvm::Error.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TESTS_REFERENCE_NAIVEREFERENCE_H
#define ATTNC_TESTS_REFERENCE_NAIVEREFERENCE_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace attnc::ref {

/// A dense row-major f32 tensor.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> data;

  Tensor() = default;
  Tensor(std::vector<int64_t> shape, std::vector<float> data);
  /// Zero-filled.
  explicit Tensor(std::vector<int64_t> shape);
  size_t numElements() const { return data.size(); }
  int64_t rank() const { return shape.size(); }
  int64_t dim(int64_t i) const { return shape[i < 0 ? i + rank() : i]; }
};

/// A dense row-major i32 tensor (valid_lens, ids).
struct IntTensor {
  std::vector<int64_t> shape;
  std::vector<int32_t> data;

  IntTensor() = default;
  IntTensor(std::vector<int64_t> shape, std::vector<int32_t> data);
  size_t numElements() const { return data.size(); }
};

/// Product of \p shape (1 for rank 0).
size_t shapeNumElements(const std::vector<int64_t> &shape);

/// The masked-out score value of D2L's masked_softmax.
constexpr float kMaskValue = -1e6f;

// Primitive ops.

/// linear(x[..., I], w[O, I], b[O]) = x @ w^T + b; \p b may be null.
Tensor linear(const Tensor &x, const Tensor &w, const Tensor *b = nullptr);
/// matmul(a[N, M, K], b[N, K, P]) (or b[N, P, K] with \p transposeB).
Tensor matmul(const Tensor &a, const Tensor &b, bool transposeB = false);
Tensor scale(const Tensor &x, float s);
/// The NumPy broadcast of two shapes: aligned on their trailing axes, a
/// size-1 or missing axis stretches; any other mismatch aborts with a
/// message naming both shapes.
std::vector<int64_t> broadcastShape(const std::vector<int64_t> &a,
                                    const std::vector<int64_t> &b);
/// \p x materialized at \p shape, which it must broadcast to.
Tensor broadcastTo(const Tensor &x, const std::vector<int64_t> &shape);
/// a + b, a * b, a - b elementwise with NumPy broadcasting (docs/spec.md v2;
/// equal shapes are the v1 elementwise ops), each result rounded once to f32.
Tensor add(const Tensor &a, const Tensor &b);
Tensor mul(const Tensor &a, const Tensor &b);
Tensor sub(const Tensor &a, const Tensor &b);
/// torch.relu: max(x, 0), NaN for NaN.
Tensor relu(const Tensor &x);
/// torch's F.silu, torch.tanh, torch.sigmoid in double, rounded to f32:
/// x / (1 + exp(-x)), tanh(x), 1 / (1 + exp(-x)) (NaN only for NaN and
/// silu(-inf), as in torch: exp overflowing to infinity gives -0 and 0).
Tensor silu(const Tensor &x);
Tensor tanh(const Tensor &x);
Tensor sigmoid(const Tensor &x);
/// torch.nn.functional.gelu in double, rounded to f32:
/// x / 2 * (1 + erf(x / sqrt(2))); with \p tanhForm, approximate='tanh':
/// x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))).
Tensor gelu(const Tensor &x, bool tanhForm = false);
/// [B, T, H*d] -> [B*H, T, d] (D2L transpose_qkv).
Tensor splitHeads(const Tensor &x, int64_t heads);
/// [B*H, T, d] -> [B, T, H*d] (D2L transpose_output).
Tensor mergeHeads(const Tensor &x, int64_t heads);
/// Softmax over the last axis, max-subtracted.
Tensor softmax(const Tensor &x);
/// D2L masked_softmax: x[N, Tq, Tk], validLens [N] or [N, Tq] (null: plain
/// softmax). Positions j >= valid_len are replaced by -1e6.
Tensor maskedSoftmax(const Tensor &x, const IntTensor *validLens);
/// As maskedSoftmax, and with \p causal positions j > i are replaced too.
Tensor maskedSoftmax(const Tensor &x, const IntTensor *validLens, bool causal);
/// As maskedSoftmax with every mask: with \p window W > 0 (sliding-window
/// causal attention) key j is visible from query i iff i - W < j <= i (the
/// window implies the causal mask), intersected with j < valid_len; the
/// scores of invisible keys are replaced by -1e6, so a row with none visible
/// is uniform. \p window 0 is no window.
Tensor maskedSoftmax(const Tensor &x, const IntTensor *validLens, bool causal,
                     int64_t window);

// Composite ops.

/// D2L DotProductAttention: masked_softmax(q k^T / sqrt(d), vl) @ v
/// (\p window as in the four-argument maskedSoftmax).
Tensor attention(const Tensor &q, const Tensor &k, const Tensor &v,
                 const IntTensor *validLens = nullptr, bool causal = false,
                 int64_t window = 0);
/// Its attention_weights, masked_softmax(q k^T / sqrt(d), vl) (with the
/// causal mask too): [N, Tq, Tk], what return_weights=true returns.
Tensor attentionWeights(const Tensor &q, const Tensor &k,
                        const IntTensor *validLens = nullptr,
                        bool causal = false, int64_t window = 0);
/// Rotary position embedding, Hugging Face Llama's convention, on x[N, T, d]
/// (one head per leading index; position = the row index t): element j <
/// d/2 is rotated with j + d/2 by the angle t * inv_freq[j], inv_freq[j] =
/// base^(-2j/d): y[j] = x[j] cos - x[j + d/2] sin, y[j + d/2] = x[j + d/2]
/// cos + x[j] sin. The angles are computed in float32 like HF's table (as
/// positionalEncodingTable is), the rotation in double. d must be even.
Tensor rope(const Tensor &x, double base = 10000.0);
/// D2L MultiHeadAttention(bias=False). validLens is [B] or [B, Tq] and is
/// repeated per head (repeat_interleave along axis 0).
Tensor multiheadAttention(const Tensor &q, const Tensor &k, const Tensor &v,
                          int64_t heads, const Tensor &wQ, const Tensor &wK,
                          const Tensor &wV, const Tensor &wO,
                          const IntTensor *validLens = nullptr,
                          bool causal = false);
/// The attention_weights of multiheadAttention: [B*H, Tq, Tk], row b*H + h
/// for head h of batch entry b.
Tensor multiheadAttentionWeights(const Tensor &q, const Tensor &k,
                                 int64_t heads, const Tensor &wQ,
                                 const Tensor &wK,
                                 const IntTensor *validLens = nullptr,
                                 bool causal = false);

/// The optional keywords of multihead_attention (docs/spec.md section 2, v1 and
/// v2). Pointers are borrowed and may be null.
struct MhaOptions {
  /// Projection biases: bQ, bO [Hd]; bK, bV as w_k's / w_v's rows ([Hd], or
  /// [G*d] with kvHeads). Any subset.
  const Tensor *bQ = nullptr, *bK = nullptr, *bV = nullptr, *bO = nullptr;
  /// kv_heads=G (grouped-query attention): w_k, w_v are [G*d, Dk], [G*d,
  /// Dv]; query head h uses kv head h / (H / G) (HF repeat_kv). 0: G = H.
  int64_t kvHeads = 0;
  /// rope=true: rope() with ropeBase on every head of the projected q and k
  /// (after their biases), before the scores.
  bool rope = false;
  double ropeBase = 10000.0;
  bool causal = false;
  /// window=W > 0: i - W < j <= i (implies the causal mask). 0: none.
  int64_t window = 0;
  /// [B] or [B, Tq], repeated per query head.
  const IntTensor *validLens = nullptr;
};

/// multihead_attention with every option: project (with the biases),
/// split into H query heads and G kv heads, rope on q and k, repeat kv heads
/// to H, attention with the masks, merge, output projection (with b_o).
/// With default options it is the v1 multiheadAttention.
Tensor multiheadAttention(const Tensor &q, const Tensor &k, const Tensor &v,
                          int64_t heads, const Tensor &wQ, const Tensor &wK,
                          const Tensor &wV, const Tensor &wO,
                          const MhaOptions &options);
/// Its attention weights (return_weights=true): [B*H, Tq, Tk], row b*H + h
/// for query head h of batch entry b (bV and bO are not used).
Tensor multiheadAttentionWeights(const Tensor &q, const Tensor &k,
                                 int64_t heads, const Tensor &wQ,
                                 const Tensor &wK, const MhaOptions &options);
/// D2L PositionalEncoding (eval): x[B, T, D] + P[:T], P computed in float32
/// like torch. Requires D even and T <= maxLen.
Tensor positionalEncoding(const Tensor &x, int64_t maxLen = 1000);
/// The float32 table P[maxLen, D] of positionalEncoding.
Tensor positionalEncodingTable(int64_t maxLen, int64_t d);
/// torch nn.LayerNorm over the last axis (biased variance).
Tensor layerNorm(const Tensor &x, const Tensor &gamma, const Tensor &beta,
                 double eps = 1e-5);
/// Llama's RMSNorm over the last axis: x * rsqrt(mean(x^2) + eps) * gamma,
/// in double.
Tensor rmsNorm(const Tensor &x, const Tensor &gamma, double eps = 1e-6);
/// D2L AddNorm: layer_norm(y + x).
Tensor addNorm(const Tensor &x, const Tensor &y, const Tensor &gamma,
               const Tensor &beta, double eps = 1e-5);
/// D2L PositionWiseFFN: linear(relu(linear(x, w1, b1)), w2, b2).
Tensor ffn(const Tensor &x, const Tensor &w1, const Tensor &b1,
           const Tensor &w2, const Tensor &b2);
/// ffn with gelu in place of relu (BERT's intermediate and output layers;
/// with \p tanhForm GPT-2's MLP): linear(gelu(linear(x, w1, b1)), w2, b2).
/// \p b2 may be null.
Tensor geluFfn(const Tensor &x, const Tensor &w1, const Tensor &b1,
               const Tensor &w2, const Tensor *b2, bool tanhForm = false);
/// Row lookup table[ids]; an id outside [0, V) is an error naming the id
/// and its index.
llvm::Expected<Tensor> embedding(const IntTensor &ids, const Tensor &table);
/// Inference dropout: the identity (p must be in [0, 1)).
Tensor dropout(const Tensor &x, double p);

/// D2L TransformerEncoderBlock (eval, no attention bias):
/// Y = add_norm(X, mha(X, X, X)), Z = add_norm(Y, ffn(Y)).
struct EncoderBlockParams {
  Tensor wQ, wK, wV, wO, ln1Gamma, ln1Beta, ffnW1, ffnB1, ffnW2, ffnB2,
      ln2Gamma, ln2Beta;
};
Tensor encoderBlock(const Tensor &x, const IntTensor *validLens, int64_t heads,
                    const EncoderBlockParams &p, double eps = 1e-5);

/// The deterministic weights of tests/data/README.md ("Generated params"):
/// w[i] = float32(offset + (fmix32(i + salt * 0x9E3779B9) / 2^32 - 0.5) *
/// scale).
Tensor formulaTensor(std::vector<int64_t> shape, uint32_t salt, double scale,
                     double offset);

/// Max |a - b| over all elements (shapes must match).
double maxAbsDiff(const Tensor &a, const Tensor &b);

} // namespace attnc::ref

#endif // ATTNC_TESTS_REFERENCE_NAIVEREFERENCE_H
