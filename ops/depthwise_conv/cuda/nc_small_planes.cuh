// Whole-plane depthwise kernel for NCHW planes of up to 14 x 14 outputs (MobileNetV2's 7 x 7,
// ConvNeXt's 14 x 14): forward and stride-1 data-grad of the phased correlation (plan.cuh) when it
// has one phase, multiplier 1 and a 2-D plan; larger planes take nc_plane.cuh.
//
// Why a separate design: on a 7x7 plane the streaming kernels (nc_stream.cuh) give a thread one
// strip of one plane, so every 49 outputs pay the item split, the band / strip set-up and their
// own halo loads (up to 13 values per 7 outputs), and a warp's row loads cover 28-byte pieces of
// many planes: MobileNetV2 C960 7x7 ran at 7-19% of the copy bandwidth (fp32: L1-bound, 90% L1
// hits, 8.6% DRAM throughput). Here a block owns PB consecutive planes (about 256 strips of 7
// outputs, one per thread): the planes are contiguous in NCHW, so the block reads one contiguous
// span of PB * IH * IW elements with 16-byte vector loads (each input byte read once), scatters it
// into shared memory (fp32, zero halo, every staged row padded to an odd pitch so that
// neighbouring lanes' rows fall in different banks), computes every output of its planes from
// there (a thread owns R consecutive outputs of one row: no bounds tests), stages the outputs in
// shared memory and writes the block's contiguous output span with 16-byte vector stores. Three
// barriers split the phases; the SM's other blocks (six, at 40 registers) overlap their memory
// traffic with them. nc_plane.cuh's pipelined design (64 registers, four blocks per SM, a block
// walking several groups) measured slower on these planes (session 11: MobileNetV2 7x7 fp32
// 0.0209 against 0.0151 ms, ConvNeXt 14x14 bf16 0.0396 against 0.0364).
#pragma once

#include "ops/depthwise_conv/cuda/nc_stream.cuh"
#include "ops/depthwise_conv/cuda/plan.cuh"

#include <ATen/OpMathType.h>

#include <algorithm>
#include <cstdint>

