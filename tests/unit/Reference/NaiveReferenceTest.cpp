//===- NaiveReferenceTest.cpp - The naive reference vs D2L goldens --------===//
//
// Hand-computed tiny cases for each op, then the reference against the
// PyTorch goldens of tests/data/goldens (made by tests/data/make_goldens.py).
//
//===----------------------------------------------------------------------===//

#include "NaiveReference.h"
#include "attnc/Runtime/Npy.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <cmath>
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
// Goldens made by the D2L PyTorch code
//===----------------------------------------------------------------------===//

class Golden {
public:
  explicit Golden(llvm::StringRef name) : name(name.str()) {}

  std::string path(llvm::StringRef file) const {
    llvm::SmallString<256> p(ATTNC_TEST_DATA_DIR);
    llvm::sys::path::append(p, "goldens", name, file);
    return std::string(p);
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
};

constexpr double kTol = 1e-4;
constexpr double kTolLarge = 2e-4; // D >= 768

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

} // namespace
