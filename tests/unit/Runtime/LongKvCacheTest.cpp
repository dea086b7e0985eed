//===- LongKvCacheTest.cpp - The decode kernel over many chunks of keys ---===//
//
// A step (or a chunk of a prefill) over a cache of several of the decode
// kernel's chunks of keys (attn.decode_attention, the target's decodeKeys:
// its partial results reduced across chunks), against the same block
// compiled step by step (attention=decomposed: the masked softmax over the
// whole cache). Rows past the new tokens hold NaN and must not matter;
// 1 and 2 threads give the same bits.
//
//===----------------------------------------------------------------------===//

#include "../../e2e/TestSupport.h"
#include "GpuEmulation.h"
#include "attn/Target/FloatConversions.h"
#include "attnc/Runtime/Runtime.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>

using namespace attnc;

namespace {

constexpr int64_t kBatch = 2, kModel = 128, kHeads = 4, kCacheRows = 1100;
/// The most new tokens of a case (X's values are the first of these).
constexpr int64_t kMaxTokens = 70;

struct LongCase {
  const char *name;
  int64_t kvHeads;
  int64_t tokens;
  int64_t window; // 0: none
  bool rope;
  ElementType cache;
  /// Each entry's position (the rows before it hold the history).
  int32_t pos[kBatch];
  /// W_k = -W_q, scaled up: every visible score far below -1e6 (D2L's
  /// masked score), where only exact exclusion of the other rows keeps
  /// them out of the softmax.
  bool hugeNegativeScores = false;
  /// X, the weights and Y of the cache's type too: a block computed in
  /// bf16/f16, whose attention takes products(bf16/f16) (with a bf16
  /// cache, the kernel's blocks of keys on vdpbf16ps where the CPU has it).
  bool lowPrecisionBlock = false;
  /// D and the query heads. A step's query rows are D / 16 vectors: 8 at
  /// D = 128 (pass 3's accumulators in registers), 32 at D = 512 (more
  /// than the registers: in memory, as GPT-2's 48).
  int64_t model = kModel;
  int64_t heads = kHeads;
};

/// `values` rounded to `type` (f32: as they are), as bytes.
std::vector<uint8_t> bytesOf(const std::vector<float> &values,
                             ElementType type) {
  size_t width = type == ElementType::F32 ? 4 : 2;
  std::vector<uint8_t> bytes(values.size() * width);
  for (size_t i = 0; i < values.size(); ++i) {
    if (width == 4) {
      std::memcpy(&bytes[4 * i], &values[i], 4);
      continue;
    }
    uint16_t narrow = mlir::attn::narrowTo(type, values[i]);
    std::memcpy(&bytes[2 * i], &narrow, 2);
  }
  return bytes;
}

std::string spec(const LongCase &c) {
  int64_t kvDim = c.model / c.heads * c.kvHeads;
  const char *type = c.cache == ElementType::BF16  ? "bf16"
                     : c.cache == ElementType::F16 ? "f16"
                                                   : "f32";
  std::string call =
      "multihead_attention(X, X, X, heads=" + std::to_string(c.heads) +
      ", w_q=W_q, w_k=W_k, w_v=W_v, w_o=W_o, cache_k=K, "
      "cache_v=V, cache_pos=pos";
  if (c.kvHeads != c.heads)
    call += ", kv_heads=" + std::to_string(c.kvHeads);
  if (c.window)
    call += ", window=" + std::to_string(c.window);
  if (c.rope)
    call += ", rope=true";
  std::string io = c.lowPrecisionBlock ? type : "f32";
  return "block step {\n  dim B = " + std::to_string(kBatch) +
         ", T = " + std::to_string(c.tokens) +
         ", D = " + std::to_string(c.model) +
         ", L = " + std::to_string(kCacheRows) +
         ", E = " + std::to_string(kvDim) + "\n  input X: " + io +
         "[B, T, D]\n  input pos: i32[B]\n  state K: " + type +
         "[B, L, E]\n  state V: " + type + "[B, L, E]\n  param W_q: " + io +
         "[D, D]\n  param W_k: " + io + "[E, D]\n  param W_v: " + io +
         "[E, D]\n  param W_o: " + io + "[D, D]\n  Y = " + call +
         ")\n  output Y\n}\n";
}

using test::randomValues;

std::string message(llvm::Error error) {
  return test::errorMessage(std::move(error));
}

class LongKvCacheTest : public ::testing::TestWithParam<LongCase> {
protected:
  void SetUp() override {
    const LongCase &c = GetParam();
    model = c.model;
    kvDim = model / c.heads * c.kvHeads;
    x = randomValues(kBatch * kMaxTokens * model, 1, 1.0f);
    wq = randomValues(model * model, 2, 0.3f);
    wk = randomValues(model * model, 3, 0.3f);
    wv = randomValues(model * model, 4, 0.3f);
    wo = randomValues(model * model, 5, 0.3f);
    std::string text = spec(c);
    CompileOptions options = Runtime::defaultOptions();
    options.pipeline.parallel = true;
    auto kernel = runtime->compile(text, "long.attn", "step", options);
    ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
    options.pipeline.parallel = false;
    options.pipeline.attention = "decomposed";
    auto reference = runtime->compile(text, "long.attn", "step", options);
    ASSERT_TRUE(!!reference) << llvm::toString(reference.takeError());
    if (c.hugeNegativeScores) {
      ASSERT_EQ(kvDim, model);
      for (size_t i = 0; i < wq.size(); ++i) {
        wq[i] *= 500.0f;
        wk[i] = -wq[i];
      }
    }
    decode = *kernel;
    stepByStep = *reference;
    io = c.lowPrecisionBlock ? c.cache : ElementType::F32;
    weights = {bytesOf(wq, io), bytesOf(wk, io), bytesOf(wv, io),
               bytesOf(wo, io)};
    std::vector<HostBuffer> params = {
        {"W_q", weights[0].data(), io, {model, model}},
        {"W_k", weights[1].data(), io, {kvDim, model}},
        {"W_v", weights[2].data(), io, {kvDim, model}},
        {"W_o", weights[3].data(), io, {model, model}}};
    for (Kernel *k : {decode.get(), stepByStep.get()})
      ASSERT_EQ(message(k->bindParams(params)), "");
  }

