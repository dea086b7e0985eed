//===- PrimitivesTest.cpp - Every DSL op against the naive reference ------===//
//
// For every op of docs/spec.md §2 (and the options that change its code: bias,
// transpose_b, 1-D/2-D valid_lens with lengths 0, < 0 and > Tk, causal with
// Tq != Tk, ...) this generates a one-op spec at test time for several
// shapes, JIT-compiles it with a Runtime that has a private cache directory,
// runs it on random inputs and compares every output with the naive C++
// reference (tests/reference, double accumulation).
//
// Shapes mix odd and prime sizes (1, 3, 7, 13, 17, 33, ...) with sizes that
// are multiples of 8, 16 and 32, so the register-block GEMMs and vector strips
// of attn-tile-and-vectorize (tiles of up to 8 x 32, the largest power of two
// dividing each dimension) run with full 8 x 32 tiles, smaller tiles and
// 1-wide ones, and with shapes (Tk = 100, 130) beyond one key tile of a
// fused attention. Most shapes of each op are fixed; one or two per op are
// drawn from a fixed seed, and the inputs of a case from a seed made of its
// name, so every run sees the same numbers. Every case runs at -O3 for this
// machine, at -O2 for each class of x86 CPU that the machine can run
// (AVX-512, AVX2, the SSE2 baseline: each has its own schedule), and a subset
// also at -O0 (scalar loops). Every case also runs through the Halide
// backend (--backend=halide, attnc's schedules, -O3 for this machine) when
// this attnc has it: the tests named Halide/... .
//
// Tolerance: max |kernel - reference| <= 1e-4 * max(1, max |reference|)
// (gelu's sweep over [-10, 10]: 1e-6 absolute, against erf and tanh in
// double). The
// kernel sums in f32 and the reference in double, so for long sums (linear
// and matmul with K up to 100, outputs of magnitude ~10) the bound is relative
// to the output's magnitude; for outputs within [-1, 1] (softmax, attention
// weights, layer_norm with unit gamma) it is an absolute 1e-4. (Measured
// when this was written: the worst case over every op was 5e-7 relative.)
// Weights are drawn like torch's nn.Linear init, +-1/sqrt(fan_in). No output
// may be NaN, and outputs are pre-filled with NaN so an element the kernel
// never writes fails too. Inputs must come back unchanged.
//
// The special_values_* cases (issue 31) instead feed NaN, +-inf and huge
// finite values and compare NaN-aware (see expectSpecialValuesMatch): MLIR
// at -O3 for this machine and Halide only.
//
//===----------------------------------------------------------------------===//

#include "GpuEmulation.h"
#include "NaiveReference.h"
#include "TestSupport.h"

#include "attnc/Codegen/CpuDescription.h"
#include "attnc/Halide/HalideBackend.h"
#include "attnc/Runtime/Runtime.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

using namespace attnc;
using ref::IntTensor;
using ref::Tensor;

