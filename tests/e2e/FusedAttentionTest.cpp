//===- FusedAttentionTest.cpp - The flash-style kernel's corner cases -----===//
//
// attention lowered fused (online softmax over key blocks, masked blocks
// skipped) and decomposed must both equal the naive reference of D2L's
// DotProductAttention, also where skipping masked keys is not obviously
// exact: rows of length 0 and > Tk, 2-D and negative lengths, causal with
// Tq != Tk, sizes that are no multiple of the row and key blocks, and rows
// whose every visible score is below -1e6 (where D2L's masked entries, worth
// -1e6, dominate).
//
// multihead_attention's v2 keywords (biases, kv_heads, a causal window,
// rope) likewise, on random shapes against the reference's
// multiheadAttention with MhaOptions, through every lowering: fused and
// decomposed at -O2, -O0, the SSE2 baseline's schedule, threads, and the
// GPU kernels run on the CPU; windows of 1 key, of T keys or more and in
// between (with lengths 0 and > T), grouped-query attention with one kv
// head and with as many as query heads, each bias alone and all four, and
// windowed rows whose every score is below -1e6. Some of them in bf16 on
// the GPU's tensor-core attention, against the CPU's.
//
//===----------------------------------------------------------------------===//

#include "GpuEmulation.h"
#include "NaiveReference.h"
#include "TestSupport.h"

#include "attn/Target/FloatConversions.h"
#include "attnc/Codegen/CpuDescription.h"
#include "attnc/Runtime/Runtime.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace attnc;

namespace {

struct Case {
  const char *name;
  int64_t n, tq, tk, d, dv;
  /// 0: no valid_lens, 1: [N], 2: [N, Tq]
  int lensRank;
  bool causal;
  /// Scales q (and negates k) to push scores below -1e6.
  float magnitude;
  std::vector<int32_t> lens;
};

const Case kCases[] = {
    {"blocks_and_leftovers", 3, 13, 21, 7, 19, 1, false, 1.0f, {0, 5, 40}},
    {"two_d_lengths",
     2,
     9,
     17,
     16,
     16,
     2,
     false,
     1.0f,
     {3, 0, -2, 17, 30, 1, 16, 9, 8, 2, 5, 5, 0, 11, 12, 13, 1, 4}},
    {"causal_more_queries", 2, 19, 11, 8, 12, 1, true, 1.0f, {7, 0}},
    {"causal_more_keys",
     2,
     6,
     23,
     8,
     12,
     2,
     true,
     1.0f,
     {23, 1, 0, 5, 9, 30, 3, 3, 3, 3, 3, 3}},
    {"no_lengths", 2, 33, 40, 16, 20, 0, false, 1.0f, {}},
    {"scores_below_masked_value", 2, 5, 20, 4, 6, 1, false, 2000.0f, {3, 17}},
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

std::string specOf(const Case &c) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "block attn {\n"
     << "  input q: f32[" << c.n << ", " << c.tq << ", " << c.d << "]\n"
     << "  input k: f32[" << c.n << ", " << c.tk << ", " << c.d << "]\n"
     << "  input v: f32[" << c.n << ", " << c.tk << ", " << c.dv << "]\n";
  if (c.lensRank == 1)
    os << "  input vl: i32[" << c.n << "]\n";
  if (c.lensRank == 2)
    os << "  input vl: i32[" << c.n << ", " << c.tq << "]\n";
  os << "  o = attention(q, k, v" << (c.lensRank ? ", valid_lens=vl" : "")
     << (c.causal ? ", causal=true" : "") << ")\n  output o\n}\n";
  return text;
}

ref::Tensor random(std::vector<int64_t> shape, std::mt19937 &rng, float scale) {
  ref::Tensor t(shape);
  std::uniform_real_distribution<float> uniform(0.5f, 1.0f);
  for (float &x : t.data)
    x = uniform(rng) * scale;
  return t;
}

struct FusedAttention
    : ::testing::TestWithParam<std::tuple<Case, const char *>> {};

TEST_P(FusedAttention, MatchesTheReference) {
  auto [c, lowering] = GetParam();
  std::mt19937 rng(7);
  // Positive q and k, then k negated: every score is -|q||k|-ish, far below
  // -1e6 when magnitude is large.
  ref::Tensor q = random({c.n, c.tq, c.d}, rng, c.magnitude);
  ref::Tensor k = random({c.n, c.tk, c.d}, rng, -c.magnitude);
  std::uniform_real_distribution<float> signedUniform(-1.0f, 1.0f);
  ref::Tensor v({c.n, c.tk, c.dv});
  for (float &x : v.data)
    x = signedUniform(rng);
  std::optional<ref::IntTensor> lens;
  if (c.lensRank == 1)
    lens = ref::IntTensor({c.n}, c.lens);
  if (c.lensRank == 2)
    lens = ref::IntTensor({c.n, c.tq}, c.lens);
  ref::Tensor expected =
      ref::attention(q, k, v, lens ? &*lens : nullptr, c.causal);

  Runtime &runtime = attnc::test::sharedTestRuntime();
  CompileOptions options;
  options.pipeline.attention = lowering;
  auto kernel = runtime.compile(specOf(c), "fused.attn", "", options);
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  std::vector<float> out(expected.data.size(), NAN);
  std::vector<HostBuffer> buffers = {
      {"q", q.data.data(), ElementType::F32, q.shape},
      {"k", k.data.data(), ElementType::F32, k.shape},
      {"v", v.data.data(), ElementType::F32, v.shape},
      {"o", out.data(), ElementType::F32, expected.shape}};
  if (lens)
    buffers.push_back({"vl", lens->data.data(), ElementType::I32, lens->shape});
  llvm::Error error = (*kernel)->run(buffers);
  ASSERT_FALSE(!!error) << llvm::toString(std::move(error));

  double worst = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_FALSE(std::isnan(out[i]))
        << c.name << " " << lowering << " at " << i;
    worst = std::max(worst, std::fabs(double(out[i]) - expected.data[i]));
  }
  EXPECT_LE(worst, 1e-4) << c.name << " " << lowering;
}

