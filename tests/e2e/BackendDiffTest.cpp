//===- BackendDiffTest.cpp - MLIR and Halide backends on random specs -----===//
//
// A differential test of the two CPU code generators (docs/spec.md §4:
// "--backend= halide builds the same block ... same results (within the
// tolerances of §7), for every op"). BackendDiffSpecGen makes random VALID
// specs -- every op of docs/spec.md §2 (v1 and v2) alone with its options
// (multihead_attention with cross attention, kv_heads, causal, window, rope,
// rope_base, any subset of biases, return_weights, 1-D and 2-D valid_lens;
// attention, linear with/without bias, matmul with transpose_b, broadcasting
// add/mul/ sub, every activation, both gelu forms, softmax, masked_softmax,
// split/merge_heads, positional_encoding, the norms, ffn, embedding,
// dropout) and small blocks chaining them (D2L encoder and decoder layers,
// Llama and GPT-2 layers, BERT embeddings, attention written from the
// primitives, random elementwise chains, a block calling another, decode
// steps and prefill chunks with a KV cache (v3), alone or in a layer) -- on
// small, odd and prime shapes (B <= 3, T <= 40, features <= 96). Each spec
// is JIT-compiled by the runtime with Runtime::defaultOptions() (the MLIR
// backend) and with the same options and backend = Halide; both kernels
// run on the same random inputs (floats uniform in [-1, 1); weight
// matrices uniform in +-1/sqrt(fan_in), torch's nn.Linear init, a subset
// of it; valid_lens in [0, T + 2], 0 and > T included; embedding ids in
// range), the MLIR kernel on 1 thread, the Halide kernel on 1 and on 2
// threads; every output must agree, and so must every state (KV cache) as
// the kernels leave it (positions drawn in range, ragged over the batch).
//
// Types. About one spec in five is bf16 and one in ten f16 (every float
// argument and output; docs/spec.md §2 v3), the inputs rounded to the type.
//
// Tolerance. docs/spec.md §7 gives none between backends, so f32 uses the
// golden tolerance (tests/e2e/GoldenCase.h: 1e-4) as an absolute plus a
// relative bound, element by element, with the MLIR kernel as the reference:
//     |halide - mlir| <= 1e-4 + 1e-4 * |mlir|
// and bf16/f16 a few units in the last place of the type at the output's
// largest magnitude (toleranceOf).
// No output may be NaN (outputs are pre-filled with NaN, so an element a
// kernel never writes fails too), and the inputs must come back unchanged.
//
// Every generated spec must pass the front end (specToModule) with the
// signature the generator meant: a rejected spec is a generator bug and
// FAILS the test (GeneratorMakesOnlyValidSpecs checks 1000 specs that way
// without compiling them). On a disagreement the test prints the case's
// index, kind, seeds, the whole spec text, the output, the worst element
// (flat and multi-dimensional index, both values) and how many elements
// are out of tolerance.
//
// Deterministic: case i's spec and inputs come from a seed derived from the
// base seed and i. The environment may override:
//   ATTNC_DIFF_CASES=N    cases to run (default 200; the sanitize build's
//                         ctest sets ATTNC_DIFF_DEFAULT_CASES=40 instead,
//                         which ATTNC_DIFF_CASES still overrides)
//   ATTNC_DIFF_SEED=S     the base seed (default 20261206)
//   ATTNC_DIFF_ONLY=i,j   run only these case indices (to reproduce one)
//   ATTNC_DIFF_DUMP=DIR   write each failing case's spec and inputs to
//                         DIR/case_<i>/ (spec.attn and NAME.npy), so that
//                         `attnc run DIR/case_<i>/spec.attn --block k
//                         --input-dir DIR/case_<i> --backend=halide`
//                         reruns it
// The cases are split over ctest tests Shards/BackendDiff.*/0..9 (case i
// in shard i % 10), so `ctest -j` runs them in parallel. A longer run is
// one command, e.g.
//   ATTNC_DIFF_CASES=2000 ATTNC_DIFF_SEED=7 ./build/bin/AttncBackendDiffTests
// (or the same variables before `ctest --preset default -R BackendDiff`).
//
// BackendDiffSpecialValues (issue 31) runs kSpecialCases more generated
// specs, of the single ops whose results on NaN, +-inf and huge finite
// inputs do not depend on the order a kernel sums in, with such values in
// their inputs, and compares NaN-aware: NaN where MLIR's is NaN, the same
// infinity, else the tolerance above.
//
//===----------------------------------------------------------------------===//

#include "BackendDiffSpecGen.h"

#include "attnc/Codegen/Compile.h"
#include "attnc/Gen/SpecToModule.h"
#include "attnc/Halide/HalideBackend.h"
#include "attnc/InitAttn.h"
#include "attnc/Runtime/Npy.h"
#include "attnc/Runtime/Runtime.h"

#include "attn/Target/ElementType.h"
#include "attn/Target/FloatConversions.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <vector>

using namespace attnc;
using namespace attnc::diff;

