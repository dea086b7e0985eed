//===- BackendDiffSpecGen.h - Random valid .attn specs (BackendDiffTest) --===//
//
// A small generator of random, VALID `.attn` specs (docs/spec.md §2, docs/
// language.md) for the MLIR-vs-Halide differential test: one spec per seed,
// with the arguments it declares and how each must be filled (floats
// uniform in a range, valid_lens in [0, keys + 2], embedding ids in
// [0, vocab)). Every spec it makes must pass the front end; a rejected one
// is a bug of this generator and fails the test.
//
// The generator tracks the shape of every value it defines, so the chains it
// builds type-check by construction, and it lists every value that no later
// statement reads as an output, so no value is unused.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TESTS_E2E_BACKENDDIFFSPECGEN_H
#define ATTNC_TESTS_E2E_BACKENDDIFFSPECGEN_H

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace attnc::diff {

using Shape = std::vector<int64_t>;

/// Deterministic random numbers: std::mt19937_64's output is fixed by the
/// standard, the distributions are not, so they are done by hand.
class Rng {
public:
  explicit Rng(uint64_t seed) : engine(seed) {}
  /// Uniform in [lo, hi).
  float uniform(float lo, float hi) {
    float u = static_cast<float>(engine() >> 40) * (1.0f / 16777216.0f);
    float v = lo + (hi - lo) * u;
    return v < hi ? v : lo;
  }
  /// Uniform in [lo, hi].
  int64_t integer(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(engine() % uint64_t(hi - lo + 1));
  }
  bool chance(double p) {
    return static_cast<double>(engine() >> 11) * (1.0 / 9007199254740992.0) < p;
  }
  template <typename T> const T &pick(const std::vector<T> &values) {
    return values[integer(0, static_cast<int64_t>(values.size()) - 1)];
  }

private:
  std::mt19937_64 engine;
};

/// One input or param of the generated kernel, in declaration order.
struct GenArgument {
  enum class Fill {
    /// f32 uniform in [lo, hi).
    Uniform,
    /// i32 attention lengths for `keys` keys: uniform in [0, keys + 2], with
    /// 0 and lengths > keys forced among them when there are enough rows.
    Lengths,
    /// i32 embedding ids uniform in [0, vocab).
    Ids,
    /// i32 KV cache positions uniform in [0, keys] (`keys`: the cache's
    /// rows less the new tokens).
    Positions,
  };
  std::string name;
  bool param = false;
  /// A `state` (a KV cache, filled Uniform): the kernel updates it.
  bool state = false;
  bool isInt = false;
  Shape shape;
  Fill fill = Fill::Uniform;
  float lo = -1.0f, hi = 1.0f;
  int64_t keys = 0, vocab = 0;
};

struct GenOutput {
  std::string name;
  Shape shape;
};

struct GeneratedSpec {
  /// What the case exercises (`mha`, `linear`, `encoder_layer`, ...).
  std::string kind;
  /// The element type of every float argument and output: `f32`, `bf16`
  /// or `f16` (docs/spec.md §2 v3: one float type throughout, so nothing
  /// is promoted).
  std::string floatType = "f32";
  /// The whole `.attn` file.
  std::string text;
  /// The block to compile (the file may hold callees too).
  std::string block;
  std::vector<GenArgument> arguments;
  /// The block's outputs as the generator expects them (names as written in
  /// `output`; shapes as inferred by the generator).
  std::vector<GenOutput> outputs;
  /// Non-empty when the generator found a bug of its own (an argument no
  /// statement reads): the test fails on it.
  std::string error;
};

/// The spec of `seed`: the same seed always gives the same spec. With
/// `drawTypes`, about one spec in five is bf16 and one in ten f16 (the
/// draw has a generator of its own: the spec is otherwise the one f32
/// would give); without, every spec is f32.
GeneratedSpec generateSpec(uint64_t seed, bool drawTypes = true);

/// Every kind generateSpec may return.
std::vector<std::string> specKinds();

} // namespace attnc::diff

#endif // ATTNC_TESTS_E2E_BACKENDDIFFSPECGEN_H
