//===- LowPrecisionTest.cpp - bf16 and f16 through compiled kernels ------===//
//
// docs/spec.md §2 (v3): conversions round to nearest even, bit for bit as
// torch converts, on every CPU class (with and without F16C and
// AVX512-BF16) and through both backends; and each op on bf16/f16 computes
// in f32 and rounds its result once, so that a one-op kernel in bf16/f16
// gives exactly the f32 kernel's result on the widened inputs, rounded; a
// weight-only low-precision op (f32 x, bf16 w) gives exactly the f32
// kernel's result on the widened weight.
//
//===----------------------------------------------------------------------===//

#include "GpuEmulation.h"
#include "TestSupport.h"
#include "attnc/Codegen/CpuDescription.h"
#include "attnc/Halide/HalideBackend.h"
#include "attnc/Runtime/Runtime.h"

#include "attn/Target/FloatConversions.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace attnc;
using mlir::attn::ElementType;

namespace {

uint32_t bitsOf(float x) { return mlir::attn::floatBits(x); }
float floatOf(uint32_t bits) { return mlir::attn::floatFromBits(bits); }

/// A bf16 pattern's value, the all-ones exponent standing for 2^128 (what
/// the next step past the largest finite bf16 would be): the reference's
/// rounding compares distances to it.
double valueOfBf16Candidate(uint32_t bits) {
  if (((bits >> 23) & 0xff) == 0xff)
    return std::ldexp(bits >> 31 ? -1.0 : 1.0, 128);
  return double(floatOf(bits));
}

/// f32 -> bf16 by its definition: the nearer of the two bf16 neighbours,
/// the even one on a tie; NaN to a NaN. Independent of any conversion code
/// under test (it compares exact distances in double).
uint16_t referenceBf16(float x) {
  if (std::isnan(x))
    return 0x7fc0;
  uint32_t bits = bitsOf(x);
  uint32_t low = bits & 0xffff0000u;
  if (low == bits)
    return uint16_t(bits >> 16);
  uint32_t high = low + 0x10000u;
  double distanceLow = std::fabs(double(x) - valueOfBf16Candidate(low));
  double distanceHigh = std::fabs(valueOfBf16Candidate(high) - double(x));
  if (distanceLow < distanceHigh ||
      (distanceLow == distanceHigh && ((low >> 16) & 1) == 0))
    return uint16_t(low >> 16);
  return uint16_t(high >> 16);
}

/// f32 -> f16 through the compiler's own _Float16 (F16C or compiler-rt):
/// another implementation than the one under test.
uint16_t referenceF16(float x) {
  _Float16 h = static_cast<_Float16>(x);
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof(bits));
  return bits;
}

float widenF16(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, sizeof(h));
  return static_cast<float>(h);
}

float widenBf16(uint16_t bits) { return floatOf(uint32_t(bits) << 16); }

bool isNanF16(uint16_t bits) {
  return (bits & 0x7c00) == 0x7c00 && (bits & 0x03ff);
}
bool isNanBf16(uint16_t bits) {
  return (bits & 0x7f80) == 0x7f80 && (bits & 0x007f);
}

/// The f32 values the conversions are checked on: every f16 and bf16
/// value, its f32 neighbours, the midpoints between consecutive ones (the
/// ties) and their neighbours, the specials, and random bit patterns.
std::vector<float> conversionInputs() {
  std::vector<float> values;
  auto around = [&](float x) {
    values.push_back(x);
    values.push_back(std::nextafter(x, INFINITY));
    values.push_back(std::nextafter(x, -INFINITY));
  };
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f16 = widenF16(uint16_t(h)), bf16 = widenBf16(uint16_t(h));
    if (!std::isfinite(f16) || !std::isfinite(bf16))
      continue;
    around(f16);
    around(bf16);
    // Midpoints to the next pattern of the same sign (exact in f32).
    float nextF16 = widenF16(uint16_t(h + 1)),
          nextBf16 = widenBf16(uint16_t(h + 1));
    if (std::isfinite(nextF16) && (h & 0x7fff) != 0x7fff)
      around(float((double(f16) + double(nextF16)) / 2));
    if (std::isfinite(nextBf16) && (h & 0x7fff) != 0x7fff)
      around(float((double(bf16) + double(nextBf16)) / 2));
  }
  for (float special : {0.0f,
                        -0.0f,
                        INFINITY,
                        -INFINITY,
                        NAN,
                        -NAN,
                        65504.0f,
                        65519.99f,
                        65520.0f,
                        -65520.0f,
                        3.3895314e38f,
                        3.4028235e38f,
                        1e-45f,
                        -1e-45f,
                        1.17549435e-38f,
                        5.9604645e-8f,
                        2.9802322e-8f,
                        2.9802326e-8f,
                        floatOf(0x7f800001),
                        floatOf(0xffc00001),
                        floatOf(0x7fbfffff)})
    values.push_back(special);
  std::mt19937 rng(1);
  for (int i = 0; i < 100000; ++i)
    values.push_back(floatOf(uint32_t(rng())));
  return values;
}

struct Target {
  const char *cpu;
  Backend backend;
  /// The GPU lowering, its kernels run on this CPU (gpuEmulation).
  bool gpuEmulation = false;
};

