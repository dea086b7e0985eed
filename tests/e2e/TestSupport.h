//===- TestSupport.h - What the end-to-end tests share ----------*- C++ -*-===//
//
// The tiers of tests/README.md and the build's shared compile cache.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TESTS_E2E_TESTSUPPORT_H
#define ATTNC_TESTS_E2E_TESTSUPPORT_H

#include "attnc/Runtime/Runtime.h"

#include "llvm/Support/Error.h"

#include <cstddef>
#include <random>
#include <string>
#include <vector>

namespace attnc::test {

/// True in the sanitize tier (tests/CMakeLists.txt: a build whose product
/// code runs under ASan and UBSan). The sanitizers instrument attnc, not the
/// kernels it generates: that tier runs every compiler path once per case
/// and rotates the variants that differ only in numbers (ISA classes); the
/// default tier runs them all.
#ifdef ATTNC_SANITIZE_TIER
constexpr bool kSanitizeTier = true;
#else
constexpr bool kSanitizeTier = false;
#endif

/// Whether case `caseIndex` runs variant `variant` of `count` variants that
/// differ only in numbers: every one in the default tier, the one at
/// caseIndex % count in the sanitize tier (consecutive cases take
/// consecutive variants, so each variant runs under the sanitizers for a
/// share of the cases).
inline bool inTier(size_t caseIndex, size_t variant, size_t count) {
  return !kSanitizeTier || caseIndex % count == variant;
}

/// The disk cache every test process of this build shares
/// (ATTNC_TEST_CACHE_DIR, build/test-cache; ctest's test-cache-clear
/// empties it before a run): a spec compiled with the same options by two
/// tests is compiled once. The cache key names the test binary's size and
/// time, so a rebuilt binary never reads what an older one wrote.
inline std::string testCacheDirectory() { return ATTNC_TEST_CACHE_DIR; }

/// The runtime a test process compiles with, its disk cache the build's.
inline Runtime &sharedTestRuntime() {
  static Runtime *runtime = new Runtime(testCacheDirectory());
  return *runtime;
}

/// `n` values drawn uniformly from [-bound, bound] with std::mt19937(seed):
/// the same values on every machine.
inline std::vector<float> randomValues(size_t n, unsigned seed,
                                       float bound = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-bound, bound);
  std::vector<float> values(n);
  for (float &x : values)
    x = dist(rng);
  return values;
}

/// The message of `error`, or "" for success (it is consumed).
inline std::string errorMessage(llvm::Error error) {
  return error ? llvm::toString(std::move(error)) : std::string();
}

} // namespace attnc::test

#endif // ATTNC_TESTS_E2E_TESTSUPPORT_H
