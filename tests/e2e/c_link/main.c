/*===- main.c - attnc kernels called from plain C -------------------------===*
 *
 * Compiled and linked by the C compiler alone, against nothing but the
 * kernel objects attnc made (attnc_add_kernel) and libc: SPEC section 5 says
 * an object links with a C compiler without attnc's runtime or a C++
 * runtime. No libm either: every expected value here is computed without it.
 * Built twice (CMakeLists.txt): with the MLIR backend's objects, and with the
 * Halide backend's objects of the same blocks behind the MLIR backend's
 * headers.
 *
 * Exit status: 0 when every check passes; otherwise the number of failed
 * checks (each is printed).
 *
 *===----------------------------------------------------------------------===*/

#include "c_link_attention.h"
#include "c_link_embedding.h"
#include "c_link_encoder_block.h"
#include "c_link_known.h"

#include <stdint.h>
#include <stdio.h>

static int failures = 0;

static void check(int ok, const char *what, int64_t index, double got,
                  double expected) {
  if (ok)
    return;
  ++failures;
  printf("FAIL %s [%lld]: got %.9g, expected %.9g\n", what, (long long)index,
         got, expected);
}

static double absolute(double x) { return x < 0 ? -x : x; }

static void check_near(const char *what, const float *got,
                       const float *expected, int64_t count, double tolerance) {
  for (int64_t i = 0; i < count; ++i)
    check(absolute((double)got[i] - (double)expected[i]) <= tolerance, what, i,
          got[i], expected[i]);
}

/* Finite: not NaN, not infinite (no <math.h> needed). */
static int finite(float x) { return x == x && x - x == 0.0f; }

