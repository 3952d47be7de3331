/* Fused attention layer of the general transformer (inductionlab.models.fused; docs/conventions.md#fused-attention):
   the projections by W_Q, W_K, W_V, the attention core and the projection by W_O, forward and backward.

   Layout: the batch is the vector lane.  z is (S, D, L, Bp), contiguous, the batch padded to Bp, a multiple of
   LANES (16 or 8); the weights are (S, H, D, K) and W_O (S, H, K, D), slope (S, H).  A task is one run and LANES
   sequences of it: every sequence has the same mask, weights and slope, so all arithmetic is lane by lane — no
   masks, no shuffles, no reductions across lanes until a weight's gradient is summed — and each query row loops
   over exactly its own keys.  q, k and v of a head live only in the task's buffers.

   Query row r sits at position i = L − Lq + r (0-indexed) and attends to the keys j with key_start − 1 ≤ j < i
   (strictly causal, docs/conventions.md#wang-a1) with the score  scale·q_r·k_j − p·(i − j − 1)  (paper eq. 2,
   the ALiBi-type RPE with slope p), softmax over those keys; a row without keys outputs 0.  The forward keeps
   each head's output o and each row's max and 1/Σ; the backward recomputes q, k, v and the probabilities from
   them (flash-attention style), so no (L, L) tensor leaves the row.

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

/* Entry (row, c) of a (c, rows, Bp) block; the kernels are inlined per head size K so that the K-long arrays of
   vectors live in registers. */
#define AT(base, rows, row, c) (*(const vf *)((base) + ((size_t)(c) * (rows) + (row)) * Bp))
#define REF(base, rows, row, c) (*(vf *)((base) + ((size_t)(c) * (rows) + (row)) * Bp))
#define INLINE static inline __attribute__((always_inline))

static vf *buffers(int n) {
    void *p = NULL;
    return posix_memalign(&p, 64, sizeof(vf) * (size_t)(n > 0 ? n : 1)) ? NULL : p;
}

/* The attention core of one head on one task's lanes, all blocks (rows, K) vectors in this task's buffers: q is
   scale·q (Lq rows), k and v (L rows); o (Lq rows) and the stats (m, 1/Σ per row: stats[2r], stats[2r + 1]) out;
   s holds one row's scores (L). */
INLINE void core_forward(int Lq, int L, const int K, int j0, float p, const vf *restrict qb, const vf *restrict kb,
                         const vf *restrict vb, vf *restrict ob, vf *restrict stats, vf *restrict s) {
    vf acc[KMAX]; /* not a VLA: a fixed array goes to registers once K is a constant */
    for (int r = 0; r < Lq; r++) {
        const int i = L - Lq + r;
        const vf *qs = qb + r * K;
        vf m = splat(0.0f), sum = splat(0.0f);
        for (int c = 0; c < K; c++) acc[c] = splat(0.0f);
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
        for (int c = 0; c < K; c++) ob[r * K + c] = acc[c] * inv;
        stats[2 * r] = m;
        stats[2 * r + 1] = inv;
    }
}

/* Gradients of the core's o (given g = dL/do) with respect to scale·q (dq, then times scale: dL/dq), k, v, and the
   slope (returned per lane).  dS = P ∘ (dP − Σ_c g_c o_c).  P and dS of every (row, key) are kept (Pb, dSb: Lq·L). */
INLINE vf core_backward(int Lq, int L, const int K, int j0, float p, float scale, const vf *restrict qb,
                        const vf *restrict kb, const vf *restrict vb, const vf *restrict ob,
                        const vf *restrict stats, const vf *restrict gb, vf *restrict dqb, vf *restrict dkb,
                        vf *restrict dvb, vf *restrict Pb, vf *restrict dSb) {
    vf dqr[KMAX], dka[KMAX], dva[KMAX];
    vf dp = splat(0.0f);
    for (int r = 0; r < Lq; r++) { /* rows: P, dS (kept for the keys' pass) and dq */
        const int i = L - Lq + r;
        const vf m = stats[2 * r], inv = stats[2 * r + 1];
        const vf *qs = qb + r * K, *gr = gb + r * K;
        vf d = splat(0.0f);
        for (int c = 0; c < K; c++) {
            d += gr[c] * ob[r * K + c];
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
        for (int c = 0; c < K; c++) dqb[r * K + c] = dqr[c] * scale;
    }
    /* keys: dk_j = Σ_r dS_rj scale·q_r, dv_j = Σ_r P_rj g_r over the rows that see key j */
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
            dkb[j * K + c] = dka[c];
            dvb[j * K + c] = dva[c];
        }
    }
    return -dp;
}