std::string nameOf(const Target &t) {
  std::string name = t.cpu;
  for (char &c : name)
    if (c == '-' || c == '.')
      c = '_';
  if (t.gpuEmulation)
    return name + "_gpu_emulation";
  return name + (t.backend == Backend::Halide ? "_halide" : "_mlir");
}

/// The CPU whose code takes the vdpbf16ps path of bf16 GEMMs (AVX512-BF16
/// without AMX: CpuSchedule::bf16Dot); its code runs only on a CPU with
/// AVX512-BF16.
constexpr const char *kBf16DotCpu = "cooperlake";

/// Why this machine cannot run code for `t.cpu`, or empty when it can (the
/// check attnc run makes).
std::string whyHostCannotRun(const Target &t) {
  TargetOptions options = Runtime::defaultOptions().target;
  options.cpu = t.cpu;
  if (llvm::Error error = checkRunsOnHost(options))
    return llvm::toString(std::move(error));
  return "";
}

#define SKIP_UNLESS_HOST_RUNS(target)                                          \
  if (std::string why = whyHostCannotRun(target); !why.empty())                \
  GTEST_SKIP() << why

std::vector<Target> targets() {
  // No F16C (x86-64), F16C without AVX512-BF16 (x86-64-v3), vdpbf16ps
  // (cooperlake, where this CPU runs it), and this CPU.
  std::vector<Target> all = {{"x86-64", Backend::Mlir},
                             {"x86-64-v3", Backend::Mlir},
                             {kBf16DotCpu, Backend::Mlir},
                             {"native", Backend::Mlir}};
  if (haveHalideBackend()) {
    all.push_back({"x86-64-v3", Backend::Halide});
    all.push_back({"native", Backend::Halide});
  }
  all.push_back({"native", Backend::Mlir, /*gpuEmulation=*/true});
  return all;
}

CompileOptions optionsFor(const Target &t) {
  CompileOptions options = Runtime::defaultOptions();
  options.target.cpu = t.cpu;
  options.backend = t.backend;
  if (t.gpuEmulation)
    attnc::test::useGpuEmulation(options.pipeline);
  return options;
}

std::string tensor(size_t n, const char *element) {
  return "tensor<" + std::to_string(n) + "x" + element + ">";
}

class Conversions : public ::testing::TestWithParam<Target> {};

TEST_P(Conversions, RoundToNearestEvenBitForBit) {
  SKIP_UNLESS_HOST_RUNS(GetParam());
  std::vector<float> x = conversionInputs();
  size_t n = x.size(), m = 0x10000;
  std::vector<uint16_t> patterns(m);
  for (size_t i = 0; i < m; ++i)
    patterns[i] = uint16_t(i);
  std::string ir =
      "func.func @conv(%x: " + tensor(n, "f32") +
      " {attn.name = \"X\", attn.role = \"input\"}, %h: " + tensor(m, "f16") +
      " {attn.name = \"H\", attn.role = \"input\"}, %b: " + tensor(m, "bf16") +
      " {attn.name = \"B\", attn.role = \"input\"}) -> (" + tensor(n, "f16") +
      " {attn.name = \"X16\"}, " + tensor(n, "bf16") +
      " {attn.name = \"XB\"}, " + tensor(m, "f32") +
      " {attn.name = \"H32\"}, " + tensor(m, "f32") +
      " {attn.name = \"B32\"}) {\n" +
      "  %0 = attn.cast %x to f16 : " + tensor(n, "f32") +
      "\n  %1 = attn.cast %x to bf16 : " + tensor(n, "f32") +
      "\n  %2 = attn.cast %h to f32 : " + tensor(m, "f16") +
      "\n  %3 = attn.cast %b to f32 : " + tensor(m, "bf16") +
      "\n  return %0, %1, %2, %3 : " + tensor(n, "f16") + ", " +
      tensor(n, "bf16") + ", " + tensor(m, "f32") + ", " + tensor(m, "f32") +
      "\n}\n";
  auto kernel = test::sharedTestRuntime().compile(ir, "conversions.mlir", "",
                                                  optionsFor(GetParam()));
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  std::vector<uint16_t> x16(n), xb(n);
  std::vector<float> h32(m), b32(m);
  std::vector<int64_t> nShape = {int64_t(n)}, mShape = {int64_t(m)};
  llvm::Error error =
      (*kernel)->run({{"X", x.data(), ElementType::F32, nShape},
                      {"H", patterns.data(), ElementType::F16, mShape},
                      {"B", patterns.data(), ElementType::BF16, mShape},
                      {"X16", x16.data(), ElementType::F16, nShape},
                      {"XB", xb.data(), ElementType::BF16, nShape},
                      {"H32", h32.data(), ElementType::F32, mShape},
                      {"B32", b32.data(), ElementType::F32, mShape}});
  ASSERT_FALSE(!!error) << llvm::toString(std::move(error));

  int mismatches = 0;
  auto report = [&](const char *what, uint32_t input, uint32_t got,
                    uint32_t expected) {
    if (++mismatches <= 10)
      ADD_FAILURE() << what << " of 0x" << llvm::utohexstr(input) << ": got 0x"
                    << llvm::utohexstr(got) << ", expected 0x"
                    << llvm::utohexstr(expected);
  };
  for (size_t i = 0; i < n; ++i) {
    uint16_t f16 = referenceF16(x[i]), bf16 = referenceBf16(x[i]);
    if (std::isnan(x[i]) ? !isNanF16(x16[i]) : x16[i] != f16)
      report("f32->f16", bitsOf(x[i]), x16[i], f16);
    if (std::isnan(x[i]) ? !isNanBf16(xb[i]) : xb[i] != bf16)
      report("f32->bf16", bitsOf(x[i]), xb[i], bf16);
  }
  for (size_t i = 0; i < m; ++i) {
    float f16 = widenF16(uint16_t(i)), bf16 = widenBf16(uint16_t(i));
    if (std::isnan(f16) ? !std::isnan(h32[i]) : bitsOf(h32[i]) != bitsOf(f16))
      report("F16->f32", i, bitsOf(h32[i]), bitsOf(f16));
    if (std::isnan(bf16) ? !std::isnan(b32[i]) : bitsOf(b32[i]) != bitsOf(bf16))
      report("BF16->f32", i, bitsOf(b32[i]), bitsOf(bf16));
  }
  EXPECT_EQ(mismatches, 0) << "of " << n << " f32 values and " << m
                           << " 16-bit patterns";
}

