/* Fused attention core of the general transformer (inductionlab.models.fused; docs/conventions.md#fused-attention).

   Layout: the batch is the vector lane.  q is (G, K, Lq, Bp), k and v are (G, K, L, Bp), contiguous, with
   G = runs × heads (group g = s·H + h, slope[g]) and the batch padded to Bp, a multiple of LANES (8).  A task is one
   group and LANES sequences of it: every sequence has the same mask and slope, so all arithmetic is lane by lane — no
   masks, no shuffles, no reductions across lanes — and each query row loops over exactly its own keys.

   Query row r sits at position i = L − Lq + r (0-indexed) and attends to the keys j with key_start − 1 ≤ j < i
   (strictly causal, docs/conventions.md#wang-a1) with the score  scale·q_r·k_j − p_g·(i − j − 1)  (paper eq. 2,
   the ALiBi-type RPE with slope p), softmax over those keys; a row without keys outputs 0.  The forward keeps
   each row's max and 1/Σ (stats, (G, Lq, 2, Bp)); the backward recomputes the probabilities from them
   (flash-attention style), so no (L, L) tensor leaves the row.

   Tasks [t0, t1) per call, so that callers may split them over threads; no state is shared. */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE__
#include <xmmintrin.h>
/* Flush denormals to zero inside the kernels (and restore the caller's mode): products of a model at its 0.01
   initialisation reach them, and every denormal operand costs a microcode assist (measured: the step 3× slower). */
#define FTZ_BEGIN const unsigned int csr_ = _mm_getcsr(); _mm_setcsr(csr_ | 0x8040);
#define FTZ_END _mm_setcsr(csr_);
#else
#define FTZ_BEGIN
#define FTZ_END
#endif

#ifndef LANES
#ifdef __AVX512F__
#define LANES 16
#else
#define LANES 8 /* AVX2: a 16-wide type would pass through memory */
#endif
#endif
#define KMAX 64 /* the largest head size (fused.py uses the eager path above it) */
typedef float vf __attribute__((vector_size(4 * LANES), aligned(4)));
typedef int32_t vi __attribute__((vector_size(4 * LANES), aligned(4)));

static inline vf splat(float x) { return (vf){0} + x; }

static inline vf blend(vi mask, vf a, vf b) { return (vf)(((vi)a & mask) | ((vi)b & ~mask)); }

/* exp(x), 0 below −87.3 (Cephes expf: range reduction by ln 2, degree-5 polynomial; relative error < 2e-7). */
static inline vf vexp(vf x) {
    const vf y = blend(x < -87.0f, splat(-87.0f), x);
    const vf z = y * 1.44269504088896341f + 0.5f;
    vi n = __builtin_convertvector(z, vi); /* toward zero; floor below */
    n += (vi)(__builtin_convertvector(n, vf) > z);
    const vf nf = __builtin_convertvector(n, vf);
    const vf r = y - nf * 0.693359375f + nf * 2.12194440e-4f;
    vf p = splat(1.9875691500e-4f);
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    const vf two_n = (vf)((n + 127) << 23);
    return blend(x < -87.3f, splat(0.0f), p * two_n);
}

/* Entry (row, c) of a (K, rows, Bp) block; the kernels are inlined per head size K so that the K-long arrays of
   vectors live in registers. */
#define AT(base, rows, row, c) (*(const vf *)((base) + ((size_t)(c) * (rows) + (row)) * Bp))
#define REF(base, rows, row, c) (*(vf *)((base) + ((size_t)(c) * (rows) + (row)) * Bp))
#define INLINE static inline __attribute__((always_inline))

/* A task's lanes of a (K, rows, Bp) block, copied to (rows, K) vectors: one key's K vectors in one run of memory
   (read in place, the K planes lie L·Bp floats apart and evict each other from the cache). */
INLINE void gather(vf *restrict to, const float *from, int rows, int K, int Bp) {
    for (int j = 0; j < rows; j++)
        for (int c = 0; c < K; c++) to[j * K + c] = AT(from, rows, j, c);
}

INLINE void scatter(float *to, const vf *restrict from, int rows, int K, int Bp) {
    for (int j = 0; j < rows; j++)
        for (int c = 0; c < K; c++) REF(to, rows, j, c) = from[j * K + c];
}