INSTANTIATE_TEST_SUITE_P(Corners, FusedAttention,
                         ::testing::Combine(::testing::ValuesIn(kCases),
                                            ::testing::Values("fused",
                                                              "decomposed")),
                         [](const auto &info) {
                           return std::string(std::get<0>(info.param).name) +
                                  "_" + std::get<1>(info.param);
                         });

// The same corners in bf16, where both products take bf16 operands (q, k,
// v and the weights rounded: attentionProductsOf), on head sizes that AMX
// tiles take (d a multiple of 32, dv of 16) and one they do not, through
// every form of the products: AMX (this CPU, where it has AMX),
// vdpbf16ps's CPUs, FMAs (x86-64-v3), step by step, threads, the GPU
// kernels emulated. The bar is docs/spec.md §7's unit in the last place at
// the output's largest magnitude, against the reference on the rounded
// inputs.
const Case kBf16Cases[] = {
    {"bf16_lengths_and_leftovers",
     3,
     21,
     75,
     32,
     48,
     1,
     false,
     1.0f,
     {0, 33, 90}},
    {"bf16_two_d_lengths",
     2,
     9,
     40,
     64,
     16,
     2,
     false,
     1.0f,
     {3, 0, -2, 17, 40, 1, 16, 39, 8, 2, 5, 5, 0, 41, 12, 13, 1, 4}},
    {"bf16_causal_more_keys", 2, 20, 70, 32, 32, 1, true, 1.0f, {70, 3}},
    {"bf16_no_lengths", 2, 40, 128, 64, 64, 0, false, 1.0f, {}},
    {"bf16_odd_head", 2, 17, 30, 24, 20, 1, true, 1.0f, {30, 0}},
    {"bf16_scores_below_masked_value",
     2,
     5,
     40,
     32,
     16,
     1,
     false,
     1000.0f,
     {3, 37}},
};

struct Bf16Lowering {
  const char *name;
  const char *attention;
  const char *cpu;
  bool gpuEmulation;
  bool parallel;
};
const Bf16Lowering kBf16Lowerings[] = {
    {"fused", "fused", "native", false, false},
    {"fused_cooperlake", "fused", "cooperlake", false, false},
    {"fused_v3", "fused", "x86-64-v3", false, false},
    {"fused_parallel", "fused", "native", false, true},
    {"decomposed", "decomposed", "native", false, false},
    {"gpu_fused", "fused", "native", true, false},
};

void PrintTo(const Bf16Lowering &l, std::ostream *os) { *os << l.name; }

struct FusedAttentionBf16
    : ::testing::TestWithParam<std::tuple<Case, Bf16Lowering>> {};

