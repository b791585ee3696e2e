// A float GEMM for the phase-decomposed transposed convolution (ops/conv/cpu_phases.cpp):
// rows of C (each its own pointer) = rows of A (each its own pointer) x B[K, N], with B packed
// once per call into panels of 32 columns. Row pointers let the caller multiply input pixels
// where they lie and write output pixels where they go: no gather, no scatter. The micro-kernel holds a 12 x 32 tile of C in 24 AVX-512 registers
// and runs over the K dim in blocks of 256, one broadcast of A feeding two FMAs. On this
// project's CPU (AMD Zen 4) MKL's sgemm takes its AVX2 "zen" path at ~80-85 GFLOP/s on one
// core, below oneDNN's AVX-512 JIT that aten's transposed convolution uses; this kernel is
// compiled for AVX-512 with function target attributes and used only when ATen runs AVX-512.
#include "ops/conv/cpu_gemm.h"

#include <ATen/Version.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>

#include <algorithm>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define CONVX_GEMM_AVX512 1
#endif

namespace convx::cpu {

#ifdef CONVX_GEMM_AVX512
namespace {

constexpr int64_t kNR = 32;   // columns per panel: two 16-float vectors
constexpr int64_t kMR = 12;   // rows per micro-tile: 24 accumulators

__mmask16 column_mask(int64_t n) {
  return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
}

// C rows c[r][0:32] (masked by m0 / m1) = start + sum over segments s < segs of sum over
// k < kc[s] of a[s * lda + r][k] * bp[k][0:32] (bp running on across the segments), where start
// is c[r] itself (accumulate), init[0:32] or zero.
template <int MR>
__attribute__((target("avx512f,fma"))) void micro(int64_t segs, const int64_t* kc,
                                                  const float* const* a, int64_t lda,
                                                  const float* bp, float* const* c, int64_t col,
                                                  __mmask16 m0, __mmask16 m1, const float* init,
                                                  bool accumulate) {
  __m512 c0[MR], c1[MR];
  const __m512 i0 = init ? _mm512_maskz_loadu_ps(m0, init) : _mm512_setzero_ps();
  const __m512 i1 = init ? _mm512_maskz_loadu_ps(m1, init + 16) : _mm512_setzero_ps();
#pragma GCC unroll 12
  for (int r = 0; r < MR; ++r) {
    c0[r] = accumulate ? _mm512_maskz_loadu_ps(m0, c[r] + col) : i0;
    c1[r] = accumulate ? _mm512_maskz_loadu_ps(m1, c[r] + col + 16) : i1;
  }
  for (int64_t s = 0; s < segs; ++s) {
    const float* ar[MR];
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) ar[r] = a[s * lda + r];
    const int64_t n = kc[s];
    for (int64_t k = 0; k < n; ++k) {
      const __m512 b0 = _mm512_loadu_ps(bp + k * kNR);
      const __m512 b1 = _mm512_loadu_ps(bp + k * kNR + 16);
#pragma GCC unroll 12
      for (int r = 0; r < MR; ++r) {
        const __m512 v = _mm512_set1_ps(ar[r][k]);
        c0[r] = _mm512_fmadd_ps(v, b0, c0[r]);
        c1[r] = _mm512_fmadd_ps(v, b1, c1[r]);
      }
    }
    bp += n * kNR;
  }
#pragma GCC unroll 12
  for (int r = 0; r < MR; ++r) {
    _mm512_mask_storeu_ps(c[r] + col, m0, c0[r]);
    _mm512_mask_storeu_ps(c[r] + col + 16, m1, c1[r]);
  }
}

// C rows c + r*ldc, columns [0, 32) (masked by m0 / m1) += sum over k < K of ap[k][r] *
// bp[k][0:32]: both operands packed, so every k reads one line of A and two of B in order.
template <int MR>
__attribute__((target("avx512f,fma"))) void outer_micro(int64_t K, const float* ap,
                                                        const float* bp, float* c, int64_t ldc,
                                                        __mmask16 m0, __mmask16 m1) {
  __m512 c0[MR], c1[MR];
#pragma GCC unroll 12
  for (int r = 0; r < MR; ++r) {
    c0[r] = _mm512_maskz_loadu_ps(m0, c + r * ldc);
    c1[r] = _mm512_maskz_loadu_ps(m1, c + r * ldc + 16);
  }
  for (int64_t k = 0; k < K; ++k, ap += kMR, bp += kNR) {
    const __m512 b0 = _mm512_loadu_ps(bp);
    const __m512 b1 = _mm512_loadu_ps(bp + 16);
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
      const __m512 v = _mm512_set1_ps(ap[r]);
      c0[r] = _mm512_fmadd_ps(v, b0, c0[r]);
      c1[r] = _mm512_fmadd_ps(v, b1, c1[r]);
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < MR; ++r) {
    _mm512_mask_storeu_ps(c + r * ldc, m0, c0[r]);
    _mm512_mask_storeu_ps(c + r * ldc + 16, m1, c1[r]);
  }
}

// GCC 12's unpack / shuffle intrinsics start from _mm512_undefined_ps(), which -Wall reports as
// "may be used uninitialized" once they are inlined here (a known false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// The tile dst[j][i] = src[i][j], i < nr, j < nc (both <= 16): rows loaded (masked to nc
// columns, zeros past nr), transposed in registers (4 x 4 blocks within 128-bit lanes, then the
// lanes), rows j < nc stored masked to nr columns.
__attribute__((target("avx512f"))) void transpose_tile(const float* src, int64_t lds, float* dst,
                                                       int64_t ldd, int64_t nr, int64_t nc) {
  const __mmask16 load = column_mask(nc), store = column_mask(nr);
  __m512 r[16], t[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) {
    r[i] = i < nr ? _mm512_maskz_loadu_ps(load, src + i * lds) : _mm512_setzero_ps();
  }
#pragma GCC unroll 8
  for (int i = 0; i < 16; i += 2) {  // per lane: a0 b0 a1 b1 | a2 b2 a3 b3
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 16; i += 4) {  // r[i + m], lane l: column 4l + m of rows i..i+3
    const __m512d lo01 = _mm512_castps_pd(t[i]), hi01 = _mm512_castps_pd(t[i + 1]);
    const __m512d lo23 = _mm512_castps_pd(t[i + 2]), hi23 = _mm512_castps_pd(t[i + 3]);
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(lo01, lo23));
    r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(lo01, lo23));
    r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(hi01, hi23));
    r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(hi01, hi23));
  }
