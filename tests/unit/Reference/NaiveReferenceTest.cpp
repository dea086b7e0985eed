//===- NaiveReferenceTest.cpp - The naive reference vs D2L goldens --------===//
//
// Hand-computed tiny cases for each op, then the reference against the
// PyTorch goldens of tests/data/goldens (made by tests/data/make_goldens.py).
//
//===----------------------------------------------------------------------===//

#include "NaiveReference.h"
#include "attnc/Runtime/Npy.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <cmath>
#include <set>
#include <sstream>

using namespace attnc;
using namespace attnc::ref;

#ifndef ATTNC_TEST_DATA_DIR
#error "ATTNC_TEST_DATA_DIR must point at tests/data"
#endif

namespace {

void expectNear(const std::vector<float> &actual,
                const std::vector<float> &expected, double tol = 1e-6) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], tol) << "at " << i;
}

//===----------------------------------------------------------------------===//
// Hand-computed cases
//===----------------------------------------------------------------------===//

TEST(NaiveReference, SoftmaxHandComputed) {
  Tensor x({2, 2}, {0.0f, std::log(2.0f), 1000.0f, 1000.0f});
  Tensor y = softmax(x);
  expectNear(y.data, {1.0f / 3, 2.0f / 3, 0.5f, 0.5f});
  // Max-subtraction: no overflow for large logits.
  Tensor big = softmax(Tensor({3}, {1e4f, 0.0f, -1e4f}));
  expectNear(big.data, {1, 0, 0});
}

TEST(NaiveReference, MaskedSoftmaxLengths) {
  // One batch row per length: 0 (uniform, never NaN), 1, 2, 5 > Tk (no mask).
  Tensor x({4, 1, 3}, {1, 2, 3, 0, std::log(2.0f), 7, 0, std::log(2.0f), 7, 0,
                       std::log(2.0f), std::log(3.0f)});
  IntTensor vl({4}, {0, 1, 2, 5});
  Tensor y = maskedSoftmax(x, &vl);
  expectNear(y.data, {1.0f / 3, 1.0f / 3, 1.0f / 3, 1, 0, 0, 1.0f / 3, 2.0f / 3,
                      0, 1.0f / 6, 2.0f / 6, 3.0f / 6});
  // A negative length also gives a uniform row.
  IntTensor neg({4}, {-3, 3, 3, 3});
  Tensor yn = maskedSoftmax(x, &neg);
  expectNear(std::vector<float>(yn.data.begin(), yn.data.begin() + 3),
             {1.0f / 3, 1.0f / 3, 1.0f / 3});
  // No valid_lens: a plain softmax.
  expectNear(maskedSoftmax(x, nullptr).data, softmax(x).data);
}

TEST(NaiveReference, MaskedSoftmax2DAndCausal) {
  Tensor x({1, 2, 2}, {0, std::log(2.0f), 0, std::log(2.0f)});
  IntTensor vl2({1, 2}, {1, 2});
  expectNear(maskedSoftmax(x, &vl2).data, {1, 0, 1.0f / 3, 2.0f / 3});
  expectNear(maskedSoftmax(x, nullptr, /*causal=*/true).data,
             {1, 0, 1.0f / 3, 2.0f / 3});
  IntTensor vl0({1}, {0});
  // Causal and length 0: every entry is -1e6, the row is uniform.
  expectNear(maskedSoftmax(x, &vl0, true).data, {0.5f, 0.5f, 0.5f, 0.5f});
  // Masked entries are replaced by -1e6, not -inf: valid scores below -1e6
  // lose to a masked entry (D2L semantics).
  Tensor neg({1, 1, 3}, {-2e6f, -3e6f, 5});
  IntTensor vl({1}, {2});
  expectNear(maskedSoftmax(neg, &vl).data, {0, 0, 1});
}

TEST(NaiveReference, LinearMatmulElementwise) {
  Tensor x({1, 2}, {1, 2});
  Tensor w({3, 2}, {1, 0, 0, 1, 1, 1});
  Tensor b({3}, {0.5f, 0, -1});
  expectNear(linear(x, w, &b).data, {1.5f, 2, 2});
  expectNear(linear(x, w).data, {1, 2, 3});
  EXPECT_EQ(linear(Tensor({2, 1, 2}, {1, 2, 3, 4}), w).shape,
            (std::vector<int64_t>{2, 1, 3}));

  Tensor a({1, 2, 2}, {1, 2, 3, 4});
  Tensor m({1, 2, 2}, {5, 6, 7, 8});
  expectNear(matmul(a, m).data, {19, 22, 43, 50});
  expectNear(matmul(a, m, /*transposeB=*/true).data, {17, 23, 39, 53});

  expectNear(scale(a, 0.5f).data, {0.5f, 1, 1.5f, 2});
  expectNear(add(a, m).data, {6, 8, 10, 12});
  expectNear(relu(Tensor({3}, {-1, 0, 2})).data, {0, 0, 2});
  // gelu(1) = Phi(1) = 0.8413447, gelu(-1) = -(1 - Phi(1)); the tanh form
  // is 0.5 (1 + tanh(0.7978846 * 1.044715)) = 0.8411920 at 1. Far out,
  // gelu(x) is x or 0.
  Tensor g({6}, {-1, 0, 1, 3, 10, -10});
  expectNear(gelu(g).data, {-0.1586553f, 0, 0.8413447f, 2.9959503f, 10, 0});
  expectNear(gelu(g, /*tanhForm=*/true).data,
             {-0.1588080f, 0, 0.8411920f, 2.9963626f, 10, 0});
  expectNear(dropout(a, 0.5).data, a.data);
}