namespace {

using Shape = std::vector<int64_t>;

constexpr double kTolerance = 1e-4;

Runtime &testRuntime() { return attnc::test::sharedTestRuntime(); }

//===----------------------------------------------------------------------===//
// Deterministic random numbers (std::mt19937's output is fixed by the
// standard; the distributions are not, so they are done by hand).
//===----------------------------------------------------------------------===//

class Rng {
public:
  explicit Rng(uint32_t seed) : engine(seed) {}
  /// Uniform in [lo, hi).
  float uniform(float lo, float hi) {
    return lo +
           (hi - lo) * static_cast<float>(engine() >> 8) * (1.0f / 16777216.0f);
  }
  /// Uniform in [lo, hi].
  int64_t integer(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(engine() % uint64_t(hi - lo + 1));
  }
  template <typename T> T pick(const std::vector<T> &values) {
    return values[integer(0, values.size() - 1)];
  }

private:
  std::mt19937 engine;
};

uint32_t hashName(const std::string &name) {
  uint32_t h = 2166136261u; // FNV-1a
  for (char c : name)
    h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  return h;
}

std::string shapeText(const Shape &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::string shapeName(const Shape &shape) {
  std::string text;
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? "x" : "") + std::to_string(shape[i]);
  return shape.empty() ? "scalar" : text;
}

/// A float literal that reads back as exactly `value` once stored as f32.
std::string floatText(float value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", static_cast<double>(value));
  std::string text = buffer;
  if (text.find_first_of(".e") == std::string::npos)
    text += ".0";
  return text;
}

Shape concat(Shape a, const Shape &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

//===----------------------------------------------------------------------===//
// A generated one-block spec, its arguments and the reference's outputs
//===----------------------------------------------------------------------===//

struct Argument {
  std::string name;
  bool param = false;
  bool isInt = false;
  Tensor floats;
  IntTensor ints;
};

struct Output {
  std::string name;
  Tensor expected;
};

class Case {
public:
  explicit Case(uint32_t seed) : rng(seed) {}

  /// A random f32 input (or param) uniform in [lo, hi).
  Tensor input(const std::string &name, const Shape &shape, float lo = -1.0f,
               float hi = 1.0f, bool param = false) {
    Tensor t(shape);
    for (float &v : t.data)
      v = rng.uniform(lo, hi);
    Argument a;
    a.name = name;
    a.param = param;
    a.floats = t;
    arguments.push_back(std::move(a));
    return t;
  }
  /// An f32 input uniform in [-1, 1) but for `values` (flat index, value):
  /// NaN, infinities and huge values where a case wants them.
  Tensor withValues(const std::string &name, const Shape &shape,
                    const std::vector<std::pair<size_t, float>> &values) {
    Tensor t(shape);
    for (float &v : t.data)
      v = rng.uniform(-1.0f, 1.0f);
    for (auto [index, value] : values)
      t.data.at(index) = value;
    return given(name, std::move(t));
  }
  /// An f32 input with the given values.
  Tensor given(const std::string &name, Tensor t) {
    Argument a;
    a.name = name;
    a.floats = t;
    arguments.push_back(std::move(a));
    return t;
  }
  /// A param uniform in [-1/sqrt(fanIn), 1/sqrt(fanIn)) (torch's init).
  Tensor weight(const std::string &name, const Shape &shape, int64_t fanIn) {
    float bound = 1.0f / std::sqrt(static_cast<float>(fanIn));
    return input(name, shape, -bound, bound, /*param=*/true);
  }
  Tensor param(const std::string &name, const Shape &shape, float lo = -1.0f,
               float hi = 1.0f) {
    return input(name, shape, lo, hi, /*param=*/true);
  }
  /// An i32 input with the given values.
  IntTensor ints(const std::string &name, const Shape &shape,
                 std::vector<int32_t> values) {
    IntTensor t(shape, std::move(values));
    Argument a;
    a.name = name;
    a.isInt = true;
    a.ints = t;
    arguments.push_back(std::move(a));
    return t;
  }
  /// An i32 input uniform in [lo, hi].
  IntTensor randomInts(const std::string &name, const Shape &shape, int64_t lo,
                       int64_t hi) {
    std::vector<int32_t> values(ref::shapeNumElements(shape));
    for (int32_t &v : values)
      v = static_cast<int32_t>(rng.integer(lo, hi));
    return ints(name, shape, std::move(values));
  }
  /// valid_lens for keys of length tk: lengths 0, -1, tk + 3 and tk among
  /// random ones in [0, tk], so every special case shows up when there are
  /// enough rows.
  IntTensor validLens(const std::string &name, const Shape &shape, int64_t tk) {
    std::vector<int32_t> values(ref::shapeNumElements(shape));
    const int32_t special[] = {0, int32_t(tk) + 3, -1, int32_t(tk)};
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = i % 3 == 1 && i / 3 < 4 ? special[i / 3]
                                          : int32_t(rng.integer(1, tk));
    return ints(name, shape, std::move(values));
  }

  void let(const std::string &statement) { statements.push_back(statement); }
  void output(const std::string &name, Tensor expected) {
    outputs.push_back({name, std::move(expected)});
  }

  std::string specText() const {
    std::string text = "block k {\n";
    for (const Argument &a : arguments)
      text += std::string("  ") + (a.param ? "param " : "input ") + a.name +
              ": " + (a.isInt ? "i32" : "f32") +
              shapeText(a.isInt ? a.ints.shape : a.floats.shape) + "\n";
    for (const std::string &s : statements)
      text += "  " + s + "\n";
    text += "  output ";
    for (size_t i = 0; i < outputs.size(); ++i)
      text += (i ? ", " : "") + outputs[i].name;
    return text + "\n}\n";
  }

  Rng rng;
  std::vector<Argument> arguments;
  std::vector<std::string> statements;
  std::vector<Output> outputs;
};

/// A named case: `build` fills a Case (seeded from the name).
struct CaseSpec {
  std::string name;
  std::function<void(Case &)> build;
  /// Also run at -O0.
  bool alsoO0 = false;
  /// Attention lowerings (attn-decompose attention=...) to run at -O3 besides
  /// the default (auto: fused when Tq * Tk is large).
  std::vector<std::string> attentionLowerings;
  /// When non-zero, the bound on max |kernel - reference| instead of
  /// kTolerance * max(1, max |reference|): for ops whose accuracy is the
  /// point of the case (gelu's erf and exp approximations).
  double absoluteTolerance = 0;
  /// The inputs hold NaN, +-inf or huge finite values: the outputs are
  /// compared by expectSpecialValuesMatch, and the case runs at -O3 for
  /// this machine and through Halide only.
  bool specialValues = false;
};

struct Param {
  const CaseSpec *spec;
  int optLevel;
  /// CpuPipelineOptions::attention; empty: the default.
  std::string attention;
  /// The CPU whose target description (hence schedule) is used, and its
  /// name in the test's name ("": this machine's).
  const char *cpu = "native";
  const char *isa = "";
  /// The GPU target's kernels run thread by thread on this CPU
  /// (tests/lib/GpuEmulation).
  bool gpuEmulation = false;
  /// The code generator.
  Backend backend = Backend::Mlir;
};

const char *backendName(Backend backend) {
  return backend == Backend::Halide ? "halide" : "mlir";
}

/// The classes of x86 CPU (tests/lit/attnc/isa-classes.test checks their
/// code on any machine; these run it where the machine can).
struct IsaClass {
  const char *cpu, *name;
};
const IsaClass kIsaClasses[] = {
    {"x86-64-v4", "avx512"}, {"x86-64-v3", "avx2"}, {"x86-64", "sse2"}};

//===----------------------------------------------------------------------===//
// Compile, run, compare
//===----------------------------------------------------------------------===//

/// Whether two float vectors hold the same bits (inputs may hold NaN, which
/// == never equals).
bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() &&
         (a.empty() ||
          std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

/// A special-value case's output: NaN exactly where the reference is NaN
/// (torch propagates NaN), the same infinity where it is infinite, and
/// elsewhere a finite value within kTolerance * max(1, |reference|),
/// element by element (ordinary and huge values share an output). 0 equals
/// -0: the sign of a zero is not checked.
void expectSpecialValuesMatch(const std::string &name, const Tensor &expected,
                              const std::vector<float> &got) {
  size_t bad = 0, firstBad = 0;
  for (size_t j = 0; j < expected.numElements(); ++j) {
    double e = expected.data[j], g = got[j];
    bool ok =
        std::isnan(e) ? std::isnan(g)
        : std::isinf(e)
            ? g == e
            : std::isfinite(g) &&
                  std::fabs(g - e) <= kTolerance * std::max(1.0, std::fabs(e));
    if (!ok && !bad++)
      firstBad = j;
  }
  EXPECT_EQ(bad, 0u) << "output '" << name << "': " << bad << " of "
                     << expected.numElements()
                     << " elements differ from the reference (NaN-aware); "
                        "the first at flat index "
                     << firstBad << ": kernel " << got[firstBad]
                     << ", reference " << expected.data[firstBad];
}

void runCase(const CaseSpec &spec, int optLevel, const std::string &attention,
             const std::string &cpu, bool gpuEmulation, Backend backend) {
  CompileOptions options;
  options.setOptLevel(optLevel);
  options.target.cpu = cpu;
  if (gpuEmulation)
    attnc::test::useGpuEmulation(options.pipeline);
  options.backend = backend;
  if (llvm::Error lacks = checkRunsOnHost(options.target))
    GTEST_SKIP() << "this machine cannot run " << cpu
                 << " code: " << llvm::toString(std::move(lacks))
                 << " (lit checks its code: tests/lit/attnc/isa-classes.test)";
  Case c(hashName(spec.name));
  spec.build(c);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  std::string text = c.specText();
  SCOPED_TRACE("spec (" + spec.name + ", -O" + std::to_string(optLevel) +
               (attention.empty() ? "" : ", attention=" + attention) +
               ", --mcpu=" + cpu + (gpuEmulation ? ", GPU emulation" : "") +
               ", --backend=" + backendName(backend) + "):\n" + text);

  if (!attention.empty())
    options.pipeline.attention = attention;
  auto kernel =
      testRuntime().compile(text, spec.name + ".attn", /*block=*/"", options);
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());

  // The signature: arguments in declaration order, then outputs.
  const KernelSignature &signature = (*kernel)->signature();
  ASSERT_EQ(signature.arguments.size(), c.arguments.size() + c.outputs.size());
  for (size_t i = 0; i < c.arguments.size(); ++i) {
    const KernelArgument &a = signature.arguments[i];
    const Argument &mine = c.arguments[i];
    EXPECT_EQ(a.name, mine.name);
    EXPECT_EQ(a.role, mine.param ? ArgumentRole::Param : ArgumentRole::Input);
    EXPECT_EQ(a.type, mine.isInt ? ElementType::I32 : ElementType::F32);
    EXPECT_EQ(a.shape, mine.isInt ? mine.ints.shape : mine.floats.shape);
  }
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    const KernelArgument &a = signature.arguments[c.arguments.size() + i];
    EXPECT_EQ(a.name, c.outputs[i].name);
    EXPECT_EQ(a.role, ArgumentRole::Output);
    ASSERT_EQ(a.shape, c.outputs[i].expected.shape)
        << "output '" << a.name << "' has the wrong shape";
  }

  // Copies of the inputs (the originals are kept to check they come back
  // unchanged), outputs pre-filled with NaN.
  std::vector<Argument> given = c.arguments;
  std::vector<std::vector<float>> results;
  for (const Output &o : c.outputs)
    results.emplace_back(o.expected.numElements(),
                         std::numeric_limits<float>::quiet_NaN());
  std::vector<HostBuffer> buffers;
  for (Argument &a : given) {
    if (a.isInt)
      buffers.push_back(
          {a.name, a.ints.data.data(), ElementType::I32, a.ints.shape});
    else
      buffers.push_back(
          {a.name, a.floats.data.data(), ElementType::F32, a.floats.shape});
  }
  for (size_t i = 0; i < c.outputs.size(); ++i)
    buffers.push_back({c.outputs[i].name, results[i].data(), ElementType::F32,
                       c.outputs[i].expected.shape});

  llvm::Error error = (*kernel)->run(buffers);
  ASSERT_FALSE(!!error) << llvm::toString(std::move(error));

  for (size_t i = 0; i < c.outputs.size(); ++i) {
    const Tensor &expected = c.outputs[i].expected;
    if (spec.specialValues) {
      expectSpecialValuesMatch(c.outputs[i].name, expected, results[i]);
      continue;
    }
    double magnitude = 1.0, worst = 0.0;
    size_t worstAt = 0, nans = 0;
    for (float v : expected.data)
      magnitude = std::max(magnitude, std::fabs(double(v)));
    for (size_t j = 0; j < expected.numElements(); ++j) {
      double diff = std::fabs(double(results[i][j]) - double(expected.data[j]));
      if (std::isnan(diff)) {
        ++nans;
      } else if (diff > worst) {
        worst = diff;
        worstAt = j;
      }
    }
    const std::string &name = c.outputs[i].name;
    EXPECT_EQ(nans, 0u) << "output '" << name << "': " << nans << " of "
                        << expected.numElements() << " elements are NaN";
    double bound = spec.absoluteTolerance ? spec.absoluteTolerance
                                          : kTolerance * magnitude;
    EXPECT_LE(worst, bound)
        << "output '" << name << "': max |kernel - reference| = " << worst
        << " at flat index " << worstAt << " (kernel " << results[i][worstAt]
        << ", reference " << expected.data[worstAt] << "), reference magnitude "
        << magnitude;
  }

  for (size_t i = 0; i < c.arguments.size(); ++i) {
    const Argument &a = c.arguments[i];
    if (a.isInt)
      EXPECT_EQ(given[i].ints.data, a.ints.data)
          << "input '" << a.name << "' was modified";
    else
      EXPECT_TRUE(sameBits(given[i].floats.data, a.floats.data))
          << "input '" << a.name << "' was modified";
  }
}

//===----------------------------------------------------------------------===//
// The cases
//===----------------------------------------------------------------------===//

/// Sizes random shapes draw from: odd, prime, and multiples of 8/16/32.
const std::vector<int64_t> kSizes = {1,  2,  3,  4,  5,  7,  8,  13, 16,
                                     17, 24, 31, 32, 33, 40, 48, 64, 67};
/// Smaller sizes for batch-like dimensions.
const std::vector<int64_t> kSmall = {1, 2, 3, 4, 5};

class Cases {
public:
  Cases() : shapes(20240611u) {}