INSTANTIATE_TEST_SUITE_P(LowPrecision, Conversions,
                         ::testing::ValuesIn(targets()),
                         [](const ::testing::TestParamInfo<Target> &info) {
                           return nameOf(info.param);
                         });

/// The host's conversions (the runtime's .npy rounding, attnc run, Python)
/// are the kernels': the same references, on the same values.
TEST(HostConversions, RoundToNearestEvenBitForBit) {
  int mismatches = 0;
  for (float x : conversionInputs()) {
    uint16_t f16 = mlir::attn::narrowToF16(x),
             bf16 = mlir::attn::narrowToBf16(x);
    bool ok = std::isnan(x)
                  ? isNanF16(f16) && isNanBf16(bf16)
                  : f16 == referenceF16(x) && bf16 == referenceBf16(x);
    if (!ok && ++mismatches <= 5)
      ADD_FAILURE() << "0x" << llvm::utohexstr(bitsOf(x)) << ": f16 0x"
                    << llvm::utohexstr(f16) << ", bf16 0x"
                    << llvm::utohexstr(bf16);
  }
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f16 = mlir::attn::widenF16(uint16_t(h)), ref = widenF16(uint16_t(h));
    bool ok = std::isnan(ref) ? std::isnan(f16) : bitsOf(f16) == bitsOf(ref);
    if (!ok && ++mismatches <= 5)
      ADD_FAILURE() << "f16 0x" << llvm::utohexstr(h) << " widens to 0x"
                    << llvm::utohexstr(bitsOf(f16));
  }
  EXPECT_EQ(mismatches, 0);
}

/// A one-op block whose float tensors are all of type TYPE (replaced by
/// f32, bf16 or f16), and the integer inputs it takes.
struct OpCase {
  const char *name;
  const char *spec;
  /// A GEMM of two bf16 operands: it sums k in pairs (attn-bf16-pair-gemms),
  /// the f32 kernel in order, so a bf16 result may be the f32 kernel's
  /// rounded the other way (one unit in the last place; the order itself is
  /// checked by Bf16PairGemm). On the GPU's tensor cores (the emulation)
  /// bf16 and f16 GEMMs sum each 16 of k first, then add them up.
  bool bf16PairSums = false;
  /// The f32 spec whose result, rounded once, the low-precision kernel's
  /// must be, when it is not SPEC in f32: it spells out the rounding
  /// points inside a composite op (`cast` to TYPE and back). Same
  /// arguments as SPEC.
  const char *reference = nullptr;
  /// In bf16, the reference instead, and the units in the last place it
  /// allows: an attention's products take bf16 operands
  /// (attentionProductsOf), the weights included, which the fused kernel
  /// rounds before it divides by the sum and the reference after.
  const char *bf16Reference = nullptr;
  int bf16Ulps = 0;
};

