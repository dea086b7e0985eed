//===- AotGoldenTest.cpp - AOT objects against the D2L PyTorch goldens ----===//
//
// Each golden case was compiled at build time by attnc_add_kernel into an
// object and a header (libc only, --parallel against attnc_rt, multi-ISA,
// or by the Halide backend: this file is built once for each, see
// CMakeLists.txt). The kernels are called here through the objects'
// symbols: every case through its packed entry, and the book's case through
// the C prototype of its generated header (the ABI of docs/spec.md §5). The
// Halide backend's objects are called through the MLIR backend's headers, which
// they must match unchanged.
//
//===----------------------------------------------------------------------===//

#include "GoldenCase.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <map>

using namespace attnc::test;

/// The code generator of the objects (attnc_add_kernel's BACKEND).
constexpr const char *kBackend = ATTNC_AOT_BACKEND;

#include "AotHeaders.inc"

#define ATTNC_AOT_KERNEL(name, NAME)                                           \
  extern "C" int attnc_packed_##name(void **);                                 \
  extern "C" int attnc_packed_##name##_prepare(void **);                       \
  extern "C" int attnc_packed_##name##_prepared(void **);
#include "AotKernels.inc"
#undef ATTNC_AOT_KERNEL

namespace {

/// A kernel's packed entries, and the size of its prepared params.
struct AotKernel {
  int (*kernel)(void **);
  int (*prepare)(void **);
  int (*prepared)(void **);
  int64_t packedBytes;
};

const std::map<std::string, AotKernel> &aotKernels() {
  static const std::map<std::string, AotKernel> kernels = {
#define ATTNC_AOT_KERNEL(name, NAME)                                           \
  {#name,                                                                      \
   {&attnc_packed_##name, &attnc_packed_##name##_prepare,                      \
    &attnc_packed_##name##_prepared, NAME##_PACKED_BYTES}},
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
  Buffers outputs = golden->makeOutputs();
  std::vector<void *> pointers = golden->pointers(outputs);
  ASSERT_EQ(kernel->second.kernel(pointers.data()), 0) << kBackend << " object";
  EXPECT_EQ(golden->mismatches(outputs), "") << kBackend << " object";
}

/// NAME_prepare once, then NAME_prepared: what NAME gives, bit for bit.
TEST_P(AotGolden, PreparedParamsGiveTheSameBits) {
  const std::string &name = GetParam();
  auto golden = loadGoldenCase(name);
  ASSERT_TRUE(!!golden) << llvm::toString(golden.takeError());
  auto kernel = aotKernels().find(name);
  ASSERT_NE(kernel, aotKernels().end()) << "no AOT kernel for " << name;
  const AotKernel &entries = kernel->second;
  Buffers plain = golden->makeOutputs();
  std::vector<void *> pointers = golden->pointers(plain);
  ASSERT_EQ(entries.kernel(pointers.data()), 0) << kBackend << " object";

  // NAME_prepare(params..., packed): 16 bytes after it that it must leave.
  std::vector<char> packed(entries.packedBytes + 16, char(0xa5));
  std::vector<void *> prepareArgs;
  size_t firstOutput = 0;
  for (size_t i = 0; i < golden->signature.arguments.size(); ++i) {
    attnc::ArgumentRole role = golden->signature.arguments[i].role;
    if (role == attnc::ArgumentRole::Param)
      prepareArgs.push_back(pointers[i]);
    if (role != attnc::ArgumentRole::Output)
      firstOutput = i + 1;
  }
  prepareArgs.push_back(packed.data());
  ASSERT_EQ(entries.prepare(prepareArgs.data()), 0);
  EXPECT_EQ(std::string(packed.end() - 16, packed.end()),
            std::string(16, char(0xa5)))
      << "wrote past the packed buffer";

  Buffers prepared = golden->makeOutputs();
  pointers = golden->pointers(prepared);
  pointers.insert(pointers.begin() + firstOutput, packed.data());
  ASSERT_EQ(entries.prepared(pointers.data()), 0);
  EXPECT_EQ(golden->mismatches(prepared), "") << kBackend << " object";
  for (size_t i = 0; i < plain.size(); ++i)
    EXPECT_EQ(plain[i], prepared[i]) << "output " << i;
}

/// The cases this executable's objects were built for: every golden, but
/// in the sanitize tier, where the kinds of objects take turns
/// (CMakeLists.txt, TURN).
std::vector<std::string> aotCaseNames() {
  std::vector<std::string> names;
  for (const auto &entry : aotKernels())
    names.push_back(entry.first);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Goldens, AotGolden,
                         ::testing::ValuesIn(aotCaseNames()),
                         [](const auto &info) { return info.param; });

#ifndef ATTNC_SANITIZE_TIER
TEST(AotGoldens, EveryGoldenHasItsObject) {
  for (const std::string &name : goldenCaseNames())
    EXPECT_EQ(aotKernels().count(name), 1u) << "no AOT kernel for " << name;
}
#endif

// The generated header's prototype and constants, called as a C user would.
TEST(AotHeader, BookCaseThroughThePrototype) {
  auto golden = loadGoldenCase("mha_book_1d");
  ASSERT_TRUE(!!golden) << llvm::toString(golden.takeError());
  static_assert(MHA_BOOK_1D_B == 2 && MHA_BOOK_1D_T == 4 &&
                    MHA_BOOK_1D_D == 100,
                "the header gives the book's dims");
  const int64_t xShape[] = MHA_BOOK_1D_X_SHAPE;
  EXPECT_EQ(xShape[2], 100);
  Buffers outputs = golden->makeOutputs();
  std::vector<void *> p = golden->pointers(outputs);
  ASSERT_EQ(p.size(), 7u);
  int status = mha_book_1d(
      static_cast<const float *>(p[0]), static_cast<const int32_t *>(p[1]),
      static_cast<const float *>(p[2]), static_cast<const float *>(p[3]),
      static_cast<const float *>(p[4]), static_cast<const float *>(p[5]),
      static_cast<float *>(p[6]));
  ASSERT_EQ(status, 0);
  EXPECT_EQ(golden->mismatches(outputs), "");

  // The same in two steps: the four 100x100 weights transposed once.
  static_assert(MHA_BOOK_1D_PACKED_NUMEL == 40000, "four weights");
  std::vector<float> packed(MHA_BOOK_1D_PACKED_NUMEL);
  ASSERT_EQ(mha_book_1d_prepare(static_cast<const float *>(p[2]),
                                static_cast<const float *>(p[3]),
                                static_cast<const float *>(p[4]),
                                static_cast<const float *>(p[5]),
                                packed.data()),
            0);
  Buffers twoSteps = golden->makeOutputs();
  status = mha_book_1d_prepared(
      static_cast<const float *>(p[0]), static_cast<const int32_t *>(p[1]),
      static_cast<const float *>(p[2]), static_cast<const float *>(p[3]),
      static_cast<const float *>(p[4]), static_cast<const float *>(p[5]),
      packed.data(), reinterpret_cast<float *>(twoSteps[6].data()));
  ASSERT_EQ(status, 0);
  EXPECT_EQ(golden->mismatches(twoSteps), "");
}

} // namespace