#pragma GCC unroll 4
  for (int m = 0; m < 4; ++m) {  // row 4l + m of dst: lane l of r[m], r[4 + m], r[8 + m], r[12 + m]
    const __m512 v0 = _mm512_shuffle_f32x4(r[m], r[4 + m], 0x44);
    const __m512 v1 = _mm512_shuffle_f32x4(r[m], r[4 + m], 0xEE);
    const __m512 v2 = _mm512_shuffle_f32x4(r[8 + m], r[12 + m], 0x44);
    const __m512 v3 = _mm512_shuffle_f32x4(r[8 + m], r[12 + m], 0xEE);
    const __m512 out[4] = {_mm512_shuffle_f32x4(v0, v2, 0x88), _mm512_shuffle_f32x4(v0, v2, 0xDD),
                           _mm512_shuffle_f32x4(v1, v3, 0x88), _mm512_shuffle_f32x4(v1, v3, 0xDD)};
#pragma GCC unroll 4
    for (int l = 0; l < 4; ++l) {
      if (4 * l + m < nc) _mm512_mask_storeu_ps(dst + (4 * l + m) * ldd, store, out[l]);
    }
  }
}
#pragma GCC diagnostic pop

using OuterMicro = void (*)(int64_t, const float*, const float*, float*, int64_t, __mmask16,
                            __mmask16);
constexpr OuterMicro kOuterMicro[kMR + 1] = {
    nullptr,        outer_micro<1>, outer_micro<2>, outer_micro<3>,  outer_micro<4>,
    outer_micro<5>, outer_micro<6>, outer_micro<7>, outer_micro<8>,  outer_micro<9>,
    outer_micro<10>, outer_micro<11>, outer_micro<12>};

using Micro = void (*)(int64_t, const int64_t*, const float* const*, int64_t, const float*,
                       float* const*, int64_t, __mmask16, __mmask16, const float*, bool);
