// Whole-plane depthwise kernel for NCHW: forward and stride-1 data-grad of the phased
// correlation (plan.cuh) when it has one phase, multiplier 1 and a 2-D plan.
//
// Why a separate design: on a 7x7 plane the streaming kernels (nc_stream.cuh) give a thread one
// strip of one plane, so every 49 outputs pay the item split, the band / strip set-up and their
// own halo loads (up to 13 values per 7 outputs), and a warp's row loads cover 28-byte pieces of
// many planes: MobileNetV2 C960 7x7 ran at 7-19% of the copy bandwidth (fp32: L1-bound, 90% L1
// hits, 8.6% DRAM throughput). Here a block works on groups of PB consecutive planes (about 256
// strips of 7 outputs) or, where one plane is too large, on one band of output rows of one plane.
// A group's input is one contiguous span (PB whole planes, or the band's input rows), read with
// 16-byte vector loads (each input byte read once), scattered into shared memory (fp32, zero
// halo, every staged row padded to an odd pitch so that neighbouring lanes' rows fall in
// different banks); every output of the group is computed from there (a thread owns R
// consecutive outputs of one row: no bounds tests), staged in shared memory and written as one
// contiguous span with 16-byte vector stores.
//
// Pipelining (session 11): the first design gave each block one group and three barriers, so a
// block's loads were in flight only in its first phase; 16-bit planes took as long as fp32 ones
// (the SM's few blocks could not keep enough bytes in flight). Now a block walks groups
// blockIdx.x, + gridDim.x, ... (grid: the blocks that fit the SMs at once) and holds the next
// group's span (up to PF 16-byte vectors per thread) and filter taps in registers: they are
// loaded before the current group is computed and scattered into shared memory after it, so the
// loads' latency hides behind the arithmetic. Two barriers per group.
//
// Filter: the layer's own weights ([C][KH][KW] in T, rotated 180 degrees for the data-grad), not
// a prepared fp32 copy: no preparation launch before the kernel.
#pragma once

#include "ops/depthwise_conv/cuda/nc_stream.cuh"
#include "ops/depthwise_conv/cuda/plan.cuh"

#include <ATen/OpMathType.h>

#include <algorithm>
#include <cstdint>

