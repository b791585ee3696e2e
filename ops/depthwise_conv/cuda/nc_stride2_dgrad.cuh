// NCHW data-grad of a stride-2 depthwise convolution (the depthwise transposed convolution, a
// learned 2x upsampling) writing whole output rows.
//
// The data-grad's plan (plan.cuh) has 2 x 2 phases: output (2q + ry, 2q + rx) is the correlation
// of the input at (q - pad[ry], q - pad[rx]) with the TAPS x TAPS sub-filter of phase (ry, rx).
// nc_stream computes one phase per thread, so in NCHW every store writes every other element of
// a row (element stores; 16-bit the worst: 18% of the copy bandwidth on the k4 s2 p1 rows).
// Here a thread owns R consecutive q-columns of TH consecutive q-rows of one plane, i.e. 2R
// consecutive outputs (whole 16-byte vectors) in each of the 2TH output rows of both phases.
// It walks the band's input rows once (a register window of NR rows of NX values, NR = TH +
// TAPS - 1 + D), emitting each output row as soon as its last input row is loaded, so every
// input row feeds up to four output rows (2 row phases x TAPS rows) and a thread's live state
// is a few rows whatever TH is.
//
// Window: input column qx0 - P0 + c for c < NX, with P0 = pad[0] >= P1 = pad[1] (the plans'
// pads differ by the padding's parity, D = P0 - P1 in {0, 1}); phase r's outputs read the window
// from column D*r on. The middle R values are the thread's own aligned vector (R * sizeof(T)
// bytes); the halo columns (P0 on the left, NX - P0 - R on the right, each 0 or 1) come from
// the neighbouring lanes by warp shuffle: items are numbered strip fastest, so lane l - 1 holds
// the strip to the left in the same row whenever the strip is not the row's first; lanes at the
// warp's ends load their halo element from global memory (zero outside the row). Lanes past the
// last item still take part in the shuffles (their loads and stores are skipped); no active lane
// reads their values, as the item after an active one in the same row exists.
//
// Covered (nc_stride2_items): 2-D, multiplier 1, both dims stride 2 with the same sub-filter
// shape and pads, even output width = twice the input width (so every strip is whole: k4 p1, k3
// p1 with output_padding 1, k2 p0), any output height; rows and outputs aligned for the vectors.
// 32-bit item split (checked on the host), 64-bit plane offsets.
#pragma once

#include "ops/depthwise_conv/cuda/nc_stream.cuh"  // FastDiv
#include "ops/depthwise_conv/cuda/plan.cuh"

#include <ATen/OpMathType.h>

#include <cstdint>