/* x (rows, D) · W (D, K) → y (rows, K), times a: a projection of a task's lanes (W one run's and head's, scalars). */
INLINE void project(vf *restrict y, const vf *restrict x, const float *restrict W, int rows, int D, const int K,
                    float a) {
    vf acc[KMAX];
    for (int j = 0; j < rows; j++) {
        for (int c = 0; c < K; c++) acc[c] = splat(0.0f);
        for (int d = 0; d < D; d++) {
            const vf xd = x[j * D + d];
            for (int c = 0; c < K; c++) acc[c] += xd * W[d * K + c];
        }
        for (int c = 0; c < K; c++) y[j * K + c] = acc[c] * a;
    }
}

/* y (rows, D) += dy (rows, K) · Wᵀ for W (D, K): the input's gradient of a projection. */
INLINE void project_back(vf *restrict y, const vf *restrict dy, const float *restrict W, int rows, int D,
                         const int K) {
    for (int j = 0; j < rows; j++)
        for (int d = 0; d < D; d++) {
            vf acc = y[j * D + d];
            for (int c = 0; c < K; c++) acc += dy[j * K + c] * W[d * K + c];
            y[j * D + d] = acc;
        }
}

/* G (D, K) += Σ_rows x_row ⊗ dy_row, per lane: a projection's weight gradient, summed over lanes by the caller. */
INLINE void outer(vf *restrict G, const vf *restrict x, const vf *restrict dy, int rows, int D, const int K) {
    for (int j = 0; j < rows; j++)
        for (int d = 0; d < D; d++) {
            const vf xd = x[j * D + d];
            for (int c = 0; c < K; c++) G[d * K + c] += xd * dy[j * K + c];
        }
}

/* A task's lanes of z (S, D, L, Bp) for run s as (L, D) vectors, and back. */
INLINE void load_rows(vf *restrict to, const float *from, int rows, int D, int Bp) {
    for (int j = 0; j < rows; j++)
        for (int d = 0; d < D; d++) to[j * D + d] = AT(from, rows, j, d);
}

INLINE void store_rows(float *to, const vf *restrict from, int rows, int D, int Bp) {
    for (int j = 0; j < rows; j++)
        for (int d = 0; d < D; d++) REF(to, rows, j, d) = from[j * D + d];
}

static float lane_sum(vf x) {
    float total = 0.0f;
    for (int l = 0; l < LANES; l++) total += x[l];
    return total;
}

/* The layer: a task is one run s and LANES sequences; every head h in turn projects z (S, D, L, Bp) with
   W_Q, W_K, W_V (S, H, D, K), runs the core and adds o·W_O[s, h] (W_O (S, H, K, D)) into out (S, D, Lq, Bp).
   o is kept for the backward in heads (S, H, Lq·K, Bp), the stats in stats (S, H, Lq·2, Bp). */