  void add(std::string name, std::function<void(Case &)> build,
           bool alsoO0 = false) {
    list.push_back({std::move(name), std::move(build), alsoO0, {}});
  }
  int64_t size() { return shapes.pick(kSizes); }
  int64_t small() { return shapes.pick(kSmall); }
  int64_t even() { return 2 * shapes.integer(1, 33); }
  int64_t integer(int64_t lo, int64_t hi) { return shapes.integer(lo, hi); }

  Rng shapes;
  std::vector<CaseSpec> list;
};

void linearCases(Cases &cases) {
  struct S {
    Shape lead;
    int64_t in, out;
  };
  std::vector<S> shapes = {
      {{1}, 1, 1},
      {{3}, 7, 13},
      {{2, 33}, 17, 64},
      {{64}, 96, 48},
      {{2, 4}, 100, 100},
      {{40}, 32, 33},
      {{2, 3, 5}, 64, 32},
      {{128}, 128, 128},
      {{cases.size()}, cases.size(), cases.size()},
      {{cases.small(), cases.size()}, cases.size(), cases.size()}};
  for (size_t i = 0; i < shapes.size(); ++i) {
    for (bool bias : {true, false}) {
      S s = shapes[i];
      std::string name = std::string("linear_") + (bias ? "bias_" : "") +
                         shapeName(concat(s.lead, {s.in})) + "_to" +
                         std::to_string(s.out);
      cases.add(
          name,
          [s, bias](Case &c) {
            Tensor x = c.input("X", concat(s.lead, {s.in}));
            Tensor w = c.weight("W", {s.out, s.in}, s.in);
            Tensor b = bias ? c.param("b", {s.out}) : Tensor();
            c.let(bias ? "Y = linear(X, W, b)" : "Y = linear(X, W)");
            c.output("Y", ref::linear(x, w, bias ? &b : nullptr));
          },
          /*alsoO0=*/i % 3 == 2);
    }
  }
}

void matmulCases(Cases &cases) {
  std::vector<Shape> shapes = {
      {1, 1, 1, 1},
      {3, 7, 13, 17},
      {2, 33, 16, 64},
      {1, 64, 40, 96},
      {5, 8, 3, 32},
      {2, 128, 100, 128},
      {cases.small(), cases.size(), cases.size(), cases.size()}};
  for (size_t i = 0; i < shapes.size(); ++i) {
    for (bool transposed : {false, true}) {
      int64_t n = shapes[i][0], m = shapes[i][1], k = shapes[i][2],
              p = shapes[i][3];
      std::string name = std::string("matmul_") + (transposed ? "tb_" : "") +
                         shapeName({n, m, k, p});
      cases.add(
          name,
          [=](Case &c) {
            Tensor a = c.input("A", {n, m, k});
            Tensor b =
                c.input("B", transposed ? Shape{n, p, k} : Shape{n, k, p});
            c.let(transposed ? "Y = matmul(A, B, transpose_b=true)"
                             : "Y = matmul(A, B)");
            c.output("Y", ref::matmul(a, b, transposed));
          },
          /*alsoO0=*/i == 1 || i == 3);
    }
  }
}

void elementwiseCases(Cases &cases) {
  std::vector<Shape> shapes = {
      {},          {1},     {7},           {3, 13},
      {2, 17, 33}, {4, 64}, {2, 3, 5, 48}, {cases.size(), cases.size()}};
  std::vector<float> factors = {0.125f, -2.5f, 3.0f, 1e-3f,
                                0.3f,   -1.0f, 7.0f, 0.5f};
  for (size_t i = 0; i < shapes.size(); ++i) {
    Shape s = shapes[i];
    float f = factors[i];
    bool o0 = i == 3 || i == 6;
    cases.add(
        "scale_" + shapeName(s) + "_by" + std::to_string(i),
        [=](Case &c) {
          Tensor x = c.input("X", s);
          c.let("Y = scale(X, " + floatText(f) + ")");
          c.output("Y", ref::scale(x, f));
        },
        o0);
    cases.add(
        "add_" + shapeName(s),
        [=](Case &c) {
          Tensor a = c.input("A", s);
          Tensor b = c.input("B", s);
          c.let("Y = add(A, B)");
          c.output("Y", ref::add(a, b));
        },
        o0);
    cases.add(
        "relu_" + shapeName(s),
        [=](Case &c) {
          Tensor x = c.input("X", s);
          c.let("Y = relu(X)");
          c.output("Y", ref::relu(x));
        },
        o0);
    // Inputs over [-6, 6): the curved part and where gelu is x or 0.
    for (bool tanhForm : {false, true})
      cases.add(
          std::string("gelu_") + (tanhForm ? "tanh_" : "") + shapeName(s),
          [=](Case &c) {
            Tensor x = c.input("X", s, -6.0f, 6.0f);
            c.let(tanhForm ? "Y = gelu(X, approximate=true)" : "Y = gelu(X)");
            c.output("Y", ref::gelu(x, tanhForm));
          },
          o0);
    cases.add(
        "dropout_" + shapeName(s),
        [=](Case &c) {
          Tensor x = c.input("X", s);
          double p = i % 2 ? 0.0 : 0.5;
          c.let(std::string("Y = dropout(X, p=") + (i % 2 ? "0" : "0.5") + ")");
          c.output("Y", ref::dropout(x, p));
        },
        i == 3);
  }
}

/// The inputs of the activations' accuracy cases: [-10, 10] in steps of
/// 0.001 (an odd count, so vector strips and their leftovers both run), then
/// 0, -0, tiny, subnormal and large magnitudes (where exp overflows).
std::vector<float> activationSweep() {
  std::vector<float> values;
  for (int i = -10000; i <= 10000; ++i)
    values.push_back(float(i) * 0.001f);
  for (float v :
       {0.0f, -0.0f, 1e-3f, -1e-3f, 1e-20f, -1e-20f, 1e-40f, -10.0f, 10.0f,
        20.0f, -20.0f, 88.0f, -88.0f, 100.0f, -100.0f, 1e4f, -1e4f})
    values.push_back(v);
  return values;
}

/// gelu's accuracy: both forms on activationSweep(), within 1e-6 of the
/// formulas in double; and BERT/GPT-2 style FFNs, linear -> gelu -> linear,
/// whose first GEMM applies gelu in its register blocks.
void geluCases(Cases &cases) {
  cases.add(
      "gelu_sweep",
      [](Case &c) {
        std::vector<float> values = activationSweep();
        Shape shape = {int64_t(values.size())};
        Tensor x = c.given("X", Tensor(shape, values));
        c.let("Y = gelu(X)");
        c.let("Z = gelu(X, approximate=true)");
        c.output("Y", ref::gelu(x));
        c.output("Z", ref::gelu(x, /*tanhForm=*/true));
      },
      /*alsoO0=*/true);
  cases.list.back().absoluteTolerance = 1e-6;

  struct S {
    Shape lead;
    int64_t d, f, o;
    bool outputBias;
  };
  std::vector<S> shapes = {{{1}, 1, 1, 1, true},
                           {{3}, 7, 13, 5, false},
                           {{2, 17}, 24, 96, 24, true},
                           {{33}, 17, 64, 96, true},
                           {{2, 3}, 64, 33, 32, false},
                           {{cases.small(), cases.size()},
                            cases.size(),
                            cases.size(),
                            cases.size(),
                            true}};
  for (size_t i = 0; i < shapes.size(); ++i) {
    for (bool tanhForm : {false, true}) {
      S s = shapes[i];
      cases.add(
          std::string("gelu_ffn_") + (tanhForm ? "tanh_" : "") +
              shapeName(concat(s.lead, {s.d})) + "_f" + std::to_string(s.f) +
              "_o" + std::to_string(s.o),
          [=](Case &c) {
            // Hidden values of a few units: gelu's curved part.
            Tensor x = c.input("X", concat(s.lead, {s.d}), -3.0f, 3.0f);
            Tensor w1 = c.weight("W1", {s.f, s.d}, s.d);
            Tensor b1 = c.param("b1", {s.f});
            Tensor w2 = c.weight("W2", {s.o, s.f}, s.f);
            Tensor b2 = s.outputBias ? c.param("b2", {s.o}) : Tensor();
            std::string hidden =
                tanhForm ? "gelu(linear(X, W1, b1), approximate=true)"
                         : "gelu(linear(X, W1, b1))";
            c.let("Y = linear(" + hidden +
                  (s.outputBias ? ", W2, b2)" : ", W2)"));
            c.output("Y", ref::geluFfn(x, w1, b1, w2,
                                       s.outputBias ? &b2 : nullptr, tanhForm));
          },
          i == 1 || i == 3);
    }
  }
}

/// The v2 elementwise ops (docs/spec.md §2 v2): silu, tanh and sigmoid on every
/// shape and on a sweep with special values (1e-6 of the formulas in
/// double); add, mul and sub with NumPy broadcasting (a stretched size-1
/// axis, a missing one, both operands stretching, a scalar); rms_norm with
/// both eps; and Llama's SwiGLU FFN, whose gate GEMM applies silu in its
/// register blocks.
void v2ElementwiseCases(Cases &cases) {
  std::vector<Shape> shapes = {{},          {1},     {7},           {3, 13},
                               {2, 17, 33}, {4, 64}, {cases.size()}};
  for (size_t i = 0; i < shapes.size(); ++i) {
    Shape s = shapes[i];
    bool o0 = i == 3;
    // Inputs over [-8, 8): where exp(-x) is large, small and in between.
    cases.add(
        "silu_tanh_sigmoid_" + shapeName(s),
        [=](Case &c) {
          Tensor x = c.input("X", s, -8.0f, 8.0f);
          c.let("Y = silu(X)");
          c.let("Z = tanh(X)");
          c.let("S = sigmoid(X)");
          c.output("Y", ref::silu(x));
          c.output("Z", ref::tanh(x));
          c.output("S", ref::sigmoid(x));
        },
        o0);
  }
  cases.add(
      "silu_tanh_sigmoid_sweep",
      [](Case &c) {
        std::vector<float> values = activationSweep();
        Shape shape = {int64_t(values.size())};
        Tensor x = c.given("X", Tensor(shape, values));
        c.let("Y = silu(X)");
        c.let("Z = tanh(X)");
        c.let("S = sigmoid(X)");
        c.output("Y", ref::silu(x));
        c.output("Z", ref::tanh(x));
        c.output("S", ref::sigmoid(x));
      },
      /*alsoO0=*/true);
  // torch's float32 silu is itself about 1e-6 from the exact value at
  // |x| in [4, 10]; 2e-6 leaves room for one more rounding.
  cases.list.back().absoluteTolerance = 2e-6;

  struct B {
    Shape a, b;
  };
  std::vector<B> pairs = {
      {{2, 3, 5}, {2, 3, 5}},
      {{1, 3, 5}, {2, 3, 5}},
      {{5}, {2, 3, 5}},
      {{2, 3, 1}, {33}},
      {{2, 1, 17}, {1, 4, 1}},
      {{}, {3, 13}},
      {{3, 64}, {1}},
      {{cases.small(), 1, cases.size()}, {cases.size(), 1}}};
  for (size_t i = 0; i < pairs.size(); ++i) {
    B p = pairs[i];
    std::string name = shapeName(p.a) + "_and_" + shapeName(p.b);
    cases.add(
        "broadcast_" + name,
        [=](Case &c) {
          Tensor a = c.input("A", p.a);
          Tensor b = c.input("B", p.b);
          c.let("Y = add(A, B)");
          c.let("Z = mul(A, B)");
          c.let("S = sub(A, B)");
          c.let("R = sub(B, A)");
          c.output("Y", ref::add(a, b));
          c.output("Z", ref::mul(a, b));
          c.output("S", ref::sub(a, b));
          c.output("R", ref::sub(b, a));
        },
        /*alsoO0=*/i == 3 || i == 4);
  }

  struct N {
    Shape lead;
    int64_t d;
    float eps; // 0: the default
  };
  std::vector<N> norms = {{{1}, 1, 0},
                          {{3}, 7, 0},
                          {{2, 17}, 33, 1e-5f},
                          {{2, 5}, 64, 0},
                          {{cases.size()}, cases.size(), 0.5f}};
  for (size_t i = 0; i < norms.size(); ++i) {
    N n = norms[i];
    cases.add(
        "rms_norm_" + shapeName(concat(n.lead, {n.d})) +
            (n.eps ? "_eps" + std::to_string(i) : ""),
        [=](Case &c) {
          Tensor x = c.input("X", concat(n.lead, {n.d}), -2.0f, 2.0f);
          Tensor g = c.param("g", {n.d}, 0.5f, 1.5f);
          c.let("Y = rms_norm(X, g" +
                (n.eps ? ", eps=" + floatText(n.eps) : std::string()) + ")");
          c.output("Y", ref::rmsNorm(x, g, n.eps ? double(n.eps) : 1e-6));
        },
        /*alsoO0=*/i == 2);
  }

  // Llama's MLP: down(silu(gate(x)) * up(x)).
  std::vector<Shape> mlps = {{1, 3, 8, 16}, {2, 7, 24, 40}, {1, 33, 64, 96}};
  for (const Shape &m : mlps)
    cases.add(
        "swiglu_" + shapeName(m),
        [=](Case &c) {
          Shape xs = {m[0], m[1], m[2]};
          Tensor x = c.input("X", xs, -2.0f, 2.0f);
          Tensor wg = c.weight("Wg", {m[3], m[2]}, m[2]);
          Tensor wu = c.weight("Wu", {m[3], m[2]}, m[2]);
          Tensor wd = c.weight("Wd", {m[2], m[3]}, m[3]);
          c.let("Y = linear(mul(silu(linear(X, Wg)), linear(X, Wu)), Wd)");
          Tensor hidden =
              ref::mul(ref::silu(ref::linear(x, wg)), ref::linear(x, wu));
          c.output("Y", ref::linear(hidden, wd));
        },
        /*alsoO0=*/m[1] == 7);
}

void headCases(Cases &cases) {
  // {B, T, H, d}
  std::vector<Shape> shapes = {
      {1, 1, 1, 1},
      {2, 3, 5, 7},
      {3, 17, 2, 16},
      {2, 33, 4, 32},
      {1, 7, 13, 3},
      {cases.small(), cases.size(), cases.small(), cases.size()}};
  for (size_t i = 0; i < shapes.size(); ++i) {
    int64_t b = shapes[i][0], t = shapes[i][1], h = shapes[i][2],
            d = shapes[i][3];
    std::string suffix = shapeName({b, t, h * d}) + "_h" + std::to_string(h);
    cases.add(
        "split_heads_" + suffix,
        [=](Case &c) {
          Tensor x = c.input("X", {b, t, h * d});
          c.let("Y = split_heads(X, heads=" + std::to_string(h) + ")");
          c.output("Y", ref::splitHeads(x, h));
        },
        i == 1);
    cases.add(
        "merge_heads_" + suffix,
        [=](Case &c) {
          Tensor x = c.input("X", {b * h, t, d});
          c.let("Y = merge_heads(X, heads=" + std::to_string(h) + ")");
          c.output("Y", ref::mergeHeads(x, h));
        },
        i == 1);
  }
}

void softmaxCases(Cases &cases) {
  struct S {
    Shape shape;
    float amplitude;
  };
  std::vector<S> shapes = {{{1}, 1},        {{7}, 3},
                           {{3, 13}, 1},    {{2, 5, 33}, 20},
                           {{4, 64}, 50},   {{2, 3, 96}, 5},
                           {{2, 1000}, 10}, {{cases.size(), cases.size()}, 4}};
  for (size_t i = 0; i < shapes.size(); ++i) {
    S s = shapes[i];
    cases.add(
        "softmax_" + shapeName(s.shape) + "_amp" +
            std::to_string(int(s.amplitude)),
        [=](Case &c) {
          Tensor x = c.input("X", s.shape, -s.amplitude, s.amplitude);
          c.let("Y = softmax(X)");
          c.output("Y", ref::softmax(x));
        },
        i == 3 || i == 5);
  }
}

void maskedSoftmaxCases(Cases &cases) {
  // {N, Tq, Tk}
  std::vector<Shape> shapes = {
      {1, 1, 1},
      {4, 3, 7},
      {5, 17, 13},
      {13, 2, 33},
      {4, 8, 64},
      {3, 5, 1},
      {cases.integer(4, 13), cases.size(), cases.size()}};
  for (size_t i = 0; i < shapes.size(); ++i) {
    for (int rank : {1, 2}) {
      int64_t n = shapes[i][0], tq = shapes[i][1], tk = shapes[i][2];
      cases.add(
          "masked_softmax_vl" + std::to_string(rank) + "d_" +
              shapeName(shapes[i]),
          [=](Case &c) {
            Tensor x = c.input("X", {n, tq, tk}, -3.0f, 3.0f);
            IntTensor vl =
                c.validLens("vl", rank == 1 ? Shape{n} : Shape{n, tq}, tk);
            c.let("Y = masked_softmax(X, vl)");
            c.output("Y", ref::maskedSoftmax(x, &vl));
          },
          i == 2 || i == 4);
    }
  }
  // Every length is special: 0 (uniform rows), negative, > Tk, == Tk.
  cases.add(
      "masked_softmax_all_special_lengths",
      [](Case &c) {
        Tensor x = c.input("X", {4, 3, 5}, -3.0f, 3.0f);
        IntTensor vl = c.ints("vl", {4}, {0, -7, 6, 5});
        c.let("Y = masked_softmax(X, vl)");
        c.output("Y", ref::maskedSoftmax(x, &vl));
      },
      true);
  cases.add(
      "masked_softmax_2d_all_zero_lengths",
      [](Case &c) {
        Tensor x = c.input("X", {2, 3, 33}, -3.0f, 3.0f);
        IntTensor vl = c.ints("vl", {2, 3}, {0, 0, 0, 0, 0, 0});
        c.let("Y = masked_softmax(X, vl)");
        c.output("Y", ref::maskedSoftmax(x, &vl));
      },
      true);
}

/// The attention lowering the default (auto) does not pick for Tq x Tk:
/// attn-decompose fuses when Tq * Tk >= its fuse-threshold, 4096. (Should
/// the threshold change, a case merely runs one lowering twice.)
std::string otherLowering(int64_t tq, int64_t tk) {
  return tq * tk >= 4096 ? "decomposed" : "fused";
}

void attentionCases(Cases &cases) {
  // {N, Tq, Tk, d, dv}
  std::vector<Shape> shapes = {
      {1, 1, 1, 1, 1},
      {2, 4, 4, 8, 8},
      {3, 7, 13, 5, 3},
      {4, 33, 17, 16, 32},
      {2, 13, 7, 64, 48},
      {10, 10, 10, 20, 20},
      {2, 3, 130, 32, 16},
      {1, 130, 100, 8, 33},
      // Heads wider than a GPU thread's 64 accumulators: Llama's 128, and
      // 100 (two slices of 50).
      {2, 9, 70, 128, 128},
      {1, 5, 40, 100, 100},
      // Values split over four slices (128), keys of 102 columns, which
      // four do not divide.
      {1, 6, 20, 102, 128},
      {cases.small(), cases.size(), cases.size(), cases.size(), cases.size()}};
  for (size_t i = 0; i < shapes.size(); ++i) {
    int64_t n = shapes[i][0], tq = shapes[i][1], tk = shapes[i][2],
            d = shapes[i][3], dv = shapes[i][4];
    // vl: 0 none, 1 [N], 2 [N, Tq].
    for (int vlRank : {0, 1, 2}) {
      for (bool causal : {false, true}) {
        // All six variants for a few shapes; two for the others.
        if (i % 2 == 0 && !(vlRank == 0 && !causal) && !(vlRank == 2 && causal))
          continue;
        std::string name = "attention_" + shapeName(shapes[i]) + "_vl" +
                           std::to_string(vlRank) + "d" +
                           (causal ? "_causal" : "");
        cases.add(
            name,
            [=](Case &c) {
              Tensor q = c.input("Q", {n, tq, d});
              Tensor k = c.input("K", {n, tk, d});
              Tensor v = c.input("V", {n, tk, dv});
              IntTensor vl;
              std::string call = "Y = attention(Q, K, V";
              if (vlRank) {
                vl = c.validLens("vl", vlRank == 1 ? Shape{n} : Shape{n, tq},
                                 tk);
                call += ", valid_lens=vl";
              }
              if (causal)
                call += ", causal=true";
              c.let(call + ")");
              c.output("Y",
                       ref::attention(q, k, v, vlRank ? &vl : nullptr, causal));
            },
            (i == 2 || i == 3) && vlRank != 1);
        cases.list.back().attentionLowerings = {otherLowering(tq, tk)};
      }
    }
  }

  // Large scores (|q k^T| / sqrt(d) up to ~100): peaky rows, far from the
  // uniform ones the small inputs above give.
  for (Shape s : {Shape{2, 20, 70, 16, 8}, Shape{1, 9, 33, 64, 5}}) {
    for (int vlRank : {1, 2}) {
      int64_t n = s[0], tq = s[1], tk = s[2], d = s[3], dv = s[4];
      bool causal = vlRank == 2;
      cases.add("attention_large_scores_" + shapeName(s) + "_vl" +
                    std::to_string(vlRank) + "d" + (causal ? "_causal" : ""),
                [=](Case &c) {
                  Tensor q = c.input("Q", {n, tq, d}, -10.0f, 10.0f);
                  Tensor k = c.input("K", {n, tk, d}, -10.0f, 10.0f);
                  Tensor v = c.input("V", {n, tk, dv});
                  IntTensor vl = c.validLens(
                      "vl", vlRank == 1 ? Shape{n} : Shape{n, tq}, tk);
                  c.let(std::string("Y = attention(Q, K, V, valid_lens=vl") +
                        (causal ? ", causal=true)" : ")"));
                  c.output("Y", ref::attention(q, k, v, &vl, causal));
                });
      cases.list.back().attentionLowerings = {"decomposed", "fused"};
    }
  }
  // Scores that grow with the key index (0.3 sqrt(d) j, up to ~100): every
  // block of keys raises the running maximum of an online softmax; and the
  // same keys reversed, where the first block holds it.
  for (bool increasing : {true, false}) {
    cases.add(std::string("attention_") +
                  (increasing ? "increasing" : "decreasing") + "_scores",
              [=](Case &c) {
                int64_t n = 2, tq = 5, tk = 83, d = 16, dv = 7;
                Tensor q =
                    c.given("Q", Tensor({n, tq, d},
                                        std::vector<float>(n * tq * d, 1.0f)));
                Tensor keys({n, tk, d});
                for (int64_t b = 0; b < n; ++b)
                  for (int64_t j = 0; j < tk; ++j)
                    for (int64_t e = 0; e < d; ++e)
                      keys.data[(b * tk + j) * d + e] =
                          0.3f * float(increasing ? j : tk - 1 - j);
                Tensor k = c.given("K", keys);
                Tensor v = c.input("V", {n, tk, dv});
                IntTensor vl = c.ints("vl", {n}, {83, 50});
                c.let("Y = attention(Q, K, V, valid_lens=vl)");
                c.output("Y", ref::attention(q, k, v, &vl));
              });
    cases.list.back().attentionLowerings = {"decomposed", "fused"};
  }
}

/// return_weights=true: the attention weights as a second output, under
/// every lowering (an op whose weights are returned is never fused, even
/// with attention=fused or when auto would fuse its Tq x Tk).
void attentionWeightsCases(Cases &cases) {
  // {N, Tq, Tk, d, dv}; 130 x 100 scores are fused by auto without weights.
  std::vector<Shape> shapes = {{2, 4, 4, 8, 8},
                               {3, 7, 13, 5, 3},
                               {2, 3, 130, 32, 16},
                               {1, 130, 100, 8, 33}};
  for (const Shape &s : shapes) {
    int64_t n = s[0], tq = s[1], tk = s[2], d = s[3], dv = s[4];
    // vl: 0 none, 1 [N], 2 [N, Tq].
    for (std::pair<int, bool> variant :
         {std::pair{1, false}, std::pair{2, true}, std::pair{0, true}}) {
      int vlRank = variant.first;
      bool causal = variant.second;
      cases.add(
          "attention_weights_" + shapeName(s) + "_vl" + std::to_string(vlRank) +
              "d" + (causal ? "_causal" : ""),
          [=](Case &c) {
            Tensor q = c.input("Q", {n, tq, d});
            Tensor k = c.input("K", {n, tk, d});
            Tensor v = c.input("V", {n, tk, dv});
            IntTensor vl;
            std::string call = "Y, A = attention(Q, K, V";
            if (vlRank) {
              vl = c.validLens("vl", vlRank == 1 ? Shape{n} : Shape{n, tq}, tk);
              call += ", valid_lens=vl";
            }
            if (causal)
              call += ", causal=true";
            c.let(call + ", return_weights=true)");
            const IntTensor *lens = vlRank ? &vl : nullptr;
            c.output("Y", ref::attention(q, k, v, lens, causal));
            c.output("A", ref::attentionWeights(q, k, lens, causal));
          },
          vlRank == 2);
      cases.list.back().attentionLowerings = {"decomposed", "fused"};
    }
  }

  struct S {
    int64_t b, tq, tk, dq, dkv, hd, heads;
    int vlRank;
    bool causal;
  };
  for (S s : {S{2, 4, 4, 100, 100, 100, 5, 1, false}, // the D2L book's
              S{3, 7, 13, 5, 6, 12, 3, 1, false},
              S{2, 9, 100, 32, 40, 32, 4, 2, true},
              S{4, 70, 70, 16, 16, 16, 2, 1, true}}) {
    cases.add(
        "multihead_attention_weights_b" + std::to_string(s.b) + "_tq" +
            std::to_string(s.tq) + "_tk" + std::to_string(s.tk) + "_h" +
            std::to_string(s.heads) + "_vl" + std::to_string(s.vlRank) + "d" +
            (s.causal ? "_causal" : ""),
        [=](Case &c) {
          Tensor q = c.input("Qx", {s.b, s.tq, s.dq});
          Tensor kv = c.input("KVx", {s.b, s.tk, s.dkv});
          IntTensor vl = c.validLens(
              "vl", s.vlRank == 1 ? Shape{s.b} : Shape{s.b, s.tq}, s.tk);
          Tensor wq = c.weight("W_q", {s.hd, s.dq}, s.dq);
          Tensor wk = c.weight("W_k", {s.hd, s.dkv}, s.dkv);
          Tensor wv = c.weight("W_v", {s.hd, s.dkv}, s.dkv);
          Tensor wo = c.weight("W_o", {s.hd, s.hd}, s.hd);
          c.let("Y, A = multihead_attention(Qx, KVx, KVx, heads=" +
                std::to_string(s.heads) +
                ", w_q=W_q, w_k=W_k, w_v=W_v, w_o=W_o, valid_lens=vl" +
                (s.causal ? ", causal=true" : "") + ", return_weights=true)");
          c.output("Y", ref::multiheadAttention(q, kv, kv, s.heads, wq, wk, wv,
                                                wo, &vl, s.causal));
          c.output("A", ref::multiheadAttentionWeights(q, kv, s.heads, wq, wk,
                                                       &vl, s.causal));
        },
        s.vlRank == 2);
    cases.list.back().attentionLowerings = {"decomposed", "fused"};
  }
}

void multiheadCases(Cases &cases) {
  struct S {
    int64_t b, tq, tk, dq, dk, dv, hd, heads;
    bool self;
  };
  std::vector<S> shapes = {
      {2, 4, 4, 100, 100, 100, 100, 5, true}, // the D2L book example
      {1, 1, 1, 1, 1, 1, 1, 1, true},
      {3, 7, 13, 5, 6, 7, 12, 3, false},
      {2, 17, 33, 32, 16, 8, 64, 2, false},
      {2, 33, 33, 48, 48, 48, 48, 4, true},
      {3, 5, 7, 24, 24, 24, 24, 8, false},
      {2, 9, 100, 32, 40, 24, 32, 4, false},
  };
  int64_t h = cases.small(), t = cases.size();
  int64_t hd = h * cases.shapes.pick<int64_t>({1, 3, 8, 16});
  shapes.push_back({cases.small(), t, t, hd, hd, hd, hd, h, true});
  for (size_t i = 0; i < shapes.size(); ++i) {
    S s = shapes[i];
    for (int vlRank : {0, 1, 2}) {
      for (bool causal : {false, true}) {
        if (!(vlRank == 1 && !causal) && !(vlRank == 2 && causal) &&
            !(i == 2 && vlRank == 0))
          continue;
        std::string name =
            "multihead_attention_b" + std::to_string(s.b) + "_tq" +
            std::to_string(s.tq) + "_tk" + std::to_string(s.tk) + "_hd" +
            std::to_string(s.hd) + "_h" + std::to_string(s.heads) +
            (s.self ? "_self" : "_cross") + "_vl" + std::to_string(vlRank) +
            "d" + (causal ? "_causal" : "");
        cases.add(
            name,
            [=](Case &c) {
              Tensor q, k, v;
              if (s.self) {
                q = k = v = c.input("X", {s.b, s.tq, s.dq});
              } else {
                q = c.input("Qx", {s.b, s.tq, s.dq});
                k = c.input("Kx", {s.b, s.tk, s.dk});
                v = c.input("Vx", {s.b, s.tk, s.dv});
              }
              IntTensor vl;
              if (vlRank)
                vl = c.validLens(
                    "vl", vlRank == 1 ? Shape{s.b} : Shape{s.b, s.tq}, s.tk);
              Tensor wq = c.weight("W_q", {s.hd, s.dq}, s.dq);
              Tensor wk = c.weight("W_k", {s.hd, s.dk}, s.dk);
              Tensor wv = c.weight("W_v", {s.hd, s.dv}, s.dv);
              Tensor wo = c.weight("W_o", {s.hd, s.hd}, s.hd);
              std::string call = std::string("Y = multihead_attention(") +
                                 (s.self ? "X, X, X" : "Qx, Kx, Vx") +
                                 ", heads=" + std::to_string(s.heads) +
                                 ", w_q=W_q, w_k=W_k, w_v=W_v, w_o=W_o";
              if (vlRank)
                call += ", valid_lens=vl";
              if (causal)
                call += ", causal=true";
              c.let(call + ")");
              c.output("Y",
                       ref::multiheadAttention(q, k, v, s.heads, wq, wk, wv, wo,
                                               vlRank ? &vl : nullptr, causal));
            },
            i == 0 || i == 3);
      }
    }
  }
}

void positionalEncodingCases(Cases &cases) {
  // {B, T, D, max_len}
  std::vector<Shape> shapes = {
      {1, 1, 2, 1},
      {2, 4, 100, 1000},
      {3, 17, 34, 17},
      {1, 1000, 6, 1000},
      {2, 33, 64, 50},
      {1, 200, 512, 10000},
      {cases.small(), cases.size(), cases.even(), 1000}};
  for (size_t i = 0; i < shapes.size(); ++i) {
    int64_t b = shapes[i][0], t = shapes[i][1], d = shapes[i][2],
            maxLen = shapes[i][3];
    cases.add(
        "positional_encoding_" + shapeName({b, t, d}) + "_max" +
            std::to_string(maxLen),
        [=](Case &c) {
          Tensor x = c.input("X", {b, t, d});
          c.let("Y = positional_encoding(X, max_len=" + std::to_string(maxLen) +
                ")");
          c.output("Y", ref::positionalEncoding(x, maxLen));
        },
        i == 1 || i == 3);
  }
}

void normCases(Cases &cases) {
  struct S {
    Shape lead;
    int64_t d;
    float eps; // 0: the default
    float offset;
  };
  std::vector<S> shapes = {{{1}, 1, 0, 0},
                           {{3}, 7, 0, 0},
                           {{2, 17}, 33, 1e-3f, 3},
                           {{64}, 64, 0, 0},
                           {{2, 5}, 100, 1e-6f, -2},
                           {{4, 3, 2}, 24, 0.5f, 0},
                           {{cases.size()}, cases.size(), 0, 1}};
  for (size_t i = 0; i < shapes.size(); ++i) {
    S s = shapes[i];
    std::string suffix = shapeName(concat(s.lead, {s.d})) +
                         (s.eps ? "_eps" + std::to_string(i) : "");
    std::string epsArg = s.eps ? ", eps=" + floatText(s.eps) : "";
    double eps = s.eps ? double(s.eps) : 1e-5;
    cases.add(
        "layer_norm_" + suffix,
        [=](Case &c) {
          Tensor x = c.input("X", concat(s.lead, {s.d}), s.offset - 1.0f,
                             s.offset + 1.0f);
          Tensor g = c.param("g", {s.d}, 0.5f, 1.5f);
          Tensor b = c.param("b", {s.d});
          c.let("Y = layer_norm(X, g, b" + epsArg + ")");
          c.output("Y", ref::layerNorm(x, g, b, eps));
        },
        i == 2 || i == 4);
    cases.add(
        "add_norm_" + suffix,
        [=](Case &c) {
          Tensor x = c.input("X", concat(s.lead, {s.d}), s.offset - 1.0f,
                             s.offset + 1.0f);
          Tensor y = c.input("Z", concat(s.lead, {s.d}));
          Tensor g = c.param("g", {s.d}, 0.5f, 1.5f);
          Tensor b = c.param("b", {s.d});
          c.let("Y = add_norm(X, Z, g, b" + epsArg + ")");
          c.output("Y", ref::addNorm(x, y, g, b, eps));
        },
        i == 3);
  }
}

void ffnCases(Cases &cases) {
  struct S {
    Shape lead;
    int64_t d, f, o;
  };
  std::vector<S> shapes = {{{1}, 1, 1, 1},
                           {{3}, 7, 13, 5},
                           {{2, 100}, 24, 48, 24},
                           {{33}, 17, 64, 96},
                           {{2, 3}, 64, 32, 33},
                           {{cases.small(), cases.size()},
                            cases.size(),
                            cases.size(),
                            cases.size()}};
  for (size_t i = 0; i < shapes.size(); ++i) {
    S s = shapes[i];
    cases.add(
        "ffn_" + shapeName(concat(s.lead, {s.d})) + "_f" + std::to_string(s.f) +
            "_o" + std::to_string(s.o),
        [=](Case &c) {
          Tensor x = c.input("X", concat(s.lead, {s.d}));
          Tensor w1 = c.weight("W1", {s.f, s.d}, s.d);
          Tensor b1 = c.param("b1", {s.f});
          Tensor w2 = c.weight("W2", {s.o, s.f}, s.f);
          Tensor b2 = c.param("b2", {s.o});
          c.let("Y = ffn(X, W1, b1, W2, b2)");
          c.output("Y", ref::ffn(x, w1, b1, w2, b2));
        },
        i == 1 || i == 3);
  }
}

void embeddingCases(Cases &cases) {
  struct S {
    Shape ids;
    int64_t vocab, d;
  };
  std::vector<S> shapes = {
      {{1}, 1, 1},
      {{7}, 13, 5},
      {{2, 3}, 100, 33},
      {{2, 17}, 7, 64},
      {{3, 2, 4}, 50, 16},
      {{cases.small(), cases.size()}, cases.size(), cases.size()}};
  for (size_t i = 0; i < shapes.size(); ++i) {
    S s = shapes[i];
    cases.add(
        "embedding_" + shapeName(s.ids) + "_v" + std::to_string(s.vocab) +
            "_d" + std::to_string(s.d),
        [=](Case &c) {
          IntTensor ids = c.randomInts("ids", s.ids, 0, s.vocab - 1);
          Tensor table = c.param("E", {s.vocab, s.d});
          c.let("Y = embedding(ids, E)");
          auto expected = ref::embedding(ids, table);
          ASSERT_TRUE(!!expected) << llvm::toString(expected.takeError());
          c.output("Y", std::move(*expected));
        },
        i == 2);
  }
}

void compositeCases(Cases &cases) {
  // Nested calls and two outputs, in `output` order.
  cases.add(
      "nested_two_outputs",
      [](Case &c) {
        Tensor x = c.input("X", {3, 33});
        Tensor z = c.input("Z", {3, 33});
        c.let("Y = relu(add(scale(X, 0.5), Z))");
        c.let("S = softmax(Y)");
        c.output("S",
                 ref::softmax(ref::relu(ref::add(ref::scale(x, 0.5f), z))));
        c.output("Y", ref::relu(ref::add(ref::scale(x, 0.5f), z)));
      },
      true);
  // D2L DotProductAttention written with primitives.
  cases.add(
      "attention_from_primitives",
      [](Case &c) {
        Tensor q = c.input("Q", {4, 5, 16});
        Tensor k = c.input("K", {4, 7, 16});
        Tensor v = c.input("V", {4, 7, 9});
        IntTensor vl = c.ints("vl", {4}, {3, 0, 7, 9});
        c.let("W = masked_softmax(scale(matmul(Q, K, transpose_b=true), 0.25), "
              "vl)");
        c.let("Y = matmul(W, V)");
        Tensor w = ref::maskedSoftmax(
            ref::scale(ref::matmul(q, k, /*transposeB=*/true), 0.25f), &vl);
        c.output("Y", ref::matmul(w, v));
      },
      true);
}

/// NaN, +-inf and huge finite inputs (issue 31): the kernels must give
/// what torch gives. The reference computes in double, which agrees with
/// torch's f32 here because no finite sum of these inputs overflows f32:
/// +-3e38 only reaches elementwise ops and softmax (whose max-subtracted
/// exps are at most 1); the norms, the FFN and attention get NaN, +-inf
/// and +-2e11.
void specialValueCases(Cases &cases) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  auto add = [&](std::string name, std::function<void(Case &)> build) {
    cases.add("special_values_" + name, std::move(build));
    cases.list.back().specialValues = true;
  };
  // Every activation; 37 elements: a vector body and a tail.
  add("activations", [=](Case &c) {
    const float values[] = {nan,    inf,    -inf,    3e38f, -3e38f, 2e11f,
                            -2e11f, 0.0f,   -0.0f,   1.0f,  -1.0f,  20.0f,
                            -20.0f, 100.0f, -100.0f, 88.5f, -88.5f, 89.0f,
                            -89.0f, 1e-3f,  -1e-3f};
    std::vector<std::pair<size_t, float>> at;
    for (size_t i = 0; i < std::size(values); ++i)
      at.push_back({i, values[i]});
    Tensor x = c.withValues("X", {37}, at);
    c.let("R = relu(X)");
    c.let("G = gelu(X)");
    c.let("GT = gelu(X, approximate=true)");
    c.let("S = silu(X)");
    c.let("TH = tanh(X)");
    c.let("SG = sigmoid(X)");
    c.output("R", ref::relu(x));
    c.output("G", ref::gelu(x));
    c.output("GT", ref::gelu(x, /*tanhForm=*/true));
    c.output("S", ref::silu(x));
    c.output("TH", ref::tanh(x));
    c.output("SG", ref::sigmoid(x));
  });
  // ffn's own relu: a NaN row stays NaN through it.
  add("ffn", [=](Case &c) {
    const int64_t d = 8, f = 16;
    Tensor x = c.withValues(
        "X", {5, d}, {{1 * d + 2, nan}, {2 * d + 5, inf}, {3 * d + 0, -inf}});
    Tensor w1 = c.weight("W1", {f, d}, d);
    Tensor b1 = c.param("b1", {f});
    Tensor w2 = c.weight("W2", {7, f}, f);
    Tensor b2 = c.param("b2", {7});
    c.let("Y = ffn(X, W1, b1, W2, b2)");
    c.output("Y", ref::ffn(x, w1, b1, w2, b2));
  });
  // Rows: a NaN; +inf; -inf; all -inf; +-3e38; 2e11; -2e11; two +inf;
  // -3e38; none. torch: NaN rows for NaN, +inf and all -inf.
  add("softmax", [=](Case &c) {
    const int64_t w = 37;
    std::vector<std::pair<size_t, float>> at = {
        {0 * w + 4, nan},    {1 * w + 0, inf},    {2 * w + 36, -inf},
        {4 * w + 6, 3e38f},  {4 * w + 7, -3e38f}, {5 * w + 1, 2e11f},
        {6 * w + 2, -2e11f}, {7 * w + 2, inf},    {7 * w + 20, inf},
        {8 * w + 5, -3e38f}};
    for (int64_t j = 0; j < w; ++j)
      at.push_back({size_t(3 * w + j), -inf});
    Tensor x = c.withValues("X", {10, w}, at);
    c.let("Y = softmax(X)");
    c.output("Y", ref::softmax(x));
  });
  // D2L's replacement first: a special at a masked position changes
  // nothing, a row with valid_len 0 is uniform.
  add("masked_softmax", [=](Case &c) {
    const int64_t tq = 4, tk = 11;
    auto at = [&](int64_t n, int64_t i, int64_t j) {
      return size_t((n * tq + i) * tk + j);
    };
    Tensor x = c.withValues("X", {2, tq, tk},
                            {{at(0, 0, 2), nan},      // visible
                             {at(0, 1, 8), nan},      // masked (len 5)
                             {at(0, 2, 3), nan},      // len 0
                             {at(0, 3, 10), inf},     // visible (len 13)
                             {at(1, 0, 6), inf},      // masked (len 3)
                             {at(1, 1, 0), -inf},     // visible
                             {at(1, 2, 1), inf},      // visible
                             {at(1, 3, 5), 3e38f},    // masked (len 1)
                             {at(1, 3, 0), -2e11f}}); // the one visible
    IntTensor vl = c.ints("vl", {2, tq}, {11, 5, 0, 13, 3, 11, 7, 1});
    c.let("Y = masked_softmax(X, vl)");
    c.output("Y", ref::maskedSoftmax(x, &vl));
  });
  add("norms", [=](Case &c) {
    const int64_t d = 19;
    Tensor x = c.withValues("X", {6, d},
                            {{1 * d + 3, nan},
                             {2 * d + 7, inf},
                             {3 * d + 0, -inf},
                             {4 * d + 18, 2e11f},
                             {5 * d + 9, -2e11f}});
    Tensor y = c.withValues("Y", {6, d}, {{0 * d + 5, nan}});
    Tensor g = c.param("gamma", {d}, 0.5f, 1.5f);
    Tensor b = c.param("beta", {d});
    c.let("LN = layer_norm(X, gamma, beta)");
    c.let("AN = add_norm(X, Y, gamma, beta)");
    c.let("RN = rms_norm(X, gamma)");
    c.output("LN", ref::layerNorm(x, g, b));
    c.output("AN", ref::addNorm(x, y, g, b));
    c.output("RN", ref::rmsNorm(x, g));
  });
  // Attention with and without its weights (two schedules in Halide): a
  // NaN query row; an infinite visible key (+inf scores: NaN rows); an
  // infinite value; a NaN key and an infinite value at masked positions
  // (torch: the key changes nothing, the value gives 0 * inf = NaN).
  for (bool weights : {false, true})
    add(weights ? "attention_weights" : "attention", [=](Case &c) {
      const int64_t t = 6, d = 8;
      auto at = [&](int64_t n, int64_t i, int64_t j) {
        return size_t((n * t + i) * d + j);
      };
      Tensor q = c.withValues("Q", {2, t, d},
                              {{at(0, 1, 3), nan}, {at(1, 2, 4), -inf}});
      Tensor k = c.withValues("K", {2, t, d},
                              {{at(0, 4, 2), inf}, {at(1, 5, 0), nan}});
      Tensor v = c.withValues("V", {2, t, d},
                              {{at(0, 2, 5), -inf}, {at(1, 5, 1), inf}});
      IntTensor vl = c.ints("vl", {2}, {6, 4});
      if (weights) {
        c.let("Y, A = attention(Q, K, V, valid_lens=vl, return_weights=true)");
        c.output("A", ref::attentionWeights(q, k, &vl));
      } else {
        c.let("Y = attention(Q, K, V, valid_lens=vl)");
      }
      c.output("Y", ref::attention(q, k, v, &vl));
    });
}

} // namespace