const OpCase kOpCases[] = {
    {"linear",
     "block k {\n  input X: TYPE[4, 33, 48]\n  param W: TYPE[40, 48]\n"
     "  param b: TYPE[40]\n  Y = linear(X, W, b)\n  output Y\n}\n",
     /*bf16PairSums=*/true},
    {"layer_norm", "block k {\n  input X: TYPE[4, 7, 48]\n  param g: TYPE[48]\n"
                   "  param b: TYPE[48]\n  Y = layer_norm(X, g, b)\n"
                   "  output Y\n}\n"},
    // Fused (64 x 64 scores), a length-0 row among them.
    {"attention_fused",
     "block k {\n  input Q: TYPE[3, 64, 32]\n  input K: TYPE[3, 64, 32]\n"
     "  input V: TYPE[3, 64, 32]\n  input vl: i32[3]\n"
     "  Y = attention(Q, K, V, vl)\n  output Y\n}\n",
     /*bf16PairSums=*/false, /*reference=*/nullptr,
     "block k {\n  input Q: f32[3, 64, 32]\n  input K: f32[3, 64, 32]\n"
     "  input V: f32[3, 64, 32]\n  input vl: i32[3]\n"
     "  S = scale(matmul(Q, K, transpose_b=true), 0.17677669529663687)\n"
     "  P = cast(cast(masked_softmax(S, vl), dtype=bf16), dtype=f32)\n"
     "  Y = matmul(P, V)\n  output Y\n}\n",
     /*bf16Ulps=*/1},
    // Its merged heads rounded before w_o (innerRoundingOf), as PyTorch's
    // MultiheadAttention in that type rounds them.
    {"multihead_attention",
     "block k {\n  input X: TYPE[2, 10, 24]\n"
     "  param Wq: TYPE[24, 24]\n  param Wk: TYPE[24, 24]\n"
     "  param Wv: TYPE[24, 24]\n  param Wo: TYPE[24, 24]\n"
     "  Y = multihead_attention(X, X, X, Wq, Wk, Wv, Wo, heads=4, "
     "causal=true)\n"
     "  output Y\n}\n",
     /*bf16PairSums=*/true,
     "block k {\n  input X: f32[2, 10, 24]\n"
     "  param Wq: f32[24, 24]\n  param Wk: f32[24, 24]\n"
     "  param Wv: f32[24, 24]\n  param Wo: f32[24, 24]\n"
     "  Q = split_heads(linear(X, Wq), heads=4)\n"
     "  K = split_heads(linear(X, Wk), heads=4)\n"
     "  V = split_heads(linear(X, Wv), heads=4)\n"
     "  M = merge_heads(attention(Q, K, V, causal=true), heads=4)\n"
     "  Y = linear(cast(cast(M, dtype=TYPE), dtype=f32), Wo)\n"
     "  output Y\n}\n",
     // In bf16 q, k, v rounded too; the weights' rounding is not spelled
     // out (a causal mask needs the attention op): the ulps allow for it.
     "block k {\n  input X: f32[2, 10, 24]\n"
     "  param Wq: f32[24, 24]\n  param Wk: f32[24, 24]\n"
     "  param Wv: f32[24, 24]\n  param Wo: f32[24, 24]\n"
     "  Q = split_heads(cast(cast(linear(X, Wq), dtype=bf16), dtype=f32), "
     "heads=4)\n"
     "  K = split_heads(cast(cast(linear(X, Wk), dtype=bf16), dtype=f32), "
     "heads=4)\n"
     "  V = split_heads(cast(cast(linear(X, Wv), dtype=bf16), dtype=f32), "
     "heads=4)\n"
     "  M = merge_heads(attention(Q, K, V, causal=true), heads=4)\n"
     "  Y = linear(cast(cast(M, dtype=bf16), dtype=f32), Wo)\n"
     "  output Y\n}\n",
     /*bf16Ulps=*/1},
    // Its hidden layer rounded before w2.
    {"ffn",
     "block k {\n  input X: TYPE[3, 5, 32]\n  param W1: TYPE[64, 32]\n"
     "  param b1: TYPE[64]\n  param W2: TYPE[32, 64]\n  param b2: TYPE[32]\n"
     "  Y = ffn(X, W1, b1, W2, b2)\n  output Y\n}\n",
     /*bf16PairSums=*/true,
     "block k {\n  input X: f32[3, 5, 32]\n  param W1: f32[64, 32]\n"
     "  param b1: f32[64]\n  param W2: f32[32, 64]\n  param b2: f32[32]\n"
     "  H = cast(cast(relu(linear(X, W1, b1)), dtype=TYPE), dtype=f32)\n"
     "  Y = linear(H, W2, b2)\n  output Y\n}\n"},
};

std::string specIn(const char *spec, const char *type) {
  std::string text = spec;
  for (size_t at; (at = text.find("TYPE")) != std::string::npos;)
    text.replace(at, 4, type);
  return text;
}