TEST_P(FusedAttentionBf16, MatchesTheReferenceWithinTheBar) {
  auto [c, lowering] = GetParam();
  CompileOptions options;
  options.target.cpu = lowering.cpu;
  options.pipeline.attention = lowering.attention;
  if (lowering.gpuEmulation)
    attnc::test::useGpuEmulation(options.pipeline);
  options.pipeline.parallel = lowering.parallel;
  if (llvm::Error lacks = checkRunsOnHost(options.target))
    GTEST_SKIP() << "this machine cannot run " << lowering.cpu
                 << " code: " << llvm::toString(std::move(lacks));
  std::mt19937 rng(7);
  ref::Tensor q = random({c.n, c.tq, c.d}, rng, c.magnitude);
  ref::Tensor k = random({c.n, c.tk, c.d}, rng, -c.magnitude);
  std::uniform_real_distribution<float> signedUniform(-1.0f, 1.0f);
  ref::Tensor v({c.n, c.tk, c.dv});
  for (float &x : v.data)
    x = signedUniform(rng);
  // The inputs in bf16, and the reference on those values.
  std::vector<std::vector<uint16_t>> bits;
  for (ref::Tensor *t : {&q, &k, &v}) {
    bits.emplace_back();
    for (float &x : t->data) {
      bits.back().push_back(mlir::attn::narrowToBf16(x));
      x = mlir::attn::widenBf16(bits.back().back());
    }
  }
  std::optional<ref::IntTensor> lens;
  if (c.lensRank == 1)
    lens = ref::IntTensor({c.n}, c.lens);
  if (c.lensRank == 2)
    lens = ref::IntTensor({c.n, c.tq}, c.lens);
  ref::Tensor expected =
      ref::attention(q, k, v, lens ? &*lens : nullptr, c.causal);

  std::string spec = specOf(c);
  for (size_t at; (at = spec.find("f32")) != std::string::npos;)
    spec.replace(at, 3, "bf16");
  Runtime &runtime = attnc::test::sharedTestRuntime();
  auto kernel = runtime.compile(spec, "fused.attn", "", options);
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  std::vector<uint16_t> out(expected.data.size(), 0x7fc0);
  std::vector<HostBuffer> buffers = {
      {"q", bits[0].data(), ElementType::BF16, q.shape},
      {"k", bits[1].data(), ElementType::BF16, k.shape},
      {"v", bits[2].data(), ElementType::BF16, v.shape},
      {"o", out.data(), ElementType::BF16, expected.shape}};
  if (lens)
    buffers.push_back({"vl", lens->data.data(), ElementType::I32, lens->shape});
  llvm::Error error = (*kernel)->run(buffers);
  ASSERT_FALSE(!!error) << llvm::toString(std::move(error));

  double largest = 0, worst = 0;
  for (float x : expected.data)
    largest = std::max(largest, std::fabs(double(x)));
  double bound = std::ldexp(1.0, std::ilogb(largest) - 7);
  for (size_t i = 0; i < out.size(); ++i) {
    double got = mlir::attn::widenBf16(out[i]);
    ASSERT_FALSE(std::isnan(got))
        << c.name << " " << lowering.name << " at " << i;
    worst = std::max(worst, std::fabs(got - expected.data[i]));
  }
  EXPECT_LE(worst, bound) << c.name << " " << lowering.name
                          << ": one bf16 unit at the largest |output| "
                          << largest;
}

INSTANTIATE_TEST_SUITE_P(
    Corners, FusedAttentionBf16,
    ::testing::Combine(::testing::ValuesIn(kBf16Cases),
                       ::testing::ValuesIn(kBf16Lowerings)),
    [](const auto &info) {
      return std::string(std::get<0>(info.param).name) + "_" +
             std::get<1>(info.param).name;
    });

//===----------------------------------------------------------------------===//
// multihead_attention v2
//===----------------------------------------------------------------------===//

enum Bias : unsigned { kBQ = 1, kBK = 2, kBV = 4, kBO = 8 };

struct MhaCase {
  const char *name;
  int64_t b, tq, tk, heads, kvHeads /* 0: not given */, headDim;
  /// 0: no valid_lens, 1: [B], 2: [B, Tq]
  int lensRank;
  std::vector<int32_t> lens;
  bool causal;
  int64_t window; // 0: not given
  bool rope;
  double ropeBase; // 0: not given (10000)
  unsigned biases; // Bias bits
  bool weights;    // return_weights
  /// Non-zero: q and k of this magnitude, positive, projected by w_q = I
  /// and w_k = -I, so that every score is far below -1e6 (the kernels'
  /// exact recomputation of such rows, with the window's lower bound).
  float magnitude = 0;
  /// Non-zero: every score is exactly -1e6 + scoreOffset (head dim 4: one
  /// column of q 16, of k (1e6 - offset) / 8, w_q = I, w_k = -I), where
  /// skipping the masked keys is exact only from kExpUnderflow on
  /// (attn/IR/AttentionMask.h's needsExactRecompute).
  float scoreOffset = 0;
};