namespace convx::cuda {

constexpr int kSmallPlaneThreads = 256;
constexpr int64_t kSmallPlaneSmemBytes = 48 * 1024;  // dynamic shared memory without the opt-in
// Outputs per thread along a row: 7 divides the ImageNet widths (112, 56, 28, 14, 7), so no lane
// idles on them.
constexpr int kSmallPlaneStrip = 7;
// The launcher takes output planes up to this many elements (nc_small_planes.cu).
constexpr int64_t kSmallPlaneMaxOutputs = 14 * 14;

struct NcSmallPlanes {
  uint32_t planes;       // N * channels: planes read and written (one each, multiplier 1)
  int pb;                // planes per block
  int ih, iw, oh, ow;    // plane sizes read / written
  int pad_t, pad_l;      // the plan's padding (may be negative in the data-grad)
  int sh, pitch, tile;   // staged rows, floats per staged row (odd), per staged plane (x4)
  int wtile;             // floats of staged weights per block (pb * taps rounded up to 4)
  int flip;              // data-grad: taps read in reverse order (the filter rotated)
  FastDiv items, strips_div;  // items (strips) per plane, strips per output row
  FastDiv ihw_div, iw_div;    // elements per input plane, per input row
  FastDiv channels;           // plane g is channel g % channels
  int64_t smem;               // dynamic shared-memory bytes per block
};

__host__ __device__ inline uint32_t small_plane_channel(const NcSmallPlanes& L, uint32_t plane) {
  return plane - L.channels.div(plane) * L.channels.d;
}

// Fills L for plan P filtered by kh x kw at stride s (both dims) with elements of esz bytes; flip:
// the data-grad's rotated filter. false when the plan is not a one-phase 2-D multiplier-1 correlation, when one plane does not fit
// in shared memory, or when the counts do not fit the 32-bit split.
inline bool choose_nc_small_planes(NcSmallPlanes& L, const Plan& P, int kh, int kw, int s, int esz, bool flip) {
  if (P.phases != 1 || P.J != 1 || P.in_div != 1 || P.in_c != P.out_c || P.in[0] != 1 || P.k[0] != 1 ||
      P.q[0] != 1 || P.k[1] != kh || P.k[2] != kw || P.S[1] != s || P.S[2] != s)
    return false;
  const int64_t planes = P.N * P.out_c, oh = P.q[1], ow = P.q[2];
  if (planes <= 0 || planes >= (int64_t(1) << 31) || oh <= 0 || ow <= 0) return false;
  if (P.in[1] * P.in[2] >= (int64_t(1) << 20) || oh * ow >= (int64_t(1) << 20)) return false;
  const int64_t strips = ceil_div(ow, kSmallPlaneStrip);
  const int64_t sh = (oh - 1) * s + kh, need_w = (strips * kSmallPlaneStrip - 1) * s + kw;
  const int64_t pitch = need_w | 1, tile = ceil_div(sh * pitch, 4) * 4;
  const int V = 16 / esz, taps = kh * kw;
  const int64_t ipp = oh * strips;  // items (strips) per plane
  // Staged input + weights (fp32), then the outputs, shifted by up to V-1 elements (see below).
  auto smem = [&](int64_t pb) { return (pb * tile + ceil_div(pb * taps, 4) * 4) * 4 + (pb * oh * ow + V) * esz; };
  int64_t pb = std::clamp<int64_t>(kSmallPlaneThreads / ipp, 1, planes);
  while (pb > 1 && smem(pb) > kSmallPlaneSmemBytes) --pb;
  if (smem(pb) > kSmallPlaneSmemBytes) return false;
  L.planes = static_cast<uint32_t>(planes);
  L.pb = static_cast<int>(pb);
  L.ih = static_cast<int>(P.in[1]), L.iw = static_cast<int>(P.in[2]);
  L.oh = static_cast<int>(oh), L.ow = static_cast<int>(ow);
  L.pad_t = P.pad[1][0], L.pad_l = P.pad[2][0];
  L.sh = static_cast<int>(sh), L.pitch = static_cast<int>(pitch), L.tile = static_cast<int>(tile);
  L.wtile = static_cast<int>(ceil_div(pb * taps, 4) * 4);
  L.flip = flip ? 1 : 0;
  L.items = fast_div(static_cast<uint32_t>(ipp));
  L.strips_div = fast_div(static_cast<uint32_t>(strips));
  L.ihw_div = fast_div(static_cast<uint32_t>(P.in[1] * P.in[2]));
  L.iw_div = fast_div(static_cast<uint32_t>(P.in[2]));
  L.channels = fast_div(static_cast<uint32_t>(P.out_c));
  L.smem = smem(pb);
  return true;
}

// w: the layer's filter [channel][KH][KW] in T (flip: read rotated; session 12: no preparation
// launch, 2.2-2.4 us of MobileNetV2 7x7's 13 us kernel); bias per channel or null.
// Six blocks per SM (at most 40 registers, 75% occupancy; ptxas, sm_90: 40 in every
// specialisation, no spills; a 7x7 fp32 block's 20.5 KB of shared memory allows that): a block
// has one load phase, so the SM's other blocks must keep DRAM busy around its barriers. At eight
// (32 registers) the fp32 stride-1 4x4-7x7 kernels spill 4 bytes; at four, 55-64 registers.
template <typename T, int KH, int KW, int S, int R>
__global__ void __launch_bounds__(kSmallPlaneThreads, 6)
nc_small_planes(const T* __restrict__ in, const T* __restrict__ w, const T* __restrict__ bias, T* __restrict__ out,
                const NcSmallPlanes L) {
  using acc_t = at::opmath_type<T>;
  static_assert(sizeof(acc_t) == 4, "staged in fp32");
  constexpr int V = 16 / sizeof(T);      // elements per 16-byte vector
  constexpr int NX = (R - 1) * S + KW;   // staged columns of a strip
  constexpr int TAPS = KH * KW;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  acc_t* const xs = reinterpret_cast<acc_t*>(smem_raw);  // [pb][sh][pitch] (+ rounding)
  acc_t* const ws = xs + L.pb * L.tile;                    // [pb][TAPS]
  T* const ys_raw = reinterpret_cast<T*>(ws + L.wtile);    // outputs, 16-byte aligned

  const int tid = static_cast<int>(threadIdx.x);
  const uint32_t p0 = blockIdx.x * static_cast<uint32_t>(L.pb);
  const int np = static_cast<int>(std::min(static_cast<uint32_t>(L.pb), L.planes - p0));
  const int ihw = L.ih * L.iw, ohw = L.oh * L.ow;

  // 1. Zero the staged planes (the halo and the pitch padding stay zero), then stage the weights.
  {
    float4* const z = reinterpret_cast<float4*>(xs);
    for (int i = tid; i < np * L.tile / 4; i += kSmallPlaneThreads) z[i] = float4{0.f, 0.f, 0.f, 0.f};
    for (int i = tid; i < np * TAPS; i += kSmallPlaneThreads) {
      const int pl = i / TAPS, tap = i - pl * TAPS;
      ws[i] = static_cast<acc_t>(w[int64_t(small_plane_channel(L, p0 + pl)) * TAPS + (L.flip ? TAPS - 1 - tap : tap)]);
    }
  }
  __syncthreads();

  // 2. The block's input span (np whole planes, contiguous) in 16-byte vectors from the 16-byte
  // boundary at or before its start; vectors that cross the span's ends go element by element, so
  // nothing outside the span is read. Element e of the span is plane e / ihw, row, column; a
  // vector's elements are placed by stepping (column, row, plane) from its first one.
  {
    const T* const src = in + int64_t(p0) * ihw;
    const int n = np * ihw;
    const int m = static_cast<int>(reinterpret_cast<uintptr_t>(src) / sizeof(T) % V);
    const int nvec = (n + m + V - 1) / V;
    for (int i = tid; i < nvec; i += kSmallPlaneThreads) {
      const int e0 = i * V - m;
      acc_t v[V];
      if (e0 >= 0 && e0 + V <= n) {
        const Vec16<T> u = *reinterpret_cast<const Vec16<T>*>(src + e0);
#pragma unroll
        for (int k = 0; k < V; ++k) v[k] = static_cast<acc_t>(u.v[k]);
      } else {
#pragma unroll
        for (int k = 0; k < V; ++k) v[k] = e0 + k >= 0 && e0 + k < n ? static_cast<acc_t>(src[e0 + k]) : acc_t(0);
      }
      uint32_t yx = static_cast<uint32_t>(std::max(e0, 0)), xx;
      const int first = static_cast<int>(yx);
      int pl = static_cast<int>(L.ihw_div.div(yx));
      yx -= static_cast<uint32_t>(pl * ihw);
      xx = L.iw_div.split(yx);
      int y = static_cast<int>(yx), x = static_cast<int>(xx);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const int e = e0 + k;
        if (e >= first && e < n) {
          const int sy = y + L.pad_t, sx = x + L.pad_l;
          // Input rows / columns no output reads (beyond the last window) are not staged.
          if (sy >= 0 && sy < L.sh && sx >= 0 && sx < L.pitch) xs[pl * L.tile + sy * L.pitch + sx] = v[k];
          if (++x == L.iw) {
            x = 0;
            if (++y == L.ih) y = 0, ++pl;
          }
        }
      }
    }
  }
  __syncthreads();

