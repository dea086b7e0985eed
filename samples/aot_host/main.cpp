//===- main.cpp - Call an attnc kernel compiled ahead of time -------------===//
//
// samples/d2l_mha.attn is compiled by attnc at build time (attnc_add_kernel
// in CMakeLists.txt); its header gives the function and the shapes. This
// program fills the inputs and weights with a deterministic generator, runs
// D2L multi-head self-attention once and prints part of the result, then
// runs it again in two steps (weights prepared once, as a program calling it
// many times would) and checks that the result is the same.
//
// Exit status: 0 on success, 1 if the kernel fails, an output is NaN or the
// two ways differ.
//
//===----------------------------------------------------------------------===//

#include "d2l_mha_kernel.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

/// A linear congruential generator: the same numbers on every machine.
class Lcg {
public:
  explicit Lcg(uint32_t seed) : state(seed) {}
  /// Uniform in [-1, 1).
  float next() {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) * (2.0f / 16777216.0f) - 1.0f;
  }

private:
  uint32_t state;
};

std::vector<float> randomTensor(Lcg &rng, size_t count, float scale) {
  std::vector<float> values(count);
  for (float &v : values)
    v = scale * rng.next();
  return values;
}

} // namespace

int main() {
  Lcg rng(2024);
  // Weights like torch's nn.Linear init: uniform in +-1/sqrt(fan_in).
  const float weightScale = 0.1f; // 1 / sqrt(D2L_MHA_D), D = 100
  std::vector<float> x = randomTensor(rng, D2L_MHA_X_NUMEL, 1.0f);
  std::vector<float> wQ = randomTensor(rng, D2L_MHA_W_Q_NUMEL, weightScale);
  std::vector<float> wK = randomTensor(rng, D2L_MHA_W_K_NUMEL, weightScale);
  std::vector<float> wV = randomTensor(rng, D2L_MHA_W_V_NUMEL, weightScale);
  std::vector<float> wO = randomTensor(rng, D2L_MHA_W_O_NUMEL, weightScale);
  // Sequence 0 attends to its first 3 tokens, sequence 1 to its first 2.
  const int32_t validLens[D2L_MHA_VALID_LENS_NUMEL] = {3, 2};
  std::vector<float> y(D2L_MHA_Y_NUMEL);

  int status = d2l_mha(x.data(), validLens, wQ.data(), wK.data(), wV.data(),
                       wO.data(), y.data());
  if (status != 0) {
    std::fprintf(stderr, "aot_host: d2l_mha failed with status %d\n", status);
    return 1;
  }

  const int64_t shape[] = D2L_MHA_Y_SHAPE;
  std::printf("d2l_mha: Y is f32[");
  for (int i = 0; i < D2L_MHA_Y_RANK; ++i)
    std::printf("%s%lld", i ? ", " : "", static_cast<long long>(shape[i]));
  std::printf("]\n");

  // The first values of every token's output vector.
  const int64_t tokens = shape[0] * shape[1], width = shape[2];
  for (int64_t token = 0; token < tokens; ++token) {
    std::printf("Y[%lld, %lld, :4] =", static_cast<long long>(token / shape[1]),
                static_cast<long long>(token % shape[1]));
    for (int64_t j = 0; j < 4 && j < width; ++j)
      std::printf(" %+.6f", y[token * width + j]);
    std::printf("\n");
  }

  size_t nans = 0;
  double sum = 0.0;
  for (float v : y) {
    if (std::isnan(v))
      ++nans;
    else
      sum += v;
  }
  if (nans) {
    std::fprintf(stderr, "aot_host: %zu of %zu outputs are not numbers\n", nans,
                 y.size());
    return 1;
  }
  std::printf("sum(Y) = %.6f\n", sum);

  // A program that calls the kernel many times with the same weights
  // prepares them once (the weights laid out for the GEMMs), then calls
  // d2l_mha_prepared: the same results without redoing that work per call.
  // 64-byte alignment lets the GEMMs load whole cache lines.
  constexpr size_t packedBytes = (D2L_MHA_PACKED_BYTES + 63) / 64 * 64;
  auto *packed = static_cast<float *>(std::aligned_alloc(64, packedBytes));
  std::vector<float> again(D2L_MHA_Y_NUMEL);
  if (!packed ||
      d2l_mha_prepare(wQ.data(), wK.data(), wV.data(), wO.data(), packed) ||
      d2l_mha_prepared(x.data(), validLens, wQ.data(), wK.data(), wV.data(),
                       wO.data(), packed, again.data())) {
    std::fprintf(stderr, "aot_host: the prepared path failed\n");
    return 1;
  }
  std::free(packed);
  if (again != y) {
    std::fprintf(stderr, "aot_host: d2l_mha_prepared differs from d2l_mha\n");
    return 1;
  }
  std::printf("d2l_mha_prepared (weights prepared once): the same Y\n");
  return 0;
}
