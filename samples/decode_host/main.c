/*===- main.c - Decoding with a KV cache through attnc objects ------------===*
 *
 * samples/gpt2_decode.attn holds a GPT-2-small layer three ways, compiled
 * ahead of time by attnc into objects that need libc only (CMakeLists.txt):
 * gpt2_prefill takes a prompt of 16 tokens, gpt2_step one token; both write
 * the new tokens' keys and values into K_cache and V_cache (buffers this
 * program owns, [2, 64, 768]) at each sequence's position pos[b] and
 * attend to the rows before. gpt2_whole is the same layer over all 48
 * tokens at once, without a cache.
 *
 * The program prefills a prompt, runs 32 one-token steps (their inputs
 * stand for the next tokens' embeddings, which a model would compute from
 * the outputs), prints the steps' tokens per second, checks every output
 * against gpt2_whole, and shows the error a position past the cache gives
 * (nothing written). Weights come from a fixed generator, prepared once
 * per kernel (gpt2_step_prepare) as a program calling a kernel many times
 * does.
 *
 * Exit status: 0 on success, 1 if a kernel fails or the outputs differ.
 *
 *===----------------------------------------------------------------------===*/

/* clock_gettime is POSIX: a strict C11 compile (-std=c11) declares it only
   when asked. */
#define _POSIX_C_SOURCE 199309L

#include "gpt2_prefill_kernel.h"
#include "gpt2_step_kernel.h"
#include "gpt2_whole_kernel.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
  B = 2,    /* sequences */
  D = 768,  /* hidden size */
  F = 3072, /* MLP size */
  L = 64,   /* cache rows */
  PROMPT = 16,
  STEPS = 32,
  TOKENS = PROMPT + STEPS
};