namespace convx::cuda {

constexpr int kPlaneThreads = 256;
constexpr int64_t kPlaneSmemBytes = 48 * 1024;  // dynamic shared memory without the opt-in
// Outputs per thread along a row: 7 divides the ImageNet widths (112, 56, 28, 14, 7), so no lane
// idles on them.
constexpr int kPlaneStrip = 7;
// 16-byte vectors of the next group's span each thread holds, and filter taps.
constexpr int kPlanePrefetch = 4;
constexpr int kPlaneTapPrefetch = 2;

struct NcPlane {
  uint32_t planes;       // N * channels: planes read and written (one each, multiplier 1)
  uint32_t groups;       // plane groups * bands
  int pb, bh, bands;     // planes per group; output rows per band and bands per plane (pb == 1 when bands > 1)
  int ih, iw, oh, ow;    // plane sizes read / written
  int pad_t, pad_l;      // the plan's padding (may be negative in the data-grad)
  int sh, pitch, tile;   // staged rows, floats per staged row (odd), per staged plane (x4)
  int wtile;             // floats of staged weights per block (pb * taps rounded up to 4)
  int flip;              // data-grad: taps read in reverse order (the filter rotated)
  FastDiv items, strips_div;  // items (strips) per plane band, strips per output row
  FastDiv ihw_div, iw_div;    // elements per input plane, per input row
  FastDiv bands_div;          // group g is band g % bands of plane group g / bands
  FastDiv channels;           // plane g is channel g % channels
  int64_t smem;               // dynamic shared-memory bytes per block
};

__host__ __device__ inline uint32_t channel(const NcPlane& L, uint32_t plane) {
  return plane - L.channels.div(plane) * L.channels.d;
}

// Fills L for plan P filtered by kh x kw at stride s (both dims) with elements of esz bytes;
// flip: the data-grad's rotated filter. false when the plan is not a one-phase 2-D multiplier-1
// correlation, when not even a band of one output row fits shared memory or the prefetch, or when
// the counts do not fit the 32-bit split.
inline bool choose_nc_plane(NcPlane& L, const Plan& P, int kh, int kw, int s, int esz, bool flip) {
  if (P.phases != 1 || P.J != 1 || P.in_div != 1 || P.in_c != P.out_c || P.in[0] != 1 || P.k[0] != 1 ||
      P.q[0] != 1 || P.k[1] != kh || P.k[2] != kw || P.S[1] != s || P.S[2] != s)
    return false;
  const int64_t planes = P.N * P.out_c, oh = P.q[1], ow = P.q[2], ih = P.in[1], iw = P.in[2];
  if (planes <= 0 || planes >= (int64_t(1) << 31) || oh <= 0 || ow <= 0) return false;
  if (ih * iw >= (int64_t(1) << 20) || oh * ow >= (int64_t(1) << 20)) return false;
  const int64_t strips = ceil_div(ow, kPlaneStrip);
  const int64_t need_w = (strips * kPlaneStrip - 1) * s + kw;
  const int64_t pitch = need_w | 1;
  const int V = 16 / esz, taps = kh * kw;
  const int64_t vec_cap = int64_t(kPlanePrefetch) * kPlaneThreads * V - (V - 1);  // span elements the prefetch holds
  auto rows = [&](int64_t bh) { return (bh - 1) * s + kh; };
  auto tile = [&](int64_t bh) { return ceil_div(rows(bh) * pitch, 4) * 4; };
  // Staged input + weights (fp32), then the outputs, shifted by up to V-1 elements (see below).
  auto smem = [&](int64_t pb, int64_t bh) {
    return (pb * tile(bh) + ceil_div(pb * taps, 4) * 4) * 4 + (pb * bh * ow + V) * esz;
  };
  int64_t pb = 1, bh = oh, bands = 1;
  if (ih * iw <= vec_cap && smem(1, oh) <= kPlaneSmemBytes && taps <= kPlaneTapPrefetch * kPlaneThreads) {
    pb = std::clamp<int64_t>(kPlaneThreads / (oh * strips), 1, planes);
    while (pb > 1 && (smem(pb, oh) > kPlaneSmemBytes || pb * ih * iw > vec_cap ||
                      pb * taps > kPlaneTapPrefetch * kPlaneThreads))
      --pb;
  } else {
    // Bands of one plane: the most rows whose span (input rows of the band) and staging fit.
    if (taps > kPlaneTapPrefetch * kPlaneThreads) return false;
    bh = std::min<int64_t>(oh, 2 * kPlaneThreads / strips);
    while (bh > 1 && (smem(1, bh) > kPlaneSmemBytes || rows(bh) * iw > vec_cap)) --bh;
    if (bh < 1 || smem(1, bh) > kPlaneSmemBytes || rows(bh) * iw > vec_cap) return false;
    bands = ceil_div(oh, bh);
  }
  const int64_t groups = ceil_div(planes, pb) * bands;
  if (groups >= (int64_t(1) << 31)) return false;
  L.planes = static_cast<uint32_t>(planes);
  L.groups = static_cast<uint32_t>(groups);
  L.pb = static_cast<int>(pb), L.bh = static_cast<int>(bh), L.bands = static_cast<int>(bands);
  L.ih = static_cast<int>(ih), L.iw = static_cast<int>(iw);
  L.oh = static_cast<int>(oh), L.ow = static_cast<int>(ow);
  L.pad_t = P.pad[1][0], L.pad_l = P.pad[2][0];
  L.sh = static_cast<int>(rows(bh)), L.pitch = static_cast<int>(pitch), L.tile = static_cast<int>(tile(bh));
  L.wtile = static_cast<int>(ceil_div(pb * taps, 4) * 4);
  L.flip = flip ? 1 : 0;
  L.items = fast_div(static_cast<uint32_t>(bh * strips));
  L.strips_div = fast_div(static_cast<uint32_t>(strips));
  L.ihw_div = fast_div(static_cast<uint32_t>(ih * iw));
  L.iw_div = fast_div(static_cast<uint32_t>(iw));
  L.bands_div = fast_div(static_cast<uint32_t>(bands));
  L.channels = fast_div(static_cast<uint32_t>(P.out_c));
  L.smem = smem(pb, bh);
  return true;
}

// Where group g lies: its first plane p0, planes np, first output row by0, output rows nbh; its
// input span starts at plane p0's input row r0 and has n elements; the output span at plane p0's
// row by0 (n_out elements).
struct PlaneGroup {
  uint32_t p0;
  int np, by0, nbh, r0, n, n_out;
};

__device__ __forceinline__ PlaneGroup plane_group(const NcPlane& L, uint32_t g, int S, int KH) {
  PlaneGroup G;
  uint32_t t = g;
  const int band = static_cast<int>(L.bands_div.split(t));
  G.p0 = t * static_cast<uint32_t>(L.pb);
  G.np = static_cast<int>(std::min(static_cast<uint32_t>(L.pb), L.planes - G.p0));
  G.by0 = band * L.bh;
  G.nbh = std::min(L.bh, L.oh - G.by0);
  if (L.bands == 1) {
    G.r0 = 0;
    G.n = G.np * L.ih * L.iw;
  } else {  // the input rows the band reads, clipped to the plane
    const int lo = G.by0 * S - L.pad_t, hi = lo + (G.nbh - 1) * S + KH;
    G.r0 = std::max(lo, 0);
    G.n = std::max(std::min(hi, L.ih) - G.r0, 0) * L.iw;
  }
  G.n_out = ((G.np - 1) * L.bh + G.nbh) * L.ow;
  return G;
}

// w: the layer's filter [channel][KH][KW] in T (flip: read rotated); bias per channel or null.
// MINB blocks per SM (the launcher's occupancy target).
template <typename T, int KH, int KW, int S, int R>
__global__ void __launch_bounds__(kPlaneThreads, 4)
nc_plane(const T* __restrict__ in, const T* __restrict__ w, const T* __restrict__ bias, T* __restrict__ out,
         const NcPlane L) {
  using acc_t = at::opmath_type<T>;
  static_assert(sizeof(acc_t) == 4, "staged in fp32");
  constexpr int V = 16 / sizeof(T);      // elements per 16-byte vector
  constexpr int NX = (R - 1) * S + KW;   // staged columns of a strip
  constexpr int TAPS = KH * KW;
  constexpr int PF = kPlanePrefetch, WPF = kPlaneTapPrefetch;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  acc_t* const xs = reinterpret_cast<acc_t*>(smem_raw);  // [pb][sh][pitch] (+ rounding)
  acc_t* const ws = xs + L.pb * L.tile;                    // [pb][TAPS]
  T* const ys_raw = reinterpret_cast<T*>(ws + L.wtile);    // outputs, 16-byte aligned

  const int tid = static_cast<int>(threadIdx.x);
  const int ihw = L.ih * L.iw, ohw_g = L.bh * L.ow;

  // The next group's span: vector i = tid + k * threads of the span from the 16-byte boundary at
  // or before its start; vectors that cross the span's ends are read element by element (zeros
  // outside), so nothing outside the span is read. And its taps (tap tid + k * threads).
  Vec16<T> pf[PF];
  T wpf[WPF];
  auto prefetch = [&](uint32_t g) {
    const PlaneGroup G = plane_group(L, g, S, KH);
    const T* const src = in + int64_t(G.p0) * ihw + int64_t(G.r0) * L.iw;
    const int m = static_cast<int>(reinterpret_cast<uintptr_t>(src) / sizeof(T) % V);
    const int nvec = (G.n + m + V - 1) / V;
#pragma unroll
    for (int k = 0; k < PF; ++k) {
      const int i = tid + k * kPlaneThreads;
      const int e0 = i * V - m;
      if (i < nvec) {
        if (e0 >= 0 && e0 + V <= G.n) {
          pf[k] = *reinterpret_cast<const Vec16<T>*>(src + e0);
        } else {
#pragma unroll
          for (int e = 0; e < V; ++e) pf[k].v[e] = e0 + e >= 0 && e0 + e < G.n ? src[e0 + e] : T(0);
        }
      }
    }
    const uint32_t c0 = channel(L, G.p0);
#pragma unroll
    for (int k = 0; k < WPF; ++k) {
      const int i = tid + k * kPlaneThreads;
      if (i < G.np * TAPS) {
        const int pl = i / TAPS, tap = i - pl * TAPS;
        uint32_t c = c0 + static_cast<uint32_t>(pl);
        if (c >= L.channels.d) c -= L.channels.d * (c / L.channels.d);
        wpf[k] = w[int64_t(c) * TAPS + (L.flip ? TAPS - 1 - tap : tap)];
      }
    }
  };

  // Zero the staged planes once: halo columns and the pitch padding are never written again; rows
  // outside the plane are zeroed per band (bands > 1) or stay zero (whole planes).
  {
    float4* const z = reinterpret_cast<float4*>(xs);
    for (int i = tid; i < L.pb * L.tile / 4; i += kPlaneThreads) z[i] = float4{0.f, 0.f, 0.f, 0.f};
  }
  uint32_t g = blockIdx.x;
  if (g < L.groups) prefetch(g);
  __syncthreads();

  for (; g < L.groups; g += gridDim.x) {
    const PlaneGroup G = plane_group(L, g, S, KH);
    // 1. Scatter the prefetched span and taps. Element e of the span is plane e / ihw, row r0 +
    // row, column; staged row sy = input row + pad_t - by0 * S.
    {
      const T* const src = in + int64_t(G.p0) * ihw + int64_t(G.r0) * L.iw;
      const int m = static_cast<int>(reinterpret_cast<uintptr_t>(src) / sizeof(T) % V);
      const int nvec = (G.n + m + V - 1) / V;
      const int row_off = G.r0 + L.pad_t - G.by0 * S;
#pragma unroll
      for (int k = 0; k < PF; ++k) {
        const int i = tid + k * kPlaneThreads;
        if (i < nvec) {
          const int e0 = i * V - m;
          uint32_t yx = static_cast<uint32_t>(std::max(e0, 0));
          const int first = static_cast<int>(yx);
          int pl = static_cast<int>(L.ihw_div.div(yx));
          yx -= static_cast<uint32_t>(pl * ihw);
          const uint32_t xx = L.iw_div.split(yx);
          int y = static_cast<int>(yx), x = static_cast<int>(xx);
          const int sy0 = y + row_off, sx0 = x + L.pad_l;
          if (e0 >= 0 && x + V <= L.iw && sy0 >= 0 && sy0 < L.sh) {  // one staged row
            acc_t* const d = xs + pl * L.tile + sy0 * L.pitch + sx0;
#pragma unroll
            for (int e = 0; e < V; ++e) {
              if (sx0 + e >= 0 && sx0 + e < L.pitch && e0 + e < G.n) d[e] = static_cast<acc_t>(pf[k].v[e]);
            }
          } else {
#pragma unroll
            for (int e = 0; e < V; ++e) {
              if (e0 + e >= first && e0 + e < G.n) {
                const int sy = y + row_off, sx = x + L.pad_l;
                // Input rows / columns no output reads (beyond the last window) are not staged.
                if (sy >= 0 && sy < L.sh && sx >= 0 && sx < L.pitch)
                  xs[pl * L.tile + sy * L.pitch + sx] = static_cast<acc_t>(pf[k].v[e]);
                if (++x == L.iw) {
                  x = 0;
                  if (++y == L.ih) y = 0, ++pl;
                }
              }
            }
          }
        }
      }
      if (L.bands > 1) {  // staged rows above / below the plane read as zeros
        for (int i = tid; i < L.sh * L.pitch; i += kPlaneThreads) {
          const int sy = i / L.pitch, iy = sy + G.by0 * S - L.pad_t;
          if (iy < 0 || iy >= L.ih) xs[i] = acc_t(0);
        }
      }
#pragma unroll
      for (int k = 0; k < WPF; ++k) {
        const int i = tid + k * kPlaneThreads;
        if (i < G.np * TAPS) ws[i] = static_cast<acc_t>(wpf[k]);
      }
    }
    __syncthreads();
    // The next group's loads are in flight while this one computes.
    if (g + gridDim.x < L.groups) prefetch(g + gridDim.x);

    // 2. Outputs: a thread owns R consecutive outputs of one row of one plane (items numbered
    // strip fastest, then row, plane); staged in shared memory as T, shifted by the output span's
    // misalignment so that step 3 moves whole aligned vectors.
    T* const dst = out + int64_t(G.p0) * L.oh * L.ow + int64_t(G.by0) * L.ow;
    const int mo = static_cast<int>(reinterpret_cast<uintptr_t>(dst) / sizeof(T) % V);
    T* const ys = ys_raw + mo;
    const int nitems = (G.np - 1) * static_cast<int>(L.items.d) + G.nbh * static_cast<int>(L.strips_div.d);
    for (int it = tid; it < nitems; it += kPlaneThreads) {
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
      const acc_t b0 = bias ? static_cast<acc_t>(bias[channel(L, G.p0 + pl)]) : acc_t(0);
      T* const yr = ys + pl * ohw_g + y * L.ow + x0;
#pragma unroll
      for (int o = 0; o < R; ++o) {
        if (x0 + o < L.ow) yr[o] = static_cast<T>(acc[o] + b0);
      }
    }
    __syncthreads();

    // 3. The group's output span: aligned 16-byte vectors (ys_raw[j] is span element j - mo), the
    // partial vectors at its ends element by element. The next scatter writes other buffers; the
    // barrier after it orders these reads before the next group's outputs.
    {
      const int n = G.n_out;
      const int nvec = (n + mo + V - 1) / V;
      for (int i = tid; i < nvec; i += kPlaneThreads) {
        const int e0 = i * V - mo;
        if (e0 >= 0 && e0 + V <= n) {
          *reinterpret_cast<Vec16<T>*>(dst + e0) = *reinterpret_cast<const Vec16<T>*>(ys_raw + i * V);
        } else {
#pragma unroll
          for (int k = 0; k < V; ++k) {
            if (e0 + k >= 0 && e0 + k < n) dst[e0 + k] = ys_raw[i * V + k];
          }
        }
      }
    }
  }
}

}  // namespace convx::cuda
