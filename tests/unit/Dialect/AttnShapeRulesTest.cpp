//===- AttnShapeRulesTest.cpp - The shared op rules, without MLIR ---------===//

#include "attn/IR/AttnShapeRules.h"

#include "gtest/gtest.h"

#include <optional>
#include <string>
#include <vector>

using namespace mlir::attn::rules;

namespace {

TensorShape f32(std::initializer_list<int64_t> dims) {
  return {mlir::attn::ElementType::F32, dims};
}
TensorShape i32(std::initializer_list<int64_t> dims) {
  return {mlir::attn::ElementType::I32, dims};
}

/// Records every reported (argument, message) pair.
struct Errors {
  std::vector<std::pair<std::string, std::string>> list;
  auto callback() {
    return [this](llvm::StringRef argument, const llvm::Twine &message) {
      list.emplace_back(argument.str(), message.str());
    };
  }
};

TEST(AttnShapeRules, FormatShapeSpellsLikeTheDsl) {
  EXPECT_EQ(formatShape(f32({2, 4, 100})), "f32[2, 4, 100]");
  EXPECT_EQ(formatShape(i32({})), "i32[]");
}

TEST(AttnShapeRules, LinearReplacesTheLastDim) {
  Errors errors;
  TensorShape b = f32({50});
  RuleResult r =
      inferLinear(f32({2, 4, 100}), f32({50, 100}), &b, errors.callback());
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, f32({2, 4, 50}));
  EXPECT_TRUE(errors.list.empty());
}

TEST(AttnShapeRules, LinearNamesTheWeightOnMismatch) {
  Errors errors;
  EXPECT_FALSE(
      inferLinear(f32({2, 4, 100}), f32({50, 99}), nullptr, errors.callback()));
  ASSERT_EQ(errors.list.size(), 1u);
  EXPECT_EQ(errors.list[0].first, "w");
  EXPECT_EQ(errors.list[0].second,
            "'w' must be f32[O, 100] to match the last dimension of 'x' "
            "(f32[2, 4, 100]), got f32[50, 99]");
}

TEST(AttnShapeRules, MultiheadAttentionOfTheBook) {
  Errors errors;
  TensorShape x = f32({2, 4, 100}), w = f32({100, 100}), vl = i32({2});
  RuleResult r = inferMultiheadAttention(
      x, x, x, w, w, w, w, &vl, nullptr, nullptr, nullptr, nullptr, nullptr,
      nullptr, nullptr, 5, kNotGiven, false, kNotGiven, false, kDefaultRopeBase,
      false, errors.callback());
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, f32({2, 4, 100}));
}

TEST(AttnShapeRules, HeadsMustDivideTheHiddenSize) {
  Errors errors;
  TensorShape x = f32({2, 4, 100}), w = f32({100, 100});
  EXPECT_FALSE(inferMultiheadAttention(
      x, x, x, w, w, w, w, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
      nullptr, nullptr, 7, kNotGiven, false, kNotGiven, false, kDefaultRopeBase,
      false, errors.callback()));
  ASSERT_EQ(errors.list.size(), 1u);
  EXPECT_EQ(errors.list[0].first, "heads");
  EXPECT_EQ(errors.list[0].second,
            "heads=7 does not divide the model dimension 100 (hidden size of "
            "'w_q')");
}

TEST(AttnShapeRules, ValidLensMayBeOneOrTwoDimensional) {
  Errors errors;
  TensorShape s = f32({10, 4, 6});
  EXPECT_TRUE(inferMaskedSoftmax(s, i32({10}), errors.callback()));
  EXPECT_TRUE(inferMaskedSoftmax(s, i32({10, 4}), errors.callback()));
  EXPECT_TRUE(errors.list.empty());
  EXPECT_FALSE(inferMaskedSoftmax(s, i32({10, 6}), errors.callback()));
  EXPECT_FALSE(inferMaskedSoftmax(s, f32({10}), errors.callback()));
  EXPECT_FALSE(inferMaskedSoftmax(s, i32({10, 4, 1}), errors.callback()));
  ASSERT_EQ(errors.list.size(), 3u);
  for (const auto &[argument, message] : errors.list)
    EXPECT_EQ(argument, "valid_lens") << message;
}