/// Rounds `x` to `type` (bf16/f16) as 16-bit patterns, by the references.
std::vector<uint16_t> rounded(const std::vector<float> &x, ElementType type) {
  std::vector<uint16_t> bits(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    bits[i] =
        type == ElementType::BF16 ? referenceBf16(x[i]) : referenceF16(x[i]);
  return bits;
}

std::vector<float> widened(const std::vector<uint16_t> &bits,
                           ElementType type) {
  std::vector<float> x(bits.size());
  for (size_t i = 0; i < bits.size(); ++i)
    x[i] = type == ElementType::BF16 ? widenBf16(bits[i]) : widenF16(bits[i]);
  return x;
}

class OneOp
    : public ::testing::TestWithParam<std::tuple<OpCase, ElementType, Target>> {
};

/// The bf16/f16 kernel's result is the f32 kernel's on the same (rounded)
/// values, rounded once: bit for bit (within one unit in the last place
/// where bf16 GEMMs sum in pairs).
TEST_P(OneOp, IsTheF32KernelRoundedOnce) {
  auto [op, type, target] = GetParam();
  SKIP_UNLESS_HOST_RUNS(target);
  const char *typeName = type == ElementType::BF16 ? "bf16" : "f16";
  Runtime &runtime = test::sharedTestRuntime();
  auto low = runtime.compile(specIn(op.spec, typeName), "low.attn", "",
                             optionsFor(target));
  ASSERT_TRUE(!!low) << llvm::toString(low.takeError());
  const char *reference = type == ElementType::BF16 && op.bf16Reference
                              ? op.bf16Reference
                              : op.reference;
  auto full = runtime.compile(reference ? specIn(reference, typeName)
                                        : specIn(op.spec, "f32"),
                              "f32.attn", "", optionsFor(target));
  ASSERT_TRUE(!!full) << llvm::toString(full.takeError());

  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  std::vector<std::vector<uint16_t>> lowData;
  std::vector<std::vector<float>> fullData;
  std::vector<std::vector<int32_t>> lens;
  std::vector<HostBuffer> lowBuffers, fullBuffers;
  const KernelSignature &signature = (*full)->signature();
  lowData.reserve(signature.arguments.size());
  fullData.reserve(signature.arguments.size());
  lens.reserve(signature.arguments.size());
  for (const KernelArgument &a : signature.arguments) {
    size_t count = size_t(a.numElements());
    if (a.type == ElementType::I32) {
      // Lengths: 0 for the first row (a uniform row), then 1, 2, ...
      lens.emplace_back(count);
      for (size_t i = 0; i < count; ++i)
        lens.back()[i] = int32_t(i * 5);
      lowBuffers.push_back({a.name, lens.back().data(), a.type, a.shape});
      fullBuffers.push_back(lowBuffers.back());
      continue;
    }
    std::vector<float> values(count);
    if (a.role != ArgumentRole::Output)
      for (float &v : values)
        v = uniform(rng);
    lowData.push_back(rounded(values, type));
    fullData.push_back(widened(lowData.back(), type));
    lowBuffers.push_back({a.name, lowData.back().data(), type, a.shape});
    fullBuffers.push_back({a.name, fullData.back().data(), a.type, a.shape});
  }
  llvm::Error error = (*low)->run(lowBuffers);
  ASSERT_FALSE(!!error) << llvm::toString(std::move(error));
  error = (*full)->run(fullBuffers);
  ASSERT_FALSE(!!error) << llvm::toString(std::move(error));

  const std::vector<uint16_t> &got = lowData.back();
  std::vector<uint16_t> expected = rounded(fullData.back(), type);
  int mismatches = 0;
  if (type == ElementType::BF16 && op.bf16Reference) {
    // The weights' rounding is an error relative to the terms of p @ v, not
    // to their sum (which cancels): bf16Ulps units at the output's largest
    // magnitude, as docs/spec.md §7's bar measures.
    std::vector<float> want = widened(expected, type),
                       have = widened(got, type);
    float largest = 0.0f;
    for (float x : want)
      largest = std::max(largest, std::fabs(x));
    float bound = op.bf16Ulps * std::ldexp(1.0f, std::ilogb(largest) - 7);
    for (size_t i = 0; i < got.size(); ++i)
      if (!(std::fabs(have[i] - want[i]) <= bound) && ++mismatches <= 5)
        ADD_FAILURE() << op.name << " bf16 element " << i << ": got " << have[i]
                      << ", expected " << want[i] << " within " << bound;
    EXPECT_EQ(mismatches, 0) << "of " << got.size();
    return;
  }
  int ulps =
      op.bf16PairSums && (type == ElementType::BF16 || target.gpuEmulation) ? 1
                                                                            : 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::abs(int(got[i]) - int(expected[i])) > ulps && ++mismatches <= 5)
      ADD_FAILURE() << op.name << " " << typeName << " element " << i
                    << ": got 0x" << llvm::utohexstr(got[i]) << ", expected 0x"
                    << llvm::utohexstr(expected[i]);
  EXPECT_EQ(mismatches, 0) << "of " << got.size();
}

INSTANTIATE_TEST_SUITE_P(
    LowPrecision, OneOp,
    ::testing::Combine(::testing::ValuesIn(kOpCases),
                       ::testing::Values(ElementType::BF16, ElementType::F16),
                       ::testing::ValuesIn(targets())),
    [](const auto &info) {
      return std::string(std::get<0>(info.param).name) + "_" +
             (std::get<1>(info.param) == ElementType::BF16 ? "bf16" : "f16") +
             "_" + nameOf(std::get<2>(info.param));
    });

class Misaligned : public ::testing::TestWithParam<Target> {};