const MhaCase kMhaCases[] = {
    // A window of one key: each row sees itself (or nothing).
    {"window_1", 2, 37, 37, 2, 0, 8, 1, {0, 50}, true, 1, false, 0, 0, false},
    // A window of T keys and more: plain causal attention.
    {"window_t", 2, 37, 37, 2, 0, 8, 1, {5, 37}, true, 37, false, 0, 0, false},
    {"window_over_t", 1, 23, 23, 2, 0, 8, 0, {}, true, 100, false, 0, 0, false},
    // Windows shorter than T over several key blocks, lengths 0 and > T.
    {"window_5_long",
     2,
     70,
     70,
     3,
     0,
     12,
     1,
     {0, 80},
     true,
     5,
     false,
     0,
     0,
     false},
    {"window_9_two_d_lengths",
     1,
     45,
     45,
     2,
     0,
     8,
     2,
     {0,  3, 45, 50, 7,  9,  10, 2,  30, 31, 12, 0,  1,  44, 45,
      46, 5, 17, 18, 19, 20, 21, 22, 3,  24, 25, 26, 27, 28, 29,
      30, 2, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 99},
     true,
     9,
     false,
     0,
     0,
     false},
    {"window_17_no_lengths",
     2,
     90,
     90,
     2,
     0,
     8,
     0,
     {},
     true,
     17,
     false,
     0,
     0,
     false},
    // Grouped-query attention: one kv head (multi-query), as many as heads,
    // and 2 of 6 with Tq != Tk and 2-D lengths.
    {"mqa", 2, 33, 33, 4, 1, 8, 1, {7, 33}, false, 0, false, 0, 0, false},
    {"kv_heads_all",
     2,
     21,
     21,
     4,
     4,
     6,
     1,
     {0, 21},
     false,
     0,
     false,
     0,
     0,
     false},
    {"gqa_cross",
     2,
     9,
     41,
     6,
     2,
     10,
     2,
     {41, 0, 3, 50, 9, 12, 1, 40, 7, 2, 0, 39, 41, 8, 20, 1, 1, 1},
     false,
     0,
     false,
     0,
     0,
     false},
    {"gqa_causal", 1, 40, 40, 8, 2, 4, 0, {}, true, 0, false, 0, 0, false},
    // rope: cross attention (q and k positions differ), a long causal one,
    // Llama 3's base with grouped-query attention and a window.
    {"rope_cross",
     2,
     29,
     47,
     2,
     0,
     16,
     1,
     {47, 11},
     false,
     0,
     true,
     0,
     0,
     false},
    {"rope_causal", 1, 66, 66, 2, 0, 8, 0, {}, true, 0, true, 0, 0, false},
    {"rope_llama",
     2,
     50,
     50,
     4,
     2,
     8,
     1,
     {50, 3},
     true,
     7,
     true,
     500000.0,
     0,
     false},
    // Each bias alone (b_k and b_v with kv heads), and all four.
    {"bias_q", 2, 21, 21, 2, 0, 8, 1, {4, 30}, false, 0, false, 0, kBQ, false},
    {"bias_k", 2, 21, 21, 4, 2, 8, 1, {4, 30}, false, 0, false, 0, kBK, false},
    {"bias_v", 2, 21, 21, 4, 2, 8, 1, {4, 30}, false, 0, false, 0, kBV, false},
    {"bias_o", 2, 21, 21, 2, 0, 8, 1, {4, 30}, false, 0, false, 0, kBO, false},
    {"biases_all",
     2,
     19,
     27,
     3,
     0,
     8,
     1,
     {0, 27},
     true,
     0,
     true,
     0,
     kBQ | kBK | kBV | kBO,
     false},
    // The weights returned (always decomposed) with every keyword.
    {"weights_everything",
     2,
     13,
     13,
     4,
     2,
     8,
     1,
     {13, 0},
     true,
     4,
     true,
     500000.0,
     kBQ | kBK | kBV | kBO,
     true},
    // More query rows than a GPU block takes (128) and several of its key
    // tiles: a window, and rope with grouped kv heads.
    {"window_13_row_blocks",
     2,
     150,
     150,
     2,
     0,
     8,
     1,
     {150, 97},
     true,
     13,
     false,
     0,
     0,
     false},
    {"rope_gqa_row_blocks",
     1,
     140,
     140,
     4,
     2,
     16,
     0,
     {},
     true,
     0,
     true,
     0,
     0,
     false},
    // Heads of 128: each row split over GPU threads that add their dot
    // products with shuffles and walk the block's keys (those a row does not
    // see leave it as it was); rows of length 0 recomputed by the exact
    // launch, with rope and a kv head shared by both query heads.
    {"wide_heads_rope_gqa_window",
     2,
     70,
     70,
     2,
     1,
     128,
     1,
     {0, 50},
     true,
     20,
     true,
     0,
     0,
     false},
    // The same rows' exact launch on scores below -1e6.
    {"wide_heads_scores_below_masked_value",
     2,
     40,
     40,
     2,
     0,
     128,
     1,
     {40, 30},
     true,
     6,
     false,
     0,
     0,
     false,
     2000.0f},
    // Every row of 4301 recomputed exactly: more rows than an H200's
    // one-warp blocks, so each warp of the exact launch takes two
    // (exactRowsPerWarp), the last warp's second past the end.
    {"exact_rows_two_per_warp",
     1,
     4301,
     8,
     1,
     0,
     8,
     1,
     {7},
     false,
     0,
     false,
     0,
     0,
     false,
     2000.0f},
    // Every score -1e6 + 8, a window of 8 over 200 keys: each masked key
    // still weighs e^-8 of a visible one, so every row from the 9th on is
    // recomputed -- the last only because its window starts past key 0
    // (begin > 0 while end = Tk).
    {"window_scores_just_above_masked_value",
     1,
     200,
     200,
     1,
     0,
     4,
     0,
     {},
     true,
     8,
     false,
     0,
     0,
     false,
     0.0f,
     8.0f},
    // Every score exactly -1e6 + 104, 3 of 200 keys visible: the bound
    // where skipping the masked keys is exact (their weight underflows).
    {"scores_at_exp_underflow_bound",
     1,
     2,
     200,
     1,
     0,
     4,
     1,
     {3},
     false,
     0,
     false,
     0,
     0,
     false,
     0.0f,
     104.0f},
    // Every score below -1e6: rows recomputed exactly, window included.
    {"scores_below_masked_value_window",
     2,
     40,
     40,
     2,
     0,
     8,
     1,
     {40, 30},
     true,
     6,
     false,
     0,
     0,
     false,
     2000.0f},
};

