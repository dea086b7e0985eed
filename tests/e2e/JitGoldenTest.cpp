//===- JitGoldenTest.cpp - JIT kernels against the D2L PyTorch goldens ----===//
//
// Every golden case, compiled by the runtime (ORC JIT) along every path --
// -O3 with attention fused (flash-style), decomposed (scores materialized)
// and chosen by shape, -O0 (scalar loops), and the GPU target's kernels
// run thread by thread on the CPU -- must match what the D2L
// PyTorch code computed within docs/spec.md's tolerance, with no NaN. Every
// case also through the Halide backend (--backend=halide, attnc's schedules:
// serial, parallel and for the SSE2 baseline), and one small case through
// each of Halide's autoschedulers, when this attnc has it (the tests named
// Halide/... and HalideAutoschedulers/...).
//
//===----------------------------------------------------------------------===//

#include "GoldenCase.h"
#include "GpuEmulation.h"
#include "TestSupport.h"

#include "attnc/Codegen/CpuDescription.h"
#include "attnc/Halide/HalideBackend.h"
#include "attnc/Runtime/Runtime.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <optional>
#include <ostream>

using namespace attnc;
using namespace attnc::test;

namespace {

Runtime &testRuntime() { return sharedTestRuntime(); }

/// How a case is compiled: -O level, attention lowering, and the CPU whose
/// target description (hence schedule) is used: the host's, and each class
/// of x86 CPU -- AVX-512 (32 zmm), AVX-512 with BF16 (vdpbf16ps), AVX2
/// (16 ymm), the SSE2 baseline -- that the host can run.
struct Variant {
  const char *name;
  int optLevel;
  const char *attention;
  const char *cpu = "native";
  /// The GPU target's kernels run thread by thread on this CPU
  /// (tests/lib/GpuEmulation).
  bool gpuEmulation = false;
  /// CpuPipelineOptions::parallel: on two threads of attnc_rt.
  bool parallel = false;
  /// The code generator, and with Halide whose schedules.
  Backend backend = Backend::Mlir;
  const char *halideSchedule = "attnc";
};

void PrintTo(const Variant &variant, std::ostream *os) {
  *os << variant.name << " through "
      << (variant.backend == Backend::Halide
              ? std::string("Halide (") + variant.halideSchedule + ")"
              : std::string("MLIR"));
}

const Variant kVariants[] = {
    {"O3_auto", 3, "auto"},
    {"O3_parallel", 3, "auto", "native", false, /*parallel=*/true},
    {"O3_fused", 3, "fused"},
    {"O3_decomposed", 3, "decomposed"},
    {"O0", 0, "decomposed"},
    {"O2_avx512", 2, "auto", "x86-64-v4"},
    {"O2_avx512_fused", 2, "fused", "x86-64-v4"},
    // AVX512-BF16 without AMX (Zen 4's path): bf16 GEMMs on vdpbf16ps.
    {"O2_avx512bf16", 2, "auto", "cooperlake"},
    {"O2_avx2", 2, "auto", "x86-64-v3"},
    {"O2_avx2_fused", 2, "fused", "x86-64-v3"},
    {"O2_sse2", 2, "auto", "x86-64"},
    {"O2_sse2_fused", 2, "fused", "x86-64"},
    {"gpu_emulation", 2, "decomposed", "native", true},
    {"gpu_emulation_fused", 2, "fused", "native", true}};

/// Through the Halide backend with attnc's schedules (the attention
/// lowering is the MLIR pipeline's: not used).
const Variant kHalideVariants[] = {
    {"O3", 3, "auto", "native", false, false, Backend::Halide},
    {"O3_parallel", 3, "auto", "native", false, true, Backend::Halide},
    {"O2_sse2", 2, "auto", "x86-64", false, false, Backend::Halide}};

/// Halide's autoschedulers, each on one small case (Adams2019 alone takes
/// some 15 s to schedule one), parallel.
const std::pair<const char *, Variant> kAutoscheduled[] = {
    {"mha_book_1d",
     {"Mullapudi2016", 3, "auto", "native", false, true, Backend::Halide,
      "Mullapudi2016"}},
    {"mha_book_1d",
     {"Li2018", 3, "auto", "native", false, true, Backend::Halide, "Li2018"}},
    {"ffn_gelu",
     {"Adams2019", 3, "auto", "native", false, true, Backend::Halide,
      "Adams2019"}},
    // Adams2019 once tiled a projection past its weight's rows (it read
    // W_k at row -88): arguments are read clamped for the autoschedulers.
    {"mha_book_1d",
     {"Adams2019", 3, "auto", "native", false, true, Backend::Halide,
      "Adams2019"}}};

/// The Halide variants of every case, or none without Halide in this
/// build (its configure said that the backend is left out).
/// Variants that differ from others only in the target's numbers (the
/// same passes with other tiles and vector widths) take turns in the
/// sanitize tier (TestSupport.h): the slot of `variant` among `slots`, or
/// none when it runs a path of its own (parallel, a lowering, -O0, GPU).
/// The Halide variants all take turns: the translator runs the same code
/// for each (the schedule marks loops parallel or not), and Halide's own
/// compiler, most of their time, is not instrumented.
std::optional<size_t> targetSlot(const Variant &variant, size_t &slots) {
  llvm::StringRef name = variant.name, cpu = variant.cpu;
  if (variant.backend == Backend::Halide) {
    slots = 3;
    if (name == "O3")
      return 0;
    if (name == "O3_parallel")
      return 1;
    if (name == "O2_sse2")
      return 2;
    return std::nullopt;
  }
  slots = 5;
  if (name == "O3_auto")
    return 0;
  if (cpu == "x86-64-v4")
    return 1;
  if (cpu == "x86-64-v3")
    return 2;
  if (cpu == "x86-64")
    return 3;
  if (cpu == "cooperlake")
    return 4;
  return std::nullopt;
}

/// Every golden with each of `variants` in this tier.
std::vector<std::tuple<std::string, Variant>>
tierParams(llvm::ArrayRef<Variant> variants) {
  std::vector<std::tuple<std::string, Variant>> params;
  for (const auto &[index, name] : llvm::enumerate(goldenCaseNames()))
    for (const Variant &variant : variants) {
      size_t slots = 1;
      std::optional<size_t> slot = targetSlot(variant, slots);
      if (!slot || inTier(index, *slot, slots))
        params.emplace_back(name, variant);
    }
  return params;
}

std::vector<std::tuple<std::string, Variant>> halideParams() {
  if (!haveHalideBackend())
    return {};
  return tierParams(kHalideVariants);
}

std::vector<std::tuple<std::string, Variant>> autoscheduledParams() {
  std::vector<std::tuple<std::string, Variant>> params;
  if (haveHalideBackend())
    for (const auto &[name, variant] : kAutoscheduled)
      params.emplace_back(name, variant);
  return params;
}

/// The case's buffers, named as its kernel's arguments.
std::vector<HostBuffer> buffersOf(GoldenCase &golden, Buffers &outputs) {
  std::vector<void *> pointers = golden.pointers(outputs);
  std::vector<HostBuffer> buffers;
  for (size_t i = 0; i < pointers.size(); ++i) {
    const KernelArgument &a = golden.signature.arguments[i];
    buffers.push_back({a.name, pointers[i], a.type, a.shape});
  }
  return buffers;
}

struct JitGolden : ::testing::TestWithParam<std::tuple<std::string, Variant>> {
};

TEST_P(JitGolden, MatchesPyTorch) {
  auto [name, variant] = GetParam();
  int optLevel = variant.optLevel;
  auto golden = loadGoldenCase(name);
  ASSERT_TRUE(!!golden) << llvm::toString(golden.takeError());
  CompileOptions options;
  options.setOptLevel(optLevel);
  options.target.cpu = variant.cpu;
  if (llvm::Error lacks = checkRunsOnHost(options.target))
    GTEST_SKIP() << "this machine cannot run " << variant.cpu
                 << " code: " << llvm::toString(std::move(lacks))
                 << " (lit checks its code: tests/lit/attnc/isa-classes.test)";
  options.pipeline.attention = variant.attention;
  options.pipeline.parallel = variant.parallel;
  if (variant.gpuEmulation)
    attnc::test::useGpuEmulation(options.pipeline);
  options.backend = variant.backend;
  options.halideSchedule = variant.halideSchedule;
  std::string through =
      variant.backend == Backend::Halide
          ? std::string(" through Halide (") + variant.halideSchedule + ")"
          : " through MLIR";
  auto kernel =
      testRuntime().compile(golden->specText, golden->specPath, "", options);
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError()) << through;