namespace convx::cuda {

constexpr int kS2Threads = 256;

// The launcher's tile (nc_stride2_dgrad.cu; the CPU harness checks the same): strips of R = half a
// 16-byte vector of input (one 16-byte store per output row and thread, so a warp's store is one
// contiguous run) in bands of 4 q-rows. Measured on the H100 (bench/results/h100/session9/
// nchw_s2_ab.log, nchw_s2_ab2.log; k4 s2 p1 fp16): R = one vector x TH 8 0.173 ms (two 16-byte
// stores per row, lanes 32 bytes apart), one vector x 4 0.149, a quarter vector x 8 0.152, half x
// 16 0.136, half x 8 0.136, half x 4 0.127 (nc_stream: 0.629).
template <typename T>
constexpr int s2_strip() {
  return 8 / int(sizeof(T));
}
constexpr int kS2Band = 4;

// Items = planes * bands * strips (< 2^31), strip fastest.
struct NcS2 {
  uint32_t items;
  FastDiv strips, bands, out_c;
};

// Fills L for strips of R q-columns and bands of TH q-rows, for the sub-filter shape (TAPS, pads
// P0, P1) of the kernel instance; false when the plan is not one the kernel covers (see the
// header) or the rows / output are not aligned for R-element loads and 16-byte stores.
inline bool nc_stride2_items(NcS2& L, const Plan& P, int TAPS, int P0, int P1, int R, int TH, const void* in,
                             const void* out, int esize) {
  if (P.phases != 4 || P.os[0] != 1 || P.in[0] != 1 || P.out[0] != 1 || P.k[0] != 1 || P.J != 1 || P.in_div != 1)
    return false;
  for (int d = 1; d < 3; ++d) {
    if (P.os[d] != 2 || P.S[d] != 1 || P.k[d] != TAPS || P.pad[d][0] != P0 || P.pad[d][1] != P1) return false;
  }
  const int64_t IW = P.in[2], strips = P.q[2] / R, bands = ceil_div(P.q[1], TH);
  if (P.out[2] != 2 * IW || P.q[2] != IW || IW % R != 0) return false;
  const int V = 16 / esize, SV = 2 * R < V ? 2 * R : V;  // elements per load / store vector
  if (reinterpret_cast<uintptr_t>(in) % (R * esize) != 0 || reinterpret_cast<uintptr_t>(out) % (SV * esize) != 0)
    return false;
  const int64_t items = P.N * P.out_c * bands * strips;
  if (items <= 0 || items >= (int64_t(1) << 31) || P.in[1] >= (int64_t(1) << 30) || IW >= (int64_t(1) << 29))
    return false;
  L.items = static_cast<uint32_t>(items);
  L.strips = fast_div(static_cast<uint32_t>(strips));
  L.bands = fast_div(static_cast<uint32_t>(bands));
  L.out_c = fast_div(static_cast<uint32_t>(P.out_c));
  return true;
}

// w: the plan's prepared sub-filters [phase = ry * 2 + rx][channel][TAPS][TAPS] (opmath type).
// At least 4 blocks per SM (<= 64 registers; the one-vector tiles of the A/B took up to 80
// unbounded, as ptxas hoists the band's row loads): the kept tile 46-64, no spills (sm_90).
template <typename T, int TAPS, int P0, int P1, int R, int TH>
__global__ void __launch_bounds__(kS2Threads, 4)
nc_stride2_dgrad(const T* __restrict__ in, const at::opmath_type<T>* __restrict__ w, const T* __restrict__ bias,
                 T* __restrict__ out, const Plan P, const NcS2 L) {
  using acc_t = at::opmath_type<T>;
  constexpr int D = P0 - P1;
  constexpr int NX = R + TAPS - 1 + D;   // window columns
  constexpr int NR = TH + TAPS - 1 + D;  // input rows of a band
  constexpr int HR = NX - P0 - R;        // right halo columns
  constexpr int V = 16 / int(sizeof(T));
  constexpr int SV = 2 * R < V ? 2 * R : V;  // elements per store
  static_assert(D == 0 || D == 1, "the plans' pads differ by at most one");
  static_assert((P0 == 0 || P0 == 1) && (HR == 0 || HR == 1), "halos of at most one column");
  struct alignas(sizeof(T) * R) In { T v[R]; };
  struct alignas(sizeof(T) * SV) Out { T v[SV]; };

  const uint32_t item = blockIdx.x * kS2Threads + threadIdx.x;
  const bool active = item < L.items;
  uint32_t t = active ? item : L.items - 1;  // idle lanes: shuffles only
  const uint32_t strip = L.strips.split(t);
  const uint32_t band = L.bands.split(t);
  const uint32_t co = t - L.out_c.div(t) * L.out_c.d;
  const int64_t plane = t;
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int IH = static_cast<int>(P.in[1]), IW = static_cast<int>(P.in[2]), OH = static_cast<int>(P.out[1]);
  const int OW = 2 * IW;
  const int qx0 = static_cast<int>(strip) * R, qy0 = static_cast<int>(band) * TH;

  acc_t wv[2][2][TAPS * TAPS];
#pragma unroll
  for (int ph = 0; ph < 4; ++ph) {
#pragma unroll
    for (int x = 0; x < TAPS * TAPS; ++x) wv[ph / 2][ph % 2][x] = w[ph * P.wphase + int64_t(co) * TAPS * TAPS + x];
  }
  const acc_t b0 = bias ? static_cast<acc_t>(bias[co]) : acc_t(0);
  // Rows above the tensor are never dereferenced, only pointed at.
  const T* src = in + plane * IH * IW + qx0;
  T* dst = out + plane * OH * OW + 2 * qx0;
  const bool left_own = strip == 0 || lane == 0;                     // left halo not from lane - 1
  const bool right_own = strip + 1 == L.strips.d || lane == 31;      // right halo not from lane + 1

  acc_t x[NR][NX];
#pragma unroll
  for (int r = 0; r < NR; ++r) {
    const int iy = qy0 - P0 + r;
    const bool ok = active && iy >= 0 && iy < IH;
    const T* row = src + int64_t(iy) * IW;
    In v;
    if (ok) {
      v = *reinterpret_cast<const In*>(row);
    } else {
#pragma unroll
      for (int e = 0; e < R; ++e) v.v[e] = T(0);
    }
#pragma unroll
    for (int e = 0; e < R; ++e) x[r][P0 + e] = static_cast<acc_t>(v.v[e]);
    if constexpr (P0 == 1) {
      acc_t l = __shfl_sync(0xffffffffu, x[r][R], (lane + 31) & 31);
      if (left_own) l = ok && qx0 > 0 ? static_cast<acc_t>(row[-1]) : acc_t(0);
      x[r][0] = l;
    }
    if constexpr (HR == 1) {
      acc_t h = __shfl_sync(0xffffffffu, x[r][P0], (lane + 1) & 31);
      if (right_own) h = ok && qx0 + R < IW ? static_cast<acc_t>(row[R]) : acc_t(0);
      x[r][P0 + R] = h;
    }
    // The output rows whose last input row this is: q-row b of row phase ry reads window rows
    // b + D*ry + ty, ty < TAPS.
#pragma unroll
    for (int ry = 0; ry < 2; ++ry) {
      const int b = r - D * ry - (TAPS - 1);
      if (b < 0 || b >= TH) continue;
      const int oy = 2 * (qy0 + b) + ry;
      if (!active || oy >= OH) continue;
      acc_t o[2 * R];
#pragma unroll
      for (int q = 0; q < R; ++q) {
#pragma unroll
        for (int rx = 0; rx < 2; ++rx) {
          acc_t s = b0;
#pragma unroll
          for (int ty = 0; ty < TAPS; ++ty) {
#pragma unroll
            for (int tx = 0; tx < TAPS; ++tx) s += wv[ry][rx][ty * TAPS + tx] * x[b + D * ry + ty][q + D * rx + tx];
          }
          o[2 * q + rx] = s;
        }
      }
      T* orow = dst + int64_t(oy) * OW;
#pragma unroll
      for (int c = 0; c < 2 * R; c += SV) {
        Out ov;
#pragma unroll
        for (int e = 0; e < SV; ++e) ov.v[e] = static_cast<T>(o[c + e]);
        *reinterpret_cast<Out*>(orow + c) = ov;
      }
    }
  }
}

}  // namespace convx::cuda