/// The ABI promises nothing about alignment: 16-bit buffers 2 bytes past a
/// vector boundary give the same bits (Halide's own bf16/f16 vector
/// accesses assumed alignment and faulted: halideStorageTypeOf).
TEST_P(Misaligned, BuffersTwoBytesOffGiveTheSameBits) {
  SKIP_UNLESS_HOST_RUNS(GetParam());
  const char *spec =
      "block k {\n  input X: bf16[4, 40]\n  input H: f16[4, 40]\n"
      "  param W: bf16[24, 40]\n  Y = linear(X, W)\n"
      "  G = gelu(H)\n  output Y, G\n}\n";
  auto kernel = test::sharedTestRuntime().compile(spec, "misaligned.attn", "",
                                                  optionsFor(GetParam()));
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  auto run = [&](size_t offset) {
    std::vector<uint16_t> x(160 + 64), h(160 + 64), w(960 + 64), y(96 + 64),
        g(160 + 64);
    for (size_t i = 0; i < 160; ++i) {
      x[offset + i] = referenceBf16(0.01f * float(i) - 0.7f);
      h[offset + i] = referenceF16(0.02f * float(i) - 1.5f);
    }
    for (size_t i = 0; i < 960; ++i)
      w[offset + i] = referenceBf16(0.003f * float(i % 97) - 0.1f);
    llvm::Error error =
        (*kernel)->run({{"X", x.data() + offset, ElementType::BF16, {4, 40}},
                        {"H", h.data() + offset, ElementType::F16, {4, 40}},
                        {"W", w.data() + offset, ElementType::BF16, {24, 40}},
                        {"Y", y.data() + offset, ElementType::BF16, {4, 24}},
                        {"G", g.data() + offset, ElementType::F16, {4, 40}}});
    EXPECT_FALSE(!!error) << llvm::toString(std::move(error));
    y.erase(y.begin(), y.begin() + offset);
    y.resize(96);
    g.erase(g.begin(), g.begin() + offset);
    g.resize(160);
    y.insert(y.end(), g.begin(), g.end());
    return y;
  };
  EXPECT_EQ(run(0), run(1));
  EXPECT_EQ(run(0), run(7));
}

INSTANTIATE_TEST_SUITE_P(LowPrecision, Misaligned,
                         ::testing::ValuesIn(targets()),
                         [](const ::testing::TestParamInfo<Target> &info) {
                           return nameOf(info.param);
                         });

/// A bf16 linear layer Y = X W^T + b of the given shape, its random
/// inputs, and the result of summing k in pairs, the odd k first, from the
/// bias (the order of vdpbf16ps; Bf16PairGemm.h), rounded to bf16.
struct PairSumsCase {
  int64_t rows, depth, columns;
  std::vector<uint16_t> x, w, b, expected;
  /// |b| + sum over k of |x w|, per output: the scale of its rounding
  /// errors.
  std::vector<double> magnitudes;

  PairSumsCase(int64_t rows, int64_t depth, int64_t columns)
      : rows(rows), depth(depth), columns(columns) {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    auto draw = [&](size_t n) {
      std::vector<float> v(n);
      for (float &e : v)
        e = uniform(rng);
      return rounded(v, ElementType::BF16);
    };
    x = draw(rows * depth);
    w = draw(columns * depth);
    b = draw(columns);
    std::vector<float> xf = widened(x, ElementType::BF16),
                       wf = widened(w, ElementType::BF16),
                       bf = widened(b, ElementType::BF16);
    // Products of bf16 values are exact in f32: each step is one rounding.
    std::vector<float> sums(rows * columns);
    magnitudes.assign(rows * columns, 0.0);
    for (int64_t m = 0; m < rows; ++m)
      for (int64_t n = 0; n < columns; ++n) {
        double &magnitude = magnitudes[m * columns + n];
        magnitude = std::fabs(bf[n]);
        for (int64_t k = 0; k < depth; ++k)
          magnitude += std::fabs(double(xf[m * depth + k]) * wf[n * depth + k]);
        float sum = bf[n];
        for (int64_t p = 0; p < depth; p += 2) {
          volatile float odd = xf[m * depth + p + 1] * wf[n * depth + p + 1];
          sum = sum + odd;
          volatile float even = xf[m * depth + p] * wf[n * depth + p];
          sum = sum + even;
        }
        sums[m * columns + n] = sum;
      }
    expected = rounded(sums, ElementType::BF16);
  }

  std::string spec() const {
    auto text = [](int64_t v) { return std::to_string(v); };
    return "block k {\n  input X: bf16[" + text(rows) + ", " + text(depth) +
           "]\n  param W: bf16[" + text(columns) + ", " + text(depth) +
           "]\n  param b: bf16[" + text(columns) +
           "]\n  Y = linear(X, W, b)\n  output Y\n}\n";
  }

  /// Runs the kernel compiled with `options`; counts the outputs that
  /// differ from `expected` (and reports the first): at all when `exact`,
  /// else by more than a bf16 unit in its last place plus the bound on
  /// summing the depth products in another order in f32 (depth x 2^-24 x
  /// the magnitude).
  void check(const CompileOptions &options, bool exact) const {
    auto kernel =
        test::sharedTestRuntime().compile(spec(), "pairs.attn", "", options);
    ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
    std::vector<uint16_t> y(rows * columns);
    llvm::Error error = (*kernel)->run(
        {{"X",
          const_cast<uint16_t *>(x.data()),
          ElementType::BF16,
          {rows, depth}},
         {"W",
          const_cast<uint16_t *>(w.data()),
          ElementType::BF16,
          {columns, depth}},
         {"b", const_cast<uint16_t *>(b.data()), ElementType::BF16, {columns}},
         {"Y", y.data(), ElementType::BF16, {rows, columns}}});
    ASSERT_FALSE(!!error) << llvm::toString(std::move(error));
    int mismatches = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      double got = widenBf16(y[i]), want = widenBf16(expected[i]);
      double bound = std::ldexp(std::fabs(want), -7) +
                     std::ldexp(double(depth) * magnitudes[i], -24);
      bool wrong = exact ? y[i] != expected[i] : std::fabs(got - want) > bound;
      if (wrong && ++mismatches <= 5)
        ADD_FAILURE() << "element " << i << ": got 0x" << llvm::utohexstr(y[i])
                      << ", expected 0x" << llvm::utohexstr(expected[i]);
    }
    EXPECT_EQ(mismatches, 0) << "of " << y.size();
  }
};