static vf *buffers(int n) {
    void *p = NULL;
    return posix_memalign(&p, 64, sizeof(vf) * (size_t)(n > 0 ? n : 1)) ? NULL : p;
}

INLINE int forward(int64_t t0, int64_t t1, int Bp, int Lq, int L, const int K, int key_start, float scale,
                   const float *q, const float *k, const float *v, const float *slope, float *out, float *stats) {
    vf qs[KMAX], acc[KMAX]; /* not VLAs: fixed arrays go to registers once K is a constant */
    vf *kb = buffers(2 * L * K + L), *vb = kb + L * K, *s = vb + L * K;
    if (!kb) return 1;
    const int64_t tasks_per_group = Bp / LANES;
    for (int64_t t = t0; t < t1; t++) {
        const int64_t g = t / tasks_per_group, lane = (t % tasks_per_group) * LANES;
        const float p = slope[g];
        const float *qg = q + g * Lq * K * Bp + lane, *kg = k + g * L * K * Bp + lane, *vg = v + g * L * K * Bp + lane;
        float *og = out + g * Lq * K * Bp + lane, *sg = stats + g * Lq * 2 * Bp + lane;
        gather(kb, kg, L, K, Bp);
        gather(vb, vg, L, K, Bp);
        for (int r = 0; r < Lq; r++) {
            const int i = L - Lq + r, j0 = key_start - 1;
            vf m = splat(0.0f), sum = splat(0.0f);
            for (int c = 0; c < K; c++) {
                qs[c] = AT(qg, Lq, r, c) * scale;
                acc[c] = splat(0.0f);
            }
            for (int j = j0; j < i; j++) {
                vf x = splat(-p * (float)(i - j - 1));
                for (int c = 0; c < K; c++) x += qs[c] * kb[j * K + c];
                s[j] = x;
                m = j == j0 ? x : blend(x > m, x, m);
            }
            for (int j = j0; j < i; j++) {
                const vf e = vexp(s[j] - m);
                sum += e;
                for (int c = 0; c < K; c++) acc[c] += e * vb[j * K + c];
            }
            const vf inv = i > j0 ? 1.0f / sum : splat(0.0f);
            for (int c = 0; c < K; c++) REF(og, Lq, r, c) = acc[c] * inv;
            *(vf *)(sg + (size_t)(2 * r) * Bp) = m;
            *(vf *)(sg + (size_t)(2 * r + 1) * Bp) = inv;
        }
    }
    free(kb);
    return 0;
}

/* Gradients of the forward's output o (given dout) with respect to q, k, v, and the slope per task
   (dslope[t], summed over its lanes; the caller sums the tasks of a group).  dS = P ∘ (dP − Σ_c dout_c o_c). */