  // 3. Outputs: a thread owns R consecutive outputs of one row of one plane (items numbered
  // strip fastest, then row, plane); staged in shared memory as T, shifted by the output span's
  // misalignment so that step 4 moves whole aligned vectors.
  T* const dst = out + int64_t(p0) * ohw;
  const int mo = static_cast<int>(reinterpret_cast<uintptr_t>(dst) / sizeof(T) % V);
  T* const ys = ys_raw + mo;
  for (int it = tid; it < np * static_cast<int>(L.items.d); it += kSmallPlaneThreads) {
    uint32_t t = static_cast<uint32_t>(it);
    const int rest = static_cast<int>(L.items.split(t));
    const int pl = static_cast<int>(t);
    uint32_t yy = static_cast<uint32_t>(rest);
    const int st = static_cast<int>(L.strips_div.split(yy));
    const int y = static_cast<int>(yy), x0 = st * R;
    const acc_t* xr = xs + pl * L.tile + y * S * L.pitch + x0 * S;
    const acc_t* wr = ws + pl * TAPS;
    acc_t acc[R];
#pragma unroll
    for (int o = 0; o < R; ++o) acc[o] = acc_t(0);
#pragma unroll
    for (int kh = 0; kh < KH; ++kh, xr += L.pitch) {
      acc_t xv[NX];
#pragma unroll
      for (int c = 0; c < NX; ++c) xv[c] = xr[c];
#pragma unroll
      for (int kw = 0; kw < KW; ++kw) {
        const acc_t wv = wr[kh * KW + kw];
#pragma unroll
        for (int o = 0; o < R; ++o) acc[o] += wv * xv[o * S + kw];
      }
    }
    const acc_t b0 = bias ? static_cast<acc_t>(bias[small_plane_channel(L, p0 + pl)]) : acc_t(0);
    T* const yr = ys + pl * ohw + y * L.ow + x0;
#pragma unroll
    for (int o = 0; o < R; ++o) {
      if (x0 + o < L.ow) yr[o] = static_cast<T>(acc[o] + b0);
    }
  }
  __syncthreads();

  // 4. The block's output span: aligned 16-byte vectors (ys_raw[j] is span element j - mo), the
  // partial vectors at its ends element by element.
  store_span<T>(dst, ys_raw, np * ohw, mo, tid, kSmallPlaneThreads);
}

}  // namespace convx::cuda
