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
//===----------------------------------------------------------------------===//

#include "NaiveReference.h"

#include "attnc/Runtime/Runtime.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cmath>
#include <random>

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

  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("attnc-fused", dir));
  Runtime runtime{std::string(dir)};
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
  llvm::sys::fs::remove_directories(dir);

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

} // namespace