namespace {

constexpr unsigned kDefaultCases = 200;
constexpr uint64_t kDefaultSeed = 20261206;
constexpr unsigned kShards = 10;
/// docs/spec.md §7 has no backend-vs-backend tolerance: the golden one (1e-4),
/// as an absolute plus a relative bound.
constexpr double kAbsoluteTolerance = 1e-4;
constexpr double kRelativeTolerance = 1e-4;

//===----------------------------------------------------------------------===//
// Settings from the environment
//===----------------------------------------------------------------------===//

struct Settings {
  unsigned cases = kDefaultCases;
  uint64_t seed = kDefaultSeed;
  std::set<unsigned> only;
  std::string dump;
  /// What was wrong with the environment, if anything (fails every shard).
  std::string error;
};

bool parseNumber(const char *text, uint64_t &value) {
  if (!text || !*text)
    return false;
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text, &end, 0);
  if (errno || *end || text[0] == '-')
    return false;
  value = v;
  return true;
}

const Settings &settings() {
  static const Settings s = [] {
    Settings s;
    for (const char *name : {"ATTNC_DIFF_DEFAULT_CASES", "ATTNC_DIFF_CASES"}) {
      const char *text = std::getenv(name);
      if (!text)
        continue;
      uint64_t v = 0;
      if (!parseNumber(text, v) || v > 1000000)
        s.error += std::string(name) + "='" + text + "' is not a case count; ";
      else
        s.cases = unsigned(v);
    }
    if (const char *text = std::getenv("ATTNC_DIFF_SEED")) {
      uint64_t v = 0;
      if (!parseNumber(text, v))
        s.error +=
            std::string("ATTNC_DIFF_SEED='") + text + "' is not a number; ";
      else
        s.seed = v;
    }
    if (const char *text = std::getenv("ATTNC_DIFF_ONLY")) {
      llvm::SmallVector<llvm::StringRef> parts;
      llvm::StringRef(text).split(parts, ',', -1, false);
      for (llvm::StringRef p : parts) {
        unsigned i = 0;
        if (p.trim().getAsInteger(10, i))
          s.error += "ATTNC_DIFF_ONLY: '" + p.str() + "' is not an index; ";
        else
          s.only.insert(i);
      }
    }
    if (const char *text = std::getenv("ATTNC_DIFF_DUMP"))
      s.dump = text;
    return s;
  }();
  return s;
}