void PrintTo(const MhaCase &c, std::ostream *os) { *os << c.name; }

/// The features of q, k and v.
void featuresOf(const MhaCase &c, int64_t &dq, int64_t &dk, int64_t &dv) {
  dq = 12, dk = 15, dv = 17;
  if (c.magnitude || c.scoreOffset)
    dq = dk = c.heads * c.headDim;
}

std::string mhaSpecOf(const MhaCase &c) {
  int64_t hd = c.heads * c.headDim;
  int64_t kvHd = (c.kvHeads ? c.kvHeads : c.heads) * c.headDim;
  int64_t dq, dk, dv;
  featuresOf(c, dq, dk, dv);
  std::string text;
  llvm::raw_string_ostream os(text);
  auto shape = [](std::initializer_list<int64_t> dims) {
    std::string s;
    for (int64_t d : dims)
      s += (s.empty() ? "" : ", ") + std::to_string(d);
    return "[" + s + "]";
  };
  os << "block mha {\n"
     << "  input q: f32" << shape({c.b, c.tq, dq}) << "\n"
     << "  input k: f32" << shape({c.b, c.tk, dk}) << "\n"
     << "  input v: f32" << shape({c.b, c.tk, dv}) << "\n";
  if (c.lensRank == 1)
    os << "  input vl: i32" << shape({c.b}) << "\n";
  if (c.lensRank == 2)
    os << "  input vl: i32" << shape({c.b, c.tq}) << "\n";
  os << "  param wq: f32" << shape({hd, dq}) << "\n"
     << "  param wk: f32" << shape({kvHd, dk}) << "\n"
     << "  param wv: f32" << shape({kvHd, dv}) << "\n"
     << "  param wo: f32" << shape({hd, hd}) << "\n";
  if (c.biases & kBQ)
    os << "  param bq: f32" << shape({hd}) << "\n";
  if (c.biases & kBK)
    os << "  param bk: f32" << shape({kvHd}) << "\n";
  if (c.biases & kBV)
    os << "  param bv: f32" << shape({kvHd}) << "\n";
  if (c.biases & kBO)
    os << "  param bo: f32" << shape({hd}) << "\n";
  os << "  " << (c.weights ? "o, a" : "o")
     << " = multihead_attention(q, k, v, heads=" << c.heads
     << ", w_q=wq, w_k=wk, w_v=wv, w_o=wo";
  if (c.kvHeads)
    os << ", kv_heads=" << c.kvHeads;
  if (c.biases & kBQ)
    os << ", b_q=bq";
  if (c.biases & kBK)
    os << ", b_k=bk";
  if (c.biases & kBV)
    os << ", b_v=bv";
  if (c.biases & kBO)
    os << ", b_o=bo";
  if (c.lensRank)
    os << ", valid_lens=vl";
  if (c.causal)
    os << ", causal=true";
  if (c.window)
    os << ", window=" << c.window;
  if (c.rope)
    os << ", rope=true";
  if (c.ropeBase)
    os << ", rope_base=" << c.ropeBase;
  if (c.weights)
    os << ", return_weights=true";
  os << ")\n  output " << (c.weights ? "o, a" : "o") << "\n}\n";
  return text;
}

