//===- AotGoldenTest.cpp - AOT objects against the D2L PyTorch goldens ----===//
//
// Each golden case was compiled at build time by attnc_add_kernel into an
// object and a header. The kernels are called here through the objects'
// symbols: every case through its packed entry, and the book's case through
// the C prototype of its generated header (the ABI of SPEC §5).
//
//===----------------------------------------------------------------------===//

#include "GoldenCase.h"

#include "golden_mha_book_1d.h"

#include "gtest/gtest.h"

#include <cmath>
#include <map>

using namespace attnc::test;

#define ATTNC_AOT_KERNEL(name) extern "C" int __attnc_packed_##name(void **);
#include "AotKernels.inc"
#undef ATTNC_AOT_KERNEL

namespace {

const std::map<std::string, int (*)(void **)> &aotKernels() {
  static const std::map<std::string, int (*)(void **)> kernels = {
#define ATTNC_AOT_KERNEL(name) {#name, &__attnc_packed_##name},
#include "AotKernels.inc"
#undef ATTNC_AOT_KERNEL
  };
  return kernels;
}

struct AotGolden : ::testing::TestWithParam<std::string> {};

TEST_P(AotGolden, MatchesPyTorch) {
  const std::string &name = GetParam();
  auto golden = loadGoldenCase(name);
  ASSERT_TRUE(!!golden) << llvm::toString(golden.takeError());
  auto kernel = aotKernels().find(name);
  ASSERT_NE(kernel, aotKernels().end()) << "no AOT kernel for " << name;
  std::vector<std::vector<float>> outputs = golden->makeOutputs();
  std::vector<void *> pointers = golden->pointers(outputs);
  ASSERT_EQ(kernel->second(pointers.data()), 0);
  double worst = golden->maxError(outputs);
  EXPECT_FALSE(std::isnan(worst)) << name << ": NaN in the output";
  EXPECT_LE(worst, golden->tolerance) << name;
}

INSTANTIATE_TEST_SUITE_P(Goldens, AotGolden,
                         ::testing::ValuesIn(goldenCaseNames()),
                         [](const auto &info) { return info.param; });

// The generated header's prototype and constants, called as a C user would.
TEST(AotHeader, BookCaseThroughThePrototype) {
  auto golden = loadGoldenCase("mha_book_1d");
  ASSERT_TRUE(!!golden) << llvm::toString(golden.takeError());
  static_assert(MHA_BOOK_1D_B == 2 && MHA_BOOK_1D_T == 4 &&
                    MHA_BOOK_1D_D == 100,
                "the header gives the book's dims");
  const int64_t xShape[] = MHA_BOOK_1D_X_SHAPE;
  EXPECT_EQ(xShape[2], 100);
  std::vector<std::vector<float>> outputs = golden->makeOutputs();
  std::vector<void *> p = golden->pointers(outputs);
  ASSERT_EQ(p.size(), 7u);
  int status = mha_book_1d(
      static_cast<const float *>(p[0]), static_cast<const int32_t *>(p[1]),
      static_cast<const float *>(p[2]), static_cast<const float *>(p[3]),
      static_cast<const float *>(p[4]), static_cast<const float *>(p[5]),
      static_cast<float *>(p[6]));
  ASSERT_EQ(status, 0);
  EXPECT_LE(golden->maxError(outputs), golden->tolerance);
}

} // namespace