/// splitmix64: case `index`'s seed from the base seed.
uint64_t caseSeed(uint64_t base, unsigned index) {
  uint64_t z = base + 0x9e3779b97f4a7c15ull * (uint64_t(index) + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// A runtime without a disk cache: every case is compiled here.
Runtime &testRuntime() {
  static Runtime *runtime = new Runtime("");
  return *runtime;
}

std::string shapeText(const Shape &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// The multi-dimensional index of flat index `flat` in `shape`.
std::string indexText(const Shape &shape, size_t flat) {
  std::vector<int64_t> index(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    index[i] = int64_t(flat % size_t(shape[i]));
    flat /= size_t(shape[i]);
  }
  return shapeText(index);
}

//===----------------------------------------------------------------------===//
// The front end's view of a generated spec
//===----------------------------------------------------------------------===//

/// The signature of the spec's block as the front end sees it, or the
/// front end's diagnostics.
llvm::Expected<KernelSignature> frontEnd(const GeneratedSpec &spec,
                                         const std::string &sourceName) {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  auto module = specToModule(context, spec.text, sourceName, spec.block, os);
  if (!module)
    return llvm::createStringError(diagnostics +
                                   llvm::toString(module.takeError()));
  auto signatures = kernelSignatures(**module);
  if (!signatures)
    return signatures.takeError();
  for (KernelSignature &s : *signatures)
    if (s.name == spec.block)
      return std::move(s);
  return llvm::createStringError("no kernel named '" + spec.block + "'");
}

/// The element type of the spec's float arguments and outputs.
ElementType floatTypeOf(const GeneratedSpec &spec) {
  return *mlir::attn::elementTypeNamed(spec.floatType);
}

bool isLowPrecision(ElementType type) {
  return type == ElementType::BF16 || type == ElementType::F16;
}

/// Where the front end's signature differs from what the generator meant
/// (empty: none).
std::string signatureMismatch(const GeneratedSpec &spec,
                              const KernelSignature &signature) {
  std::ostringstream os;
  size_t n = spec.arguments.size();
  if (signature.arguments.size() != n + spec.outputs.size()) {
    os << "the kernel has " << signature.arguments.size()
       << " arguments, the generator meant " << n << " + "
       << spec.outputs.size() << " outputs";
    return os.str();
  }
  for (size_t i = 0; i < signature.arguments.size(); ++i) {
    const KernelArgument &a = signature.arguments[i];
    bool output = i >= n;
    std::string name =
        output ? spec.outputs[i - n].name : spec.arguments[i].name;
    Shape shape = output ? spec.outputs[i - n].shape : spec.arguments[i].shape;
    ArgumentRole role = output                    ? ArgumentRole::Output
                        : spec.arguments[i].param ? ArgumentRole::Param
                        : spec.arguments[i].state ? ArgumentRole::State
                                                  : ArgumentRole::Input;
    ElementType type = !output && spec.arguments[i].isInt ? ElementType::I32
                                                          : floatTypeOf(spec);
    if (a.name != name || a.shape != shape || a.role != role || a.type != type)
      os << "argument " << i << ": the kernel's is " << roleName(a.role).str()
         << " " << a.name << ": " << a.typeString() << ", the generator meant "
         << roleName(role).str() << " " << name << ": "
         << elementTypeName(type).str() << shapeText(shape) << "; ";
  }
  return os.str();
}

//===----------------------------------------------------------------------===//
// Inputs, runs, comparison
//===----------------------------------------------------------------------===//

/// The values of one argument: f32 or i32, or bf16/f16 as `bits` (and
/// their exact values in `floats`, for the dumps and the messages).
struct Values {
  std::vector<float> floats;
  std::vector<int32_t> ints;
  std::vector<uint16_t> bits;
  void *data() {
    if (!bits.empty())
      return bits.data();
    return floats.empty() ? static_cast<void *>(ints.data())
                          : static_cast<void *>(floats.data());
  }
};

int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::vector<Values> makeInputs(const GeneratedSpec &spec, uint64_t seed) {
  Rng r(seed ^ 0x1f2e3d4c5b6a7988ull);
  std::vector<Values> values;
  for (const GenArgument &a : spec.arguments) {
    Values v;
    int64_t n = numElements(a.shape);
    switch (a.fill) {
    case GenArgument::Fill::Uniform:
      for (int64_t i = 0; i < n; ++i)
        v.floats.push_back(r.uniform(a.lo, a.hi));
      if (ElementType type = floatTypeOf(spec); isLowPrecision(type))
        for (float &x : v.floats) {
          v.bits.push_back(mlir::attn::narrowTo(type, x));
          x = mlir::attn::widenFrom(type, v.bits.back());
        }
      break;
    case GenArgument::Fill::Lengths:
      // Uniform in [0, keys + 2], with extra weight on 0 (a row that sees
      // no key: uniform weights) and on lengths > keys (no mask).
      for (int64_t i = 0; i < n; ++i) {
        int64_t len = r.integer(0, a.keys + 2);
        if (r.chance(0.15))
          len = 0;
        else if (r.chance(0.15))
          len = a.keys + r.integer(1, 2);
        v.ints.push_back(int32_t(len));
      }
      break;
    case GenArgument::Fill::Ids:
      for (int64_t i = 0; i < n; ++i)
        v.ints.push_back(int32_t(r.integer(0, a.vocab - 1)));
      break;
    case GenArgument::Fill::Positions:
      for (int64_t i = 0; i < n; ++i)
        v.ints.push_back(int32_t(r.integer(0, a.keys)));
      break;
    }
    values.push_back(std::move(v));
  }
  return values;
}

/// Runs `kernel` on copies of `inputs`: params passed with the run, or
/// bound and prepared once (`bind`). Outputs are pre-filled with NaN.
llvm::Error runKernel(Kernel &kernel, const KernelSignature &signature,
                      const std::vector<Values> &inputs, bool bind,
                      unsigned threads,
                      std::vector<std::vector<float>> &outputs,
                      std::vector<Values> &after) {
  testRuntime().setNumThreads(threads);
  after = inputs;
  std::vector<HostBuffer> buffers;
  size_t n = inputs.size();
  for (size_t i = 0; i < n; ++i) {
    const KernelArgument &a = signature.arguments[i];
    HostBuffer b{a.name, after[i].data(), a.type, a.shape};
    if (bind && a.role == ArgumentRole::Param) {
      if (llvm::Error e = kernel.bindParam(b))
        return e;
    } else {
      buffers.push_back(b);
    }
  }
  if (bind)
    if (llvm::Error e = kernel.prepareParams())
      return e;
  outputs.clear();
  std::vector<std::vector<uint16_t>> outputBits(signature.arguments.size() - n);
  for (size_t i = n; i < signature.arguments.size(); ++i)
    outputs.emplace_back(signature.arguments[i].numElements(),
                         std::numeric_limits<float>::quiet_NaN());
  for (size_t i = n; i < signature.arguments.size(); ++i) {
    const KernelArgument &a = signature.arguments[i];
    void *data = outputs[i - n].data();
    if (isLowPrecision(a.type)) {
      outputBits[i - n].assign(
          outputs[i - n].size(),
          mlir::attn::narrowTo(a.type,
                               std::numeric_limits<float>::quiet_NaN()));
      data = outputBits[i - n].data();
    }
    buffers.push_back({a.name, data, a.type, a.shape});
  }
  if (llvm::Error e = kernel.run(buffers))
    return e;
  for (size_t i = 0; i < outputBits.size(); ++i)
    for (size_t j = 0; j < outputBits[i].size(); ++j)
      outputs[i][j] = mlir::attn::widenFrom(signature.arguments[n + i].type,
                                            outputBits[i][j]);
  return llvm::Error::success();
}

/// The first argument other than a state whose values `after` changed,
/// or "".
std::string changedInput(const GeneratedSpec &spec,
                         const std::vector<Values> &before,
                         const std::vector<Values> &after) {
  for (size_t i = 0; i < before.size(); ++i)
    if (!spec.arguments[i].state)
      // Inputs hold no NaN: == compares them exactly (and, unlike memcmp,
      // is defined for an empty vector's null data()).
      if (before[i].floats != after[i].floats ||
          before[i].ints != after[i].ints || before[i].bits != after[i].bits)
        return spec.arguments[i].name;
  return "";
}

/// A state's values after a run, as floats (its bf16/f16 bits widened).
std::vector<float> stateAfter(ElementType type, const Values &after) {
  if (after.bits.empty())
    return after.floats;
  std::vector<float> values;
  for (uint16_t bits : after.bits)
    values.push_back(mlir::attn::widenFrom(type, bits));
  return values;
}

struct Comparison {
  size_t bad = 0, nans = 0, worstAt = 0;
  /// |h - m| / tolerance(m) at worstAt: > 1 is out of tolerance.
  double worstRatio = 0, worstDiff = 0, magnitude = 0;
};

/// The tolerance of an element `m` of an output of `type` whose largest
/// magnitude is `largest`: f32 the golden one (1e-4 + 1e-4 |m|); bf16 and
/// f16 kLowPrecisionUnits units in the last place of the type at
/// `largest` (docs/spec.md §7's bar is one unit against the exact result;
/// both backends round at the same points but sum in their own orders, so
/// a value near a rounding boundary may round either way, and the
/// difference then travels through the ops after it).
constexpr double kLowPrecisionUnits = 4;
double toleranceOf(ElementType type, double m, double largest) {
  if (!isLowPrecision(type))
    return kAbsoluteTolerance + kRelativeTolerance * std::fabs(m);
  int fractionBits = type == ElementType::BF16 ? 7 : 10;
  double unit = largest > 0
                    ? std::ldexp(1.0, std::ilogb(largest) - fractionBits)
                    : std::ldexp(1.0, -24);
  return kLowPrecisionUnits * unit;
}

Comparison compare(ElementType type, const std::vector<float> &mlir,
                   const std::vector<float> &halide) {
  Comparison c;
  bool worstIsNan = false;
  for (float m : mlir)
    if (std::isfinite(m))
      c.magnitude = std::max(c.magnitude, std::fabs(double(m)));
  for (size_t j = 0; j < mlir.size(); ++j) {
    double m = mlir[j], h = halide[j];
    double diff = std::fabs(h - m);
    if (std::isnan(diff)) {
      if (!c.nans++ && !worstIsNan) {
        worstIsNan = true;
        c.worstAt = j;
        c.worstRatio = std::numeric_limits<double>::infinity();
        c.worstDiff = diff;
      }
      continue;
    }
    double ratio = diff / toleranceOf(type, m, c.magnitude);
    if (ratio > 1)
      ++c.bad;
    if (!worstIsNan && ratio > c.worstRatio) {
      c.worstRatio = ratio;
      c.worstDiff = diff;
      c.worstAt = j;
    }
  }
  return c;
}

/// Writes the case's spec and inputs under ATTNC_DIFF_DUMP (if set); says
/// where, or why not.
std::string dumpCase(unsigned index, const GeneratedSpec &spec,
                     const std::vector<Values> &inputs) {
  if (settings().dump.empty())
    return "";
  llvm::SmallString<256> dir(settings().dump);
  llvm::sys::path::append(dir, "case_" + std::to_string(index));
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return "cannot create " + std::string(dir) + ": " + ec.message();
  llvm::SmallString<256> specPath(dir);
  llvm::sys::path::append(specPath, "spec.attn");
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(specPath, ec);
    if (ec)
      return "cannot write " + std::string(specPath) + ": " + ec.message();
    os << spec.text;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const GenArgument &a = spec.arguments[i];
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, a.name + ".npy");
    NpyArray array = a.isInt ? NpyArray::fromI32(a.shape, inputs[i].ints)
                             : NpyArray::fromF32(a.shape, inputs[i].floats);
    if (llvm::Error e = writeNpy(path, array))
      return llvm::toString(std::move(e));
  }
  return "spec and inputs written to " + std::string(dir) + " (attnc run " +
         std::string(specPath) + " --block " + spec.block + " --input-dir " +
         std::string(dir) + " --backend=halide)";
}

//===----------------------------------------------------------------------===//
// One case
//===----------------------------------------------------------------------===//

struct Totals {
  unsigned cases = 0, failures = 0;
  double mlirSeconds = 0, halideSeconds = 0, worstRatio = 0;
  std::string worstCase;
};

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

void runCaseUnguarded(unsigned index, Totals &totals, std::string &who,
                      std::string &specDump);

/// Compiles and runs case `index` through both backends; a failure is
/// reported (ADD_FAILURE) with everything needed to reproduce it. An
/// exception that escapes the compiler or a kernel (Halide throws its
/// errors) fails the case, not the whole shard.
void runCase(unsigned index, Totals &totals) {
  std::string who = "case " + std::to_string(index), specDump;
  const char *what = nullptr;
  std::string message;
  try {
    runCaseUnguarded(index, totals, who, specDump);
    return;
  } catch (const std::exception &e) {
    what = "a C++ exception escaped";
    message = e.what();
  } catch (...) {
    // Halide's errors (Halide::CompileError, ...) do not derive from
    // std::exception: name the type.
    what = "a C++ exception escaped";
    if (std::type_info *type = abi::__cxa_current_exception_type()) {
      int status = 0;
      char *name = abi::__cxa_demangle(type->name(), nullptr, nullptr, &status);
      message = std::string("of type ") + (name ? name : type->name());
      std::free(name);
    }
  }
  ++totals.failures;
  testRuntime().setNumThreads(1);
  testRuntime().clearMemoryCache();
  std::printf("case %u: EXCEPTION\n", index);
  ADD_FAILURE() << who << ": " << what
                << " (compiling or running the kernels): " << message
                << specDump;
}

void runCaseUnguarded(unsigned index, Totals &totals, std::string &who,
                      std::string &specDump) {
  uint64_t base = settings().seed, seed = caseSeed(base, index);
  GeneratedSpec spec = generateSpec(seed);
  std::string sourceName = "diff_case_" + std::to_string(index) + ".attn";
  std::ostringstream whoStream;
  whoStream << "case " << index << " [" << spec.kind
            << "] (ATTNC_DIFF_SEED=" << base << " ATTNC_DIFF_ONLY=" << index
            << ", case seed " << seed << ")";
  who = whoStream.str();
  specDump = "\n--- spec " + sourceName + " (block " + spec.block + ") ---\n" +
             spec.text + "--- end of spec ---";
  ++totals.cases;

  if (!spec.error.empty()) {
    ++totals.failures;
    ADD_FAILURE() << who << ": generator bug: " << spec.error << specDump;
    return;
  }
  auto signature = frontEnd(spec, sourceName);
  if (!signature) {
    ++totals.failures;
    ADD_FAILURE() << who
                  << ": the front end REJECTED a generated spec (a bug of "
                     "BackendDiffSpecGen, which must make valid specs only):\n"
                  << llvm::toString(signature.takeError()) << specDump;
    return;
  }
  if (std::string m = signatureMismatch(spec, *signature); !m.empty()) {
    ++totals.failures;
    ADD_FAILURE() << who << ": the front end's signature is not the one "
                  << "the generator meant (a generator bug): " << m << specDump;
    return;
  }

  CompileOptions mlirOptions = Runtime::defaultOptions();
  CompileOptions halideOptions = Runtime::defaultOptions();
  halideOptions.backend = Backend::Halide;
  auto start = std::chrono::steady_clock::now();
  auto mlir =
      testRuntime().compile(spec.text, sourceName, spec.block, mlirOptions);
  double mlirSeconds = secondsSince(start);
  start = std::chrono::steady_clock::now();
  auto halide =
      testRuntime().compile(spec.text, sourceName, spec.block, halideOptions);
  double halideSeconds = secondsSince(start);
  totals.mlirSeconds += mlirSeconds;
  totals.halideSeconds += halideSeconds;
  std::string compileErrors;
  if (!mlir)
    compileErrors += "\n  MLIR backend: " + llvm::toString(mlir.takeError());
  if (!halide)
    compileErrors +=
        "\n  Halide backend: " + llvm::toString(halide.takeError());
  std::vector<Values> inputs = makeInputs(spec, seed);
  if (!compileErrors.empty()) {
    ++totals.failures;
    std::string dumped = dumpCase(index, spec, inputs);
    ADD_FAILURE() << who << ": a valid spec did not compile:" << compileErrors
                  << (dumped.empty() ? "" : "\n  " + dumped) << specDump;
    return;
  }

  bool bind = index % 2 == 1;
  struct RunResult {
    const char *name;
    Kernel *kernel;
    unsigned threads;
    std::vector<std::vector<float>> outputs;
    /// Every argument after the run (the states updated).
    std::vector<Values> after;
  };
  std::vector<RunResult> runs = {
      {"MLIR (1 thread)", mlir->get(), 1, {}, {}},
      {"Halide (1 thread)", halide->get(), 1, {}, {}},
      {"Halide (2 threads)", halide->get(), 2, {}, {}}};
  std::string problems;
  for (RunResult &run : runs) {
    std::vector<Values> &after = run.after;
    if (llvm::Error e = runKernel(*run.kernel, *signature, inputs, bind,
                                  run.threads, run.outputs, after)) {
      problems += std::string("\n  ") + run.name +
                  " failed to run: " + llvm::toString(std::move(e));
      run.outputs.clear();
      continue;
    }
    if (std::string changed = changedInput(spec, inputs, after);
        !changed.empty())
      problems +=
          std::string("\n  ") + run.name + " modified input '" + changed + "'";
  }
  testRuntime().setNumThreads(1);

  double caseWorst = 0;
  RunResult &reference = runs[0];
  size_t n = spec.arguments.size();
  if (!reference.outputs.empty()) {
    // The states (KV caches) as the kernels left them are compared as
    // outputs are (the rows a call wrote; every other row is the input's
    // in both only if they agree).
    std::vector<const KernelArgument *> compared;
    for (size_t i = n; i < signature->arguments.size(); ++i)
      compared.push_back(&signature->arguments[i]);
    for (size_t i = 0; i < n; ++i) {
      if (!spec.arguments[i].state)
        continue;
      for (RunResult &run : runs)
        if (!run.outputs.empty())
          run.outputs.push_back(
              stateAfter(signature->arguments[i].type, run.after[i]));
      compared.push_back(&signature->arguments[i]);
    }
    for (size_t i = 0; i < reference.outputs.size(); ++i) {
      const KernelArgument &out = *compared[i];
      Comparison self =
          compare(out.type, reference.outputs[i], reference.outputs[i]);
      if (self.nans)
        problems += "\n  MLIR's " + roleName(out.role).str() + " '" + out.name +
                    "' has " + std::to_string(self.nans) + " NaN elements";
      for (size_t r = 1; r < runs.size(); ++r) {
        if (runs[r].outputs.empty())
          continue;
        Comparison c =
            compare(out.type, reference.outputs[i], runs[r].outputs[i]);
        caseWorst = std::max(caseWorst, c.worstRatio);
        if (!c.bad && !c.nans)
          continue;
        std::ostringstream os;
        os.precision(9);
        os << "\n  " << roleName(out.role).str() << " '" << out.name << "' ("
           << out.typeString() << "): " << runs[r].name
           << " disagrees with MLIR on " << c.bad << " of " << out.numElements()
           << " elements";
        if (c.nans)
          os << " (" << c.nans << " NaN)";
        os << "; worst at flat index " << c.worstAt << " = "
           << indexText(out.shape, c.worstAt) << ": MLIR "
           << reference.outputs[i][c.worstAt] << ", Halide "
           << runs[r].outputs[i][c.worstAt] << ", |diff| " << c.worstDiff
           << " > "
           << toleranceOf(out.type, reference.outputs[i][c.worstAt],
                          c.magnitude)
           << " (max |MLIR| over the output " << c.magnitude << ")";
        problems += os.str();
      }
    }
  }
  std::printf("case %u %s: %s, worst |diff|/tolerance %.3g, compile MLIR "
              "%.2f s, Halide %.2f s\n",
              index, (spec.kind + " " + spec.floatType).c_str(),
              problems.empty() ? "agree" : "DIFFER", caseWorst, mlirSeconds,
              halideSeconds);
  std::fflush(stdout);
  if (caseWorst > totals.worstRatio) {
    totals.worstRatio = caseWorst;
    totals.worstCase = who;
  }
  if (!problems.empty()) {
    ++totals.failures;
    std::string dumped = dumpCase(index, spec, inputs);
    ADD_FAILURE() << who << ":" << problems << "\n  (params "
                  << (bind ? "bound and prepared" : "passed with each run")
                  << ")" << (dumped.empty() ? "" : "\n  " + dumped) << specDump;
  }
  // The kernels stay alive through `mlir` and `halide` until here; the
  // memory cache need not keep them.
  testRuntime().clearMemoryCache();
}

//===----------------------------------------------------------------------===//
// Special values (issue 31)
//===----------------------------------------------------------------------===//

constexpr unsigned kSpecialCases = 10;
constexpr uint64_t kSpecialSeed = 31;

/// The special values a generated case of `kind` gets.
enum class Specials {
  /// Not a special-value case: it chains ops, whose sums of huge values
  /// may overflow in one backend's order and not in the other's.
  None,
  /// NaN and +-inf: attention, whose dot products could sum two huge
  /// values.
  NanInf,
  /// NaN, +-inf, +-3e38 and +-2e11: elementwise ops, softmax and the norms.
  All,
};

Specials specialsFor(const std::string &kind) {
  std::string base = kind.substr(0, kind.find('('));
  if (base == "attention")
    return Specials::NanInf;
  for (const char *op :
       {"relu", "gelu", "gelu_tanh", "silu", "tanh", "sigmoid", "scale", "add",
        "mul", "sub", "softmax", "masked_softmax", "layer_norm", "add_norm",
        "rms_norm"})
    if (base == op)
      return Specials::All;
  return Specials::None;
}

/// Writes special values into the float inputs (not the params): one
/// element in about a third of the rows (last axis), and in at least one
/// row of each input, so that a row's sum meets at most one of each input.
void addSpecialValues(const GeneratedSpec &spec, Specials specials,
                      uint64_t seed, std::vector<Values> &inputs) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> pool = {std::numeric_limits<float>::quiet_NaN(), inf,
                             -inf};
  if (specials == Specials::All)
    pool.insert(pool.end(), {3e38f, -3e38f, 2e11f, -2e11f});
  Rng r(seed ^ 0x5bd1e9955bd1e995ull);
  for (size_t a = 0; a < spec.arguments.size(); ++a) {
    const GenArgument &arg = spec.arguments[a];
    std::vector<float> &v = inputs[a].floats;
    if (arg.isInt || arg.param || v.empty())
      continue;
    int64_t width = arg.shape.empty() ? 1 : arg.shape.back();
    int64_t rows = int64_t(v.size()) / width;
    bool any = false;
    for (int64_t row = 0; row < rows; ++row)
      if (r.chance(0.3) || (!any && row + 1 == rows)) {
        v[size_t(row * width + r.integer(0, width - 1))] = r.pick(pool);
        any = true;
      }
  }
}