ref::Tensor signedRandom(std::vector<int64_t> shape, std::mt19937 &rng,
                         float scale) {
  ref::Tensor t(shape);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (float &x : t.data)
    x = uniform(rng) * scale;
  return t;
}

/// How a case is compiled.
struct MhaLowering {
  const char *name;
  const char *attention;
  int optLevel;
  const char *cpu;
  bool gpuEmulation;
  bool parallel = false;
};
const MhaLowering kMhaLowerings[] = {
    {"fused", "fused", 2, "native", false},
    {"decomposed", "decomposed", 2, "native", false},
    {"O0", "decomposed", 0, "native", false},
    {"fused_sse2", "fused", 2, "x86-64", false},
    {"gpu_fused", "fused", 2, "native", true},
    {"gpu_decomposed", "decomposed", 2, "native", true},
    {"fused_parallel", "fused", 2, "native", false, true},
};

void PrintTo(const MhaLowering &l, std::ostream *os) { *os << l.name; }

struct MultiheadAttentionV2
    : ::testing::TestWithParam<std::tuple<MhaCase, MhaLowering>> {};

TEST_P(MultiheadAttentionV2, MatchesTheReference) {
  auto [c, lowering] = GetParam();
  int64_t hd = c.heads * c.headDim;
  int64_t kvHd = (c.kvHeads ? c.kvHeads : c.heads) * c.headDim;
  int64_t dq, dk, dv;
  featuresOf(c, dq, dk, dv);
  std::mt19937 rng(11);
  ref::Tensor q = signedRandom({c.b, c.tq, dq}, rng, 1.0f);
  ref::Tensor k = signedRandom({c.b, c.tk, dk}, rng, 1.0f);
  ref::Tensor v = signedRandom({c.b, c.tk, dv}, rng, 1.0f);
  ref::Tensor wq = signedRandom({hd, dq}, rng, 0.5f);
  ref::Tensor wk = signedRandom({kvHd, dk}, rng, 0.5f);
  ref::Tensor wv = signedRandom({kvHd, dv}, rng, 0.5f);
  if (c.magnitude) {
    // Positive q and k, w_q = I, w_k = -I: scores -|q||k| / sqrt(d).
    q = random({c.b, c.tq, dq}, rng, c.magnitude);
    k = random({c.b, c.tk, dk}, rng, c.magnitude);
    wq = ref::Tensor({hd, dq});
    wk = ref::Tensor({kvHd, dk});
    for (int64_t i = 0; i < hd; ++i) {
      wq.data[i * dq + i] = 1.0f;
      wk.data[i * dk + i] = -1.0f;
    }
  }
  if (c.scoreOffset) {
    // One column per head: q 16, k (1e6 - offset) / 8; with w_q = I,
    // w_k = -I and the scale 1/2 (head dim 4) every score is exactly
    // -(1e6 - offset).
    q = ref::Tensor({c.b, c.tq, dq});
    k = ref::Tensor({c.b, c.tk, dk});
    for (int64_t h = 0; h < c.heads; ++h) {
      for (int64_t t = 0; t < c.b * c.tq; ++t)
        q.data[t * dq + h * c.headDim] = 16.0f;
      for (int64_t t = 0; t < c.b * c.tk; ++t)
        k.data[t * dk + h * c.headDim] = (1e6f - c.scoreOffset) / 8.0f;
    }
    wq = ref::Tensor({hd, dq});
    wk = ref::Tensor({kvHd, dk});
    for (int64_t i = 0; i < hd; ++i) {
      wq.data[i * dq + i] = 1.0f;
      wk.data[i * dk + i] = -1.0f;
    }
  }
  ref::Tensor wo = signedRandom({hd, hd}, rng, 0.3f);
  ref::Tensor bq = signedRandom({hd}, rng, 0.5f);
  ref::Tensor bk = signedRandom({kvHd}, rng, 0.5f);
  ref::Tensor bv = signedRandom({kvHd}, rng, 0.5f);
  ref::Tensor bo = signedRandom({hd}, rng, 0.5f);
  std::optional<ref::IntTensor> lens;
  if (c.lensRank == 1)
    lens = ref::IntTensor({c.b}, c.lens);
  if (c.lensRank == 2)
    lens = ref::IntTensor({c.b, c.tq}, c.lens);
  ref::MhaOptions options;
  options.bQ = c.biases & kBQ ? &bq : nullptr;
  options.bK = c.biases & kBK ? &bk : nullptr;
  options.bV = c.biases & kBV ? &bv : nullptr;
  options.bO = c.biases & kBO ? &bo : nullptr;
  options.kvHeads = c.kvHeads;
  options.rope = c.rope;
  options.ropeBase = c.ropeBase ? c.ropeBase : 10000.0;
  options.causal = c.causal;
  options.window = c.window;
  options.validLens = lens ? &*lens : nullptr;
  ref::Tensor expected =
      ref::multiheadAttention(q, k, v, c.heads, wq, wk, wv, wo, options);
  ref::Tensor expectedWeights;
  if (c.weights)
    expectedWeights =
        ref::multiheadAttentionWeights(q, k, c.heads, wq, wk, options);

  CompileOptions compile;
  compile.setOptLevel(lowering.optLevel);
  compile.target.cpu = lowering.cpu;
  compile.pipeline.attention = lowering.attention;
  if (lowering.gpuEmulation)
    attnc::test::useGpuEmulation(compile.pipeline);
  compile.pipeline.parallel = lowering.parallel;
  if (llvm::Error lacks = checkRunsOnHost(compile.target))
    GTEST_SKIP() << "this machine cannot run " << lowering.cpu
                 << " code: " << llvm::toString(std::move(lacks));
  std::string spec = mhaSpecOf(c);
  SCOPED_TRACE(spec);
  Runtime &runtime = attnc::test::sharedTestRuntime();
  auto kernel = runtime.compile(spec, "mha.attn", "", compile);
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  std::vector<float> out(expected.data.size(), NAN);
  std::vector<float> weights(expectedWeights.data.size(), NAN);
  std::vector<HostBuffer> buffers = {
      {"q", q.data.data(), ElementType::F32, q.shape},
      {"k", k.data.data(), ElementType::F32, k.shape},
      {"v", v.data.data(), ElementType::F32, v.shape},
      {"wq", wq.data.data(), ElementType::F32, wq.shape},
      {"wk", wk.data.data(), ElementType::F32, wk.shape},
      {"wv", wv.data.data(), ElementType::F32, wv.shape},
      {"wo", wo.data.data(), ElementType::F32, wo.shape},
      {"o", out.data(), ElementType::F32, expected.shape}};
  if (lens)
    buffers.push_back({"vl", lens->data.data(), ElementType::I32, lens->shape});
  if (c.biases & kBQ)
    buffers.push_back({"bq", bq.data.data(), ElementType::F32, bq.shape});
  if (c.biases & kBK)
    buffers.push_back({"bk", bk.data.data(), ElementType::F32, bk.shape});
  if (c.biases & kBV)
    buffers.push_back({"bv", bv.data.data(), ElementType::F32, bv.shape});
  if (c.biases & kBO)
    buffers.push_back({"bo", bo.data.data(), ElementType::F32, bo.shape});
  if (c.weights)
    buffers.push_back(
        {"a", weights.data(), ElementType::F32, expectedWeights.shape});
  llvm::Error error = (*kernel)->run(buffers);
  ASSERT_FALSE(!!error) << llvm::toString(std::move(error));

  auto worstOf = [&](const std::vector<float> &got, const ref::Tensor &want,
                     const char *what) {
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_FALSE(std::isnan(got[i])) << what << " at " << i;
      worst = std::max(worst, std::fabs(double(got[i]) - want.data[i]));
    }
    return worst;
  };
  EXPECT_LE(worstOf(out, expected, "output"), 1e-4)
      << c.name << " " << lowering.name;
  if (c.weights)
    EXPECT_LE(worstOf(weights, expectedWeights, "weights"), 1e-5)
        << c.name << " " << lowering.name;
}