TEST(AttnShapeRules, SplitAndMergeHeadsAreInverse) {
  Errors errors;
  RuleResult split = inferSplitHeads(f32({2, 4, 100}), 5, errors.callback());
  ASSERT_TRUE(split);
  EXPECT_EQ(*split, f32({10, 4, 20}));
  RuleResult merged = inferMergeHeads(*split, 5, errors.callback());
  ASSERT_TRUE(merged);
  EXPECT_EQ(*merged, f32({2, 4, 100}));
}

TEST(AttnShapeRules, PositionalEncodingLimits) {
  Errors errors;
  EXPECT_TRUE(inferPositionalEncoding(f32({1, 1000, 32}), nullptr,
                                      kDefaultMaxLen, errors.callback()));
  EXPECT_FALSE(inferPositionalEncoding(f32({1, 1001, 32}), nullptr,
                                       kDefaultMaxLen, errors.callback()));
  EXPECT_FALSE(inferPositionalEncoding(f32({1, 4, 33}), nullptr, 1000,
                                       errors.callback()));
  ASSERT_EQ(errors.list.size(), 2u);
  EXPECT_EQ(errors.list[0].second,
            "sequence length T=1001 exceeds max_len=1000");
  EXPECT_EQ(errors.list[1].first, "x");
}

TEST(AttnShapeRules, PositionalEncodingOffsetIsOnePositionPerEntry) {
  Errors errors;
  TensorShape pos = i32({2}), wrong = i32({3}), floats = f32({2}),
              matrix = i32({2, 1});
  EXPECT_TRUE(inferPositionalEncoding(f32({2, 1, 32}), &pos, kDefaultMaxLen,
                                      errors.callback()));
  EXPECT_FALSE(inferPositionalEncoding(f32({2, 1, 32}), &wrong, kDefaultMaxLen,
                                       errors.callback()));
  EXPECT_FALSE(inferPositionalEncoding(f32({2, 1, 32}), &floats, kDefaultMaxLen,
                                       errors.callback()));
  EXPECT_FALSE(inferPositionalEncoding(f32({2, 1, 32}), &matrix, kDefaultMaxLen,
                                       errors.callback()));
  ASSERT_EQ(errors.list.size(), 3u);
  EXPECT_EQ(errors.list[0].first, "offset");
  EXPECT_EQ(errors.list[0].second,
            "'offset' must be i32[2], one position per entry of x "
            "(f32[2, 1, 32]), got i32[3]");
  EXPECT_EQ(errors.list[1].first, "offset");
  EXPECT_EQ(errors.list[2].first, "offset");
}

TEST(AttnShapeRules, HugeTensorsAreRejectedWithoutOverflow) {
  Errors errors;
  EXPECT_FALSE(inferElementwiseUnary(f32({int64_t(1) << 30, int64_t(1) << 30}),
                                     errors.callback()));
  EXPECT_FALSE(inferSplitHeads(f32({int64_t(1) << 39, 1, 2}), int64_t(1) << 40,
                               errors.callback()));
  EXPECT_EQ(errors.list.size(), 2u);
}

TEST(AttnShapeRules, DropoutProbabilityRange) {
  Errors errors;
  EXPECT_TRUE(inferDropout(f32({3}), 0.0, errors.callback()));
  EXPECT_FALSE(inferDropout(f32({3}), 1.0, errors.callback()));
  EXPECT_FALSE(inferDropout(f32({3}), -0.5, errors.callback()));
  ASSERT_EQ(errors.list.size(), 2u);
  EXPECT_EQ(errors.list[0].second, "dropout probability p=1 must be in [0, 1)");
}

