/* torch.rand's CPU stream, reproduced (docs/conventions.md#fast-uniforms).  A torch CPU generator is a
   32-bit MT19937 (at::mt19937, the reference algorithm of Matsumoto and Nishimura); torch.rand reads one draw y
   per float32 value, (y & (2^24 − 1)) · 2^−24, and two per float64 value, (((y1 << 32) | y2) & (2^53 − 1)) · 2^−53,
   in the tensor's element order.  The state is the generator's own: 624 words, `left` (draws before the next
   twist, counting down from 624; 1 after seeding) and `next` (the word to read). */
#include <stdint.h>

#define N 624
#define M 397
#define UPPER 0x80000000u
#define LOWER 0x7fffffffu
#define MATRIX 0x9908b0dfu

static inline uint32_t mix(uint32_t u, uint32_t v) {
  uint32_t y = (u & UPPER) | (v & LOWER);
  return (y >> 1) ^ ((v & 1u) ? MATRIX : 0u);
}

/* the next 624 words, as at::mt19937::next_state (state words kept as uint64 in torch's layout; low 32 bits) */
static void twist(uint32_t *s) {
  int i;
  for (i = 0; i < N - M; i++) s[i] = s[i + M] ^ mix(s[i], s[i + 1]);
  for (; i < N - 1; i++) s[i] = s[i + M - N] ^ mix(s[i], s[i + 1]);
  s[N - 1] = s[M - 1] ^ mix(s[N - 1], s[0]);
}

static inline uint32_t temper(uint32_t y) {
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  return y ^ (y >> 18);
}

/* n raw draws into out; *left and *next as the generator holds them */
static void draws(uint32_t *s, int64_t *left, int64_t *next, int64_t n, uint32_t *out) {
  int64_t k = 0;
  while (k < n) {
    if (*left == 1) { /* at::mt19937: --left == 0 → twist, left = N, next = 0; then read state[next++] */
      twist(s);
      *left = N + 1;
      *next = 0;
    }
    int64_t take = *left - 1; /* draws available before the next twist */
    if (take > n - k) take = n - k;
    const uint32_t *src = s + *next;
#pragma omp simd
    for (int64_t j = 0; j < take; j++) out[k + j] = temper(src[j]);
    k += take;
    *next += take;
    *left -= take;
  }
}

#define BLOCK 4096

/* n float32 uniforms as torch.rand makes them */
void uniform_f32(uint32_t *s, int64_t *left, int64_t *next, int64_t n, float *out) {
  uint32_t y[BLOCK];
  for (int64_t k = 0; k < n; k += BLOCK) {
    int64_t m = n - k < BLOCK ? n - k : BLOCK;
    draws(s, left, next, m, y);
#pragma omp simd
    for (int64_t j = 0; j < m; j++) out[k + j] = (float)(y[j] & 0xffffffu) * (1.0f / 16777216.0f);
  }
}

/* n float64 uniforms as torch.rand makes them (two draws each: the first the high word) */
void uniform_f64(uint32_t *s, int64_t *left, int64_t *next, int64_t n, double *out) {
  uint32_t y[BLOCK];
  for (int64_t k = 0; k < n; k += BLOCK / 2) {
    int64_t m = n - k < BLOCK / 2 ? n - k : BLOCK / 2;
    draws(s, left, next, 2 * m, y);
    for (int64_t j = 0; j < m; j++) {
      uint64_t v = (((uint64_t)y[2 * j] << 32) | y[2 * j + 1]) & ((1ull << 53) - 1);
      out[k + j] = (double)v * (1.0 / 9007199254740992.0);
    }
  }
}
