/* Fused pair and entry loops of the Chen et al. model (inductionlab.models.chen_fused; docs/conventions.md#chen-fused).

   The model's layer-2 logits live on two index sets of a prepared batch (models/chen.py, Batch): Q pairs (run s,
   query state, state) and U entries (sequence, state, token).  Per pair q the kernel
       K_q = Σ_S p[s, S] Π_{h∈S} relu⟨v[row_q, h], v[col_q, h]⟩        (the selector, docs/conventions.md#chen-2-2)
   from the normalised head outputs v (S·Z, H, d); per entry u
       mass[slot_u] += count_u · exp(a[run_u] K[pair_u] − shift[seq_u]),  shift = each sequence's largest logit
   (the classifier's softmax numerator, its denominator taken by the caller).  Forward and backward are plain
   loops in index order: the sums are accumulated in one fixed order, so the same inputs give the same bits.

   Subsets are head bitmasks (bit h: head h in S).  REAL is double or float: the file is compiled once per type
   by including itself (the functions' suffix _f64 or _f32). */

#include <math.h>
#include <stdint.h>

#ifndef REAL
#define REAL double
#define EXP exp
#define SUFFIX(name) name##_f64
#include "chen_fused.c"
#undef REAL
#undef EXP
#undef SUFFIX
#define REAL float
#define EXP expf
#define SUFFIX(name) name##_f32
#include "chen_fused.c"
#else

#define HMAX 16 /* heads (chen_fused.py refuses more) */

/* relu'd per-head grams g (Q, H) and K (Q,). */
void SUFFIX(pairs_forward)(int64_t Q, int H, int d, int n_sub, const int32_t *masks, const REAL *v,
                           const int64_t *row, const int64_t *col, const int64_t *pair_run, const REAL *p, REAL *g,
                           REAL *K) {
    int heads[64][HMAX], size[64]; /* each subset's heads, in order (chen_fused.py: at most 64 subsets) */
    for (int k = 0; k < n_sub; k++) {
        size[k] = 0;
        for (int h = 0; h < H; h++)
            if (masks[k] >> h & 1) heads[k][size[k]++] = h;
    }
    for (int64_t q = 0; q < Q; q++) {
        const REAL *a = v + row[q] * H * d, *b = v + col[q] * H * d, *ps = p + pair_run[q] * n_sub;
        REAL *gq = g + q * H;
        for (int h = 0; h < H; h++) {
            REAL dot = 0;
            for (int e = 0; e < d; e++) dot += a[h * d + e] * b[h * d + e];
            gq[h] = dot <= 0 ? 0 : dot; /* relu as torch's: NaN stays NaN */
        }
        REAL total = 0;
        for (int k = 0; k < n_sub; k++) {
            REAL prod = ps[k];
            for (int i = 0; i < size[k]; i++) prod *= gq[heads[k][i]];
            total += prod;
        }
        K[q] = total;
    }
}

/* dv (S·Z, H, d) and dp (S, n_sub) += the gradients of Σ_q dK_q K_q (dv, dp zeroed by the caller). */
void SUFFIX(pairs_backward)(int64_t Q, int H, int d, int n_sub, const int32_t *masks, const REAL *v,
                            const int64_t *row, const int64_t *col, const int64_t *pair_run, const REAL *p,
                            const REAL *g, const REAL *dK, REAL *dv, REAL *dp) {
    int heads[64][HMAX], size[64]; /* each subset's heads, in order (chen_fused.py: at most 64 subsets) */
    for (int k = 0; k < n_sub; k++) {
        size[k] = 0;
        for (int h = 0; h < H; h++)
            if (masks[k] >> h & 1) heads[k][size[k]++] = h;
    }
    REAL dg[HMAX];
    for (int64_t q = 0; q < Q; q++) {
        const REAL *a = v + row[q] * H * d, *b = v + col[q] * H * d, *ps = p + pair_run[q] * n_sub;
        const REAL *gq = g + q * H;
        REAL *da = dv + row[q] * H * d, *db = dv + col[q] * H * d, *dps = dp + pair_run[q] * n_sub;
        for (int h = 0; h < H; h++) dg[h] = 0;
        for (int k = 0; k < n_sub; k++) {
            const int *in = heads[k], n = size[k];
            REAL prod = 1;
            for (int i = 0; i < n; i++) prod *= gq[in[i]];
            dps[k] += dK[q] * prod;
            for (int i = 0; i < n; i++) { /* ∂/∂g_h of p_S Π_{h'∈S} g_h': the product of the others */
                REAL rest = ps[k];
                for (int i2 = 0; i2 < n; i2++)
                    if (i2 != i) rest *= gq[in[i2]];
                dg[in[i]] += rest;
            }
        }
        for (int h = 0; h < H; h++) {
            if (gq[h] <= 0) continue; /* relu: no gradient where the gram is ≤ 0 (NaN passes, as in torch) */
            const REAL s = dK[q] * dg[h];
            for (int e = 0; e < d; e++) {
                da[h * d + e] += s * b[h * d + e];
                db[h * d + e] += s * a[h * d + e];
            }
        }
    }
}

/* mass (n_seq·d) from K (Q,), a (S,); the weights w (U,) kept for the backward. */
void SUFFIX(entries_forward)(int64_t U, int64_t n_seq, const REAL *K, const REAL *a, const int64_t *pair,
                             const int64_t *run, const int64_t *seq, const int64_t *slot, const REAL *count,
                             REAL *shift, REAL *w, REAL *mass) {
    for (int64_t s = 0; s < n_seq; s++) shift[s] = -INFINITY;
    for (int64_t u = 0; u < U; u++) {
        const REAL x = a[run[u]] * K[pair[u]];
        w[u] = x;
        if (x > shift[seq[u]]) shift[seq[u]] = x;
    }
    for (int64_t u = 0; u < U; u++) {
        w[u] = EXP(w[u] - shift[seq[u]]) * count[u];
        mass[slot[u]] += w[u];
    }
}

/* dK (Q,) and da (S,) += the gradients of Σ dmass·mass (the shift held constant; dK, da zeroed by the caller). */
void SUFFIX(entries_backward)(int64_t U, const REAL *K, const REAL *a, const int64_t *pair, const int64_t *run,
                              const int64_t *slot, const REAL *w, const REAL *dmass, REAL *dK, REAL *da) {
    for (int64_t u = 0; u < U; u++) {
        const REAL dx = dmass[slot[u]] * w[u];
        dK[pair[u]] += a[run[u]] * dx;
        da[run[u]] += K[pair[u]] * dx;
    }
}

#endif