/* A linear congruential generator: the same numbers on every machine. */
static uint32_t lcgState = 2024;
static float uniform(void) { /* in [-1, 1) */
  lcgState = lcgState * 1664525u + 1013904223u;
  return (float)(lcgState >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

static float *randomTensor(size_t count, float center, float scale) {
  float *values = malloc(count * sizeof(float));
  if (!values) {
    fprintf(stderr, "decode_host: out of memory\n");
    exit(1);
  }
  for (size_t i = 0; i < count; ++i)
    values[i] = center + scale * uniform();
  return values;
}

/* The layer's weights, in the kernels' param order. */
struct Weights {
  float *ln1Gamma, *ln1Beta, *wQ, *bQ, *wK, *bK, *wV, *bV, *wO, *bO;
  float *ln2Gamma, *ln2Beta, *wFc, *bFc, *wProj, *bProj;
};

static struct Weights randomWeights(void) {
  /* Like nn.Linear's init: uniform in +-1/sqrt(fan_in). */
  const float inScale = 1.0f / sqrtf((float)D), fcScale = 1.0f / sqrtf(F);
  struct Weights w;
  w.ln1Gamma = randomTensor(D, 1.0f, 0.1f);
  w.ln1Beta = randomTensor(D, 0.0f, 0.1f);
  w.wQ = randomTensor((size_t)D * D, 0.0f, inScale);
  w.bQ = randomTensor(D, 0.0f, inScale);
  w.wK = randomTensor((size_t)D * D, 0.0f, inScale);
  w.bK = randomTensor(D, 0.0f, inScale);
  w.wV = randomTensor((size_t)D * D, 0.0f, inScale);
  w.bV = randomTensor(D, 0.0f, inScale);
  w.wO = randomTensor((size_t)D * D, 0.0f, inScale);
  w.bO = randomTensor(D, 0.0f, inScale);
  w.ln2Gamma = randomTensor(D, 1.0f, 0.1f);
  w.ln2Beta = randomTensor(D, 0.0f, 0.1f);
  w.wFc = randomTensor((size_t)F * D, 0.0f, inScale);
  w.bFc = randomTensor(F, 0.0f, inScale);
  w.wProj = randomTensor((size_t)D * F, 0.0f, fcScale);
  w.bProj = randomTensor(D, 0.0f, fcScale);
  return w;
}

/* The weights laid out for a kernel's GEMMs, 64-byte aligned. */
static float *packedBuffer(size_t bytes) {
  float *packed = aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!packed) {
    fprintf(stderr, "decode_host: out of memory\n");
    exit(1);
  }
  return packed;
}

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Tokens [first, first + count) of every sequence of x [B, TOKENS, D],
   copied into out [B, count, D] (a kernel's X). */
static void tokens(const float *x, int first, int count, float *out) {
  for (int b = 0; b < B; ++b)
    memcpy(out + (size_t)b * count * D, x + ((size_t)b * TOKENS + first) * D,
           (size_t)count * D * sizeof(float));
}

/* The largest |difference| between y [B, count, D] and tokens
   [first, first + count) of whole [B, TOKENS, D]. */
static double maxDifference(const float *y, const float *whole, int first,
                            int count) {
  double worst = 0.0;
  for (int b = 0; b < B; ++b)
    for (size_t i = 0; i < (size_t)count * D; ++i) {
      double d = fabs((double)y[(size_t)b * count * D + i] -
                      (double)whole[((size_t)b * TOKENS + first) * D + i]);
      if (!(d <= worst)) /* a NaN is the worst */
        worst = d;
    }
  return worst;
}

int main(void) {
  struct Weights w = randomWeights();
  float *x = randomTensor((size_t)B * TOKENS * D, 0.0f, 1.0f);
  float *kCache = calloc((size_t)B * L * D, sizeof(float));
  float *vCache = calloc((size_t)B * L * D, sizeof(float));
  float *prefillPacked = packedBuffer(GPT2_PREFILL_PACKED_BYTES);
  float *stepPacked = packedBuffer(GPT2_STEP_PACKED_BYTES);
  float xPrompt[B * PROMPT * D], yPrompt[B * PROMPT * D];
  float xStep[B * D], yStep[B * D];
  if (!kCache || !vCache) {
    fprintf(stderr, "decode_host: out of memory\n");
    return 1;
  }
  if (gpt2_prefill_prepare(w.ln1Gamma, w.ln1Beta, w.wQ, w.bQ, w.wK, w.bK, w.wV,
                           w.bV, w.wO, w.bO, w.ln2Gamma, w.ln2Beta, w.wFc,
                           w.bFc, w.wProj, w.bProj, prefillPacked) ||
      gpt2_step_prepare(w.ln1Gamma, w.ln1Beta, w.wQ, w.bQ, w.wK, w.bK, w.wV,
                        w.bV, w.wO, w.bO, w.ln2Gamma, w.ln2Beta, w.wFc, w.bFc,
                        w.wProj, w.bProj, stepPacked)) {
    fprintf(stderr, "decode_host: preparing the weights failed\n");
    return 1;
  }

  /* The prompt: rows 0 .. 15 of each sequence's cache. */
  int32_t pos[B] = {0, 0};
  tokens(x, 0, PROMPT, xPrompt);
  int status = gpt2_prefill_prepared(
      xPrompt, pos, kCache, vCache, w.ln1Gamma, w.ln1Beta, w.wQ, w.bQ, w.wK,
      w.bK, w.wV, w.bV, w.wO, w.bO, w.ln2Gamma, w.ln2Beta, w.wFc, w.bFc,
      w.wProj, w.bProj, prefillPacked, yPrompt);
  if (status != 0) {
    fprintf(stderr, "decode_host: gpt2_prefill failed with status %d\n",
            status);
    return 1;
  }

  /* One token at a time, each at the next row. */
  float *ySteps = malloc((size_t)B * STEPS * D * sizeof(float));
  if (!ySteps)
    return 1;
  double stepTime = 0.0;
  for (int step = 0; step < STEPS; ++step) {
    pos[0] = pos[1] = PROMPT + step;
    tokens(x, PROMPT + step, 1, xStep);
    double start = seconds();
    status = gpt2_step_prepared(xStep, pos, kCache, vCache, w.ln1Gamma,
                                w.ln1Beta, w.wQ, w.bQ, w.wK, w.bK, w.wV, w.bV,
                                w.wO, w.bO, w.ln2Gamma, w.ln2Beta, w.wFc, w.bFc,
                                w.wProj, w.bProj, stepPacked, yStep);
    stepTime += seconds() - start;
    if (status != 0) {
      fprintf(stderr, "decode_host: gpt2_step %d failed with status %d\n", step,
              status);
      return 1;
    }
    for (int b = 0; b < B; ++b)
      memcpy(ySteps + ((size_t)b * STEPS + step) * D, yStep + (size_t)b * D,
             D * sizeof(float));
  }
  printf("decode_host: GPT-2-small layer, batch %d, prompt %d tokens, %d "
         "steps: %.3f ms per step, %.0f tokens/s (one thread)\n",
         B, PROMPT, STEPS, 1e3 * stepTime / STEPS, B * STEPS / stepTime);

  /* The same layer over the whole sequence at once. */
  float *yWhole = malloc((size_t)B * TOKENS * D * sizeof(float));
  if (!yWhole || gpt2_whole(x, w.ln1Gamma, w.ln1Beta, w.wQ, w.bQ, w.wK, w.bK,
                            w.wV, w.bV, w.wO, w.bO, w.ln2Gamma, w.ln2Beta,
                            w.wFc, w.bFc, w.wProj, w.bProj, yWhole)) {
    fprintf(stderr, "decode_host: gpt2_whole failed\n");
    return 1;
  }
  double prefillDiff = maxDifference(yPrompt, yWhole, 0, PROMPT);
  double stepsDiff = maxDifference(ySteps, yWhole, PROMPT, STEPS);
  printf("decode_host: prefill + steps against the whole sequence: max "
         "|difference| %.2e (prefill), %.2e (steps)\n",
         prefillDiff, stepsDiff);
  if (!(prefillDiff < 1e-3 && stepsDiff < 1e-3)) {
    fprintf(stderr, "decode_host: the cached outputs differ\n");
    return 1;
  }

  /* A position past the cache: the step refuses it and writes nothing. */
  float *kBefore = malloc((size_t)B * L * D * sizeof(float));
  if (!kBefore)
    return 1;
  memcpy(kBefore, kCache, (size_t)B * L * D * sizeof(float));
  pos[0] = L;
  status = gpt2_step_prepared(xStep, pos, kCache, vCache, w.ln1Gamma, w.ln1Beta,
                              w.wQ, w.bQ, w.wK, w.bK, w.wV, w.bV, w.wO, w.bO,
                              w.ln2Gamma, w.ln2Beta, w.wFc, w.bFc, w.wProj,
                              w.bProj, stepPacked, yStep);
  if (status != GPT2_STEP_STATUS_CACHE_POSITION ||
      memcmp(kBefore, kCache, (size_t)B * L * D * sizeof(float)) != 0) {
    fprintf(stderr,
            "decode_host: pos = L gave status %d (expected %d) or "
            "wrote the cache\n",
            status, GPT2_STEP_STATUS_CACHE_POSITION);
    return 1;
  }
  printf("decode_host: pos = %d (the cache has %d rows): status %d, cache "
         "untouched\n",
         L, L, status);
  return 0;
}