INLINE int backward(int64_t t0, int64_t t1, int Bp, int Lq, int L, const int K, int key_start, float scale,
                    const float *q, const float *k, const float *v, const float *slope, const float *out,
                    const float *stats, const float *dout, float *dq, float *dk, float *dv, float *dslope) {
    vf dqr[KMAX], dka[KMAX], dva[KMAX];
    vf *kb = buffers(2 * L * K + 2 * Lq * K + 2 * Lq * L);
    if (!kb) return 1;
    vf *vb = kb + L * K, *qb = vb + L * K, *gb = qb + Lq * K, *Pb = gb + Lq * K, *dSb = Pb + Lq * L;
    const int64_t tasks_per_group = Bp / LANES;
    const int j0 = key_start - 1;
    for (int64_t t = t0; t < t1; t++) {
        const int64_t g = t / tasks_per_group, lane = (t % tasks_per_group) * LANES;
        const float p = slope[g];
        const size_t qoff = g * Lq * K * Bp + lane, koff = g * L * K * Bp + lane;
        const float *og = out + qoff, *sg = stats + g * Lq * 2 * Bp + lane;
        vf dp = splat(0.0f);
        gather(kb, k + koff, L, K, Bp);
        gather(vb, v + koff, L, K, Bp);
        gather(qb, q + qoff, Lq, K, Bp);
        gather(gb, dout + qoff, Lq, K, Bp);
        for (int e = 0; e < Lq * K; e++) qb[e] *= scale; /* scale·q */
        /* rows: P, dS (kept for the keys' pass) and dq */
        for (int r = 0; r < Lq; r++) {
            const int i = L - Lq + r;
            const vf m = *(const vf *)(sg + (size_t)(2 * r) * Bp), inv = *(const vf *)(sg + (size_t)(2 * r + 1) * Bp);
            const vf *qs = qb + r * K, *gr = gb + r * K;
            vf d = splat(0.0f);
            for (int c = 0; c < K; c++) {
                d += gr[c] * AT(og, Lq, r, c);
                dqr[c] = splat(0.0f);
            }
            for (int j = j0; j < i; j++) {
                const float dist = (float)(i - j - 1);
                vf x = splat(-p * dist), dP = splat(0.0f);
                for (int c = 0; c < K; c++) {
                    x += qs[c] * kb[j * K + c];
                    dP += gr[c] * vb[j * K + c];
                }
                const vf P = vexp(x - m) * inv;
                const vf dS = P * (dP - d);
                Pb[r * L + j] = P;
                dSb[r * L + j] = dS;
                dp += dS * dist;
                for (int c = 0; c < K; c++) dqr[c] += dS * kb[j * K + c];
            }
            for (int c = 0; c < K; c++) REF(dq + qoff, Lq, r, c) = dqr[c] * scale;
        }
        /* keys: dk_j = Σ_r dS_rj scale·q_r, dv_j = Σ_r P_rj dout_r over the rows that see key j */
        for (int j = 0; j < L; j++) {
            for (int c = 0; c < K; c++) dka[c] = dva[c] = splat(0.0f);
            for (int r = j < j0 ? Lq : (j - L + Lq + 1 > 0 ? j - L + Lq + 1 : 0); r < Lq; r++) {
                const vf P = Pb[r * L + j], dS = dSb[r * L + j];
                for (int c = 0; c < K; c++) {
                    dka[c] += dS * qb[r * K + c];
                    dva[c] += P * gb[r * K + c];
                }
            }
            for (int c = 0; c < K; c++) {
                REF(dk + koff, L, j, c) = dka[c];
                REF(dv + koff, L, j, c) = dva[c];
            }
        }
        float total = 0.0f;
        for (int l = 0; l < LANES; l++) total += dp[l];
        dslope[t] = -total;
    }
    free(kb);
    return 0;
}

/* One instance per common head size, and one for any other. */
#define DISPATCH(fn, K, ...)                     \
    switch (K) {                                 \
    case 1: fn(__VA_ARGS__, 1); break;           \
    case 2: fn(__VA_ARGS__, 2); break;           \
    case 4: fn(__VA_ARGS__, 4); break;           \
    case 8: fn(__VA_ARGS__, 8); break;           \
    case 16: fn(__VA_ARGS__, 16); break;         \
    case 32: fn(__VA_ARGS__, 32); break;         \
    default: fn(__VA_ARGS__, K);                 \
    }

#define FORWARD(t0, t1, Bp, Lq, L, ks, sc, q, k, v, p, o, st, K) forward(t0, t1, Bp, Lq, L, K, ks, sc, q, k, v, p, o, st)
#define BACKWARD(t0, t1, Bp, Lq, L, ks, sc, q, k, v, p, o, st, g, dq, dk, dv, dp, K) \
    backward(t0, t1, Bp, Lq, L, K, ks, sc, q, k, v, p, o, st, g, dq, dk, dv, dp)

int fused_lanes(void) { return LANES; }

int fused_forward(int64_t t0, int64_t t1, int Bp, int Lq, int L, int K, int key_start, float scale,
                  const float *q, const float *k, const float *v, const float *slope, float *out, float *stats) {
    FTZ_BEGIN
    int status = 0;
    DISPATCH(status = FORWARD, K, t0, t1, Bp, Lq, L, key_start, scale, q, k, v, slope, out, stats)
    FTZ_END
    return status;
}

int fused_backward(int64_t t0, int64_t t1, int Bp, int Lq, int L, int K, int key_start, float scale,
                   const float *q, const float *k, const float *v, const float *slope, const float *out,
                   const float *stats, const float *dout, float *dq, float *dk, float *dv, float *dslope) {
    FTZ_BEGIN
    int status = 0;
    DISPATCH(status = BACKWARD, K, t0, t1, Bp, Lq, L, key_start, scale, q, k, v, slope, out, stats, dout, dq, dk, dv,
             dslope)
    FTZ_END
    return status;
}