/// Where Halide's output differs from MLIR's on special values: NaN where
/// the other is not, another infinity, or a finite value out of tolerance
/// (0 equals -0). `worstAt` is the first such element.
Comparison compareSpecial(const std::vector<float> &mlir,
                          const std::vector<float> &halide) {
  Comparison c;
  for (size_t j = 0; j < mlir.size(); ++j) {
    double m = mlir[j], h = halide[j];
    bool ok = std::isnan(m)   ? std::isnan(h)
              : std::isinf(m) ? h == m
                              : std::isfinite(h) &&
                                    std::fabs(h - m) <=
                                        kAbsoluteTolerance +
                                            kRelativeTolerance * std::fabs(m);
    c.nans += std::isnan(m);
    if (!ok && !c.bad++)
      c.worstAt = j;
  }
  return c;
}

/// Whether two runs' inputs hold the same bits (== never equals NaN).
bool sameInputs(const std::vector<Values> &a, const std::vector<Values> &b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].ints != b[i].ints || a[i].floats.size() != b[i].floats.size() ||
        (!a[i].floats.empty() &&
         std::memcmp(a[i].floats.data(), b[i].floats.data(),
                     a[i].floats.size() * sizeof(float)) != 0))
      return false;
  return true;
}

//===----------------------------------------------------------------------===//
// Tests
//===----------------------------------------------------------------------===//