  Buffers outputs = golden->makeOutputs();
  llvm::Error error = (*kernel)->run(buffersOf(*golden, outputs));
  ASSERT_FALSE(!!error) << llvm::toString(std::move(error)) << through;
  EXPECT_EQ(golden->mismatches(outputs), "") << variant.name << through;
}

/// Threads split blocks, never a sum: 1 and 2 threads give the same bits.
/// Compiled with every loop that can be split split (parallel-work 0): at
/// the goldens' sizes the schedule's thresholds would keep most loops on
/// one thread, and the test would compare one thread with itself.
struct JitThreads : ::testing::TestWithParam<std::string> {};

TEST_P(JitThreads, OneAndTwoThreadsAgreeBitwise) {
  auto golden = loadGoldenCase(GetParam());
  ASSERT_TRUE(!!golden) << llvm::toString(golden.takeError());
  CompileOptions options = Runtime::defaultOptions();
  options.pipeline.parallelWork = 0;
  auto kernel =
      testRuntime().compile(golden->specText, golden->specPath, "", options);
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  unsigned saved = testRuntime().numThreads();
  Buffers results[2];
  for (unsigned threads : {1u, 2u}) {
    testRuntime().setNumThreads(threads);
    Buffers outputs = golden->makeOutputs();
    llvm::Error error = (*kernel)->run(buffersOf(*golden, outputs));
    ASSERT_FALSE(!!error) << llvm::toString(std::move(error));
    EXPECT_EQ(golden->mismatches(outputs), "");
    results[threads - 1] = std::move(outputs);
  }
  testRuntime().setNumThreads(saved);
  for (size_t i = 0; i < results[0].size(); ++i)
    EXPECT_EQ(results[0][i], results[1][i]) << "output " << i;
}

