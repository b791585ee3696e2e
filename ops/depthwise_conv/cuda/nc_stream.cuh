// Streaming depthwise kernel for NC(D)HW (and NCL): forward / data-grad of the phased
// correlation (plan.cuh) with no shared memory and no barriers.
//
// One thread owns a work item: R consecutive outputs along W (a strip) in each of TH consecutive
// output rows (a band) of one phase of one (sample, channel, output depth) plane. It walks the
// NR = (TH-1)*S + KH input rows of the band once, loading each row's NX = (R-1)*S + KW values
// into registers (zero outside the tensor: one row test, and column tests precomputed once per
// thread), and adds every loaded row into all the output rows whose filter touches it. All loops
// over rows, taps and outputs are unrolled at compile time, so the filter, the row and the TH x R
// accumulators live in registers. Items are numbered phase fastest, then strip, band, plane: a
// warp's loads and stores run along rows, and the W-phases of the data-grad write interleaved
// columns from neighbouring lanes at the same time. Item decomposition is 32-bit (the launcher
// checks the count), pointer offsets 64-bit. Depth (3-D) and the channel multiplier of the
// data-grad are runtime loops.
#pragma once

#include "ops/depthwise_conv/cuda/plan.cuh"

#include <ATen/OpMathType.h>

#include <cstdint>