struct BackendDiff : ::testing::TestWithParam<unsigned> {};

TEST_P(BackendDiff, MlirAndHalideAgree) {
  const Settings &s = settings();
  ASSERT_TRUE(s.error.empty()) << s.error;
  ASSERT_TRUE(haveHalideBackend())
      << "the build has ATTNC_HAVE_HALIDE but attnc::haveHalideBackend() "
         "says no";
  unsigned shard = GetParam();
  Totals totals;
  for (unsigned i = shard; i < s.cases; i += kShards)
    if (s.only.empty() || s.only.count(i))
      runCase(i, totals);
  std::printf("shard %u: %u cases, %u failed; compile time MLIR %.1f s, "
              "Halide %.1f s; worst |diff|/tolerance %.3g (%s)\n",
              shard, totals.cases, totals.failures, totals.mlirSeconds,
              totals.halideSeconds, totals.worstRatio,
              totals.worstCase.c_str());
}

INSTANTIATE_TEST_SUITE_P(Shards, BackendDiff, ::testing::Range(0u, kShards));

/// NaN, +-inf and huge finite inputs (issue 31): the Halide backend gives
/// what the MLIR backend (and torch) gives.
TEST(BackendDiffSpecialValues, MlirAndHalideAgree) {
  ASSERT_TRUE(haveHalideBackend());
  unsigned cases = 0;
  for (unsigned i = 0; cases < kSpecialCases && i < 10000; ++i) {
    uint64_t seed = caseSeed(kSpecialSeed, i);
    GeneratedSpec spec = generateSpec(seed, /*drawTypes=*/false);
    Specials specials = specialsFor(spec.kind);
    if (specials == Specials::None)
      continue;
    ++cases;
    std::string sourceName = "special_case_" + std::to_string(i) + ".attn";
    SCOPED_TRACE("special-value case " + std::to_string(i) + " [" + spec.kind +
                 "] (case seed " + std::to_string(seed) + "):\n" + spec.text);
    ASSERT_TRUE(spec.error.empty()) << spec.error;
    auto signature = frontEnd(spec, sourceName);
    ASSERT_TRUE(!!signature) << llvm::toString(signature.takeError());
    std::vector<Values> inputs = makeInputs(spec, seed);
    addSpecialValues(spec, specials, seed, inputs);
    CompileOptions halideOptions = Runtime::defaultOptions();
    halideOptions.backend = Backend::Halide;
    auto mlir = testRuntime().compile(spec.text, sourceName, spec.block,
                                      Runtime::defaultOptions());
    ASSERT_TRUE(!!mlir) << llvm::toString(mlir.takeError());
    auto halide =
        testRuntime().compile(spec.text, sourceName, spec.block, halideOptions);
    ASSERT_TRUE(!!halide) << llvm::toString(halide.takeError());
    std::vector<std::vector<float>> mlirOut, halideOut;
    std::vector<Values> after;
    llvm::Error error = runKernel(**mlir, *signature, inputs, /*bind=*/false, 1,
                                  mlirOut, after);
    ASSERT_FALSE(!!error) << "MLIR: " << llvm::toString(std::move(error));
    EXPECT_TRUE(sameInputs(inputs, after)) << "MLIR modified an input";
    error = runKernel(**halide, *signature, inputs, /*bind=*/false, 1,
                      halideOut, after);
    ASSERT_FALSE(!!error) << "Halide: " << llvm::toString(std::move(error));
    EXPECT_TRUE(sameInputs(inputs, after)) << "Halide modified an input";
    size_t n = spec.arguments.size();
    bool differ = false;
    for (size_t o = 0; o < mlirOut.size(); ++o) {
      const KernelArgument &out = signature->arguments[n + o];
      Comparison c = compareSpecial(mlirOut[o], halideOut[o]);
      differ |= c.bad != 0;
      EXPECT_EQ(c.bad, 0u) << "output '" << out.name
                           << "': Halide differs from MLIR on " << c.bad
                           << " of " << out.numElements() << " elements ("
                           << c.nans << " NaN in MLIR's); the first at "
                           << indexText(out.shape, c.worstAt) << ": MLIR "
                           << mlirOut[o][c.worstAt] << ", Halide "
                           << halideOut[o][c.worstAt];
    }
    std::printf("special-value case %u %s: %s\n", i, spec.kind.c_str(),
                differ ? "DIFFER" : "agree");
    std::fflush(stdout);
    testRuntime().clearMemoryCache();
  }
  EXPECT_EQ(cases, kSpecialCases) << "the generator made too few such cases";
}

