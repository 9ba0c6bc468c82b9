"""The C++ source of ``cpu.vnni``'s kernel (compiled at first use, see there).

``vnni_linear``: y [M, N] = x [M, K] times a per-channel int8 weight, on
AVX-512 VNNI. Each input row is quantized on its own (symmetric, one scale
per row from its largest magnitude, stored as uint8 x / s + 128), so a row's
result never depends on its batch mates. The weight is packed as
[N / 16][K / 4][16][4]: one 64-byte load holds 4 consecutive k of 16 outputs,
exactly what ``vpdpbusd`` multiplies against a broadcast of 4 input bytes, and
a thread streams its output blocks' bytes in order. The +128 offset is taken
back with ``comp[n] = 128 * sum_k w[n, k]``. Sums stay in int32 without
saturation (|x| <= 255 * 127 * K < 2^31 for K < 66,000). Up to 8 rows share
one pass over a block's weights (16 accumulators of 32 registers).
"""

SOURCE = r"""
#include <immintrin.h>
#include <stdint.h>
#include <vector>

namespace {

float quantize_row(const float* x, int64_t K, uint8_t* q) {
  __m512 mx = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; k += 16) mx = _mm512_max_ps(mx, _mm512_abs_ps(_mm512_loadu_ps(x + k)));
  float amax = _mm512_reduce_max_ps(mx);
  float s = amax > 0.f ? amax / 127.f : 1.f;
  __m512 inv = _mm512_set1_ps(1.f / s);
  __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127), off = _mm512_set1_epi32(128);
  for (int64_t k = 0; k < K; k += 16) {
    __m512i v = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + k), inv));
    v = _mm512_min_epi32(_mm512_max_epi32(v, lo), hi);
    _mm512_mask_cvtepi32_storeu_epi8(q + k, 0xFFFF, _mm512_add_epi32(v, off));
  }
  return s;
}

template <int MR>
void block(const uint8_t* xq, int64_t K, const int8_t* w, const int32_t* comp, const float* ws,
           const float* sx, float* y, int64_t ldy) {
  __m512i a0[MR], a1[MR];
  for (int r = 0; r < MR; ++r) { a0[r] = _mm512_setzero_si512(); a1[r] = _mm512_setzero_si512(); }
  const int64_t groups = K / 4;
  int64_t g = 0;
  for (; g + 1 < groups; g += 2) {
    // 2 KiB ahead: the hardware prefetcher stops at every 4 KiB page.
    _mm_prefetch((const char*)(w + g * 64 + 2048), _MM_HINT_T0);
    _mm_prefetch((const char*)(w + g * 64 + 2048 + 64), _MM_HINT_T0);
    __m512i w0 = _mm512_loadu_si512(w + g * 64);
    __m512i w1 = _mm512_loadu_si512(w + g * 64 + 64);
    for (int r = 0; r < MR; ++r) {
      const int32_t* xr = reinterpret_cast<const int32_t*>(xq + r * K);
      a0[r] = _mm512_dpbusd_epi32(a0[r], _mm512_set1_epi32(xr[g]), w0);
      a1[r] = _mm512_dpbusd_epi32(a1[r], _mm512_set1_epi32(xr[g + 1]), w1);
    }
  }
  if (g < groups) {
    __m512i w0 = _mm512_loadu_si512(w + g * 64);
    for (int r = 0; r < MR; ++r) {
      const int32_t* xr = reinterpret_cast<const int32_t*>(xq + r * K);
      a0[r] = _mm512_dpbusd_epi32(a0[r], _mm512_set1_epi32(xr[g]), w0);
    }
  }
  __m512i c = _mm512_loadu_si512(comp);
  __m512 scale = _mm512_loadu_ps(ws);
  for (int r = 0; r < MR; ++r) {
    __m512i acc = _mm512_sub_epi32(_mm512_add_epi32(a0[r], a1[r]), c);
    __m512 out = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), _mm512_mul_ps(scale, _mm512_set1_ps(sx[r])));
    _mm512_storeu_ps(y + r * ldy, out);
  }
}

typedef void (*BlockFn)(const uint8_t*, int64_t, const int8_t*, const int32_t*, const float*,
                        const float*, float*, int64_t);
const BlockFn BLOCKS[9] = {nullptr, block<1>, block<2>, block<3>, block<4>,
                           block<5>, block<6>, block<7>, block<8>};

}  // namespace

namespace {

// fp32: 16 outputs of MR rows over w's block [K][16]; even and odd k in two
// accumulators each (one FMA chain would wait on its latency at 1 row).
template <int MR>
void block_f32(const float* x, int64_t ldx, int64_t K, const float* w, float* y, int64_t ldy,
               __mmask16 keep) {
  __m512 a0[MR], a1[MR];
  for (int r = 0; r < MR; ++r) { a0[r] = _mm512_setzero_ps(); a1[r] = _mm512_setzero_ps(); }
  int64_t k = 0;
  for (; k + 1 < K; k += 2) {
    _mm_prefetch((const char*)(w + k * 16 + 512), _MM_HINT_T0);
    _mm_prefetch((const char*)(w + k * 16 + 512 + 16), _MM_HINT_T0);
    __m512 w0 = _mm512_loadu_ps(w + k * 16), w1 = _mm512_loadu_ps(w + k * 16 + 16);
    for (int r = 0; r < MR; ++r) {
      a0[r] = _mm512_fmadd_ps(_mm512_set1_ps(x[r * ldx + k]), w0, a0[r]);
      a1[r] = _mm512_fmadd_ps(_mm512_set1_ps(x[r * ldx + k + 1]), w1, a1[r]);
    }
  }
  if (k < K) {
    __m512 w0 = _mm512_loadu_ps(w + k * 16);
    for (int r = 0; r < MR; ++r) a0[r] = _mm512_fmadd_ps(_mm512_set1_ps(x[r * ldx + k]), w0, a0[r]);
  }
  for (int r = 0; r < MR; ++r) _mm512_mask_storeu_ps(y + r * ldy, keep, _mm512_add_ps(a0[r], a1[r]));
}

typedef void (*BlockF32)(const float*, int64_t, int64_t, const float*, float*, int64_t, __mmask16);
const BlockF32 BLOCKS_F32[9] = {nullptr, block_f32<1>, block_f32<2>, block_f32<3>, block_f32<4>,
                                block_f32<5>, block_f32<6>, block_f32<7>, block_f32<8>};

}  // namespace

extern "C" int vnni_abi(void) { return 2; }

// y [M, N] = x [M, K] (row stride ldx) . w^T, w packed [ceil(N / 16)][K][16] fp32
// (the last block zero-padded; its padding outputs are not stored).
extern "C" void f32_linear(const float* x, int64_t ldx, int64_t M, int64_t K, int64_t N,
                           const float* w, float* y, int threads) {
  const int64_t nblocks = (N + 15) / 16;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t nb = 0; nb < nblocks; ++nb) {
    const int64_t left = N - nb * 16;
    const __mmask16 keep = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
    for (int64_t m0 = 0; m0 < M; m0 += 8) {
      int mr = (int)(M - m0 < 8 ? M - m0 : 8);
      BLOCKS_F32[mr](x + m0 * ldx, ldx, K, w + nb * 16 * K, y + m0 * N + nb * 16, N, keep);
    }
  }
}

extern "C" void vnni_linear(const float* x, int64_t ldx, int64_t M, int64_t K, int64_t N,
                            const int8_t* w, const int32_t* comp, const float* ws, float* y,
                            int threads) {
  std::vector<uint8_t> xq(M * K);
  std::vector<float> sx(M);
  for (int64_t m = 0; m < M; ++m) sx[m] = quantize_row(x + m * ldx, K, xq.data() + m * K);
  const int64_t nblocks = N / 16;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t nb = 0; nb < nblocks; ++nb) {
    const int8_t* wb = w + nb * 16 * K;
    for (int64_t m0 = 0; m0 < M; m0 += 8) {
      int mr = (int)(M - m0 < 8 ? M - m0 : 8);
      BLOCKS[mr](xq.data() + m0 * K, K, wb, comp + nb * 16, ws + nb * 16, sx.data() + m0,
                 y + m0 * N + nb * 16, N);
    }
  }
}
"""