INSTANTIATE_TEST_SUITE_P(Keywords, MultiheadAttentionV2,
                         ::testing::Combine(::testing::ValuesIn(kMhaCases),
                                            ::testing::ValuesIn(kMhaLowerings)),
                         [](const auto &info) {
                           return std::string(std::get<0>(info.param).name) +
                                  "_" + std::get<1>(info.param).name;
                         });

/// The v2 cases in bf16 on the GPU's tensor-core attention (emulated)
/// against the CPU's flash loop (its own checks above): both round at the
/// same points (docs/precision.md) and sum in their own orders, so the
/// outputs agree within 4 bf16 units at the largest |output|, as
/// BackendDiff holds two backends to.
struct MultiheadAttentionV2Bf16 : ::testing::TestWithParam<MhaCase> {};

TEST_P(MultiheadAttentionV2Bf16, TensorCoresMatchTheCpu) {
  const MhaCase &c = GetParam();
  std::string spec = mhaSpecOf(c);
  for (size_t at; (at = spec.find("f32")) != std::string::npos;)
    spec.replace(at, 3, "bf16");
  SCOPED_TRACE(spec);
  Runtime &runtime = attnc::test::sharedTestRuntime();
  CompileOptions cpu;
  cpu.pipeline.attention = "fused";
  CompileOptions gpu = cpu;
  attnc::test::useGpuEmulation(gpu.pipeline);
  auto onCpu = runtime.compile(spec, "mha.attn", "", cpu);
  ASSERT_TRUE(!!onCpu) << llvm::toString(onCpu.takeError());
  auto onGpu = runtime.compile(spec, "mha.attn", "", gpu);
  ASSERT_TRUE(!!onGpu) << llvm::toString(onGpu.takeError());

  std::mt19937 rng(13);
  std::vector<std::vector<uint16_t>> data;
  std::vector<std::vector<int32_t>> ints;
  std::vector<HostBuffer> buffers;
  const KernelSignature &signature = (*onCpu)->signature();
  data.reserve(signature.arguments.size());
  ints.reserve(signature.arguments.size());
  size_t output = 0;
  for (const KernelArgument &a : signature.arguments) {
    size_t count = size_t(a.numElements());
    if (a.type == ElementType::I32) {
      ints.emplace_back(c.lens.begin(), c.lens.end());
      buffers.push_back({a.name, ints.back().data(), a.type, a.shape});
      continue;
    }
    // Inputs in [-1, 1], weights in [-0.5, 0.5].
    float scale = a.role == ArgumentRole::Param ? 0.5f : 1.0f;
    ref::Tensor values = signedRandom({int64_t(count)}, rng, scale);
    data.emplace_back();
    for (float x : values.data)
      data.back().push_back(mlir::attn::narrowToBf16(x));
    if (a.role == ArgumentRole::Output)
      output = data.size() - 1;
    buffers.push_back({a.name, data.back().data(), a.type, a.shape});
  }
  llvm::Error error = (*onCpu)->run(buffers);
  ASSERT_FALSE(!!error) << llvm::toString(std::move(error));
  std::vector<uint16_t> expected = data[output];
  error = (*onGpu)->run(buffers);
  ASSERT_FALSE(!!error) << llvm::toString(std::move(error));
  const std::vector<uint16_t> &got = data[output];

  double largest = 0, worst = 0;
  for (uint16_t x : expected)
    largest = std::max(largest, std::fabs(double(mlir::attn::widenBf16(x))));
  double bound = 4 * std::ldexp(1.0, std::ilogb(largest) - 7);
  for (size_t i = 0; i < got.size(); ++i) {
    double have = mlir::attn::widenBf16(got[i]);
    ASSERT_FALSE(std::isnan(have)) << c.name << " at " << i;
    worst =
        std::max(worst, std::fabs(have - mlir::attn::widenBf16(expected[i])));
  }
  EXPECT_LE(worst, bound) << c.name << ": 4 bf16 units at the largest "
                          << "|output| " << largest;
}

/// Windows over several key tiles with lengths 0 and past T, 2-D lengths,
/// grouped-query heads (cross attention), rope with them and a window, and
/// rows of more than one block.
std::vector<MhaCase> bf16TensorCoreCases() {
  std::vector<MhaCase> cases;
  for (const MhaCase &c : kMhaCases)
    for (llvm::StringRef name :
         {"window_5_long", "window_9_two_d_lengths", "gqa_cross", "rope_llama",
          "rope_gqa_row_blocks", "window_13_row_blocks"})
      if (name == c.name && !c.weights)
        cases.push_back(c);
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Keywords, MultiheadAttentionV2Bf16,
                         ::testing::ValuesIn(bf16TensorCoreCases()),
                         [](const auto &info) {
                           return std::string(info.param.name);
                         });

} // namespace
