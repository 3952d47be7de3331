/* The SCB sampler and the linear model's gradient fused (inductionlab.models.linear_fused; docs/conventions.md#scb-fused).

   Per run s and sample b, from the uniforms u_tok (S_d, B, T + 1) float32 and u_pl (S_d, B, 2):
       x_t    = #{j < N−1 : u_tok[t] ≥ mu_cdf[j]}               (float32, as tasks/scb.py's _iid_tokens compares)
       k      = x_{T+1},  j = #{i < m−1 : u_pl[0] ≥ q_cdf[k, i]},  s = q_pos[k, j],  source = x_s
       label  = #{n < N−1 : u_pl[1] ≥ p_cdf[source, n]}
       h      = Σ_t A[t, k] e_{x_t},  r = V h − e_label,  w = Vᵀ r
       G_V   += r hᵀ,  G_A[t, k] += w[x_t]                      (sums over the B samples; the caller divides)
   The data (uniforms and the instance's CDFs) of run s is data run s·data_step: data_step 0 shares one instance's
   batch across the runs.  The comparisons are exact IEEE (no fast-math), so the tokens and labels are eager's; the
   sums accumulate in index order.  REAL is double or float: the file is compiled once per type by including itself
   (the functions' suffix _f64 or _f32). */

#include <stdint.h>

#ifndef REAL
#define BLOCK 512 /* tokens drawn and counted into h at once (their uniforms and ids stay in L1) */

/* #{j < n : u ≥ cdf[j]}: the inverse-CDF draw as a comparison count. */
static int64_t token_count(float u, const float *cdf, int64_t n) {
    int64_t c = 0;
    for (int64_t j = 0; j < n; j++) c += u >= cdf[j];
    return c;
}

#define REAL double
#define SUFFIX(name) name##_f64
#include "linear_fused.c"
#undef REAL
#undef SUFFIX
#define REAL float
#define SUFFIX(name) name##_f32
#include "linear_fused.c"
#else

static int64_t SUFFIX(count)(REAL u, const REAL *cdf, int64_t n) {
    int64_t c = 0;
    for (int64_t j = 0; j < n; j++) c += u >= cdf[j];
    return c;
}

/* The context tokens x_1..x_T into tok (T,), h = Σ_t A[t, k] e_{x_t} into h (N,) (zeroed here). */
static void SUFFIX(context)(int64_t T, int64_t N, int64_t k, const float *u, const float *cdf, const REAL *A,
                            int32_t *tok, REAL *h) {
    for (int64_t n = 0; n < N; n++) h[n] = 0;
    for (int64_t t0 = 0; t0 < T; t0 += BLOCK) {
        const int64_t t1 = t0 + BLOCK < T ? t0 + BLOCK : T;
        for (int64_t t = t0; t < t1; t++) tok[t] = 0;
        for (int64_t j = 0; j < N - 1; j++) {
            const float c = cdf[j];
            for (int64_t t = t0; t < t1; t++) tok[t] += u[t] >= c;
        }
        for (int64_t t = t0; t < t1; t++) h[tok[t]] += A[t * N + k];
    }
}

/* G_V (S, N, N) and G_A (S, T, N) += the gradient sums (zeroed by the caller); tok (T,) and hrw (3N,) scratch;
   last, label (S, B) the draws, and tokens (S, B, T) when not NULL. */
void SUFFIX(scb_gradients)(int64_t S, int64_t B, int64_t T, int64_t N, int64_t m, int64_t data_step,
                           const float *u_tok, const REAL *u_pl, const float *mu_cdf, const int64_t *q_pos,
                           const REAL *q_cdf, const REAL *p_cdf, const REAL *V, const REAL *A, int32_t *tok,
                           REAL *hrw, int64_t *last, int64_t *label, int32_t *tokens, REAL *G_V, REAL *G_A) {
    REAL *h = hrw, *r = hrw + N, *w = hrw + 2 * N;
    for (int64_t s = 0; s < S; s++) {
        const int64_t d = s * data_step;
        const float *cdf = mu_cdf + d * N;
        const REAL *Vs = V + s * N * N, *As = A + s * T * N;
        REAL *gv = G_V + s * N * N, *ga = G_A + s * T * N;
        for (int64_t b = 0; b < B; b++) {
            const float *u = u_tok + (d * B + b) * (T + 1);
            const REAL *up = u_pl + (d * B + b) * 2;
            const int64_t k = token_count(u[T], cdf, N - 1);
            SUFFIX(context)(T, N, k, u, cdf, As, tok, h);
            const int64_t row = d * N + k;
            const int64_t j = SUFFIX(count)(up[0], q_cdf + row * m, m - 1);
            const int64_t source = tok[q_pos[row * m + j]];
            const int64_t y = SUFFIX(count)(up[1], p_cdf + (d * N + source) * N, N - 1);
            last[s * B + b] = k;
            label[s * B + b] = y;
            if (tokens)
                for (int64_t t = 0; t < T; t++) tokens[(s * B + b) * T + t] = tok[t];
            for (int64_t n = 0; n < N; n++) {
                REAL dot = 0;
                for (int64_t c = 0; c < N; c++) dot += Vs[n * N + c] * h[c];
                r[n] = dot - (n == y);
            }
            for (int64_t c = 0; c < N; c++) w[c] = 0;
            for (int64_t n = 0; n < N; n++)
                for (int64_t c = 0; c < N; c++) {
                    w[c] += Vs[n * N + c] * r[n];
                    gv[n * N + c] += r[n] * h[c];
                }
            for (int64_t t = 0; t < T; t++) ga[t * N + k] += w[tok[t]];
        }
    }
}

#endif