/// A bf16 GEMM sums k in pairs, the odd k first, from the bias: the same
/// bits on every CPU -- FMAs on widened pairs (x86-64, x86-64-v3),
/// vdpbf16ps (cooperlake), and the scalar loops of -O0 -- and those of the
/// reference. k = 768 gives thousands of outputs whose rounding a sum in k
/// order (or in bf16) would change. (200 columns: not AMX tiles, below.)
/// The Halide backend's GEMMs sum the same pairs where they run on
/// vdpbf16ps (znver4: Halide's `avx512_zen4`, which only Zen 4 and later
/// can run); elsewhere they sum k in order.
TEST(Bf16PairGemm, SumsInPairsWithTheSameBitsOnEveryCpu) {
  PairSumsCase gemm(37, 768, 200);
  struct Variant {
    const char *cpu;
    unsigned optLevel;
    Backend backend = Backend::Mlir;
  };
  std::vector<Variant> variants = {{"x86-64", 2},
                                   {"x86-64-v3", 2},
                                   {kBf16DotCpu, 2},
                                   {"native", 2},
                                   {"x86-64", 0}};
  if (haveHalideBackend())
    variants.push_back({"znver4", 2, Backend::Halide});
  for (Variant variant : variants) {
    Target target{variant.cpu, variant.backend};
    SCOPED_TRACE(nameOf(target) + " -O" + std::to_string(variant.optLevel));
    if (std::string why = whyHostCannotRun(target); !why.empty()) {
      std::printf("skipped %s: %s\n", nameOf(target).c_str(), why.c_str());
      continue;
    }
    CompileOptions options = optionsFor(target);
    options.target.optLevel = variant.optLevel;
    options.pipeline.vectorize = variant.optLevel > 0;
    gemm.check(options, /*exact=*/true);
  }
}

/// On AMX (M and N multiples of 16, K of 32), tdpbf16ps sums each tile
/// step its own way (docs/toolchain.md): within a bf16 unit in the last
/// place of the reference plus the bound of f32 sums in another order. The
/// shapes cover a bottom block and a right block of one tile, k beyond one
/// chunk of 64 steps, and threads.
TEST(Bf16PairGemm, AmxTilesWithinAUnitOfThePairSums) {
  if (!llvm::sys::getHostCPUFeatures().lookup("amx-bf16"))
    GTEST_SKIP() << "this CPU has no AMX-BF16";
  struct Shape {
    int64_t rows, depth, columns;
    bool parallel;
  };
  for (Shape shape : {Shape{48, 192, 48, false}, Shape{16, 32, 16, false},
                      Shape{64, 4160, 96, false}, Shape{96, 512, 256, true}}) {
    SCOPED_TRACE(
        std::to_string(shape.rows) + "x" + std::to_string(shape.depth) + "x" +
        std::to_string(shape.columns) + (shape.parallel ? " parallel" : ""));
    CompileOptions options = optionsFor({"native", Backend::Mlir});
    options.pipeline.parallel = shape.parallel;
    PairSumsCase(shape.rows, shape.depth, shape.columns)
        .check(options, /*exact=*/false);
  }
}

/// Weight-only low precision: an f32 input with a bf16 weight computes in
/// f32 and gives f32, the f32 kernel's result on the widened weight.
TEST(LowPrecisionPromotion, WeightOnlyBf16IsTheF32KernelOnTheWidenedWeight) {
  const char *spec = "block k {\n  input X: f32[4, 33, 48]\n"
                     "  param W: WTYPE[40, 48]\n  param b: f32[40]\n"
                     "  Y = linear(X, W, b)\n  output Y\n}\n";
  auto with = [&](const char *w) {
    std::string text = spec;
    text.replace(text.find("WTYPE"), 5, w);
    return text;
  };
  Runtime &runtime = test::sharedTestRuntime();
  auto mixed = runtime.compile(with("bf16"), "mixed.attn", "",
                               Runtime::defaultOptions());
  ASSERT_TRUE(!!mixed) << llvm::toString(mixed.takeError());
  auto full =
      runtime.compile(with("f32"), "f32.attn", "", Runtime::defaultOptions());
  ASSERT_TRUE(!!full) << llvm::toString(full.takeError());
  EXPECT_EQ((*mixed)->signature().arguments.back().type, ElementType::F32);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> x(4 * 33 * 48), w(40 * 48), b(40), y1(4 * 33 * 40),
      y2(4 * 33 * 40);
  for (std::vector<float> *v : {&x, &w, &b})
    for (float &e : *v)
      e = uniform(rng);
  std::vector<uint16_t> w16 = rounded(w, ElementType::BF16);
  std::vector<float> wWide = widened(w16, ElementType::BF16);
  llvm::Error error =
      (*mixed)->run({{"X", x.data(), ElementType::F32, {4, 33, 48}},
                     {"W", w16.data(), ElementType::BF16, {40, 48}},
                     {"b", b.data(), ElementType::F32, {40}},
                     {"Y", y1.data(), ElementType::F32, {4, 33, 40}}});
  ASSERT_FALSE(!!error) << llvm::toString(std::move(error));
  error = (*full)->run({{"X", x.data(), ElementType::F32, {4, 33, 48}},
                        {"W", wWide.data(), ElementType::F32, {40, 48}},
                        {"b", b.data(), ElementType::F32, {40}},
                        {"Y", y2.data(), ElementType::F32, {4, 33, 40}}});
  ASSERT_FALSE(!!error) << llvm::toString(std::move(error));
  for (size_t i = 0; i < y1.size(); ++i)
    ASSERT_EQ(bitsOf(y1[i]), bitsOf(y2[i])) << "element " << i;
}