namespace convx::cuda {

constexpr int kStreamThreads = 256;

// The flat item space: items = planes * bands * strips * phases (< 2^31).
struct NcStream {
  uint32_t items, phases, strips, bands, q0, out_c;
};

// Fills L for R outputs per strip and TH rows per band; false when the items do not fit 31 bits.
inline bool stream_items(NcStream& L, const Plan& P, int R, int TH) {
  const int64_t strips = ceil_div(P.q[2], R), bands = ceil_div(P.q[1], TH);
  const int64_t items = P.N * P.out_c * P.q[0] * bands * strips * P.phases;
  if (items <= 0 || items >= (int64_t(1) << 31)) return false;
  L.items = static_cast<uint32_t>(items);
  L.phases = static_cast<uint32_t>(P.phases);
  L.strips = static_cast<uint32_t>(strips);
  L.bands = static_cast<uint32_t>(bands);
  L.q0 = static_cast<uint32_t>(P.q[0]);
  L.out_c = static_cast<uint32_t>(P.out_c);
  return true;
}

// w: prepared weights [phases][wrows][k0][KH][KW] in the opmath type. Two blocks per SM (at most
// 128 registers): unbounded, the compiler hoists every load of the band into registers (up to
// 255, one block per SM); the cap keeps 16 warps per SM, each with many loads in flight.
template <typename T, int KH, int KW, int S, int R, int TH>
__global__ void __launch_bounds__(kStreamThreads, 2)
nc_stream(const T* __restrict__ in, const at::opmath_type<T>* __restrict__ w,
          const T* __restrict__ bias, T* __restrict__ out, const Plan P, const NcStream L) {
  using acc_t = at::opmath_type<T>;
  constexpr int NX = (R - 1) * S + KW;  // input columns of a strip
  constexpr int NR = (TH - 1) * S + KH;  // input rows of a band
  const uint32_t item = blockIdx.x * kStreamThreads + threadIdx.x;
  if (item >= L.items) return;
  uint32_t t = item;
  const int ph = static_cast<int>(t % L.phases);
  t /= L.phases;
  const uint32_t strip = t % L.strips;
  t /= L.strips;
  const uint32_t band = t % L.bands;
  t /= L.bands;
  const uint32_t qd = t % L.q0;
  t /= L.q0;
  const int64_t co = t % L.out_c, n = t / L.out_c;
  const int pw = ph % P.os[2], phh = (ph / P.os[2]) % P.os[1], pd = ph / (P.os[2] * P.os[1]);
  const int64_t qy0 = int64_t(band) * TH, qx0 = int64_t(strip) * R;
  // Items past the end of a shorter phase.
  if (qd >= P.qn[0][pd] || qy0 >= P.qn[1][phh] || qx0 >= P.qn[2][pw]) return;

  const int64_t IH = P.in[1], IW = P.in[2];
  const int64_t iy0 = qy0 * S - P.pad[1][phh], ix0 = qx0 * S - P.pad[2][pw];
  bool col_ok[NX];
#pragma unroll
  for (int c = 0; c < NX; ++c) col_ok[c] = ix0 + c >= 0 && ix0 + c < IW;
  acc_t acc[TH][R];
#pragma unroll
  for (int b = 0; b < TH; ++b) {
#pragma unroll
    for (int r = 0; r < R; ++r) acc[b][r] = acc_t(0);
  }
  // What the store needs, computed before the loops so that n, co, qd need not stay live.
  const acc_t b0 = bias ? static_cast<acc_t>(bias[co]) : acc_t(0);
  T* const oplane = out + ((n * P.out_c + co) * P.out[0] + int64_t(qd) * P.os[0] + P.r[0][pd]) * P.out[1] * P.out[2];
  const int64_t in_plane = P.in[0] * IH * IW, taps = int64_t(P.k[0]) * KH * KW;
  const T* src = in + (n * P.in_c + (co / P.in_div) * P.J) * in_plane;
  const acc_t* wj = w + ph * P.wphase + co * P.J * taps;
  const int64_t id0 = int64_t(qd) * P.S[0] - P.pad[0][pd];
  for (int64_t j = 0; j < P.J; ++j, src += in_plane, wj += taps) {
    for (int kd = 0; kd < P.k[0]; ++kd) {
      const int64_t id = id0 + kd;
      if (id < 0 || id >= P.in[0]) continue;
      acc_t wv[KH * KW];
#pragma unroll
      for (int x = 0; x < KH * KW; ++x) wv[x] = wj[kd * KH * KW + x];
      // Rows above the tensor are never dereferenced (row_ok), only pointed at.
      const T* row = src + (id * IH + iy0) * IW + ix0;
#pragma unroll
      for (int r = 0; r < NR; ++r, row += IW) {
        const bool row_ok = iy0 + r >= 0 && iy0 + r < IH;
        acc_t xv[NX];
#pragma unroll
        for (int c = 0; c < NX; ++c) xv[c] = row_ok && col_ok[c] ? static_cast<acc_t>(row[c]) : acc_t(0);
        // Output row b of the band uses this input row as its filter row r - b*S.
#pragma unroll
        for (int b = 0; b < TH; ++b) {
          const int kh = r - b * S;
          if (kh < 0 || kh >= KH) continue;
#pragma unroll
          for (int kw = 0; kw < KW; ++kw) {
#pragma unroll
            for (int o = 0; o < R; ++o) acc[b][o] += wv[kh * KW + kw] * xv[o * S + kw];
          }
        }
      }
    }
  }

  const int64_t qwn = P.qn[2][pw], ow = P.os[2], rw = P.r[2][pw];
  const bool full = ow == 1 && qx0 + R <= qwn;
#pragma unroll
  for (int b = 0; b < TH; ++b) {
    const int64_t qy = qy0 + b;
    if (qy >= P.qn[1][phh]) break;
    T* orow = oplane + (qy * P.os[1] + P.r[1][phh]) * P.out[2];
    if (full && reinterpret_cast<uintptr_t>(orow + qx0) % (sizeof(T) * R) == 0) {
      struct alignas(sizeof(T) * R) V { T v[R]; } o;
#pragma unroll
      for (int r = 0; r < R; ++r) o.v[r] = static_cast<T>(acc[b][r] + b0);
      *reinterpret_cast<V*>(orow + qx0) = o;
    } else {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        if (qx0 + r < qwn) orow[(qx0 + r) * ow + rw] = static_cast<T>(acc[b][r] + b0);
      }
    }
  }
}

}  // namespace convx::cuda