namespace {

const std::vector<CaseSpec> &allCases() {
  static const std::vector<CaseSpec> cases = [] {
    Cases c;
    linearCases(c);
    matmulCases(c);
    elementwiseCases(c);
    headCases(c);
    softmaxCases(c);
    maskedSoftmaxCases(c);
    attentionCases(c);
    size_t first = c.list.size();
    multiheadCases(c);
    // Their attentions are small (decomposed by default): fused as well, for
    // the variants with every mask.
    for (size_t i = first; i < c.list.size(); ++i)
      if (c.list[i].name.find("_vl2d_causal") != std::string::npos)
        c.list[i].attentionLowerings = {"fused"};
    attentionWeightsCases(c);
    positionalEncodingCases(c);
    normCases(c);
    ffnCases(c);
    embeddingCases(c);
    compositeCases(c);
    // Last, so that the shapes drawn for the cases above stay the same.
    geluCases(c);
    v2ElementwiseCases(c);
    specialValueCases(c);
    return c.list;
  }();
  return cases;
}

std::vector<Param> params() {
  std::vector<Param> result;
  bool x86 = llvm::Triple(llvm::sys::getDefaultTargetTriple()).isX86();
  for (const auto &[index, spec] : llvm::enumerate(allCases())) {
    // This machine's CPU at -O3 and each x86 class at -O2: numbers for the
    // same passes, rotated in the sanitize tier (TestSupport.h).
    size_t targets = x86 ? 1 + std::size(kIsaClasses) : 1;
    if (attnc::test::inTier(index, 0, targets))
      result.push_back({&spec, 3, ""});
    if (x86)
      for (const auto &[isa, cls] : llvm::enumerate(kIsaClasses))
        if (attnc::test::inTier(index, isa + 1, targets))
          result.push_back({&spec, 2, "", cls.cpu, cls.name});
    // Special values: every ISA (and Halide, halideParams), where issue 31
    // made both backends agree with torch on them; not the GPU's code.
    if (spec.specialValues)
      continue;
    if (spec.alsoO0)
      result.push_back({&spec, 0, ""});
    for (const std::string &lowering : spec.attentionLowerings)
      result.push_back({&spec, 3, lowering});
    Param gpu{&spec, 2, ""};
    gpu.gpuEmulation = true;
    result.push_back(gpu);
    // The GPU's flash kernel wherever the case tries the fused lowering.
    if (llvm::is_contained(spec.attentionLowerings, "fused")) {
      gpu.attention = "fused";
      result.push_back(gpu);
    }
  }
  return result;
}

/// Every case through the Halide backend at -O3 for this machine, or none
/// without Halide in this build (its configure said that the backend is
/// left out).
std::vector<Param> halideParams() {
  std::vector<Param> result;
  if (haveHalideBackend())
    for (const CaseSpec &spec : allCases()) {
      Param halide{&spec, 3, ""};
      halide.backend = Backend::Halide;
      result.push_back(halide);
    }
  return result;
}

void PrintTo(const Param &param, std::ostream *os) {
  *os << param.spec->name << " at -O" << param.optLevel << " for " << param.cpu;
  if (!param.attention.empty())
    *os << " with attention=" << param.attention;
  if (param.gpuEmulation)
    *os << " as GPU kernels emulated on the CPU";
  *os << " through " << (param.backend == Backend::Halide ? "Halide" : "MLIR");
}

struct Primitive : ::testing::TestWithParam<Param> {};

TEST_P(Primitive, MatchesReference) {
  const Param &param = GetParam();
  runCase(*param.spec, param.optLevel, param.attention, param.cpu,
          param.gpuEmulation, param.backend);
}

std::string primitiveName(const ::testing::TestParamInfo<Param> &info) {
  const Param &p = info.param;
  return p.spec->name + "_O" + std::to_string(p.optLevel) +
         (*p.isa ? std::string("_") + p.isa : "") +
         (p.attention.empty() ? "" : "_" + p.attention) +
         (p.gpuEmulation ? "_gpu_emulation" : "");
}

INSTANTIATE_TEST_SUITE_P(Ops, Primitive, ::testing::ValuesIn(params()),
                         primitiveName);

INSTANTIATE_TEST_SUITE_P(Halide, Primitive, ::testing::ValuesIn(halideParams()),
                         primitiveName);

/// The case names are unique (gtest would reject the suite otherwise, but
/// say which).
TEST(PrimitiveCases, NamesAreUnique) {
  std::set<std::string> names;
  for (const CaseSpec &spec : allCases())
    EXPECT_TRUE(names.insert(spec.name).second) << spec.name;
}

/// docs/spec.md §2: an embedding id outside [0, V) is a run-time error, never
/// an out-of-bounds read; the output is not touched.
void checkEmbeddingIdOutOfRange(Backend backend,
                                std::initializer_list<int> optLevels) {
  const char *spec = "block k {\n"
                     "  input ids: i32[2, 3]\n"
                     "  param E: f32[5, 4]\n"
                     "  Y = embedding(ids, E)\n"
                     "  output Y\n"
                     "}\n";
  for (int optLevel : optLevels) {
    SCOPED_TRACE(std::string("-O") + std::to_string(optLevel) +
                 " --backend=" + backendName(backend));
    CompileOptions options;
    options.setOptLevel(optLevel);
    options.backend = backend;
    auto kernel =
        testRuntime().compile(spec, "embedding_error.attn", "", options);
    ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
    std::vector<float> table(20, 1.0f), out(24, -7.0f);
    for (std::vector<int32_t> ids : {std::vector<int32_t>{0, 1, 2, 3, 4, 5},
                                     std::vector<int32_t>{0, -1, 2, 3, 4, 0}}) {
      llvm::Error error =
          (*kernel)->run({{"ids", ids.data(), ElementType::I32, {2, 3}},
                          {"E", table.data(), ElementType::F32, {5, 4}},
                          {"Y", out.data(), ElementType::F32, {2, 3, 4}}});
      ASSERT_TRUE(!!error) << "ids out of range ran without an error";
      std::string message = llvm::toString(std::move(error));
      EXPECT_NE(message.find("outside the embedding table [0, 5)"),
                std::string::npos)
          << message;
      for (float v : out)
        EXPECT_EQ(v, -7.0f);
    }
  }
}

TEST(PrimitiveErrors, EmbeddingIdOutOfRange) {
  checkEmbeddingIdOutOfRange(Backend::Mlir, {3, 0});
}

/// The same through the Halide backend (-O3), instantiated only when this
/// attnc has it.
struct BackendParam {
  Backend backend;
};

void PrintTo(const BackendParam &param, std::ostream *os) {
  *os << backendName(param.backend);
}

struct PrimitiveErrorsThrough : ::testing::TestWithParam<BackendParam> {};

TEST_P(PrimitiveErrorsThrough, EmbeddingIdOutOfRange) {
  checkEmbeddingIdOutOfRange(GetParam().backend, {3});
}

std::vector<BackendParam> halideBackends() {
  if (haveHalideBackend())
    return {{Backend::Halide}};
  return {};
}

INSTANTIATE_TEST_SUITE_P(
    Halide, PrimitiveErrorsThrough, ::testing::ValuesIn(halideBackends()),
    [](const ::testing::TestParamInfo<BackendParam> &info) {
      return std::string(backendName(info.param.backend));
    });
// Without Halide in this build the suite has no test (not a failure).
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(PrimitiveErrorsThrough);

} // namespace
