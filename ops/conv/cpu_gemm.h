// A float GEMM with a packed right-hand side, AVX-512 (ops/conv/cpu_gemm.cpp).
#pragma once

#include <ATen/core/Tensor.h>

#include <algorithm>
#include <vector>

namespace convx::cpu {
using at::Tensor;
// Whether packed_gemm_rows runs here (x86-64 where ATen's CPU capability is AVX512).
bool packed_gemm_available();
// b: a float [K, N] matrix -> the packed form packed_gemm reads.
Tensor pack_gemm_b(const Tensor& b);
// dst[j * ldd + i] = src[i * lds + j] for i < rows, j < cols: a strided transpose in 16 x 16
// AVX-512 register tiles (only where packed_gemm_available()), for the layout changes around
// the kernels: NCHW <-> channels-last operands, weight packing, the weight grad's output.
void transpose_matrix(const float* src, int64_t lds, float* dst, int64_t ldd, int64_t rows,
                      int64_t cols);
// Rows i < M: c[i][0:N] = start + sum over the segments s < segs of sum over k < kc[s] of
// a[s * lda + i][k] * B[k0 + (kc[0] + ... + kc[s - 1]) + k][0:N], where start is c[i] itself
// (accumulate), init[0:N] or zero. bp = pack_gemm_b(B) (B: [K, N]). A segment is one run of
// K (a tap's channels) whose row i lies at its own pointer; a micro-tile of C stays in
// registers across all segments of a call.
void packed_gemm_rows(int64_t M, int64_t N, int64_t K, int64_t k0, int64_t segs,
                      const int64_t* kc, const float* const* a, int64_t lda, const float* bp,
                      float* const* c, const float* init, bool accumulate);
// Rows i < M of a row-major C (row stride ldc): c[i][0:N] += sum over k < K of A[k][i] *
// B[k][0:N], the sum of K rank-1 updates (a weight grad: one per output pixel). The caller
// packs both operands: ap holds ceil(M / 12) tiles [K][12] of A (rows past M unread), bp
// ceil(N / 32) panels [K][32] of B (columns past N read but never stored). A 12 x 32 tile of
// C stays in registers over all K.
constexpr int64_t kOuterRows = 12, kOuterCols = 32;
void packed_outer_gemm(int64_t M, int64_t N, int64_t K, const float* ap, const float* bp,
                       float* c, int64_t ldc);

// One block of n ≤ 192 output rows of a convolution as an implicit GEMM: out_row(i) is row i's
// output pixel ([C_out] floats), in_pixel(i, t) the input pixel ([C_in] floats) it reads through
// tap t, or null where that lies outside the input (read as zeros). bp packs the weight as
// [taps*C_in, C_out] (tap-major); bias (or null) starts the sums. K runs in segments of at most
// 256 channels of one tap, up to 1024 of K (16 segments) per packed_gemm_rows call: the C
// tiles are loaded and stored once per call, not once per tap (DCGAN's 16 taps of 128
// channels: 2 round trips instead of 16), while the call's B rows (≤ 128 KB) stay in L2.
constexpr int64_t kImplicitRows = 192;
template <typename OutRow, typename InPixel>
void implicit_gemm_block(int64_t n, int64_t taps, int64_t Ci, int64_t Co, const float* bp,
                         const float* bias, const float* zeros, OutRow out_row,
                         InPixel in_pixel) {
  constexpr int64_t kKC = 256, kSpan = 1024, kSegs = 16;
  const float* a[kSegs][kImplicitRows];
  int64_t kc[kSegs];
  float* c[kImplicitRows];
  for (int64_t i = 0; i < n; ++i) c[i] = out_row(i);
  int64_t t = 0, c0 = 0, k0 = 0;
  while (t < taps) {
    int64_t segs = 0, span = 0;
    while (t < taps && segs < kSegs) {
      const int64_t len = std::min(kKC, Ci - c0);
      if (segs > 0 && span + len > kSpan) break;
      for (int64_t i = 0; i < n; ++i) {
        const float* src = in_pixel(i, t);
        a[segs][i] = src ? src + c0 : zeros;
      }
      kc[segs++] = len;
      span += len;
      c0 += len;
      if (c0 == Ci) {
        c0 = 0;
        ++t;
      }
    }
    packed_gemm_rows(n, Co, taps * Ci, k0, segs, kc, &a[0][0], kImplicitRows, bp, c,
                     k0 == 0 ? bias : nullptr, k0 != 0);
    k0 += span;
  }
}
}  // namespace convx::cpu