INLINE int forward(int64_t t0, int64_t t1, int Bp, int Lq, int L, int D, int H, const int K, int key_start,
                   float scale, const float *z, const float *Wq, const float *Wk, const float *Wv, const float *Wo,
                   const float *slope, float *out, float *heads, float *stats) {
    vf *zb = buffers(L * D + Lq * D + 2 * L * K + 2 * Lq * K + 2 * Lq + L);
    if (!zb) return 1;
    vf *yb = zb + L * D, *qb = yb + Lq * D, *kb = qb + Lq * K, *vb = kb + L * K, *ob = vb + L * K;
    vf *st = ob + Lq * K, *s = st + 2 * Lq;
    const int64_t tasks_per_run = Bp / LANES;
    for (int64_t t = t0; t < t1; t++) {
        const int64_t run = t / tasks_per_run, lane = (t % tasks_per_run) * LANES;
        load_rows(zb, z + run * D * L * Bp + lane, L, D, Bp);
        for (int e = 0; e < Lq * D; e++) yb[e] = splat(0.0f);
        for (int h = 0; h < H; h++) {
            const int64_t g = run * H + h;
            const float *wq = Wq + g * D * K, *wk = Wk + g * D * K, *wv = Wv + g * D * K, *wo = Wo + g * K * D;
            project(qb, zb + (L - Lq) * D, wq, Lq, D, K, scale);
            project(kb, zb, wk, L, D, K, 1.0f);
            project(vb, zb, wv, L, D, K, 1.0f);
            core_forward(Lq, L, K, key_start - 1, slope[g], qb, kb, vb, ob, st, s);
            for (int e = 0; e < Lq * K; e++) REF(heads + g * Lq * K * Bp + lane, 1, 0, e) = ob[e];
            for (int e = 0; e < 2 * Lq; e++) REF(stats + g * 2 * Lq * Bp + lane, 1, 0, e) = st[e];
            for (int r = 0; r < Lq; r++) /* y_r += o_r · W_O */
                for (int c = 0; c < K; c++)
                    for (int d = 0; d < D; d++) yb[r * D + d] += ob[r * K + c] * wo[c * D + d];
        }
        store_rows(out + run * D * Lq * Bp + lane, yb, Lq, D, Bp);
    }
    free(zb);
    return 0;
}

/* Gradients of the layer given dout (S, D, Lq, Bp): dz (S, D, L, Bp), and per task (summed over its lanes; the
   caller sums a run's tasks) dW_Q, dW_K, dW_V (T, H, D, K), dW_O (T, H, K, D) and dslope (T, H). */