/// f32 rounded to tf32 by its definition (cvt.rna.tf32.f32: the nearer of
/// the two neighbours with 10 mantissa bits, ties away from zero),
/// independent of the kernels' integer trick: exact distances in double.
float referenceTf32(float x) {
  if (!std::isfinite(x))
    return x;
  uint32_t bits = bitsOf(x);
  float down = floatOf(bits & 0xffffe000u);
  float up = floatOf((bits & 0xffffe000u) + 0x2000u);
  double dDown = std::fabs(double(x) - double(down));
  double dUp = std::fabs(double(up) - double(x));
  return dUp <= dDown ? up : down;
}

/// --gpu-math=tf32 on the GPU lowering (emulated): a linear layer and a
/// batched GEMM are the exact products of tf32-rounded operands summed in
/// f32 -- within f32's summation error of the float64 sums of those
/// products, while the f32 products would be off by about 2^-11.
TEST(Tf32Gemm, TensorCoresMultiplyOperandsRoundedToTf32) {
  const char *spec =
      "block k {\n  input X: f32[2, 33, 48]\n  param W: f32[40, 48]\n"
      "  input A: f32[3, 20, 24]\n  input B: f32[3, 24, 16]\n"
      "  Y = linear(X, W)\n  Z = matmul(A, B)\n  output Y, Z\n}\n";
  CompileOptions options = optionsFor({"native", Backend::Mlir, true});
  options.pipeline.tf32 = true;
  auto kernel =
      test::sharedTestRuntime().compile(spec, "tf32.attn", "", options);
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> x(2 * 33 * 48), w(40 * 48), a(3 * 20 * 24),
      bm(3 * 24 * 16), y(2 * 33 * 40, NAN), z(3 * 20 * 16, NAN);
  for (std::vector<float> *v : {&x, &w, &a, &bm})
    for (float &e : *v)
      e = uniform(rng);
  llvm::Error error =
      (*kernel)->run({{"X", x.data(), ElementType::F32, {2, 33, 48}},
                      {"W", w.data(), ElementType::F32, {40, 48}},
                      {"A", a.data(), ElementType::F32, {3, 20, 24}},
                      {"B", bm.data(), ElementType::F32, {3, 24, 16}},
                      {"Y", y.data(), ElementType::F32, {2, 33, 40}},
                      {"Z", z.data(), ElementType::F32, {3, 20, 16}}});
  ASSERT_FALSE(!!error) << llvm::toString(std::move(error));
  // out[i][j] = sum_k lhs(i, k) rhs(k, j), in double on rounded operands.
  auto check =
      [&](const std::vector<float> &out, int64_t rows, int64_t columns,
          int64_t depth, llvm::function_ref<float(int64_t, int64_t)> lhs,
          llvm::function_ref<float(int64_t, int64_t)> rhs, const char *what) {
        int mismatches = 0;
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < columns; ++j) {
            double sum = 0, magnitude = 0;
            for (int64_t k = 0; k < depth; ++k) {
              double term = double(referenceTf32(lhs(i, k))) *
                            double(referenceTf32(rhs(k, j)));
              sum += term;
              magnitude += std::fabs(term);
            }
            double got = out[i * columns + j];
            // f32 sums of `depth` terms: within depth units of 2^-24.
            if (!(std::fabs(got - sum) <= depth * 0x1p-24 * magnitude) &&
                ++mismatches <= 5)
              ADD_FAILURE() << what << " (" << i << ", " << j << "): " << got
                            << ", expected " << sum;
          }
        EXPECT_EQ(mismatches, 0) << what;
      };
  check(
      y, 2 * 33, 40, 48, [&](int64_t i, int64_t k) { return x[i * 48 + k]; },
      [&](int64_t k, int64_t j) { return w[j * 48 + k]; }, "linear");
  for (int64_t n = 0; n < 3; ++n)
    check(
        std::vector<float>(z.begin() + n * 320, z.begin() + (n + 1) * 320), 20,
        16, 24, [&](int64_t i, int64_t k) { return a[n * 480 + i * 24 + k]; },
        [&](int64_t k, int64_t j) { return bm[n * 384 + k * 16 + j]; },
        "matmul");
}

} // namespace