/// Params bound once and prepared (NAME_prepare, then NAME_prepared on every
/// run) give the bits of the kernel that takes them on every call, and
/// binding a param again prepares again.
struct JitPrepared : ::testing::TestWithParam<std::string> {};

TEST_P(JitPrepared, BoundParamsGiveTheSameBits) {
  auto golden = loadGoldenCase(GetParam());
  ASSERT_TRUE(!!golden) << llvm::toString(golden.takeError());
  auto kernel = testRuntime().compile(golden->specText, golden->specPath, "",
                                      Runtime::defaultOptions());
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  Buffers plain = golden->makeOutputs();
  std::vector<HostBuffer> all = buffersOf(*golden, plain);
  llvm::Error error = (*kernel)->run(all);
  ASSERT_FALSE(!!error) << llvm::toString(std::move(error));

  std::vector<HostBuffer> perCall;
  std::vector<HostBuffer> params;
  for (const HostBuffer &buffer : all) {
    auto index = (*kernel)->argumentIndex(buffer.name);
    ASSERT_TRUE(!!index);
    bool param =
        (*kernel)->signature().arguments[*index].role == ArgumentRole::Param;
    (param ? params : perCall).push_back(buffer);
  }
  // A param that changes after binding must not reach the kernel.
  std::vector<std::vector<char>> saved;
  for (const HostBuffer &param : params) {
    ASSERT_FALSE(!!(*kernel)->bindParam(param));
    auto *bytes = static_cast<char *>(param.data);
    size_t size = mlir::attn::bytesOf(param.type);
    for (int64_t d : param.shape)
      size *= d;
    saved.emplace_back(bytes, bytes + size);
    std::memset(bytes, 0, size);
  }
  if (!params.empty()) {
    error = (*kernel)->prepareParams();
    ASSERT_FALSE(!!error) << llvm::toString(std::move(error));
  }
  for (size_t i = 0; i < params.size(); ++i)
    std::memcpy(params[i].data, saved[i].data(), saved[i].size());

  Buffers prepared = golden->makeOutputs();
  std::vector<HostBuffer> outputs = buffersOf(*golden, prepared);
  for (HostBuffer &buffer : perCall)
    for (const HostBuffer &output : outputs)
      if (output.name == buffer.name)
        buffer.data = output.data;
  error = (*kernel)->run(perCall);
  ASSERT_FALSE(!!error) << llvm::toString(std::move(error));
  EXPECT_EQ(golden->mismatches(prepared), "");
  for (size_t i = 0; i < plain.size(); ++i)
    EXPECT_EQ(plain[i], prepared[i]) << "output " << i;
}