constexpr Micro kMicro[kMR + 1] = {nullptr,   micro<1>, micro<2>, micro<3>,  micro<4>,
                                   micro<5>,  micro<6>, micro<7>, micro<8>,  micro<9>,
                                   micro<10>, micro<11>, micro<12>};

}  // namespace

// The ISA ATen itself runs on: it checks the OS's AVX-512 support and honours
// ATEN_CPU_CAPABILITY (=avx2 or default turns this kernel off, as for the depthwise loops).
bool packed_gemm_available() {
  static const bool avx512 = at::get_cpu_capability() == "AVX512";
  return avx512;
}

Tensor pack_gemm_b(const Tensor& b) {
  const int64_t K = b.size(0), N = b.size(1), panels = (N + kNR - 1) / kNR;
  auto packed = at::zeros({panels, K, kNR}, b.options());  // columns past N stay zero
  for (int64_t p = 0; p < panels; ++p) {
    const int64_t n = std::min(kNR, N - p * kNR);
    packed[p].narrow(1, 0, n).copy_(b.narrow(1, p * kNR, n));
  }
  return packed;
}

void transpose_matrix(const float* src, int64_t lds, float* dst, int64_t ldd, int64_t rows,
                      int64_t cols) {
  for (int64_t j = 0; j < cols; j += 16) {
    for (int64_t i = 0; i < rows; i += 16) {
      transpose_tile(src + i * lds + j, lds, dst + j * ldd + i, ldd, std::min<int64_t>(16, rows - i),
                     std::min<int64_t>(16, cols - j));
    }
  }
}

void packed_gemm_rows(int64_t M, int64_t N, int64_t K, int64_t k0, int64_t segs,
                      const int64_t* kc, const float* const* a, int64_t lda, const float* bp,
                      float* const* c, const float* init, bool accumulate) {
  const int64_t panels = (N + kNR - 1) / kNR;
  for (int64_t p = 0; p < panels; ++p) {
    const int64_t n = std::min(kNR, N - p * kNR);
    const __mmask16 m0 = column_mask(n), m1 = column_mask(n - 16);
    const float* b = bp + (p * K + k0) * kNR;
    for (int64_t i = 0; i < M; i += kMR) {
      kMicro[std::min(kMR, M - i)](segs, kc, a + i, lda, b, c + i, p * kNR, m0, m1,
                                   init ? init + p * kNR : nullptr, accumulate);
    }
  }
}

void packed_outer_gemm(int64_t M, int64_t N, int64_t K, const float* ap, const float* bp,
                       float* c, int64_t ldc) {
  static_assert(kOuterRows == kMR && kOuterCols == kNR, "packing and micro-kernel disagree");
  // Panels outer: one panel of B (K * 128 bytes) stays in L1 while every row tile reads it.
  for (int64_t col = 0, p = 0; col < N; col += kNR, ++p) {
    const __mmask16 m0 = column_mask(N - col), m1 = column_mask(N - col - 16);
    for (int64_t i = 0, t = 0; i < M; i += kMR, ++t) {
      kOuterMicro[std::min(kMR, M - i)](K, ap + t * K * kMR, bp + p * K * kNR, c + i * ldc + col,
                                        ldc, m0, m1);
    }
  }
}

#else

bool packed_gemm_available() { return false; }
Tensor pack_gemm_b(const Tensor&) {
  TORCH_CHECK(false, "convx: packed_gemm_rows needs x86-64");
  return Tensor();
}
void packed_gemm_rows(int64_t, int64_t, int64_t, int64_t, int64_t, const int64_t*,
                      const float* const*, int64_t, const float*, float* const*, const float*,
                      bool) {
  TORCH_CHECK(false, "convx: packed_gemm_rows needs x86-64");
}
void packed_outer_gemm(int64_t, int64_t, int64_t, const float*, const float*, float*, int64_t) {
  TORCH_CHECK(false, "convx: packed_outer_gemm needs x86-64");
}
void transpose_matrix(const float*, int64_t, float*, int64_t, int64_t, int64_t) {
  TORCH_CHECK(false, "convx: transpose_matrix needs x86-64");
}

#endif

}  // namespace convx::cpu