/// The generator alone, on many more specs than are compiled: each passes
/// the front end with the signature the generator meant.
TEST(BackendDiffGenerator, MakesOnlyValidSpecs) {
  const Settings &s = settings();
  ASSERT_TRUE(s.error.empty()) << s.error;
  unsigned count = std::max(1000u, s.cases);
  unsigned failures = 0;
  for (unsigned i = 0; i < count && failures < 10; ++i) {
    uint64_t seed = caseSeed(s.seed, i);
    GeneratedSpec spec = generateSpec(seed);
    std::string where = "case " + std::to_string(i) + " [" + spec.kind +
                        "] (case seed " + std::to_string(seed) + ")";
    if (!spec.error.empty()) {
      ++failures;
      ADD_FAILURE() << where << ": generator bug: " << spec.error << "\n"
                    << spec.text;
      continue;
    }
    auto signature = frontEnd(spec, "gen_" + std::to_string(i) + ".attn");
    if (!signature) {
      ++failures;
      ADD_FAILURE() << where << ": the front end REJECTED a generated spec:\n"
                    << llvm::toString(signature.takeError()) << "\n"
                    << spec.text;
      continue;
    }
    if (std::string m = signatureMismatch(spec, *signature); !m.empty()) {
      ++failures;
      ADD_FAILURE() << where << ": signature mismatch: " << m << "\n"
                    << spec.text;
    }
    EXPECT_EQ(spec.text, generateSpec(seed).text)
        << where << ": the generator is not deterministic";
  }
}