TEST(AttnShapeRules, FfnChecksBothLayers) {
  Errors errors;
  RuleResult r = inferFfn(f32({2, 4, 32}), f32({64, 32}), f32({64}),
                          f32({16, 64}), f32({16}), errors.callback());
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, f32({2, 4, 16}));
  EXPECT_FALSE(inferFfn(f32({2, 4, 32}), f32({64, 32}), f32({64}),
                        f32({16, 63}), f32({16}), errors.callback()));
  ASSERT_EQ(errors.list.size(), 1u);
  EXPECT_EQ(errors.list[0].first, "w2");
}

} // namespace

namespace {

/// NumPy's broadcast shape of `a` and `b`, or nullopt (with one error).
std::optional<std::vector<int64_t>>
broadcastOf(std::initializer_list<int64_t> a, std::initializer_list<int64_t> b,
            Errors &errors) {
  RuleResult r = inferElementwiseBinary(f32(a), f32(b), errors.callback());
  if (!r)
    return std::nullopt;
  return std::vector<int64_t>(r->dims.begin(), r->dims.end());
}

TEST(AttnShapeRules, ElementwiseBinaryBroadcastsLikeNumPy) {
  Errors errors;
  using Dims = std::vector<int64_t>;
  EXPECT_EQ(broadcastOf({2, 3, 4}, {2, 3, 4}, errors), Dims({2, 3, 4}));
  EXPECT_EQ(broadcastOf({1, 3, 4}, {2, 3, 4}, errors), Dims({2, 3, 4}));
  EXPECT_EQ(broadcastOf({4}, {2, 3, 4}, errors), Dims({2, 3, 4}));
  EXPECT_EQ(broadcastOf({2, 3, 1}, {4}, errors), Dims({2, 3, 4}));
  EXPECT_EQ(broadcastOf({2, 1, 4}, {1, 3, 1}, errors), Dims({2, 3, 4}));
  EXPECT_EQ(broadcastOf({}, {2, 3}, errors), Dims({2, 3}));
  EXPECT_EQ(broadcastOf({1}, {}, errors), Dims({1}));
  // A size-1 axis against a size-1 axis stays 1.
  EXPECT_EQ(broadcastOf({1, 1}, {1}, errors), Dims({1, 1}));
  EXPECT_TRUE(errors.list.empty());
}

TEST(AttnShapeRules, ElementwiseBinaryNamesTheAxisThatCannotBroadcast) {
  Errors errors;
  EXPECT_FALSE(broadcastOf({5, 3, 4}, {2, 1, 4}, errors));
  ASSERT_EQ(errors.list.size(), 1u);
  EXPECT_EQ(errors.list[0].first, "b");
  EXPECT_EQ(errors.list[0].second,
            "operands cannot be broadcast together: 'a' is f32[5, 3, 4], 'b' "
            "is f32[2, 1, 4] (axis -3: 5 vs 2; sizes must be equal or 1)");
}

TEST(AttnShapeRules, BroadcastResultWithinTheElementLimit) {
  // Each operand is within 2^40 elements, their broadcast is not.
  Errors errors;
  EXPECT_FALSE(
      broadcastOf({int64_t(1) << 30, 1}, {1, int64_t(1) << 20}, errors));
  ASSERT_EQ(errors.list.size(), 1u);
  EXPECT_NE(errors.list[0].second.find("its result would be"),
            std::string::npos);
}

TEST(AttnShapeRules, RmsNormChecksGammaAndEps) {
  Errors errors;
  TensorShape x = f32({2, 8});
  EXPECT_EQ(inferRmsNorm(x, f32({8}), 1e-6, errors.callback()), x);
  EXPECT_FALSE(inferRmsNorm(x, f32({4}), 1e-6, errors.callback()));
  EXPECT_FALSE(inferRmsNorm(x, f32({8}), -1, errors.callback()));
  EXPECT_FALSE(inferRmsNorm(f32({}), f32({8}), 1e-6, errors.callback()));
  ASSERT_EQ(errors.list.size(), 3u);
  EXPECT_EQ(errors.list[0].first, "gamma");
  EXPECT_EQ(errors.list[1].first, "eps");
  EXPECT_EQ(errors.list[2].first, "x");
}

} // namespace
