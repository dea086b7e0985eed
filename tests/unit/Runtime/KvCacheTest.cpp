//===- KvCacheTest.cpp - Prefill and decode steps with a KV cache ---------===//
//
// multihead_attention(..., cache_k=, cache_v=, cache_pos=) against the same
// block without a cache over the whole sequence (causal): a prefill of the
// first P tokens and then one-token steps give the full attention's rows,
// ragged positions across the batch included; rows past the new tokens
// are never written nor read (they hold NaN here); a position out of range
// is an error that writes nothing; positional_encoding(X, offset=pos) in
// front of the attention is the whole sequence's encoding at those
// positions. Through both backends (the Halide
// backend's pipelines too, when this attnc has it).
//
//===----------------------------------------------------------------------===//

#include "../../e2e/TestSupport.h"
#include "GpuEmulation.h"
#include "attn/Target/FloatConversions.h"
#include "attnc/Codegen/CpuDescription.h"
#include "attnc/Halide/HalideBackend.h"
#include "attnc/Runtime/Runtime.h"

#include "llvm/Support/FileSystem.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>

using namespace attnc;
using mlir::attn::narrowToBf16;
using mlir::attn::narrowToF16;

namespace {

constexpr int64_t kBatch = 2, kModel = 16, kHeads = 4, kCacheRows = 12,
                  kSequence = 9, kPrefill = 5;

struct Variant {
  const char *name;
  int64_t kvHeads;
  bool rope;
  int64_t window; // 0: none
  bool biases;
  /// The attention reads positional_encoding(X) (with offset=pos on the
  /// cache), its table kEncodingRows long.
  bool encoding = false;
};

/// positional_encoding's max_len in the `encoding` variants: the whole
/// sequence and one more, fewer than the cache's rows (so that a position
/// can be in the cache and past the table).
constexpr int64_t kEncodingRows = kSequence + 1;

/// How the three blocks are compiled.
struct Pipeline {
  const char *name;
  unsigned optLevel;
  const char *cpu;
  bool parallel;
  bool gpuEmulation;
  /// attn-decompose's option: with a cache it must still pick a lowering
  /// that never lets an unwritten (NaN) row reach the output.
  const char *attention = "auto";
  Backend backend = Backend::Mlir;
};

std::string mhaCall(const Variant &v, const char *cacheArgs) {
  const char *x = v.encoding ? "P, P, P" : "X, X, X";
  std::string call = std::string("multihead_attention(") + x +
                     ", heads=4, w_q=W_q, w_k=W_k, w_v=W_v, w_o=W_o, "
                     "causal=true";
  if (v.kvHeads != kHeads)
    call += ", kv_heads=" + std::to_string(v.kvHeads);
  if (v.rope)
    call += ", rope=true";
  if (v.window)
    call += ", window=" + std::to_string(v.window);
  if (v.biases)
    call += ", b_q=b_q, b_k=b_k, b_v=b_v, b_o=b_o";
  return call + cacheArgs + ")";
}

/// Three blocks of one model: `full` over the whole sequence, `prefill`
/// and `step` on the cache; with `weights`, each returns the attention
/// weights too (output A).
std::string spec(const Variant &v, bool weights = false) {
  int64_t kvDim = kModel / kHeads * v.kvHeads;
  std::string params = "  param W_q: f32[D, D]\n  param W_k: f32[" +
                       std::to_string(kvDim) + ", D]\n  param W_v: f32[" +
                       std::to_string(kvDim) + ", D]\n  param W_o: f32[D, D]\n";
  if (v.biases)
    params += "  param b_q: f32[D]\n  param b_k: f32[" + std::to_string(kvDim) +
              "]\n  param b_v: f32[" + std::to_string(kvDim) +
              "]\n  param b_o: f32[D]\n";
  auto block = [&](const char *name, int64_t t, bool cache) {
    std::string text =
        std::string("block ") + name +
        " {\n  dim B = " + std::to_string(kBatch) +
        ", T = " + std::to_string(t) + ", D = " + std::to_string(kModel) +
        ", L = " + std::to_string(kCacheRows) + "\n  input X: f32[B, T, D]\n";
    if (cache)
      text += "  input pos: i32[B]\n  state K: f32[B, L, " +
              std::to_string(kvDim) + "]\n  state V: f32[B, L, " +
              std::to_string(kvDim) + "]\n";
    text += params;
    if (v.encoding)
      text += std::string("  P = positional_encoding(X") +
              (cache ? ", offset=pos" : "") +
              ", max_len=" + std::to_string(kEncodingRows) + ")\n";
    std::string args = cache ? ", cache_k=K, cache_v=V, cache_pos=pos" : "";
    if (weights)
      args += ", return_weights=true";
    text += std::string(weights ? "  Y, A = " : "  Y = ") +
            mhaCall(v, args.c_str()) + "\n  output Y\n" +
            (weights ? "  output A\n" : "") + "}\n";
    return text;
  };
  return block("full", kSequence, false) + block("prefill", kPrefill, true) +
         block("step", 1, true);
}

using test::randomValues;

std::string message(llvm::Error error) {
  return test::errorMessage(std::move(error));
}

class KvCacheTest
    : public ::testing::TestWithParam<std::tuple<Variant, Pipeline>> {
protected:
  void SetUp() override {
    const auto &[v, pipeline] = GetParam();
    CompileOptions options = Runtime::defaultOptions();
    options.setOptLevel(pipeline.optLevel);
    options.target.cpu = pipeline.cpu;
    if (llvm::Error lacks = checkRunsOnHost(options.target))
      GTEST_SKIP() << "this machine cannot run " << pipeline.cpu
                   << " code: " << llvm::toString(std::move(lacks));
    options.pipeline.parallel = pipeline.parallel;
    if (pipeline.gpuEmulation)
      attnc::test::useGpuEmulation(options.pipeline);
    options.pipeline.attention = pipeline.attention;
    options.backend = pipeline.backend;
    kvDim = kModel / kHeads * v.kvHeads;
    std::string text = spec(v);
    for (auto [name, kernel] :
         {std::pair<const char *, Kernel **>{"full", &full},
          {"prefill", &prefill},
          {"step", &step}}) {
      auto compiled = runtime->compile(text, "kv.attn", name, options);
      ASSERT_TRUE(!!compiled) << llvm::toString(compiled.takeError());
      kernels.push_back(*compiled);
      *kernel = compiled->get();
    }
    std::vector<HostBuffer> params = this->params();
    for (Kernel *kernel : {full, prefill, step})
      ASSERT_EQ(message(kernel->bindParams(params)), "");
    kCache.assign(kBatch * kCacheRows * kvDim, NAN);
    vCache.assign(kBatch * kCacheRows * kvDim, NAN);
    expected.assign(kBatch * kSequence * kModel, NAN);
    ASSERT_EQ(
        message(full->run(
            {{"X", x.data(), ElementType::F32, {kBatch, kSequence, kModel}},
             {"Y",
              expected.data(),
              ElementType::F32,
              {kBatch, kSequence, kModel}}})),
        "");
  }

  /// The weights (and biases) every block binds.
  std::vector<HostBuffer> params() {
    const Variant &v = std::get<0>(GetParam());
    std::vector<HostBuffer> params = {
        {"W_q", wq.data(), ElementType::F32, {kModel, kModel}},
        {"W_k", wk.data(), ElementType::F32, {kvDim, kModel}},
        {"W_v", wv.data(), ElementType::F32, {kvDim, kModel}},
        {"W_o", wo.data(), ElementType::F32, {kModel, kModel}}};
    if (v.biases)
      params.insert(params.end(),
                    {{"b_q", bq.data(), ElementType::F32, {kModel}},
                     {"b_k", bk.data(), ElementType::F32, {kvDim}},
                     {"b_v", bv.data(), ElementType::F32, {kvDim}},
                     {"b_o", bo.data(), ElementType::F32, {kModel}}});
    return params;
  }

  /// Runs `kernel` on the new tokens starting at `pos[b]` of each entry.
  std::string run(Kernel *kernel, int64_t tokens, std::vector<int32_t> pos,
                  std::vector<float> &y) {
    std::vector<float> input(kBatch * tokens * kModel, 0.0f);
    for (int64_t b = 0; b < kBatch; ++b)
      for (int64_t t = 0; t < tokens; ++t)
        if (pos[b] >= 0 && pos[b] + t < kSequence)
          std::memcpy(&input[(b * tokens + t) * kModel],
                      &x[(b * kSequence + pos[b] + t) * kModel],
                      kModel * sizeof(float));
    y.assign(kBatch * tokens * kModel, NAN);
    return message(kernel->run(
        {{"X", input.data(), ElementType::F32, {kBatch, tokens, kModel}},
         {"pos", pos.data(), ElementType::I32, {kBatch}},
         {"K", kCache.data(), ElementType::F32, {kBatch, kCacheRows, kvDim}},
         {"V", vCache.data(), ElementType::F32, {kBatch, kCacheRows, kvDim}},
         {"Y", y.data(), ElementType::F32, {kBatch, tokens, kModel}}}));
  }

  /// y (the new tokens' rows) against the full attention's rows pos[b] + t.
  void expectRows(const std::vector<float> &y, int64_t tokens,
                  const std::vector<int32_t> &pos) {
    for (int64_t b = 0; b < kBatch; ++b)
      for (int64_t t = 0; t < tokens; ++t)
        for (int64_t i = 0; i < kModel; ++i) {
          float want = expected[(b * kSequence + pos[b] + t) * kModel + i];
          float got = y[(b * tokens + t) * kModel + i];
          ASSERT_NEAR(got, want, 2e-5f * (1.0f + std::fabs(want)))
              << "entry " << b << ", token " << pos[b] + t << ", feature " << i;
        }
  }

  /// Whether cache row `row` of entry `b` is still all NaN (never written).
  bool untouched(const std::vector<float> &cache, int64_t b, int64_t row) {
    for (int64_t i = 0; i < kvDim; ++i)
      if (!std::isnan(cache[(b * kCacheRows + row) * kvDim + i]))
        return false;
    return true;
  }

  /// The build's shared test cache: the test bodies of one variant and
  /// pipeline (each a process of its own under ctest) compile its blocks
  /// once.
  Runtime *runtime = &test::sharedTestRuntime();
  std::vector<std::shared_ptr<Kernel>> kernels;
  Kernel *full = nullptr, *prefill = nullptr, *step = nullptr;
  int64_t kvDim = 0;
  std::vector<float> x = randomValues(kBatch * kSequence * kModel, 1),
                     wq = randomValues(kModel * kModel, 2),
                     wk = randomValues(kModel * kModel, 3),
                     wv = randomValues(kModel * kModel, 4),
                     wo = randomValues(kModel * kModel, 5),
                     bq = randomValues(kModel, 6), bk = randomValues(kModel, 7),
                     bv = randomValues(kModel, 8), bo = randomValues(kModel, 9);
  std::vector<float> kCache, vCache, expected;
};

TEST_P(KvCacheTest, PrefillThenStepsEqualCausalAttentionOverTheSequence) {
  std::vector<float> y;
  ASSERT_EQ(run(prefill, kPrefill, {0, 0}, y), "");
  expectRows(y, kPrefill, {0, 0});
  for (int64_t b = 0; b < kBatch; ++b)
    for (int64_t row = 0; row < kCacheRows; ++row)
      EXPECT_EQ(untouched(kCache, b, row), row >= kPrefill) << b << ", " << row;
  for (int32_t p = kPrefill; p < kSequence; ++p) {
    ASSERT_EQ(run(step, 1, {p, p}, y), "");
    expectRows(y, 1, {p, p});
  }
  for (int64_t b = 0; b < kBatch; ++b)
    for (int64_t row = 0; row < kCacheRows; ++row) {
      EXPECT_EQ(untouched(kCache, b, row), row >= kSequence);
      EXPECT_EQ(untouched(vCache, b, row), row >= kSequence);
    }
}

TEST_P(KvCacheTest, EntriesOfOneBatchMayBeAtDifferentPositions) {
  std::vector<float> y;
  ASSERT_EQ(run(prefill, kPrefill, {0, 0}, y), "");
  // Entry 1 goes back to position 2 (rewriting its own row 2): it sees
  // rows 0..2 only, whatever rows 3.. hold.
  ASSERT_EQ(run(step, 1, {kPrefill, 2}, y), "");
  expectRows(y, 1, {kPrefill, 2});
  // A prefill chunk at ragged offsets.
  ASSERT_EQ(run(prefill, kPrefill, {3, 0}, y), "");
  expectRows(y, kPrefill, {3, 0});
}

/// The runtime's message for position `value` of entry `entry` in a call
/// of `tokens` new tokens (KernelSignature::positions, checked before the
/// kernel runs; an object called without the runtime returns
/// NAME_STATUS_CACHE_POSITION instead: tests/lit/attnc/position-status.test
/// and samples/decode_host).
std::string positionError(int32_t value, int entry, int64_t tokens,
                          bool encoding) {
  std::string at = tokens == 1
                       ? std::string("1 token at position pos[b]")
                       : std::to_string(tokens) +
                             " tokens at positions pos[b] .. pos[b] + " +
                             std::to_string(tokens - 1);
  return "input 'pos': position " + std::to_string(value) + " at [" +
         std::to_string(entry) + "] is out of range: each call adds " + at +
         ", which must be in [0, " +
         std::to_string(encoding ? kEncodingRows : kCacheRows) + ") (" +
         (encoding ? "positional_encoding's max_len"
                   : "the rows of state 'K'") +
         "); nothing was run";
}

TEST_P(KvCacheTest, APositionOutOfRangeIsAnErrorThatWritesNothing) {
  const Variant &v = std::get<0>(GetParam());
  std::vector<float> y;
  ASSERT_EQ(run(prefill, kPrefill, {0, 0}, y), "");
  std::vector<float> kBefore = kCache, vBefore = vCache;
  struct Case {
    std::vector<int32_t> pos;
    int64_t tokens;
    int entry;
  };
  std::vector<Case> cases = {{{0, -1}, 1, 1},
                             {{kCacheRows, 0}, 1, 0},
                             {{0, kCacheRows - kPrefill + 1}, kPrefill, 1}};
  // With positional_encoding(X, offset=pos): in the cache, past the
  // encoding's table.
  if (v.encoding)
    cases.push_back({{0, kEncodingRows}, 1, 1});
  for (const Case &c : cases) {
    EXPECT_EQ(run(c.tokens == 1 ? step : prefill, c.tokens, c.pos, y),
              positionError(c.pos[c.entry], c.entry, c.tokens, v.encoding));
    EXPECT_EQ(std::memcmp(kBefore.data(), kCache.data(),
                          kCache.size() * sizeof(float)),
              0);
    EXPECT_EQ(std::memcmp(vBefore.data(), vCache.data(),
                          vCache.size() * sizeof(float)),
              0);
  }
  // The last rows are in range.
  int32_t last = static_cast<int32_t>(v.encoding ? kEncodingRows : kCacheRows);
  EXPECT_EQ(run(step, 1, {last - 1, 0}, y), "");
}

/// The positions the runtime checks: the cache's (and the encoding's),
/// through the disk cache's JSON too.
/// The signature does not depend on the pipeline: one each variant
/// (KvCacheSignatureTest's instantiation below).
using KvCacheSignatureTest = KvCacheTest;

TEST_P(KvCacheSignatureTest, ListsThePositionsTheRuntimeChecks) {
  const Variant &v = std::get<0>(GetParam());
  const KernelSignature &signature = prefill->signature();
  ASSERT_EQ(signature.positions.size(), v.encoding ? 2u : 1u);
  auto roundTrip = KernelSignature::fromJSON(signature.toJSON());
  ASSERT_TRUE(!!roundTrip) << llvm::toString(roundTrip.takeError());
  ASSERT_EQ(roundTrip->positions.size(), signature.positions.size());
  for (auto [mine, read] :
       llvm::zip(signature.positions, roundTrip->positions)) {
    EXPECT_EQ(signature.arguments[mine.argument].name, "pos");
    EXPECT_EQ(mine.tokens, kPrefill);
    EXPECT_EQ(mine.rows, mine.cache ? kCacheRows : kEncodingRows);
    if (mine.cache)
      EXPECT_EQ(signature.arguments[*mine.cache].name, "K");
    EXPECT_EQ(read.argument, mine.argument);
    EXPECT_EQ(read.rows, mine.rows);
    EXPECT_EQ(read.tokens, mine.tokens);
    EXPECT_EQ(read.cache, mine.cache);
  }
}

/// A bf16 (f16) cache under an f32 model holds the f32 cache's rows rounded
/// to nearest even, and the outputs are the f32 cache's within that
/// rounding.
TEST_P(KvCacheTest, ALowPrecisionCacheHoldsTheRoundedRows) {
  const auto &[v, pipeline] = GetParam();
  // Halide's pipeline list has a parallel one only; this test compiles
  // serial kernels of its own.
  if (pipeline.optLevel == 0 ||
      (pipeline.parallel && pipeline.backend != Backend::Halide))
    GTEST_SKIP() << "the other pipelines cover the conversions";
  for (ElementType type : {ElementType::BF16, ElementType::F16}) {
    std::string name = type == ElementType::BF16 ? "bf16" : "f16";
    std::string text = spec(v);
    for (std::string state : {"state K: f32", "state V: f32"})
      for (size_t at = text.find(state); at != std::string::npos;
           at = text.find(state, at + 1))
        text.replace(at + state.size() - 3, 3, name);
    CompileOptions options = Runtime::defaultOptions();
    options.target.cpu = pipeline.cpu;
    options.pipeline.parallel = false;
    if (pipeline.gpuEmulation)
      attnc::test::useGpuEmulation(options.pipeline);
    options.backend = pipeline.backend;
    auto narrow = runtime->compile(text, "kv.attn", "prefill", options);
    ASSERT_TRUE(!!narrow) << llvm::toString(narrow.takeError());
    ASSERT_EQ(message((*narrow)->bindParams(params())), "");
    std::vector<float> y;
    ASSERT_EQ(run(prefill, kPrefill, {0, 0}, y), "");
    std::vector<uint16_t> k16(kCache.size(), 0xffff),
        v16(vCache.size(), 0xffff);
    std::vector<float> y16(y.size(), NAN);
    std::vector<int32_t> pos = {0, 0};
    std::vector<float> input(kBatch * kPrefill * kModel);
    for (int64_t b = 0; b < kBatch; ++b)
      std::memcpy(&input[b * kPrefill * kModel],
                  &x[(b * kSequence + pos[b]) * kModel],
                  kPrefill * kModel * sizeof(float));
    ASSERT_EQ(
        message((*narrow)->run(
            {{"X", input.data(), ElementType::F32, {kBatch, kPrefill, kModel}},
             {"pos", pos.data(), ElementType::I32, {kBatch}},
             {"K", k16.data(), type, {kBatch, kCacheRows, kvDim}},
             {"V", v16.data(), type, {kBatch, kCacheRows, kvDim}},
             {"Y", y16.data(), ElementType::F32, {kBatch, kPrefill, kModel}}})),
        "");
    for (size_t i = 0; i < kCache.size(); ++i) {
      uint16_t want = 0xffff;
      if (!std::isnan(kCache[i]))
        want = type == ElementType::BF16 ? narrowToBf16(kCache[i])
                                         : narrowToF16(kCache[i]);
      ASSERT_EQ(k16[i], want) << name << " K element " << i;
      want = 0xffff;
      if (!std::isnan(vCache[i]))
        want = type == ElementType::BF16 ? narrowToBf16(vCache[i])
                                         : narrowToF16(vCache[i]);
      ASSERT_EQ(v16[i], want) << name << " V element " << i;
    }
    float tolerance = type == ElementType::BF16 ? 0.05f : 0.01f;
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_NEAR(y16[i], y[i], tolerance * (1.0f + std::fabs(y[i])))
          << name << " output " << i;
    kCache.assign(kCache.size(), NAN);
    vCache.assign(vCache.size(), NAN);
  }
}

/// return_weights with a cache: the weights [B * heads, T, L] over the
/// cache's rows are the whole sequence's rows pos[b] + t (D2L's causal
/// weights, which are 0 past the token), and exactly 0 for the rows past
/// the sequence.
TEST_P(KvCacheTest, TheWeightsOverTheCacheAreTheWholeSequences) {
  const auto &[v, pipeline] = GetParam();
  if (std::string(pipeline.attention) != "auto" || pipeline.optLevel == 0 ||
      std::string(pipeline.cpu) != "native")
    GTEST_SKIP() << "the other pipelines lower it as these do";
  // Halide's kernels take long to compile: the variants with a window (and
  // GQA, rope) and with positional_encoding's offset.
  if (pipeline.backend == Backend::Halide && !(v.rope && v.window) &&
      !v.encoding)
    GTEST_SKIP() << "the other variants cover Halide's weights";
  CompileOptions options = Runtime::defaultOptions();
  options.pipeline.parallel = pipeline.parallel;
  if (pipeline.gpuEmulation)
    attnc::test::useGpuEmulation(options.pipeline);
  options.backend = pipeline.backend;
  std::string text = spec(v, /*weights=*/true);
  std::vector<std::shared_ptr<Kernel>> withWeights;
  for (const char *name : {"full", "prefill", "step"}) {
    auto compiled = runtime->compile(text, "kv_weights.attn", name, options);
    ASSERT_TRUE(!!compiled) << llvm::toString(compiled.takeError());
    ASSERT_EQ(message((*compiled)->bindParams(params())), "");
    withWeights.push_back(*compiled);
  }
  int64_t rows = kBatch * kHeads;
  std::vector<float> y(kBatch * kSequence * kModel),
      whole(rows * kSequence * kSequence, NAN);
  ASSERT_EQ(message(withWeights[0]->run(
                {{"X", x.data(), ElementType::F32, {kBatch, kSequence, kModel}},
                 {"Y", y.data(), ElementType::F32, {kBatch, kSequence, kModel}},
                 {"A",
                  whole.data(),
                  ElementType::F32,
                  {rows, kSequence, kSequence}}})),
            "");
  // A prefill from position 0, then a step at position kPrefill.
  for (auto [kernel, tokens, at] :
       {std::tuple<Kernel *, int64_t, int32_t>{withWeights[1].get(), kPrefill,
                                               0},
        {withWeights[2].get(), 1, static_cast<int32_t>(kPrefill)}}) {
    std::vector<int32_t> pos(kBatch, at);
    std::vector<float> input(kBatch * tokens * kModel), out(input.size()),
        a(rows * tokens * kCacheRows, NAN);
    for (int64_t b = 0; b < kBatch; ++b)
      std::memcpy(&input[b * tokens * kModel],
                  &x[(b * kSequence + at) * kModel],
                  tokens * kModel * sizeof(float));
    ASSERT_EQ(
        message(kernel->run(
            {{"X", input.data(), ElementType::F32, {kBatch, tokens, kModel}},
             {"pos", pos.data(), ElementType::I32, {kBatch}},
             {"K",
              kCache.data(),
              ElementType::F32,
              {kBatch, kCacheRows, kvDim}},
             {"V",
              vCache.data(),
              ElementType::F32,
              {kBatch, kCacheRows, kvDim}},
             {"Y", out.data(), ElementType::F32, {kBatch, tokens, kModel}},
             {"A", a.data(), ElementType::F32, {rows, tokens, kCacheRows}}})),
        "");
    for (int64_t n = 0; n < rows; ++n)
      for (int64_t t = 0; t < tokens; ++t)
        for (int64_t j = 0; j < kCacheRows; ++j) {
          float got = a[(n * tokens + t) * kCacheRows + j];
          if (j >= kSequence) {
            ASSERT_EQ(got, 0.0f)
                << "row " << n << ", token " << at + t << ", cache row " << j;
            continue;
          }
          float want = whole[(n * kSequence + at + t) * kSequence + j];
          ASSERT_NEAR(got, want, 2e-6f)
              << "row " << n << ", token " << at + t << ", cache row " << j;
        }
  }
}

TEST_P(KvCacheTest, OneAndTwoThreadsGiveTheSameBits) {
  const Pipeline &pipeline = std::get<1>(GetParam());
  if (!pipeline.parallel)
    GTEST_SKIP() << "a serial kernel runs on the calling thread";
  std::vector<float> y1, y2;
  std::vector<float> kStart = kCache, vStart = vCache;
  unsigned threads = runtime->numThreads();
  runtime->setNumThreads(1);
  ASSERT_EQ(run(prefill, kPrefill, {0, 3}, y1), "");
  std::vector<float> k1 = kCache, v1 = vCache;
  kCache = kStart;
  vCache = vStart;
  runtime->setNumThreads(2);
  ASSERT_EQ(run(prefill, kPrefill, {0, 3}, y2), "");
  runtime->setNumThreads(threads);
  EXPECT_EQ(std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(k1.data(), kCache.data(), k1.size() * sizeof(float)),
            0);
  EXPECT_EQ(std::memcmp(v1.data(), vCache.data(), v1.size() * sizeof(float)),
            0);
}

/// Every pipeline in the default tier; in the sanitize tier (which
/// instruments attnc, not its kernels) one per compiler path: the CPU's
/// with threads, and the GPU's.
const Pipeline kPipelines[] = {
#ifndef ATTNC_SANITIZE_TIER
    Pipeline{"O2", 2, "native", false, false},
    Pipeline{"O0", 0, "native", false, false},
    Pipeline{"O2_avx2", 2, "x86-64-v3", false, false},
    Pipeline{"O2_fused_parallel", 2, "native", true, false, "fused"},
    Pipeline{"gpu_emulation_fused", 2, "native", false, true, "fused"},
#endif
    Pipeline{"O2_parallel", 2, "native", true, false},
    Pipeline{"gpu_emulation", 2, "native", false, true},
};

const Variant kVariants[] = {
    Variant{"mha", kHeads, false, 0, false},
    Variant{"gqa_rope", 2, true, 0, false},
    Variant{"mqa_window_biases", 1, false, 3, true},
    Variant{"gqa_rope_window", 2, true, 4, true},
    Variant{"mha_positional_encoding", kHeads, false, 0, true, true}};

std::string
caseName(const ::testing::TestParamInfo<std::tuple<Variant, Pipeline>> &info) {
  return std::string(std::get<0>(info.param).name) + "_" +
         std::get<1>(info.param).name;
}

INSTANTIATE_TEST_SUITE_P(Variants, KvCacheTest,
                         ::testing::Combine(::testing::ValuesIn(kVariants),
                                            ::testing::ValuesIn(kPipelines)),
                         caseName);

INSTANTIATE_TEST_SUITE_P(Variants, KvCacheSignatureTest,
                         ::testing::Combine(::testing::ValuesIn(kVariants),
                                            ::testing::Values(kPipelines[0])),
                         caseName);

#ifndef ATTNC_SANITIZE_TIER
/// The Halide backend's (docs/halide.md) when this attnc has it, its
/// parallel schedule only: the serial one differs in the loops it marks
/// parallel alone (HalideSchedule.cpp), and OneAndTwoThreadsGiveTheSameBits
/// runs this one on one thread too.
std::vector<Pipeline> halidePipelines() {
  if (!haveHalideBackend())
    return {};
  return {Pipeline{"halide_parallel", 2, "native", true, false, "auto",
                   Backend::Halide}};
}

INSTANTIATE_TEST_SUITE_P(
    Halide, KvCacheTest,
    ::testing::Combine(::testing::ValuesIn(kVariants),
                       ::testing::ValuesIn(halidePipelines())),
    caseName);
#endif

} // namespace