/// The default run (base seed and count) covers every kind of case and
/// every option the brief of this test lists.
TEST(BackendDiffGenerator, DefaultRunCoversEveryFeature) {
  std::map<std::string, unsigned> kinds;
  std::string all;
  for (unsigned i = 0; i < kDefaultCases; ++i) {
    GeneratedSpec spec = generateSpec(caseSeed(kDefaultSeed, i));
    ++kinds[spec.kind.substr(0, spec.kind.find('('))];
    all += spec.kind + "\n" + spec.text + "\n";
  }
  for (const std::string &kind : specKinds()) {
    bool found = false;
    for (auto &[k, n] : kinds)
      found |=
          k == kind ||
          (kind == "broadcast" && (k == "add" || k == "mul" || k == "sub")) ||
          (kind == "unary" && (k == "relu" || k == "gelu" || k == "gelu_tanh" ||
                               k == "silu" || k == "tanh" || k == "sigmoid")) ||
          (kind == "heads" && k.find("heads") != std::string::npos) ||
          (kind == "norm" &&
           (k == "layer_norm" || k == "add_norm" || k == "rms_norm"));
    EXPECT_TRUE(found) << "no case of kind '" << kind << "'";
  }
  for (const char *feature :
       {"cross",       "kv_heads=1",  "causal",
        "window=",     "rope",        "rope_base=",
        "b_q",         "b_k",         "b_v",
        "b_o",         "weights",     "vl1d",
        "vl2d",        "bias",        "transpose_b",
        "broadcast",   "relu",        "gelu",
        "gelu_tanh",   "silu",        "tanh",
        "sigmoid",     "softmax",     "masked_softmax",
        "split_heads", "merge_heads", "positional_encoding",
        "layer_norm",  "add_norm",    "rms_norm",
        "ffn(",        "embedding(",  "dropout(",
        "linear(",     "matmul(",     "scale(",
        "add(",        "mul(",        "sub(",
        "= layer(",    "f32[]",       "bf16[",
        "f16[",        "cache_pos=",  "offset="})
    EXPECT_NE(all.find(feature), std::string::npos)
        << "no case of the default run has '" << feature << "'";
  for (auto &[k, n] : kinds)
    std::printf("%-22s %u\n", k.c_str(), n);
}

} // namespace