  /// The caches as the kernel's element type (bytes): the history rows
  /// before each entry's position random, the rest NaN (never written).
  std::vector<uint8_t> history(unsigned seed) {
    const LongCase &c = GetParam();
    std::vector<float> values =
        randomValues(kBatch * kCacheRows * kvDim, seed, 1.0f);
    for (int64_t b = 0; b < kBatch; ++b)
      for (int64_t row = c.pos[b]; row < kCacheRows; ++row)
        for (int64_t i = 0; i < kvDim; ++i)
          values[(b * kCacheRows + row) * kvDim + i] = NAN;
    return bytesOf(values, c.cache);
  }

  /// One call of `kernel` on fresh copies of the caches: its output.
  std::vector<float> run(Kernel *kernel) {
    const LongCase &c = GetParam();
    std::vector<uint8_t> k = history(10), v = history(11);
    std::vector<int32_t> pos(c.pos, c.pos + kBatch);
    std::vector<float> y(kBatch * c.tokens * model, NAN);
    std::vector<uint8_t> xBytes = bytesOf(x, io), yBytes = bytesOf(y, io);
    EXPECT_EQ(message(kernel->run(
                  {{"X", xBytes.data(), io, {kBatch, c.tokens, model}},
                   {"pos", pos.data(), ElementType::I32, {kBatch}},
                   {"K", k.data(), c.cache, {kBatch, kCacheRows, kvDim}},
                   {"V", v.data(), c.cache, {kBatch, kCacheRows, kvDim}},
                   {"Y", yBytes.data(), io, {kBatch, c.tokens, model}}})),
              "");
    for (size_t i = 0; i < y.size(); ++i) {
      if (io == ElementType::F32) {
        std::memcpy(&y[i], &yBytes[4 * i], 4);
        continue;
      }
      uint16_t bits;
      std::memcpy(&bits, &yBytes[2 * i], 2);
      y[i] = mlir::attn::widenFrom(io, bits);
    }
    return y;
  }

  Runtime *runtime = &test::sharedTestRuntime();
  std::shared_ptr<Kernel> decode, stepByStep;
  int64_t kvDim = 0;
  /// X's, the weights' and Y's type, and the weights as bound.
  ElementType io = ElementType::F32;
  std::vector<std::vector<uint8_t>> weights;
  int64_t model = kModel;
  std::vector<float> x, wq, wk, wv, wo;
};

TEST_P(LongKvCacheTest, EqualsTheStepByStepAttentionOverTheWholeCache) {
  std::vector<float> want = run(stepByStep.get());
  std::vector<float> got = run(decode.get());
  if (GetParam().hugeNegativeScores) {
    // Each token's rows only: not the mean of the others' (zeroed) values.
    double largest = 0;
    for (float y : want)
      largest = std::max(largest, double(std::fabs(y)));
    ASSERT_GT(largest, 1e-2);
  }
  // A bf16/f16 block's sums in another order may round Y to the next
  // bf16/f16 value: a few of its ulps.
  float tolerance = GetParam().lowPrecisionBlock ? 2e-2f : 2e-5f;
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tolerance * (1.0f + std::fabs(want[i])))
        << "element " << i;
}