TEST(NaiveReference, SplitMergeHeads) {
  // [B=1, T=2, H*d=4] with H=2: head h of token t is x[t, 2h:2h+2].
  Tensor x({1, 2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor s = splitHeads(x, 2);
  EXPECT_EQ(s.shape, (std::vector<int64_t>{2, 2, 2}));
  expectNear(s.data, {0, 1, 4, 5, 2, 3, 6, 7});
  Tensor m = mergeHeads(s, 2);
  EXPECT_EQ(m.shape, x.shape);
  EXPECT_EQ(m.data, x.data);
}

TEST(NaiveReference, AttentionHandComputed) {
  // q = 0: every score is 0, so the output averages the valid value rows.
  Tensor q({2, 1, 2});
  Tensor k({2, 3, 2}, std::vector<float>(12, 1.0f));
  Tensor v({2, 3, 1}, {1, 2, 6, 1, 2, 6});
  IntTensor vl({2}, {2, 0});
  expectNear(attention(q, k, v, &vl).data, {1.5f, 3});
  // Scaled by 1/sqrt(d): d = 4, q.k = 2 ln 2 * 2 -> score ln 2 * 2 / 2.
  Tensor q1({1, 1, 4}, {std::log(2.0f), std::log(2.0f), 0, 0});
  Tensor k1({1, 2, 4}, {0, 0, 0, 0, 1, 1, 0, 0});
  Tensor v1({1, 2, 1}, {0, 3});
  expectNear(attention(q1, k1, v1).data, {2}); // softmax [0, ln 2] . [0, 3]
  // Causal self-attention: query 0 sees key 0 only.
  Tensor qc({1, 2, 1}, {0, 0});
  Tensor vc({1, 2, 1}, {4, 8});
  expectNear(attention(qc, qc, vc, nullptr, true).data, {4, 6});
}

TEST(NaiveReference, AttentionWeightsHandComputed) {
  // q = 0: the weights are uniform over each row's valid keys; length 0
  // gives a uniform row over every key.
  Tensor q({2, 1, 2});
  Tensor k({2, 3, 2}, std::vector<float>(12, 1.0f));
  IntTensor vl({2}, {2, 0});
  Tensor w = attentionWeights(q, k, &vl);
  EXPECT_EQ(w.shape, (std::vector<int64_t>{2, 1, 3}));
  expectNear(w.data, {0.5f, 0.5f, 0, 1.0f / 3, 1.0f / 3, 1.0f / 3});
  // Causal: query i sees keys 0..i.
  Tensor qc({1, 2, 1});
  expectNear(attentionWeights(qc, qc, nullptr, true).data, {1, 0, 0.5f, 0.5f});
  // attention is the weights times v.
  Tensor v({2, 3, 1}, {1, 2, 6, 1, 2, 6});
  expectNear(attention(q, k, v, &vl).data, matmul(w, v).data);
}

TEST(NaiveReference, MultiheadAttentionWeightsAreHeadMajor) {
  // Identity projections, 2 heads of size 1, B = 2: row b*2 + h holds head
  // h of entry b, with entry b's length.
  Tensor eye({2, 2}, {1, 0, 0, 1});
  Tensor x({2, 2, 2}, {0, 0, 0, 0, 0, 0, 0, 0});
  IntTensor vl({2}, {1, 2});
  Tensor w = multiheadAttentionWeights(x, x, 2, eye, eye, &vl);
  EXPECT_EQ(w.shape, (std::vector<int64_t>{4, 2, 2}));
  expectNear(w.data, {1, 0, 1, 0, 1, 0, 1, 0, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f,
                      0.5f, 0.5f, 0.5f});
}

TEST(NaiveReference, MultiheadAttentionHeadsAreIndependent) {
  // Identity projections, 2 heads of size 1: head h only sees feature h.
  Tensor eye({2, 2}, {1, 0, 0, 1});
  Tensor x({1, 2, 2}, {0, 0, 0, 0});
  Tensor v({1, 2, 2}, {1, 10, 3, 30});
  IntTensor vl({1, 2}, {1, 2});
  Tensor y = multiheadAttention(x, x, v, 2, eye, eye, eye, eye, &vl);
  expectNear(y.data, {1, 10, 2, 20});
}

TEST(NaiveReference, LayerNormAddNormFfn) {
  Tensor x({1, 3}, {1, 2, 3});
  Tensor g({3}, {1, 1, 1}), b({3}, {0, 0, 0});
  float s = float(1.0 / std::sqrt(2.0 / 3.0 + 1e-5));
  expectNear(layerNorm(x, g, b).data, {-s, 0, s}, 1e-6);
  Tensor g2({3}, {2, 2, 2}), b2({3}, {1, 1, 1});
  expectNear(layerNorm(x, g2, b2).data, {1 - 2 * s, 1, 1 + 2 * s}, 1e-6);
  expectNear(addNorm(Tensor({1, 3}, {0, 0, 0}), x, g, b).data, {-s, 0, s},
             1e-6);
  // ffn: relu between the layers.
  Tensor w1({2, 1}, {1, -1}), b1({2}, {0, 0});
  Tensor w2({1, 2}, {1, 1}), c2({1}, {0.5f});
  expectNear(ffn(Tensor({2, 1}, {3, -2}), w1, b1, w2, c2).data, {3.5f, 2.5f});
}

TEST(NaiveReference, PositionalEncodingTable) {
  Tensor p = positionalEncodingTable(3, 4);
  expectNear(std::vector<float>(p.data.begin(), p.data.begin() + 4),
             {0, 1, 0, 1});
  expectNear(
      std::vector<float>(p.data.begin() + 4, p.data.begin() + 8),
      {std::sin(1.0f), std::cos(1.0f), std::sin(0.01f), std::cos(0.01f)});
  Tensor x({2, 3, 4});
  Tensor y = positionalEncoding(x, 3);
  expectNear(std::vector<float>(y.data.begin() + 12, y.data.end()), p.data);
}

TEST(NaiveReference, Embedding) {
  Tensor table({3, 2}, {0, 1, 10, 11, 20, 21});
  auto y = embedding(IntTensor({2, 2}, {2, 0, 1, 1}), table);
  ASSERT_TRUE(bool(y));
  EXPECT_EQ(y->shape, (std::vector<int64_t>{2, 2, 2}));
  expectNear(y->data, {20, 21, 0, 1, 10, 11, 10, 11});
  for (int32_t bad : {3, -1}) {
    auto e = embedding(IntTensor({2}, {0, bad}), table);
    ASSERT_FALSE(bool(e));
    std::string msg = llvm::toString(e.takeError());
    EXPECT_NE(msg.find("id " + std::to_string(bad) + " at flat index 1"),
              std::string::npos)
        << msg;
  }
}

TEST(NaiveReference, FormulaTensorMatchesPython) {
  // Values printed by tests/data/make_goldens.py's formula_values().
  Tensor w = formulaTensor({5}, 1, 0.07216878364870323, 0.0);
  EXPECT_EQ(w.data,
            (std::vector<float>{0.005297014024108648f, 0.006379270926117897f,
                                0.014732083305716515f, 0.030871128663420677f,
                                -0.011100354604423046f}));
  Tensor g = formulaTensor({3}, 11, 0.4, 1.0);
  EXPECT_EQ(g.data,
            (std::vector<float>{1.0272963047027588f, 0.9927818775177002f,
                                0.8280229568481445f}));
}

//===----------------------------------------------------------------------===//
// Hand-computed cases of the v2 ops
//===----------------------------------------------------------------------===//

TEST(NaiveReference, SiluTanhSigmoid) {
  Tensor x({6}, {-1, 0, 1, 2, -5, -0.0f});
  // silu(x) = x sigmoid(x); sigmoid(1) = 0.7310586, sigmoid(2) = 0.8807971.
  expectNear(silu(x).data,
             {-0.2689414f, 0, 0.7310586f, 1.7615942f, -0.0334643f, 0});
  expectNear(sigmoid(x).data,
             {0.2689414f, 0.5f, 0.7310586f, 0.8807971f, 0.0066929f, 0.5f});
  expectNear(ref::tanh(x).data,
             {-0.7615942f, 0, 0.7615942f, 0.9640276f, -0.9999092f, 0});
  // Far out: exp(-x) overflows for x = -1e4 and must not give NaN.
  Tensor big({4}, {1e4f, -1e4f, 100, -100});
  Tensor s = silu(big), g = sigmoid(big), t = ref::tanh(big);
  for (size_t i = 0; i < 4; ++i)
    ASSERT_FALSE(std::isnan(s.data[i]) || std::isnan(g.data[i]) ||
                 std::isnan(t.data[i]))
        << i;
  expectNear(s.data, {1e4f, 0, 100, 0});
  expectNear(g.data, {1, 0, 1, 0});
  expectNear(t.data, {1, -1, 1, -1});
}

TEST(NaiveReference, BroadcastShapes) {
  using S = std::vector<int64_t>;
  EXPECT_EQ(broadcastShape({1, 3, 2}, {2, 1, 2}), (S{2, 3, 2}));
  EXPECT_EQ(broadcastShape({2}, {3, 2}), (S{3, 2}));
  EXPECT_EQ(broadcastShape({4, 1, 5}, {3, 1}), (S{4, 3, 5}));
  EXPECT_EQ(broadcastShape({}, {2, 2}), (S{2, 2}));
  EXPECT_EQ(broadcastShape({1}, {1}), (S{1}));
  // [1, 2] stretched along axis 0; [2, 1] along axis 1.
  Tensor row({1, 2}, {1, 2}), col({2, 1}, {10, 20});
  EXPECT_EQ(broadcastTo(row, {3, 2}).data,
            (std::vector<float>{1, 2, 1, 2, 1, 2}));
  EXPECT_EQ(broadcastTo(col, {2, 3}).data,
            (std::vector<float>{10, 10, 10, 20, 20, 20}));
  EXPECT_EQ(broadcastTo(Tensor({}, {7}), {2}).data, (std::vector<float>{7, 7}));
}

TEST(NaiveReference, BroadcastAddMulSub) {
  // [B=2, T=1, D=2] - [B=2, T=2, D=1]: both operands stretch.
  Tensor u({2, 1, 2}, {1, 2, 3, 4});
  Tensor v({2, 2, 1}, {10, 20, 30, 40});
  Tensor d = sub(u, v);
  EXPECT_EQ(d.shape, (std::vector<int64_t>{2, 2, 2}));
  expectNear(d.data, {-9, -8, -19, -18, -27, -26, -37, -36});
  // [D] * [B, T, D] and [1, T, D] + [B, T, D].
  Tensor x({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  expectNear(mul(Tensor({2}, {10, -1}), x).data,
             {10, -2, 30, -4, 50, -6, 70, -8});
  expectNear(add(Tensor({1, 2, 2}, {100, 200, 300, 400}), x).data,
             {101, 202, 303, 404, 105, 206, 307, 408});
  // A scalar-like [1], on either side.
  expectNear(sub(Tensor({1}, {1}), x).data, {0, -1, -2, -3, -4, -5, -6, -7});
  expectNear(mul(x, Tensor({1}, {0.5f})).data,
             {0.5f, 1, 1.5f, 2, 2.5f, 3, 3.5f, 4});
  // Equal shapes are the v1 elementwise ops.
  expectNear(add(x, x).data, scale(x, 2).data);
  expectNear(sub(x, x).data, std::vector<float>(8, 0.0f));
  expectNear(mul(x, x).data, {1, 4, 9, 16, 25, 36, 49, 64});
}

TEST(NaiveReferenceDeathTest, BroadcastMismatchNamesBothShapes) {
  EXPECT_DEATH(add(Tensor({2, 3}), Tensor({4, 3})),
               "add: shapes \\[2, 3\\] and \\[4, 3\\] do not broadcast");
  EXPECT_DEATH(mul(Tensor({2, 3}), Tensor({2})), "mul: shapes");
  EXPECT_DEATH(sub(Tensor({3, 1}), Tensor({2, 4})), "sub: shapes");
}

TEST(NaiveReference, RmsNorm) {
  // mean(x^2) of [3, 4] is 12.5; with eps = 0, x / sqrt(12.5) * gamma.
  Tensor one({2}, {1, 1}), g({2}, {2, 1});
  Tensor row({1, 2}, {3, 4});
  expectNear(rmsNorm(row, one, 0.0).data, {0.8485281f, 1.1313708f});
  expectNear(rmsNorm(row, g, 0.0).data, {1.6970563f, 1.1313708f});
  // The default eps is 1e-6; a zero row stays zero (not NaN).
  Tensor x({2, 2}, {3, 4, 0, 0});
  double inv = 1.0 / std::sqrt(12.5 + 1e-6);
  expectNear(rmsNorm(x, one).data, {float(3 * inv), float(4 * inv), 0, 0});
  // eps dominates a tiny row: [1e-3, 1e-3] with eps 1e-5 -> 1e-3 /
  // sqrt(1.1e-5).
  Tensor tiny({1, 2}, {1e-3f, 1e-3f});
  float e = float(1e-3 / std::sqrt(1e-6 + 1e-5));
  expectNear(rmsNorm(tiny, one, 1e-5).data, {e, e});
}

TEST(NaiveReference, RopeRotatesPairsJAndJPlusHalf) {
  // d = 4: pairs (0, 2) with inv_freq 1 and (1, 3) with 10000^(-1/2) = 0.01.
  Tensor x({1, 2, 4}, {1, 2, 3, 4, 1, 0, 0, 0});
  Tensor y = rope(x);
  // Position 0: the identity.
  expectNear(std::vector<float>(y.data.begin(), y.data.begin() + 4),
             {1, 2, 3, 4});
  // Position 1, x = e0: y[0] = cos 1, y[2] = sin 1.
  expectNear(std::vector<float>(y.data.begin() + 4, y.data.end()),
             {std::cos(1.0f), 0, std::sin(1.0f), 0});
  Tensor e1 = rope(Tensor({1, 2, 4}, {0, 0, 0, 0, 0, 1, 0, 0}));
  expectNear(std::vector<float>(e1.data.begin() + 4, e1.data.end()),
             {0, 0.99995f, 0, 0.00999983f});
  // x[j + d/2] rotates the other way: y[j] = -x[j + d/2] sin.
  Tensor e2 = rope(Tensor({1, 2, 4}, {0, 0, 0, 0, 0, 0, 1, 0}));
  expectNear(std::vector<float>(e2.data.begin() + 4, e2.data.end()),
             {-std::sin(1.0f), 0, std::cos(1.0f), 0});
  // rope_base changes the second pair only: 100^(-1/2) = 0.1.
  Tensor b = rope(Tensor({1, 2, 4}, {0, 0, 0, 0, 0, 1, 0, 0}), 100.0);
  expectNear(std::vector<float>(b.data.begin() + 4, b.data.end()),
             {0, std::cos(0.1f), 0, std::sin(0.1f)});
  // A rotation: scores of one vector at positions i, j depend on i - j.
  Tensor same({1, 3, 4},
              {0.3f, -1, 2, 0.5f, 0.3f, -1, 2, 0.5f, 0.3f, -1, 2, 0.5f});
  Tensor r = rope(same);
  auto dot = [&](int i, int j) {
    double acc = 0;
    for (int e = 0; e < 4; ++e)
      acc += double(r.data[i * 4 + e]) * r.data[j * 4 + e];
    return acc;
  };
  EXPECT_NEAR(dot(1, 0), dot(2, 1), 1e-5);
  EXPECT_NEAR(dot(0, 0), dot(2, 2), 1e-5);
}

TEST(NaiveReference, MaskedSoftmaxWindow) {
  // Zero scores: each row is uniform over its visible keys.
  Tensor x({1, 4, 4});
  float h = 0.5f, q = 0.25f;
  // window 2: query i sees i - 1 and i.
  expectNear(maskedSoftmax(x, nullptr, true, 2).data,
             {1, 0, 0, 0, h, h, 0, 0, 0, h, h, 0, 0, 0, h, h});
  // window 1: the diagonal.
  expectNear(maskedSoftmax(x, nullptr, true, 1).data,
             {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
  // window >= T is plain causal.
  expectNear(maskedSoftmax(x, nullptr, true, 9).data,
             maskedSoftmax(x, nullptr, true).data);
  // Intersected with valid_len 2: query 3 sees {2, 3} & {0, 1} = nothing and
  // is uniform over all keys.
  IntTensor vl({1}, {2});
  expectNear(maskedSoftmax(x, &vl, true, 2).data,
             {1, 0, 0, 0, h, h, 0, 0, 0, 1, 0, 0, q, q, q, q});
  // 2-D valid_lens.
  IntTensor vl2({1, 4}, {1, 0, 4, 3});
  expectNear(maskedSoftmax(x, &vl2, true, 2).data,
             {1, 0, 0, 0, q, q, q, q, 0, h, h, 0, 0, 0, 1, 0});
  // attention passes the window through.
  Tensor v({1, 4, 1}, {1, 2, 4, 8});
  expectNear(attention(x, x, v, &vl, true, 2).data, {1, 1.5f, 2, 3.75f});
}

TEST(NaiveReference, MhaOptionsDefaultIsV1) {
  Tensor x = formulaTensor({2, 3, 4}, 21, 2.0, 0.0);
  Tensor w[4] = {
      formulaTensor({4, 4}, 22, 1.0, 0.0), formulaTensor({4, 4}, 23, 1.0, 0.0),
      formulaTensor({4, 4}, 24, 1.0, 0.0), formulaTensor({4, 4}, 25, 1.0, 0.0)};
  IntTensor vl({2}, {2, 0});
  MhaOptions o;
  o.validLens = &vl;
  o.causal = true;
  EXPECT_EQ(
      multiheadAttention(x, x, x, 2, w[0], w[1], w[2], w[3], o).data,
      multiheadAttention(x, x, x, 2, w[0], w[1], w[2], w[3], &vl, true).data);
  EXPECT_EQ(multiheadAttentionWeights(x, x, 2, w[0], w[1], o).data,
            multiheadAttentionWeights(x, x, 2, w[0], w[1], &vl, true).data);
}

TEST(NaiveReference, MhaBiases) {
  // One head of size 1: q = b_q = ln 4 (w_q = 0), k = x = [0, 1], so the
  // scores are [0, ln 4] and the weights [0.2, 0.8]; v = x + b_v, and
  // y = 2 * attention + b_o.
  Tensor x({1, 2, 1}, {0, 1});
  Tensor zero({1, 1}, {0}), one({1, 1}, {1}), two({1, 1}, {2});
  Tensor bQ({1}, {std::log(4.0f)}), bV({1}, {10}), bO({1}, {1});
  MhaOptions o;
  o.bQ = &bQ;
  o.bO = &bO;
  expectNear(multiheadAttention(x, x, x, 1, zero, one, one, two, o).data,
             {2.6f, 2.6f});
  expectNear(multiheadAttentionWeights(x, x, 1, zero, one, o).data,
             {0.2f, 0.8f, 0.2f, 0.8f});
  o.bV = &bV;
  expectNear(multiheadAttention(x, x, x, 1, zero, one, one, two, o).data,
             {22.6f, 22.6f});
  // Causal: query 0 sees key 0 only (v = 10).
  o.causal = true;
  expectNear(multiheadAttention(x, x, x, 1, zero, one, one, two, o).data,
             {21, 22.6f});
  // b_k adds a constant to every key: softmax-invariant for one head of
  // size 1 with q constant.
  Tensor bK({1}, {5});
  o.bK = &bK;
  expectNear(multiheadAttention(x, x, x, 1, zero, one, one, two, o).data,
             {21, 22.6f});
}

/// w_k/w_v of G kv heads expanded to H heads (head h gets kv head h / (H/G)):
/// grouped-query attention equals plain multi-head attention with these.
Tensor expandKvWeight(const Tensor &w, int64_t heads, int64_t kvHeads,
                      int64_t d) {
  int64_t in = w.dim(1);
  Tensor full({heads * d, in});
  for (int64_t h = 0; h < heads; ++h)
    std::copy_n(w.data.begin() + (h / (heads / kvHeads)) * d * in, d * in,
                full.data.begin() + h * d * in);
  return full;
}

TEST(NaiveReference, MhaGroupedQueryIsRepeatedKvHeads) {
  const int64_t h = 4, d = 2, hd = h * d;
  Tensor x = formulaTensor({2, 5, hd}, 31, 2.0, 0.0);
  Tensor wQ = formulaTensor({hd, hd}, 32, 1.0, 0.0);
  Tensor wO = formulaTensor({hd, hd}, 33, 1.0, 0.0);
  IntTensor vl({2, 5}, {1, 2, 3, 4, 5, 5, 0, 2, 9, 3});
  for (int64_t g : {1, 2, 4}) {
    Tensor wK = formulaTensor({g * d, hd}, 34, 1.0, 0.0);
    Tensor wV = formulaTensor({g * d, hd}, 35, 1.0, 0.0);
    Tensor bK = formulaTensor({g * d}, 36, 1.0, 0.0);
    MhaOptions o;
    o.kvHeads = g;
    o.validLens = &vl;
    o.bK = &bK;
    Tensor fullK = expandKvWeight(wK, h, g, d);
    Tensor fullV = expandKvWeight(wV, h, g, d);
    Tensor fullBK = expandKvWeight(Tensor({g * d, 1}, bK.data), h, g, d);
    fullBK.shape = {h * d};
    MhaOptions full;
    full.validLens = &vl;
    full.bK = &fullBK;
    EXPECT_LE(
        maxAbsDiff(multiheadAttention(x, x, x, h, wQ, wK, wV, wO, o),
                   multiheadAttention(x, x, x, h, wQ, fullK, fullV, wO, full)),
        1e-6)
        << "kv_heads=" << g;
    Tensor a = multiheadAttentionWeights(x, x, h, wQ, wK, o);
    EXPECT_EQ(a.shape, (std::vector<int64_t>{2 * h, 5, 5}));
    EXPECT_LE(
        maxAbsDiff(a, multiheadAttentionWeights(x, x, h, wQ, fullK, full)),
        1e-6);
  }
  // Heads sharing a kv head differ only through their queries: with
  // w_q's head blocks equal, heads 0 and 1 (kv head 0) have equal weights.
  Tensor wQSame = expandKvWeight(formulaTensor({d, hd}, 37, 1.0, 0.0), h, 1, d);
  MhaOptions o;
  o.kvHeads = 2;
  Tensor a = multiheadAttentionWeights(
      x, x, h, wQSame, formulaTensor({2 * d, hd}, 38, 1.0, 0.0), o);
  size_t blk = 5 * 5;
  std::vector<float> h0(a.data.begin(), a.data.begin() + blk),
      h1(a.data.begin() + blk, a.data.begin() + 2 * blk),
      h2(a.data.begin() + 2 * blk, a.data.begin() + 3 * blk);
  EXPECT_EQ(h0, h1);
  EXPECT_NE(h0, h2);
}

TEST(NaiveReference, MhaRopeIsRopeOnProjectedHeads) {
  // Identity projections and 2 heads of size 2: the weights are those of
  // attention on rope(split_heads(x)).
  const int64_t h = 2, d = 2;
  Tensor x = formulaTensor({1, 4, h * d}, 41, 2.0, 0.0);
  Tensor eye({4, 4}, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
  MhaOptions o;
  o.rope = true;
  o.ropeBase = 100.0;
  Tensor heads = rope(splitHeads(x, h), 100.0);
  EXPECT_LE(maxAbsDiff(multiheadAttentionWeights(x, x, h, eye, eye, o),
                       attentionWeights(heads, heads)),
            1e-6);
  // v is not rotated.
  Tensor y = multiheadAttention(x, x, x, h, eye, eye, eye, eye, o);
  EXPECT_LE(maxAbsDiff(y, mergeHeads(matmul(attentionWeights(heads, heads),
                                            splitHeads(x, h)),
                                     h)),
            1e-6);
}

//===----------------------------------------------------------------------===//
// Goldens made by the D2L PyTorch code
//===----------------------------------------------------------------------===//

constexpr double kTol = 1e-4;
constexpr double kTolLarge = 2e-4; // D >= 768

class Golden {
public:
  /// The case tests/data/<dir>/<name>.
  explicit Golden(llvm::StringRef name, llvm::StringRef dir = "goldens")
      : name(name.str()), dir(dir.str()) {}

  std::string path(llvm::StringRef file) const {
    llvm::SmallString<256> p(ATTNC_TEST_DATA_DIR);
    llvm::sys::path::append(p, dir, name, file);
    return std::string(p);
  }

  /// The max abs error allowed: kTol, or the case's tolerance.txt when it is
  /// tighter.
  double tolerance() const {
    auto buffer = llvm::MemoryBuffer::getFile(path("tolerance.txt"));
    if (!buffer)
      return kTol;
    double value = 0;
    std::istringstream in((*buffer)->getBuffer().str());
    if (!(in >> value) || !(value > 0)) {
      ADD_FAILURE() << "bad " << path("tolerance.txt");
      return kTol;
    }
    return std::min(kTol, value);
  }

  Tensor f32(llvm::StringRef arg) const {
    auto a = readNpy(path(arg.str() + ".npy"));
    if (!a) {
      ADD_FAILURE() << llvm::toString(a.takeError());
      return {};
    }
    EXPECT_EQ(a->dtype, NpyDtype::F32) << arg.str();
    if (a->dtype != NpyDtype::F32)
      return {};
    return Tensor(a->shape, a->toF32());
  }

  IntTensor i32(llvm::StringRef arg) const {
    auto a = readNpy(path(arg.str() + ".npy"));
    if (!a) {
      ADD_FAILURE() << llvm::toString(a.takeError());
      return {};
    }
    auto n = narrowToI32(*a, arg);
    if (!n) {
      ADD_FAILURE() << llvm::toString(n.takeError());
      return {};
    }
    return IntTensor(n->shape, n->toI32());
  }

  std::string name;
  std::string dir;
};

Tensor goldenMha(const Golden &g, const Tensor &q, const Tensor &k,
                 const Tensor &v, int64_t heads, const IntTensor *vl,
                 bool causal = false) {
  return multiheadAttention(q, k, v, heads, g.f32("W_q"), g.f32("W_k"),
                            g.f32("W_v"), g.f32("W_o"), vl, causal);
}

void checkBookCase(const char *name) {
  Golden g(name);
  Tensor p = positionalEncoding(g.f32("X"), 1000);
  IntTensor vl = g.i32("valid_lens");
  Tensor y = goldenMha(g, p, p, p, 5, &vl);
  Tensor expected = g.f32("expected_Y");
  EXPECT_LE(maxAbsDiff(y, expected), kTol);
  // The masks matter: without valid_lens the result is clearly different.
  EXPECT_GT(maxAbsDiff(goldenMha(g, p, p, p, 5, nullptr), expected), 1e-2);
}

TEST(NaiveReferenceGolden, MhaBook1D) { checkBookCase("mha_book_1d"); }
TEST(NaiveReferenceGolden, MhaBook2D) {
  checkBookCase("mha_book_2d");
  EXPECT_EQ(Golden("mha_book_2d").i32("valid_lens").shape,
            (std::vector<int64_t>{2, 4}));
}

TEST(NaiveReferenceGolden, MhaZeroAndLong) {
  Golden g("mha_zero_and_long");
  Tensor x = g.f32("X");
  IntTensor vl = g.i32("valid_lens");
  ASSERT_EQ(vl.data, (std::vector<int32_t>{0, 9, 2}));
  Tensor expected = g.f32("expected_Y");
  Tensor y = goldenMha(g, x, x, x, 4, &vl);
  EXPECT_LE(maxAbsDiff(y, expected), kTol);
  for (float f : expected.data)
    ASSERT_FALSE(std::isnan(f));
  EXPECT_GT(maxAbsDiff(goldenMha(g, x, x, x, 4, nullptr), expected), 1e-2);
}

TEST(NaiveReferenceGolden, MhaCausal) {
  Golden g("mha_causal");
  Tensor x = g.f32("X");
  IntTensor vl = g.i32("valid_lens");
  Tensor expected = g.f32("expected_Y");
  EXPECT_LE(maxAbsDiff(goldenMha(g, x, x, x, 2, &vl, true), expected), kTol);
  // The 2-D valid_lens min(vl[b], i + 1) PyTorch ran with gives the same.
  std::vector<int32_t> decLens;
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 6; ++i)
      decLens.push_back(std::min(vl.data[b], i + 1));
  IntTensor dec({2, 6}, decLens);
  EXPECT_LE(maxAbsDiff(goldenMha(g, x, x, x, 2, &dec), expected), kTol);
  EXPECT_GT(maxAbsDiff(goldenMha(g, x, x, x, 2, &vl, false), expected), 1e-2);
}

TEST(NaiveReferenceGolden, MhaCross) {
  Golden g("mha_cross");
  IntTensor vl = g.i32("valid_lens");
  Tensor y = goldenMha(g, g.f32("Q"), g.f32("K"), g.f32("V"), 4, &vl);
  EXPECT_EQ(y.shape, (std::vector<int64_t>{2, 3, 16}));
  EXPECT_LE(maxAbsDiff(y, g.f32("expected_Y")), kTol);
}

TEST(NaiveReferenceGolden, MhaOddPrime) {
  Golden g("mha_odd_prime");
  Tensor x = g.f32("X");
  IntTensor vl = g.i32("valid_lens");
  EXPECT_LE(maxAbsDiff(goldenMha(g, x, x, x, 4, &vl), g.f32("expected_Y")),
            kTol);
}

/// Cases whose block also returns the attention weights (return_weights):
/// expected_A is D2L's attention.attention_weights.
void checkMhaWeights(const char *name, bool positionalEncoding, int64_t heads,
                     bool causal) {
  Golden g(name);
  Tensor x = g.f32("X");
  if (positionalEncoding)
    x = ref::positionalEncoding(x, 1000);
  IntTensor vl = g.i32("valid_lens");
  EXPECT_LE(maxAbsDiff(goldenMha(g, x, x, x, heads, &vl, causal),
                       g.f32("expected_Y")),
            kTol);
  Tensor expected = g.f32("expected_A");
  Tensor w = multiheadAttentionWeights(x, x, heads, g.f32("W_q"), g.f32("W_k"),
                                       &vl, causal);
  EXPECT_EQ(w.shape, expected.shape);
  EXPECT_LE(maxAbsDiff(w, expected), kTol);
}

TEST(NaiveReferenceGolden, MhaBookWeights) {
  checkMhaWeights("mha_book_weights", true, 5, false);
  EXPECT_EQ(Golden("mha_book_weights").f32("expected_A").shape,
            (std::vector<int64_t>{10, 4, 4}));
}

TEST(NaiveReferenceGolden, MhaWeightsZeroLen) {
  checkMhaWeights("mha_weights_zero_len", false, 4, false);
  // Batch entry 0 has length 0: all of its heads' rows are uniform.
  Tensor a = Golden("mha_weights_zero_len").f32("expected_A");
  for (size_t i = 0; i < 4 * 5 * 5; ++i)
    EXPECT_NEAR(a.data[i], 0.2f, 1e-7) << i;
}

TEST(NaiveReferenceGolden, MhaWeightsCausal) {
  checkMhaWeights("mha_weights_causal", false, 2, true);
}

TEST(NaiveReferenceGolden, AttentionWeightsBook) {
  Golden g("attention_weights_book");
  Tensor q = g.f32("Q"), k = g.f32("K"), v = g.f32("V");
  IntTensor vl = g.i32("valid_lens");
  EXPECT_LE(maxAbsDiff(attention(q, k, v, &vl), g.f32("expected_Y")), kTol);
  EXPECT_LE(maxAbsDiff(attentionWeights(q, k, &vl), g.f32("expected_A")), kTol);
}

/// torch's f32 gelu against the formulas in double: within 1e-6 (the
/// case's tolerance.txt) on [-10, 10] and beyond.
TEST(NaiveReferenceGolden, GeluValues) {
  Golden g("gelu_values");
  Tensor x = g.f32("X");
  EXPECT_LE(maxAbsDiff(gelu(x), g.f32("expected_Y")), 1e-6);
  EXPECT_LE(maxAbsDiff(gelu(x, /*tanhForm=*/true), g.f32("expected_Z")), 1e-6);
  // The two forms differ by more than that: each golden pins its own.
  EXPECT_GT(maxAbsDiff(gelu(x), g.f32("expected_Z")), 1e-4);
}

TEST(NaiveReferenceGolden, FfnGelu) {
  for (bool tanhForm : {false, true}) {
    Golden g(tanhForm ? "ffn_gelu_tanh" : "ffn_gelu");
    Tensor b2 = g.f32("b2");
    Tensor y = geluFfn(g.f32("X"), g.f32("W1"), g.f32("b1"), g.f32("W2"), &b2,
                       tanhForm);
    EXPECT_LE(maxAbsDiff(y, g.f32("expected_Y")), kTol) << g.name;
  }
}

TEST(NaiveReferenceGolden, PositionalEncoding1000) {
  Golden g("positional_encoding_1000");
  Tensor y = positionalEncoding(g.f32("X"), 1000);
  EXPECT_LE(maxAbsDiff(y, g.f32("expected_Y")), kTol);
}

EncoderBlockParams loadEncoderParams(const Golden &g) {
  EncoderBlockParams p;
  p.wQ = g.f32("W_q");
  p.wK = g.f32("W_k");
  p.wV = g.f32("W_v");
  p.wO = g.f32("W_o");
  p.ln1Gamma = g.f32("ln1_gamma");
  p.ln1Beta = g.f32("ln1_beta");
  p.ffnW1 = g.f32("ffn_w1");
  p.ffnB1 = g.f32("ffn_b1");
  p.ffnW2 = g.f32("ffn_w2");
  p.ffnB2 = g.f32("ffn_b2");
  p.ln2Gamma = g.f32("ln2_gamma");
  p.ln2Beta = g.f32("ln2_beta");
  return p;
}

TEST(NaiveReferenceGolden, EncoderBlock) {
  Golden g("encoder_block");
  IntTensor vl = g.i32("valid_lens");
  Tensor z = encoderBlock(g.f32("X"), &vl, 8, loadEncoderParams(g));
  EXPECT_LE(maxAbsDiff(z, g.f32("expected_Z")), kTol);
}

TEST(NaiveReferenceGolden, BertBaseLayerFromFormulaParams) {
  Golden g("bert_base_layer");
  auto manifest = llvm::MemoryBuffer::getFile(g.path("formula_params.txt"));
  ASSERT_TRUE(bool(manifest));
  std::map<std::string, Tensor> params;
  std::istringstream in((*manifest)->getBuffer().str());
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#')
      continue;
    std::istringstream ls(line);
    std::string name;
    uint32_t salt;
    double scale, offset;
    ls >> name >> salt >> scale >> offset;
    std::vector<int64_t> shape;
    for (int64_t d; ls >> d;)
      shape.push_back(d);
    params[name] = formulaTensor(shape, salt, scale, offset);
  }
  ASSERT_EQ(params.size(), 12u);
  EncoderBlockParams p{
      params["W_q"],    params["W_k"],       params["W_v"],
      params["W_o"],    params["ln1_gamma"], params["ln1_beta"],
      params["ffn_w1"], params["ffn_b1"],    params["ffn_w2"],
      params["ffn_b2"], params["ln2_gamma"], params["ln2_beta"]};
  ASSERT_EQ(p.ffnW1.shape, (std::vector<int64_t>{3072, 768}));
  IntTensor vl = g.i32("valid_lens");
  Tensor z = encoderBlock(g.f32("X"), &vl, 12, p);
  EXPECT_LE(maxAbsDiff(z, g.f32("expected_Z")), kTolLarge);
}

//===----------------------------------------------------------------------===//
// Goldens of the v2 ops (Hugging Face formulas, D2L masks)
//===----------------------------------------------------------------------===//

/// The v2 cases, under tests/data/goldens like the others (each is also a
/// kernel test there).
Golden v2(llvm::StringRef name) { return Golden(name); }

/// Every v2 case has a test below.
TEST(NaiveReferenceGoldenV2, EveryCaseIsChecked) {
  for (llvm::StringRef name :
       {"silu_tanh_sigmoid_values", "broadcast_add_mul_sub", "rms_norm_eps",
        "mha_biases", "mha_biases_subset", "mha_gqa", "mha_mqa", "mha_rope",
        "mha_rope_base", "mha_window", "mha_window_weights", "bert_layer",
        "bert_embeddings", "gpt2_block", "llama_block"})
    EXPECT_TRUE(llvm::sys::fs::exists(v2(name).path((name + ".attn").str())))
        << name.str();
}

TEST(NaiveReferenceGoldenV2, SiluTanhSigmoidValues) {
  Golden g = v2("silu_tanh_sigmoid_values");
  double tol = g.tolerance();
  EXPECT_EQ(tol, 1e-6);
  Tensor x = g.f32("X");
  EXPECT_LE(maxAbsDiff(silu(x), g.f32("expected_Y")), tol);
  EXPECT_LE(maxAbsDiff(ref::tanh(x), g.f32("expected_Z")), tol);
  EXPECT_LE(maxAbsDiff(sigmoid(x), g.f32("expected_S")), tol);
}

TEST(NaiveReferenceGoldenV2, BroadcastAddMulSub) {
  Golden g = v2("broadcast_add_mul_sub");
  double tol = g.tolerance();
  Tensor x = g.f32("X"), x2 = g.f32("X2"), p = g.f32("P"), gv = g.f32("g"),
         u = g.f32("U"), v = g.f32("V"), s = g.f32("k");
  EXPECT_LE(maxAbsDiff(add(p, x), g.f32("expected_A")), tol);
  EXPECT_LE(maxAbsDiff(mul(gv, x), g.f32("expected_M")), tol);
  EXPECT_LE(maxAbsDiff(sub(u, v), g.f32("expected_S")), tol);
  EXPECT_LE(maxAbsDiff(sub(mul(x, s), add(gv, s)), g.f32("expected_C")), tol);
  EXPECT_LE(maxAbsDiff(sub(mul(x, x2), x2), g.f32("expected_F")), tol);
  // Operand order does not matter for add and mul.
  EXPECT_LE(maxAbsDiff(add(x, p), g.f32("expected_A")), tol);
  EXPECT_LE(maxAbsDiff(mul(x, gv), g.f32("expected_M")), tol);
}

TEST(NaiveReferenceGoldenV2, RmsNormEps) {
  Golden g = v2("rms_norm_eps");
  double tol = g.tolerance();
  Tensor x = g.f32("X"), gamma = g.f32("gamma");
  Tensor y = g.f32("expected_Y"), z = g.f32("expected_Z");
  EXPECT_LE(maxAbsDiff(rmsNorm(x, gamma), y), tol);
  EXPECT_LE(maxAbsDiff(rmsNorm(x, gamma, 1e-5), z), tol);
  // eps matters on the small rows: each golden pins its own.
  EXPECT_GT(maxAbsDiff(y, z), 1e-2);
}

/// The golden's multihead_attention arguments: X (or Q, K, V), the weights,
/// the biases present and valid_lens when the case has them.
struct MhaGolden {
  Tensor q, k, v, wQ, wK, wV, wO, bQ, bK, bV, bO;
  IntTensor validLens;
  MhaOptions options;

  MhaGolden(const Golden &g, bool cross,
            std::initializer_list<const char *> biases, bool hasValidLens) {
    if (cross) {
      q = g.f32("Q");
      k = g.f32("K");
      v = g.f32("V");
    } else {
      q = k = v = g.f32("X");
    }
    wQ = g.f32("W_q");
    wK = g.f32("W_k");
    wV = g.f32("W_v");
    wO = g.f32("W_o");
    for (llvm::StringRef b : biases) {
      Tensor t = g.f32(b);
      if (b == "b_q")
        bQ = t, options.bQ = &bQ;
      else if (b == "b_k")
        bK = t, options.bK = &bK;
      else if (b == "b_v")
        bV = t, options.bV = &bV;
      else if (b == "b_o")
        bO = t, options.bO = &bO;
    }
    if (hasValidLens) {
      validLens = g.i32("valid_lens");
      options.validLens = &validLens;
    }
  }
  MhaGolden(const MhaGolden &) = delete;

  Tensor run(int64_t heads, const MhaOptions &o) const {
    return multiheadAttention(q, k, v, heads, wQ, wK, wV, wO, o);
  }
  Tensor run(int64_t heads) const { return run(heads, options); }
  Tensor weights(int64_t heads) const {
    return multiheadAttentionWeights(q, k, heads, wQ, wK, options);
  }
};

TEST(NaiveReferenceGoldenV2, MhaBiases) {
  Golden g = v2("mha_biases");
  MhaGolden m(g, /*cross=*/true, {"b_q", "b_k", "b_v", "b_o"}, true);
  Tensor expected = g.f32("expected_Y");
  Tensor y = m.run(4);
  EXPECT_EQ(y.shape, (std::vector<int64_t>{2, 3, 16}));
  EXPECT_LE(maxAbsDiff(y, expected), g.tolerance());
  // b_q, b_v and b_o each matter. b_k cannot: it adds q . b_k to every
  // score of a query row, which the softmax ignores (in any transformer).
  for (const Tensor *MhaOptions::*b :
       {&MhaOptions::bQ, &MhaOptions::bV, &MhaOptions::bO}) {
    MhaOptions o = m.options;
    o.*b = nullptr;
    EXPECT_GT(maxAbsDiff(m.run(4, o), expected), 1e-3);
  }
  MhaOptions noBK = m.options;
  noBK.bK = nullptr;
  EXPECT_LE(maxAbsDiff(m.run(4, noBK), expected), g.tolerance());
}

TEST(NaiveReferenceGoldenV2, MhaBiasesSubset) {
  Golden g = v2("mha_biases_subset");
  MhaGolden m(g, false, {"b_q", "b_o"}, true);
  EXPECT_EQ(m.validLens.shape, (std::vector<int64_t>{2, 5}));
  Tensor expected = g.f32("expected_Y");
  EXPECT_LE(maxAbsDiff(m.run(3), expected), g.tolerance());
  MhaOptions o = m.options;
  o.bQ = nullptr;
  EXPECT_GT(maxAbsDiff(m.run(3, o), expected), 1e-3);
}

TEST(NaiveReferenceGoldenV2, MhaGqaAndMqa) {
  for (auto [name, kvHeads] : {std::pair("mha_gqa", 2), {"mha_mqa", 1}}) {
    Golden g = v2(name);
    MhaGolden m(g, false, {}, true);
    EXPECT_EQ(m.wK.shape, (std::vector<int64_t>{kvHeads * 8, 32})) << name;
    m.options.kvHeads = kvHeads;
    EXPECT_LE(maxAbsDiff(m.run(4), g.f32("expected_Y")), g.tolerance()) << name;
  }
}

TEST(NaiveReferenceGoldenV2, MhaRope) {
  Golden g = v2("mha_rope");
  MhaGolden m(g, false, {}, true);
  Tensor expected = g.f32("expected_Y");
  m.options.rope = true;
  EXPECT_LE(maxAbsDiff(m.run(2), expected), g.tolerance());
  MhaOptions o = m.options;
  o.rope = false;
  EXPECT_GT(maxAbsDiff(m.run(2, o), expected), 1e-3);
}

TEST(NaiveReferenceGoldenV2, MhaRopeBase) {
  Golden g = v2("mha_rope_base");
  MhaGolden m(g, false, {}, false);
  Tensor expected = g.f32("expected_Y");
  m.options.rope = true;
  m.options.ropeBase = 500000.0;
  m.options.causal = true;
  EXPECT_LE(maxAbsDiff(m.run(3), expected), g.tolerance());
  // The base matters: the default 10000 gives another result.
  MhaOptions o = m.options;
  o.ropeBase = 10000.0;
  EXPECT_GT(maxAbsDiff(m.run(3, o), expected), 1e-3);
}

TEST(NaiveReferenceGoldenV2, MhaWindow) {
  Golden g = v2("mha_window");
  MhaGolden m(g, false, {}, true);
  ASSERT_EQ(m.validLens.data, (std::vector<int32_t>{0, 5, 12}));
  Tensor expected = g.f32("expected_Y");
  for (float f : expected.data)
    ASSERT_FALSE(std::isnan(f));
  m.options.causal = true;
  m.options.window = 3;
  EXPECT_LE(maxAbsDiff(m.run(2), expected), g.tolerance());
  MhaOptions o = m.options;
  o.window = 0;
  EXPECT_GT(maxAbsDiff(m.run(2, o), expected), 1e-3);
}

TEST(NaiveReferenceGoldenV2, MhaWindowWeights) {
  Golden g = v2("mha_window_weights");
  MhaGolden m(g, false, {}, true);
  m.options.causal = true;
  m.options.window = 2;
  EXPECT_LE(maxAbsDiff(m.run(2), g.f32("expected_Y")), g.tolerance());
  Tensor expected = g.f32("expected_A");
  Tensor a = m.weights(2);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{4, 9, 9}));
  EXPECT_LE(maxAbsDiff(a, expected), g.tolerance());
  // Entry 1 (rows 2, 3: both heads), valid_len 4: query i >= 5 sees no key
  // and is uniform; query i < 5 has at most two nonzero weights, i - 1, i.
  for (int64_t row = 2; row < 4; ++row)
    for (int64_t i = 0; i < 9; ++i)
      for (int64_t j = 0; j < 9; ++j) {
        float w = expected.data[(row * 9 + i) * 9 + j];
        if (i >= 5)
          EXPECT_NEAR(w, 1.0f / 9, 1e-7) << row << " " << i << " " << j;
        else if (j > i || j < i - 1)
          EXPECT_EQ(w, 0.0f) << row << " " << i << " " << j;
      }
}

TEST(NaiveReferenceGoldenV2, BertLayer) {
  Golden g = v2("bert_layer");
  MhaGolden m(g, false, {"b_q", "b_k", "b_v", "b_o"}, true);
  Tensor x = m.q;
  Tensor a = m.run(4);
  Tensor y = addNorm(x, a, g.f32("ln1_gamma"), g.f32("ln1_beta"), 1e-12);
  Tensor bI = g.f32("b_i"), bOut = g.f32("b_out");
  Tensor inter = gelu(linear(y, g.f32("W_i"), &bI));
  Tensor z = addNorm(y, linear(inter, g.f32("W_out"), &bOut),
                     g.f32("ln2_gamma"), g.f32("ln2_beta"), 1e-12);
  EXPECT_LE(maxAbsDiff(z, g.f32("expected_Z")), g.tolerance());
}

TEST(NaiveReferenceGoldenV2, BertEmbeddings) {
  Golden g = v2("bert_embeddings");
  auto tokens = embedding(g.i32("tokens"), g.f32("token_table"));
  auto segments = embedding(g.i32("segments"), g.f32("segment_table"));
  ASSERT_TRUE(bool(tokens)) << llvm::toString(tokens.takeError());
  ASSERT_TRUE(bool(segments)) << llvm::toString(segments.takeError());
  Tensor pos = g.f32("pos_embedding");
  EXPECT_EQ(pos.shape, (std::vector<int64_t>{1, 8, 16}));
  Tensor y = add(add(*tokens, *segments), pos);
  EXPECT_LE(maxAbsDiff(y, g.f32("expected_Y")), g.tolerance());
}

TEST(NaiveReferenceGoldenV2, Gpt2Block) {
  Golden g = v2("gpt2_block");
  Tensor x = g.f32("X");
  Tensor h1 = layerNorm(x, g.f32("ln1_gamma"), g.f32("ln1_beta"));
  Tensor bQ = g.f32("b_q"), bK = g.f32("b_k"), bV = g.f32("b_v"),
         bO = g.f32("b_o");
  MhaOptions o;
  o.bQ = &bQ;
  o.bK = &bK;
  o.bV = &bV;
  o.bO = &bO;
  o.causal = true;
  Tensor r =
      add(x, multiheadAttention(h1, h1, h1, 4, g.f32("W_q"), g.f32("W_k"),
                                g.f32("W_v"), g.f32("W_o"), o));
  Tensor h2 = layerNorm(r, g.f32("ln2_gamma"), g.f32("ln2_beta"));
  Tensor bProj = g.f32("b_proj");
  Tensor y = add(r, geluFfn(h2, g.f32("W_fc"), g.f32("b_fc"), g.f32("W_proj"),
                            &bProj, /*tanhForm=*/true));
  EXPECT_LE(maxAbsDiff(y, g.f32("expected_Y")), g.tolerance());
}

TEST(NaiveReferenceGoldenV2, LlamaBlock) {
  Golden g = v2("llama_block");
  Tensor x = g.f32("X");
  Tensor n1 = rmsNorm(x, g.f32("attn_norm"));
  MhaOptions o;
  o.kvHeads = 2;
  o.rope = true;
  o.causal = true;
  Tensor r =
      add(x, multiheadAttention(n1, n1, n1, 4, g.f32("W_q"), g.f32("W_k"),
                                g.f32("W_v"), g.f32("W_o"), o));
  Tensor n2 = rmsNorm(r, g.f32("ffn_norm"));
  Tensor mlp =
      linear(mul(silu(linear(n2, g.f32("W_gate"))), linear(n2, g.f32("W_up"))),
             g.f32("W_down"));
  EXPECT_LE(maxAbsDiff(add(r, mlp), g.f32("expected_Y")), g.tolerance());
}

} // namespace