INSTANTIATE_TEST_SUITE_P(Goldens, JitPrepared,
                         ::testing::ValuesIn(goldenCaseNames()),
                         [](const auto &info) { return info.param; });

INSTANTIATE_TEST_SUITE_P(Goldens, JitThreads,
                         ::testing::ValuesIn(goldenCaseNames()),
                         [](const auto &info) { return info.param; });

std::string jitGoldenName(
    const ::testing::TestParamInfo<std::tuple<std::string, Variant>> &info) {
  return std::get<0>(info.param) + "_" + std::get<1>(info.param).name;
}

INSTANTIATE_TEST_SUITE_P(Goldens, JitGolden,
                         ::testing::ValuesIn(tierParams(kVariants)),
                         jitGoldenName);

INSTANTIATE_TEST_SUITE_P(Halide, JitGolden, ::testing::ValuesIn(halideParams()),
                         jitGoldenName);

INSTANTIATE_TEST_SUITE_P(HalideAutoschedulers, JitGolden,
                         ::testing::ValuesIn(autoscheduledParams()),
                         jitGoldenName);

/// A sample of real size (samples/FILE.attn) that a golden pins at a small
/// size: the sample's block BLOCK, taken out of the file with its `dim`
/// line replaced by `smallDims`, has the golden's arguments (roles and
/// shapes, in order; names too unless the sample names them its own way)
/// and gives its outputs. The golden's spec is a separate text, so this
/// checks that the sample itself computes what the PyTorch reference does.
/// With `type` bf16 or f16, the sample's f32 tensors take that type (the
/// `--dtype`-style rewrite of a sample) and the golden is the family's case
/// in that type, held to docs/spec.md §7's bar.
struct SampleCase {
  const char *file;
  const char *block;
  std::string golden;
  const char *smallDims;
  bool sameNames = true;
  Backend backend = Backend::Mlir;
  const char *type = "f32";
};
const SampleCase kF32SampleCases[] = {
    {"gpt2_block", "gpt2_block", "gpt2_block",
     "dim B = 2, T = 7, D = 32, F = 128, H = 4"},
    {"llama_block", "llama_block", "llama_block",
     "dim B = 1, T = 8, D = 64, Dkv = 32, F = 96, H = 4, G = 2"},
    // The layer that bert_base_encoder calls 12 times (W_1/W_2 for the
    // golden's W_i/W_out).
    {"bert_base_encoder", "bert_layer", "bert_layer",
     "dim B = 2, T = 6, D = 32, F = 64, H = 4", /*sameNames=*/false},
};

/// Each case in f32, bf16 and f16 (goldens GOLDEN, GOLDEN_bf16, ...).
std::vector<SampleCase> sampleCases() {
  std::vector<SampleCase> cases;
  for (const char *type : {"f32", "bf16", "f16"})
    for (SampleCase c : kF32SampleCases) {
      if (llvm::StringRef(type) != "f32") {
        c.golden += std::string("_") + type;
        c.type = type;
      }
      cases.push_back(c);
    }
  return cases;
}

