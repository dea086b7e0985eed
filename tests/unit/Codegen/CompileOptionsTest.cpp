//===- CompileOptionsTest.cpp - The code options' one field list ----------===//
//
// forEachCodeOption (CompileOptions.h) is the one list of the options that
// decide the code: the kernel cache's key is built from it. A field added to
// the options structs but not to that list (or to kOptionsBesideTheCode)
// would let the cache return a kernel compiled with other options; these
// tests count the structs' fields and fail then.
//
//===----------------------------------------------------------------------===//

#include "attnc/Codegen/CompileOptions.h"
#include "attnc/Codegen/CodeGenerator.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <set>
#include <string>
#include <type_traits>
#include <utility>

using namespace attnc;

namespace {

/// Converts to any field's type: T{AnyField{}, ...} compiles for as many
/// initializers as the aggregate T has fields, and no more.
struct AnyField {
  template <typename T> operator T() const;
};

template <typename T, typename Indices, typename = void>
struct BracesWith : std::false_type {};

template <typename T, std::size_t... I>
struct BracesWith<T, std::index_sequence<I...>,
                  std::void_t<decltype(T{(void(I), AnyField{})...})>>
    : std::true_type {};

/// The number of fields of the aggregate T.
template <typename T, std::size_t N = 0> constexpr std::size_t fieldCount() {
  if constexpr (BracesWith<T, std::make_index_sequence<N + 1>>::value)
    return fieldCount<T, N + 1>();
  else
    return N;
}

/// The names forEachCodeOption visits.
std::vector<std::string> codeOptionNames() {
  std::vector<std::string> names;
  forEachCodeOption(CompileOptions{}, [&](const char *name, const auto &) {
    names.push_back(name);
  });
  return names;
}

std::size_t countWithPrefix(const std::vector<std::string> &names,
                            const std::string &prefix) {
  std::size_t count = 0;
  for (const std::string &name : names)
    if (name.rfind(prefix, 0) == 0)
      ++count;
  return count;
}

TEST(CompileOptionsTest, EveryTargetFieldIsACodeOption) {
  EXPECT_EQ(countWithPrefix(codeOptionNames(), "target."),
            fieldCount<TargetOptions>())
      << "a TargetOptions field is missing from forEachCodeOption";
}

TEST(CompileOptionsTest, EveryPipelineFieldIsACodeOption) {
  EXPECT_EQ(countWithPrefix(codeOptionNames(), "pipeline."),
            fieldCount<CpuPipelineOptions>())
      << "a CpuPipelineOptions field is missing from forEachCodeOption";
}

TEST(CompileOptionsTest, EveryOtherFieldIsListedOnce) {
  std::vector<std::string> names = codeOptionNames();
  std::size_t own = names.size() - countWithPrefix(names, "target.") -
                    countWithPrefix(names, "pipeline.");
  std::size_t beside = std::size(kOptionsBesideTheCode);
  // target and pipeline are two fields of CompileOptions.
  EXPECT_EQ(own + beside + 2, fieldCount<CompileOptions>())
      << "a CompileOptions field is missing from forEachCodeOption (or from "
         "kOptionsBesideTheCode)";
  std::set<std::string> unique(names.begin(), names.end());
  unique.insert(std::begin(kOptionsBesideTheCode),
                std::end(kOptionsBesideTheCode));
  EXPECT_EQ(unique.size(), names.size() + beside) << "a name is listed twice";
}

// The counting itself: a struct of known fields.
struct ThreeFields {
  int a = 0;
  std::string b;
  bool c = false;
};
static_assert(fieldCount<ThreeFields>() == 3);
static_assert(fieldCount<TargetOptions>() >= 4);

/// Each option changes the fingerprint: a kernel compiled with any other
/// value is another cache entry.
TEST(CompileOptionsTest, EveryCodeOptionChangesTheFingerprint) {
  CompileOptions base;
  std::string baseKey = describeCodeOptions(base);
  auto differs = [&](const char *what, auto change) {
    CompileOptions other = base;
    change(other);
    EXPECT_NE(describeCodeOptions(other), baseKey) << what;
  };
  differs("triple", [](CompileOptions &o) { o.target.triple = "x"; });
  differs("cpu", [](CompileOptions &o) { o.target.cpu = "znver4"; });
  differs("kind", [](CompileOptions &o) { o.target.kind = TargetKind::Nvptx; });
  differs("optLevel", [](CompileOptions &o) { o.target.optLevel = 3; });
  differs("rowTile", [](CompileOptions &o) { o.pipeline.rowTile = 4; });
  differs("columnTile", [](CompileOptions &o) { o.pipeline.columnTile = 4; });
  differs("vectorize", [](CompileOptions &o) { o.pipeline.vectorize = false; });
  differs("attention",
          [](CompileOptions &o) { o.pipeline.attention = "fused"; });
  differs("parallel", [](CompileOptions &o) { o.pipeline.parallel = true; });
  differs("parallelWork",
          [](CompileOptions &o) { o.pipeline.parallelWork = 0; });
  differs("lowering", [](CompileOptions &o) { o.pipeline.lowering = "x"; });
  differs("tf32", [](CompileOptions &o) { o.pipeline.tf32 = true; });
  differs("backend", [](CompileOptions &o) { o.backend = Backend::Halide; });
  differs("halideSchedule",
          [](CompileOptions &o) { o.halideSchedule = "Li2018"; });
  differs("objectBlockCache",
          [](CompileOptions &o) { o.objectBlockCache = false; });
  // Nothing else does.
  CompileOptions beside = base;
  beside.printIRAfterAll = true;
  beside.onStage = [](llvm::StringRef) {};
  EXPECT_EQ(describeCodeOptions(beside), baseKey);
}

TEST(CompileOptionsTest, StringsAreQuotedAndEscaped) {
  CompileOptions options;
  options.target.cpu = "a b\"c";
  EXPECT_NE(describeCodeOptions(options).find("target.cpu=\"a b\\\"c\""),
            std::string::npos)
      << describeCodeOptions(options);
}

} // namespace