/// The GPU's decode kernel (attn-gpu-lower-decode-attention: a warp per
/// row, the chunks combined by a launch of their own), each thread run in
/// turn on this CPU.
TEST_P(LongKvCacheTest, TheGpuKernelEqualsTheStepByStepAttention) {
  const LongCase &c = GetParam();
  CompileOptions options = Runtime::defaultOptions();
  attnc::test::useGpuEmulation(options.pipeline);
  auto kernel = runtime->compile(spec(c), "long.attn", "step", options);
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  ASSERT_EQ(message((*kernel)->bindParams(
                {{"W_q", weights[0].data(), io, {model, model}},
                 {"W_k", weights[1].data(), io, {kvDim, model}},
                 {"W_v", weights[2].data(), io, {kvDim, model}},
                 {"W_o", weights[3].data(), io, {model, model}}})),
            "");
  std::vector<float> want = run(stepByStep.get());
  std::vector<float> got = run(kernel->get());
  float tolerance = c.lowPrecisionBlock ? 2e-2f : 2e-5f;
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tolerance * (1.0f + std::fabs(want[i])))
        << "element " << i;
}

TEST_P(LongKvCacheTest, OneAndTwoThreadsGiveTheSameBits) {
  int threads = runtime->numThreads();
  runtime->setNumThreads(1);
  std::vector<float> one = run(decode.get());
  runtime->setNumThreads(2);
  std::vector<float> two = run(decode.get());
  runtime->setNumThreads(threads);
  EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)), 0);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, LongKvCacheTest,
    ::testing::Values(
        // One token at the cache's last row and in its second chunk.
        LongCase{
            "mha_step", kHeads, 1, 0, false, ElementType::F32, {1099, 300}},
        // A chunk of three tokens across a chunk boundary, GQA, rope and a
        // window that starts inside an earlier chunk.
        LongCase{"gqa_rope_window_prefill",
                 2,
                 3,
                 300,
                 true,
                 ElementType::F32,
                 {510, 1000}},
        // MQA on a bf16 cache, a window of one chunk's size.
        LongCase{
            "mqa_bf16_window", 1, 1, 256, false, ElementType::BF16, {767, 0}},
        LongCase{
            "gqa_f16_prefill", 2, 4, 0, false, ElementType::F16, {254, 1096}},
        // A block computed in bf16 (products(bf16)): GQA, rope, a step
        // and 3 chunks of history.
        LongCase{"bf16_block_gqa_rope",
                 2,
                 1,
                 0,
                 true,
                 ElementType::BF16,
                 {1099, 700},
                 false,
                 true},
        // Each token sees only its own row (window 1), at a score below
        // -1e6: the other rows still weigh 0.
        LongCase{"huge_negative_scores_window",
                 kHeads,
                 2,
                 1,
                 false,
                 ElementType::F32,
                 {800, 20},
                 true},
        // A prompt's prefill (every entry at 0, at least attn-decompose's
        // prefill-flash-rows tokens): the flash kernel on the rows it
        // wrote. GQA, rope and a window; a bf16 block; own rows only at
        // scores below -1e6 (the flash kernel's exact recompute, masked
        // keys excluded); and one entry not at 0 (the decode kernel).
        LongCase{"prompt_prefill_gqa_rope_window",
                 2,
                 70,
                 20,
                 true,
                 ElementType::F32,
                 {0, 0}},
        LongCase{"prompt_prefill_bf16_block",
                 2,
                 64,
                 0,
                 true,
                 ElementType::BF16,
                 {0, 0},
                 false,
                 true},
        LongCase{"prompt_prefill_huge_negative_scores",
                 kHeads,
                 64,
                 1,
                 false,
                 ElementType::F32,
                 {0, 0},
                 true},
        LongCase{"long_prefill_not_from_start",
                 kHeads,
                 64,
                 0,
                 false,
                 ElementType::F32,
                 {0, 3}},
        // A step of a block whose query rows are more vectors than
        // registers, one row per kv head (pass 3 one value row at a time,
        // its accumulators in memory): 8 heads of 64 on an f32 cache, 16
        // of 32 on a bf16 one with a window.
        LongCase{"mha_wide_step",
                 8,
                 1,
                 0,
                 false,
                 ElementType::F32,
                 {1099, 513},
                 false,
                 false,
                 512,
                 8},
        LongCase{"mha_wide_bf16_window",
                 16,
                 1,
                 300,
                 false,
                 ElementType::BF16,
                 {1000, 257},
                 false,
                 false,
                 512,
                 16}),
    [](const ::testing::TestParamInfo<LongCase> &info) {
      return std::string(info.param.name);
    });

} // namespace
