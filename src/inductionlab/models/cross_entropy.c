/* Next-token cross-entropy over rows of logits, forward and backward, in one pass per row each
   (docs/conventions.md#fused-cross-entropy).  Logits are float32 or bfloat16 (raw uint16 bits); the arithmetic
   is float32; expf is glibc's vector expf (libmvec) where the compiler vectorises the loop.

   forward:  lse_r = log Σ_v exp z_rv,  loss_r = lse_r − z_{r, t_r}
   backward: dz_rv = g_r (exp(z_rv − lse_r) − [v = t_r]), written in the logits' type (bfloat16: round to
             nearest even, as torch converts). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#pragma omp declare simd notinbranch
extern float expf(float);

static inline float bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* NaN stays NaN */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

/* row r of z as float32 into buf (V,) */
static void load_row(int bf16, const void *z, int64_t r, int64_t V, float *buf) {
  if (bf16) {
    const uint16_t *zr = (const uint16_t *)z + r * V;
#pragma omp simd
    for (int64_t v = 0; v < V; v++) buf[v] = bf16_to_f32(zr[v]);
  } else {
    memcpy(buf, (const float *)z + r * V, (size_t)V * sizeof(float));
  }
}

static float row_max(const float *x, int64_t V) {
  float m = -INFINITY;
#pragma omp simd reduction(max : m)
  for (int64_t v = 0; v < V; v++) m = x[v] > m ? x[v] : m;
  return m;
}

/* rows r0..r1−1 (callers split the rows between threads, each with its own buf (V,)) */
void ce_forward(int bf16, int64_t r0, int64_t r1, int64_t V, const void *z, const int64_t *t, float *lse, float *loss,
                float *buf) {
  for (int64_t r = r0; r < r1; r++) {
    load_row(bf16, z, r, V, buf);
    float m = row_max(buf, V), s = 0.f;
    if (!isfinite(m)) { /* an infinite or NaN row: the sum below gives what torch's log_softmax gives */
      m = isnan(m) ? m : (m > 0 ? m : 0.f);
    }
#pragma omp simd reduction(+ : s)
    for (int64_t v = 0; v < V; v++) s += expf(buf[v] - m);
    lse[r] = m + logf(s);
    loss[r] = lse[r] - buf[t[r]];
  }
}

void ce_backward(int bf16, int64_t r0, int64_t r1, int64_t V, const void *z, const int64_t *t, const float *lse,
                 const float *g, void *dz, float *buf) {
  for (int64_t r = r0; r < r1; r++) {
    load_row(bf16, z, r, V, buf);
    const float l = lse[r], gr = g[r];
#pragma omp simd
    for (int64_t v = 0; v < V; v++) buf[v] = gr * expf(buf[v] - l);
    buf[t[r]] -= gr;
    if (bf16) {
      uint16_t *out = (uint16_t *)dz + r * V;
#pragma omp simd
      for (int64_t v = 0; v < V; v++) out[v] = f32_to_bf16(buf[v]);
    } else {
      memcpy((float *)dz + r * V, buf, (size_t)V * sizeof(float));
    }
  }
}