INLINE int backward(int64_t t0, int64_t t1, int Bp, int Lq, int L, int D, int H, const int K, int key_start,
                    float scale, const float *z, const float *Wq, const float *Wk, const float *Wv, const float *Wo,
                    const float *slope, const float *heads, const float *stats, const float *dout, float *dz,
                    float *dWq, float *dWk, float *dWv, float *dWo, float *dslope) {
    const int n = 2 * L * D + Lq * D + 4 * L * K + 4 * Lq * K + 2 * Lq + 2 * Lq * L + 4 * D * K;
    vf *zb = buffers(n);
    if (!zb) return 1;
    vf *dzb = zb + L * D, *gy = dzb + L * D, *qb = gy + Lq * D, *kb = qb + Lq * K, *vb = kb + L * K;
    vf *ob = vb + L * K, *gb = ob + Lq * K, *dqb = gb + Lq * K, *dkb = dqb + Lq * K, *dvb = dkb + L * K;
    vf *st = dvb + L * K, *Pb = st + 2 * Lq, *dSb = Pb + Lq * L, *G = dSb + Lq * L;
    const int64_t tasks_per_run = Bp / LANES;
    for (int64_t t = t0; t < t1; t++) {
        const int64_t run = t / tasks_per_run, lane = (t % tasks_per_run) * LANES;
        load_rows(zb, z + run * D * L * Bp + lane, L, D, Bp);
        load_rows(gy, dout + run * D * Lq * Bp + lane, Lq, D, Bp);
        for (int e = 0; e < L * D; e++) dzb[e] = splat(0.0f);
        for (int h = 0; h < H; h++) {
            const int64_t g = run * H + h, w = (t * H + h) * D * K;
            const float *wq = Wq + g * D * K, *wk = Wk + g * D * K, *wv = Wv + g * D * K, *wo = Wo + g * K * D;
            project(qb, zb + (L - Lq) * D, wq, Lq, D, K, scale);
            project(kb, zb, wk, L, D, K, 1.0f);
            project(vb, zb, wv, L, D, K, 1.0f);
            for (int e = 0; e < Lq * K; e++) ob[e] = AT(heads + g * Lq * K * Bp + lane, 1, 0, e);
            for (int e = 0; e < 2 * Lq; e++) st[e] = AT(stats + g * 2 * Lq * Bp + lane, 1, 0, e);
            for (int e = 0; e < 4 * D * K; e++) G[e] = splat(0.0f);
            for (int r = 0; r < Lq; r++) /* g_r = dy_r · W_Oᵀ; dW_O += o_r ⊗ dy_r */
                for (int c = 0; c < K; c++) {
                    vf acc = splat(0.0f);
                    for (int d = 0; d < D; d++) {
                        acc += gy[r * D + d] * wo[c * D + d];
                        G[3 * D * K + c * D + d] += ob[r * K + c] * gy[r * D + d];
                    }
                    gb[r * K + c] = acc;
                }
            dslope[t * H + h] = lane_sum(core_backward(Lq, L, K, key_start - 1, slope[g], scale, qb, kb, vb, ob, st,
                                                       gb, dqb, dkb, dvb, Pb, dSb));
            project_back(dzb + (L - Lq) * D, dqb, wq, Lq, D, K);
            project_back(dzb, dkb, wk, L, D, K);
            project_back(dzb, dvb, wv, L, D, K);
            outer(G, zb + (L - Lq) * D, dqb, Lq, D, K);
            outer(G + D * K, zb, dkb, L, D, K);
            outer(G + 2 * D * K, zb, dvb, L, D, K);
            for (int e = 0; e < D * K; e++) {
                dWq[w + e] = lane_sum(G[e]);
                dWk[w + e] = lane_sum(G[D * K + e]);
                dWv[w + e] = lane_sum(G[2 * D * K + e]);
                dWo[w + e] = lane_sum(G[3 * D * K + e]);
            }
        }
        store_rows(dz + run * D * L * Bp + lane, dzb, L, D, Bp);
    }
    free(zb);
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

#define FORWARD(t0, t1, Bp, Lq, L, D, H, ks, sc, z, wq, wk, wv, wo, p, o, hd, st, K) \
    forward(t0, t1, Bp, Lq, L, D, H, K, ks, sc, z, wq, wk, wv, wo, p, o, hd, st)
#define BACKWARD(t0, t1, Bp, Lq, L, D, H, ks, sc, z, wq, wk, wv, wo, p, hd, st, g, dz, dq, dk, dv, dO, dp, K) \
    backward(t0, t1, Bp, Lq, L, D, H, K, ks, sc, z, wq, wk, wv, wo, p, hd, st, g, dz, dq, dk, dv, dO, dp)

int fused_lanes(void) { return LANES; }

int fused_forward(int64_t t0, int64_t t1, int Bp, int Lq, int L, int D, int H, int K, int key_start, float scale,
                  const float *z, const float *Wq, const float *Wk, const float *Wv, const float *Wo,
                  const float *slope, float *out, float *heads, float *stats) {
    FTZ_BEGIN
    int status = 0;
    DISPATCH(status = FORWARD, K, t0, t1, Bp, Lq, L, D, H, key_start, scale, z, Wq, Wk, Wv, Wo, slope, out, heads,
             stats)
    FTZ_END
    return status;
}

int fused_backward(int64_t t0, int64_t t1, int Bp, int Lq, int L, int D, int H, int K, int key_start, float scale,
                   const float *z, const float *Wq, const float *Wk, const float *Wv, const float *Wo,
                   const float *slope, const float *heads, const float *stats, const float *dout, float *dz,
                   float *dWq, float *dWk, float *dWv, float *dWo, float *dslope) {
    FTZ_BEGIN
    int status = 0;
    DISPATCH(status = BACKWARD, K, t0, t1, Bp, Lq, L, D, H, key_start, scale, z, Wq, Wk, Wv, Wo, slope, heads, stats,
             dout, dz, dWq, dWk, dWv, dWo, dslope)
    FTZ_END
    return status;
}