void PrintTo(const SampleCase &c, std::ostream *os) {
  *os << c.block << " in " << c.type << " through "
      << (c.backend == Backend::Halide ? "Halide" : "MLIR");
}

/// kSampleCases through the Halide backend, or none without it.
std::vector<SampleCase> halideSampleCases() {
  std::vector<SampleCase> cases;
  if (haveHalideBackend())
    for (SampleCase c : sampleCases()) {
      c.backend = Backend::Halide;
      cases.push_back(c);
    }
  return cases;
}

struct SampleAtGoldenSize : ::testing::TestWithParam<SampleCase> {};

TEST_P(SampleAtGoldenSize, MatchesPyTorch) {
  const SampleCase &c = GetParam();
  std::string path = std::string(ATTNC_SAMPLES_DIR) + "/" + c.file + ".attn";
  auto buffer = llvm::MemoryBuffer::getFile(path);
  ASSERT_TRUE(!!buffer) << path;
  std::string file = (*buffer)->getBuffer().str();
  size_t begin = file.find(std::string("block ") + c.block + " {");
  ASSERT_NE(begin, std::string::npos) << path << " has no block " << c.block;
  size_t close = file.find("\n}", begin);
  ASSERT_NE(close, std::string::npos);
  std::string text = file.substr(begin, close + 3 - begin) + "\n";
  // The block's `dim` statement.
  size_t dim = text.find("\n  dim ");
  ASSERT_NE(dim, std::string::npos) << c.block << " has no dim line";
  size_t end = text.find('\n', dim + 1);
  text.replace(dim + 3, end - dim - 3, c.smallDims);
  for (size_t at = 0; (at = text.find("f32[", at)) != std::string::npos;
       at += 4)
    text.replace(at, 3, c.type);

  auto golden = loadGoldenCase(c.golden);
  ASSERT_TRUE(!!golden) << llvm::toString(golden.takeError());
  CompileOptions options = Runtime::defaultOptions();
  options.backend = c.backend;
  const char *through =
      c.backend == Backend::Halide ? " through Halide" : " through MLIR";
  auto kernel = testRuntime().compile(text, path, c.block, options);
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError()) << through;
  const auto &ours = (*kernel)->signature().arguments;
  const auto &theirs = golden->signature.arguments;
  ASSERT_EQ(ours.size(), theirs.size());
  for (size_t i = 0; i < ours.size(); ++i) {
    if (c.sameNames)
      EXPECT_EQ(ours[i].name, theirs[i].name) << "argument " << i;
    EXPECT_EQ(ours[i].shape, theirs[i].shape) << ours[i].name;
    EXPECT_EQ(ours[i].type, theirs[i].type) << ours[i].name;
    EXPECT_EQ(ours[i].role, theirs[i].role) << ours[i].name;
  }
  // The golden's buffers in order, under the sample's names.
  Buffers outputs = golden->makeOutputs();
  std::vector<HostBuffer> buffers = buffersOf(*golden, outputs);
  for (size_t i = 0; i < buffers.size(); ++i)
    buffers[i].name = ours[i].name;
  llvm::Error error = (*kernel)->run(buffers);
  ASSERT_FALSE(!!error) << llvm::toString(std::move(error)) << through;
  EXPECT_EQ(golden->mismatches(outputs), "") << c.block << through;
}

std::string sampleName(const ::testing::TestParamInfo<SampleCase> &info) {
  return std::string(info.param.block) +
         (llvm::StringRef(info.param.type) == "f32"
              ? ""
              : std::string("_") + info.param.type);
}

INSTANTIATE_TEST_SUITE_P(Samples, SampleAtGoldenSize,
                         ::testing::ValuesIn(sampleCases()), sampleName);

INSTANTIATE_TEST_SUITE_P(Halide, SampleAtGoldenSize,
                         ::testing::ValuesIn(halideSampleCases()), sampleName);

} // namespace