static float lcg(uint32_t *state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)(*state >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

static void fill(float *values, int64_t count, uint32_t seed, float scale) {
  for (int64_t i = 0; i < count; ++i)
    values[i] = scale * lcg(&seed);
}

static void test_known(void) {
  const float ln2 = 0.693147180559945f;
  /* Row 0: a + b < 0 everywhere, so relu gives 0 and softmax 1/5. Row 1:
     relu(a + b) = (0, 2 ln 2, 2 ln 2, 4 ln 2, 0); halved and exponentiated
     that is (1, 2, 2, 4, 1), so softmax = (1, 2, 2, 4, 1) / 10. */
  float a[C_KNOWN_A_NUMEL] = {-1.0f, -2.0f,       -0.5f,       0.25f,   -3.0f,
                              1.0f,  2 * ln2 + 1, 2 * ln2 - 1, 4 * ln2, -7.0f};
  float b[C_KNOWN_B_NUMEL] = {0.5f,  1.0f,  -0.5f, -0.75f, 2.0f,
                              -1.0f, -1.0f, 1.0f,  0.0f,   3.0f};
  float z[C_KNOWN_Z_NUMEL] = {0};
  int32_t vl[C_KNOWN_VL_NUMEL] = {2, 0};
  float r[C_KNOWN_R_NUMEL], s[C_KNOWN_S_NUMEL], m[C_KNOWN_M_NUMEL];
  const float r_expected[C_KNOWN_R_NUMEL] = {0, 0,       0,       0,       0,
                                             0, 2 * ln2, 2 * ln2, 4 * ln2, 0};
  const float s_expected[C_KNOWN_S_NUMEL] = {0.2f, 0.2f, 0.2f, 0.2f, 0.2f,
                                             0.1f, 0.2f, 0.2f, 0.4f, 0.1f};
  /* Length 2: half and half, masked entries 0. Length 0: uniform, not NaN. */
  const float m_expected[C_KNOWN_M_NUMEL] = {0.5f,  0.5f,  0.0f,  0.0f,
                                             0.25f, 0.25f, 0.25f, 0.25f};
  int status = c_known(a, b, z, vl, r, s, m);
  check(status == 0, "c_known status", 0, status, 0);
  check_near("c_known R", r, r_expected, C_KNOWN_R_NUMEL, 1e-6);
  check_near("c_known S", s, s_expected, C_KNOWN_S_NUMEL, 1e-6);
  check_near("c_known M", m, m_expected, C_KNOWN_M_NUMEL, 1e-6);
}

static void test_attention(void) {
  float q[C_ATTENTION_Q_NUMEL], k[C_ATTENTION_K_NUMEL], v[C_ATTENTION_V_NUMEL];
  float y[C_ATTENTION_Y_NUMEL], expected[C_ATTENTION_Y_NUMEL];
  int32_t vl[C_ATTENTION_VL_NUMEL] = {2, 0};
  const int64_t qs[] = C_ATTENTION_Q_SHAPE, ks[] = C_ATTENTION_K_SHAPE,
                vs[] = C_ATTENTION_V_SHAPE;
  fill(q, C_ATTENTION_Q_NUMEL, 1u, 1.0f);
  fill(v, C_ATTENTION_V_NUMEL, 2u, 1.0f);
  /* Every key of batch n is the same vector. */
  for (int64_t n = 0; n < ks[0]; ++n)
    for (int64_t j = 0; j < ks[1]; ++j)
      for (int64_t c = 0; c < ks[2]; ++c)
        k[(n * ks[1] + j) * ks[2] + c] = 0.25f * (float)(c + 1) - (float)n;
  for (int64_t n = 0; n < qs[0]; ++n) {
    int64_t valid = vl[n] > 0 ? vl[n] : vs[1];
    for (int64_t c = 0; c < vs[2]; ++c) {
      double mean = 0;
      for (int64_t j = 0; j < valid; ++j)
        mean += v[(n * vs[1] + j) * vs[2] + c];
      mean /= (double)valid;
      for (int64_t i = 0; i < qs[1]; ++i)
        expected[(n * qs[1] + i) * vs[2] + c] = (float)mean;
    }
  }
  int status = c_attention(q, k, v, vl, y);
  check(status == 0, "c_attention status", 0, status, 0);
  check_near("c_attention Y", y, expected, C_ATTENTION_Y_NUMEL, 1e-5);
}

static void test_embedding(void) {
  float table[C_EMBEDDING_E_NUMEL], y[C_EMBEDDING_Y_NUMEL];
  const int64_t es[] = C_EMBEDDING_E_SHAPE;
  for (int64_t i = 0; i < C_EMBEDDING_E_NUMEL; ++i)
    table[i] = (float)i;
  int32_t ids[C_EMBEDDING_IDS_NUMEL] = {4, 0, 2, 2, 1, 3};
  int status = c_embedding(ids, table, y);
  check(status == 0, "c_embedding status (ids in range)", 0, status, 0);
  for (int64_t i = 0; i < C_EMBEDDING_IDS_NUMEL; ++i)
    check_near("c_embedding Y", y + i * es[1], table + ids[i] * es[1], es[1],
               0.0);

  const int32_t bad[] = {5, -1, 1000000};
  for (int b = 0; b < 3; ++b) {
    ids[4] = bad[b];
    status = c_embedding(ids, table, y);
    check(status != 0, "c_embedding status (id out of range)", bad[b], status,
          1);
  }
}

/* The D2L encoder block (samples/d2l_encoder_block.attn) with the second
   AddNorm's gamma = 1, beta = 0: every output row then has mean 0 and
   variance var / (var + 1e-5), within float rounding. */
static void test_encoder_block(void) {
  static float x[D2L_ENCODER_BLOCK_X_NUMEL], z[D2L_ENCODER_BLOCK_Z_NUMEL];
  static float wq[D2L_ENCODER_BLOCK_W_Q_NUMEL], wk[D2L_ENCODER_BLOCK_W_K_NUMEL],
      wv[D2L_ENCODER_BLOCK_W_V_NUMEL], wo[D2L_ENCODER_BLOCK_W_O_NUMEL],
      g1[D2L_ENCODER_BLOCK_G1_NUMEL], b1[D2L_ENCODER_BLOCK_B1_NUMEL],
      w1[D2L_ENCODER_BLOCK_W_1_NUMEL], c1[D2L_ENCODER_BLOCK_C_1_NUMEL],
      w2[D2L_ENCODER_BLOCK_W_2_NUMEL], c2[D2L_ENCODER_BLOCK_C_2_NUMEL],
      g2[D2L_ENCODER_BLOCK_G2_NUMEL], b2[D2L_ENCODER_BLOCK_B2_NUMEL];
  int32_t vl[D2L_ENCODER_BLOCK_VALID_LENS_NUMEL] = {3, 2};
  fill(x, D2L_ENCODER_BLOCK_X_NUMEL, 10u, 1.0f);
  fill(wq, D2L_ENCODER_BLOCK_W_Q_NUMEL, 11u, 0.2f);
  fill(wk, D2L_ENCODER_BLOCK_W_K_NUMEL, 12u, 0.2f);
  fill(wv, D2L_ENCODER_BLOCK_W_V_NUMEL, 13u, 0.2f);
  fill(wo, D2L_ENCODER_BLOCK_W_O_NUMEL, 14u, 0.2f);
  fill(g1, D2L_ENCODER_BLOCK_G1_NUMEL, 15u, 1.0f);
  fill(b1, D2L_ENCODER_BLOCK_B1_NUMEL, 16u, 1.0f);
  fill(w1, D2L_ENCODER_BLOCK_W_1_NUMEL, 17u, 0.2f);
  fill(c1, D2L_ENCODER_BLOCK_C_1_NUMEL, 18u, 0.2f);
  fill(w2, D2L_ENCODER_BLOCK_W_2_NUMEL, 19u, 0.15f);
  fill(c2, D2L_ENCODER_BLOCK_C_2_NUMEL, 20u, 0.2f);
  for (int64_t i = 0; i < D2L_ENCODER_BLOCK_G2_NUMEL; ++i) {
    g2[i] = 1.0f;
    b2[i] = 0.0f;
  }
  int status = d2l_encoder_block(x, vl, wq, wk, wv, wo, g1, b1, w1, c1, w2, c2,
                                 g2, b2, z);
  check(status == 0, "d2l_encoder_block status", 0, status, 0);

  const int64_t d = D2L_ENCODER_BLOCK_D;
  for (int64_t row = 0; row < D2L_ENCODER_BLOCK_Z_NUMEL / d; ++row) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < d; ++c) {
      float value = z[row * d + c];
      check(finite(value), "d2l_encoder_block Z finite", row * d + c, value, 0);
      mean += value;
    }
    mean /= (double)d;
    for (int64_t c = 0; c < d; ++c)
      var += (z[row * d + c] - mean) * (z[row * d + c] - mean);
    var /= (double)d;
    check(absolute(mean) <= 1e-5, "d2l_encoder_block row mean", row, mean, 0);
    /* var / (var + eps) >= 1 - 1e-3 for a row variance >= 0.01. */
    check(var <= 1.0 + 1e-5 && var >= 1.0 - 1e-3,
          "d2l_encoder_block row variance", row, var, 1);
  }
}

int main(void) {
  test_known();
  test_attention();
  test_embedding();
  test_encoder_block();
  if (failures == 0)
    printf("c_link: all checks passed\n");
  return failures < 255 ? failures : 255;
}
