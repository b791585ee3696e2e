// Whole-plane depthwise kernel for NCHW planes larger than 14 x 14 (smaller ones:
// nc_small_planes.cuh): forward and stride-1 data-grad of the phased correlation (plan.cuh) when it
// has one phase, multiplier 1 and a 2-D plan.
//
// Why whole planes through shared memory: nc_small_planes.cuh, the session-5 design this one
// extends. Here a block works on groups of PB consecutive whole planes (about 256 items). A
// group's input is one contiguous span, read with 16-byte vector loads (each input byte read
// once) and scattered into shared memory (fp32, zero halo); every output of the group is computed
// from there (a thread owns R consecutive outputs of TH rows: no bounds tests), staged in shared
// memory and written as one contiguous span with 16-byte vector stores.
//
// Pipelining (session 11): the first design gave each block one group and three barriers, so a
// block's loads were in flight only in its first phase. Now a block walks groups blockIdx.x,
// + gridDim.x, ... (grid: the blocks that fit the SMs at once) and holds the next group's span
// (up to kPlanePrefetch 16-byte vectors per thread) and filter taps in registers: they are loaded
// before the current group is computed and scattered into shared memory after it, so the loads'
// latency hides behind the arithmetic. Two barriers per group. Staged rows start at a 16-byte
// boundary plus `lead` columns chosen so that a vector of a row lands 16-byte aligned (one or two
// 16-byte stores instead of V scalar ones, V floats apart across lanes: V-way bank conflicts), and
// the row pitch is chosen on the host among multiples of 4 for the fewest bank conflicts of the
// compute phase's loads.
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
  uint32_t groups;       // ceil(planes / pb)
  int pb;                // planes per group
  int ih, iw, oh, ow;    // plane sizes read / written
  int pad_t, pad_l;      // the plan's padding (may be negative in the data-grad)
  int lead;              // staged column of input column x: x + pad_l + lead, (pad_l + lead) % 4 == 0
  int sh, pitch, tile;   // staged rows, floats per staged row (x4), per staged plane (x4)
  int wtile;             // floats of staged weights per block (pb * taps rounded up to 4)
  int flip;              // data-grad: taps read in reverse order (the filter rotated)
  FastDiv items, strips_div;  // items (strips of TH rows) per plane, strips per output row
  FastDiv ihw_div, iw_div;    // elements per input plane, per input row
  FastDiv channels;           // plane g is channel g % channels
  int64_t smem;               // dynamic shared-memory bytes per block
};

__host__ __device__ inline uint32_t channel(const NcPlane& L, uint32_t plane) {
  return plane - L.channels.div(plane) * L.channels.d;
}

// The most lanes of a warp whose first loads of the compute phase (item = lane) fall in one bank
// at different addresses, for a staged row pitch.
inline int plane_bank_conflicts(int64_t pitch, int64_t tile, int64_t items, int64_t strips, int step) {
  int most = 1;
  int64_t addr[32];
  for (int l = 0; l < 32; ++l) {
    const int64_t pl = l / items, r = l % items, y = r / strips, st = r % strips;
    addr[l] = pl * tile + y * step * pitch + st * kPlaneStrip;
  }
  for (int b = 0; b < 32; ++b) {
    int64_t seen[32];
    int n = 0;
    for (int l = 0; l < 32; ++l) {
      if (((addr[l] % 32) + 32) % 32 != b) continue;
      bool dup = false;
      for (int i = 0; i < n; ++i) dup = dup || seen[i] == addr[l];
      if (!dup) seen[n++] = addr[l];
    }
    most = std::max(most, n);
  }
  return most;
}

// Fills L for plan P filtered by kh x kw at stride s (both dims), th output rows per thread, with
// elements of esz bytes; flip: the data-grad's rotated filter. false when the plan is not a
// one-phase 2-D multiplier-1 correlation, when one plane does not fit shared memory or the
// prefetch (then nc_stream), or when the counts do not fit the 32-bit split.
inline bool choose_nc_plane(NcPlane& L, const Plan& P, int kh, int kw, int s, int th, int esz, bool flip) {
  if (P.phases != 1 || P.J != 1 || P.in_div != 1 || P.in_c != P.out_c || P.in[0] != 1 || P.k[0] != 1 ||
      P.q[0] != 1 || P.k[1] != kh || P.k[2] != kw || P.S[1] != s || P.S[2] != s)
    return false;
  const int64_t planes = P.N * P.out_c, oh = P.q[1], ow = P.q[2], ih = P.in[1], iw = P.in[2];
  if (planes <= 0 || planes >= (int64_t(1) << 31) || oh <= 0 || ow <= 0) return false;
  if (ih * iw >= (int64_t(1) << 20) || oh * ow >= (int64_t(1) << 20)) return false;
  const int pad_l = P.pad[2][0], lead = ((-pad_l) % 4 + 4) % 4;
  const int64_t strips = ceil_div(ow, kPlaneStrip), bands = ceil_div(oh, th);
  const int64_t need_w = (strips * kPlaneStrip - 1) * s + kw + lead;
  // A thread's TH rows may run past the plane's last one (their outputs are not stored).
  const int64_t sh = (bands * th - 1) * s + kh;
  const int V = 16 / esz, taps = kh * kw;
  const int64_t vec_cap = int64_t(kPlanePrefetch) * kPlaneThreads * V - (V - 1);  // span elements the prefetch holds
  const int64_t ipp = bands * strips;  // items per plane
  auto tile_of = [&](int64_t pitch) { return ceil_div(sh * pitch, 4) * 4; };
  int64_t pitch = ceil_div(need_w, 4) * 4, best = 33;
  for (int64_t p = ceil_div(need_w, 4) * 4, end = p + 32; p < end; p += 4) {
    const int c = plane_bank_conflicts(p, tile_of(p), ipp, strips, th * s);
    if (c < best) best = c, pitch = p;
  }
  const int64_t tile = tile_of(pitch);
  // Staged input + weights (fp32), then the outputs, shifted by up to V-1 elements (see below).
  auto smem = [&](int64_t pb) { return (pb * tile + ceil_div(pb * taps, 4) * 4) * 4 + (pb * oh * ow + V) * esz; };
  if (ih * iw > vec_cap || smem(1) > kPlaneSmemBytes || taps > kPlaneTapPrefetch * kPlaneThreads) return false;
  int64_t pb = std::clamp<int64_t>(kPlaneThreads / ipp, 1, planes);
  while (pb > 1 && (smem(pb) > kPlaneSmemBytes || pb * ih * iw > vec_cap || pb * taps > kPlaneTapPrefetch * kPlaneThreads))
    --pb;
  L.planes = static_cast<uint32_t>(planes);
  L.groups = static_cast<uint32_t>(ceil_div(planes, pb));
  L.pb = static_cast<int>(pb);
  L.ih = static_cast<int>(ih), L.iw = static_cast<int>(iw);
  L.oh = static_cast<int>(oh), L.ow = static_cast<int>(ow);
  L.pad_t = P.pad[1][0], L.pad_l = pad_l, L.lead = lead;
  L.sh = static_cast<int>(sh), L.pitch = static_cast<int>(pitch), L.tile = static_cast<int>(tile);
  L.wtile = static_cast<int>(ceil_div(pb * taps, 4) * 4);
  L.flip = flip ? 1 : 0;
  L.items = fast_div(static_cast<uint32_t>(ipp));
  L.strips_div = fast_div(static_cast<uint32_t>(strips));
  L.ihw_div = fast_div(static_cast<uint32_t>(ih * iw));
  L.iw_div = fast_div(static_cast<uint32_t>(iw));
  L.channels = fast_div(static_cast<uint32_t>(P.out_c));
  L.smem = smem(pb);
  return true;
}

// w: the layer's filter [channel][KH][KW] in T (flip: read rotated); bias per channel or null.
// Four blocks per SM (at most 64 registers; ptxas, sm_90: no spills in the launcher's
// specialisations; TH 2 would spill 16-144 bytes for 5x5 and 7x7 at stride 2).
template <typename T, int KH, int KW, int S, int R, int TH>
__global__ void __launch_bounds__(kPlaneThreads, 4)
nc_plane(const T* __restrict__ in, const T* __restrict__ w, const T* __restrict__ bias, T* __restrict__ out,
         const NcPlane L) {
  using acc_t = at::opmath_type<T>;
  static_assert(sizeof(acc_t) == 4, "staged in fp32");
  constexpr int V = 16 / sizeof(T);      // elements per 16-byte vector
  constexpr int NX = (R - 1) * S + KW;   // staged columns of a strip
  constexpr int NR = (TH - 1) * S + KH;  // staged rows of a strip
  constexpr int TAPS = KH * KW;
  constexpr int PF = kPlanePrefetch, WPF = kPlaneTapPrefetch;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  acc_t* const xs = reinterpret_cast<acc_t*>(smem_raw);  // [pb][sh][pitch] (+ rounding)
  acc_t* const ws = xs + L.pb * L.tile;                    // [pb][TAPS]
  T* const ys_raw = reinterpret_cast<T*>(ws + L.wtile);    // outputs, 16-byte aligned

  const int tid = static_cast<int>(threadIdx.x);
  const int ihw = L.ih * L.iw, ohw = L.oh * L.ow;

  // The next group's span (np whole planes, contiguous): vector i = tid + k * threads from the
  // 16-byte boundary at or before its start; vectors that cross the span's ends are read element
  // by element (zeros outside), so nothing outside the span is read. And its taps.
  Raw16 pf[PF];
  T wpf[WPF];
  auto prefetch = [&](uint32_t g) {
    const uint32_t p0 = g * static_cast<uint32_t>(L.pb);
    const int np = static_cast<int>(std::min(static_cast<uint32_t>(L.pb), L.planes - p0));
    const int n = np * ihw;
    const T* const src = in + int64_t(p0) * ihw;
    const int m = static_cast<int>(reinterpret_cast<uintptr_t>(src) / sizeof(T) % V);
    const int nvec = (n + m + V - 1) / V;
#pragma unroll
    for (int k = 0; k < PF; ++k) {
      const int i = tid + k * kPlaneThreads;
      const int e0 = i * V - m;
      if (i < nvec) {
        if (e0 >= 0 && e0 + V <= n) {
          pf[k] = *reinterpret_cast<const Raw16*>(src + e0);
        } else {
          pf[k] = Raw16{};
#pragma unroll
          for (int e = 0; e < V; ++e) {
            if (e0 + e >= 0 && e0 + e < n) raw_put<T>(pf[k], e, src[e0 + e]);
          }
        }
      }
    }
    const uint32_t c0 = channel(L, p0);
#pragma unroll
    for (int k = 0; k < WPF; ++k) {
      const int i = tid + k * kPlaneThreads;
      if (i < np * TAPS) {
        const int pl = i / TAPS, tap = i - pl * TAPS;
        const uint32_t c = (c0 + static_cast<uint32_t>(pl)) % L.channels.d;
        wpf[k] = w[int64_t(c) * TAPS + (L.flip ? TAPS - 1 - tap : tap)];
      }
    }
  };

  // Zero the staged planes once: the halo and the pitch padding are never written again.
  {
    float4* const z = reinterpret_cast<float4*>(xs);
    for (int i = tid; i < L.pb * L.tile / 4; i += kPlaneThreads) z[i] = float4{0.f, 0.f, 0.f, 0.f};
  }
  uint32_t g = blockIdx.x;
  if (g < L.groups) prefetch(g);
  __syncthreads();

  for (; g < L.groups; g += gridDim.x) {
    const uint32_t p0 = g * static_cast<uint32_t>(L.pb);
    const int np = static_cast<int>(std::min(static_cast<uint32_t>(L.pb), L.planes - p0));
    // 1. Scatter the prefetched span and taps. Element e of the span is plane e / ihw, row,
    // column; staged at row + pad_t, column + pad_l + lead.
    {
      const int n = np * ihw;
      const T* const src = in + int64_t(p0) * ihw;
      const int m = static_cast<int>(reinterpret_cast<uintptr_t>(src) / sizeof(T) % V);
      const int nvec = (n + m + V - 1) / V;
      const int col_off = L.pad_l + L.lead;
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
          const int sy0 = y + L.pad_t, sx0 = x + col_off;
          if (e0 >= 0 && e0 + V <= n && x + V <= L.iw && sy0 >= 0 && sy0 < L.sh && sx0 >= 0 &&
              (sx0 & 3) == 0 && sx0 + V <= L.pitch) {
            // The whole vector in one staged row, 16-byte aligned: V / 4 vector stores.
            float4* const d = reinterpret_cast<float4*>(xs + pl * L.tile + sy0 * L.pitch + sx0);
#pragma unroll
            for (int q = 0; q < V / 4; ++q) {
              d[q] = float4{raw_get<T>(pf[k], 4 * q), raw_get<T>(pf[k], 4 * q + 1), raw_get<T>(pf[k], 4 * q + 2),
                            raw_get<T>(pf[k], 4 * q + 3)};
            }
          } else {
#pragma unroll
            for (int e = 0; e < V; ++e) {
              if (e0 + e >= first && e0 + e < n) {
                const int sy = y + L.pad_t, sx = x + col_off;
                // Input rows / columns no output reads (beyond the last window) are not staged.
                if (sy >= 0 && sy < L.sh && sx >= 0 && sx < L.pitch) xs[pl * L.tile + sy * L.pitch + sx] = raw_get<T>(pf[k], e);
                if (++x == L.iw) {
                  x = 0;
                  if (++y == L.ih) y = 0, ++pl;
                }
              }
            }
          }
        }
      }
#pragma unroll
      for (int k = 0; k < WPF; ++k) {
        const int i = tid + k * kPlaneThreads;
        if (i < np * TAPS) ws[i] = static_cast<acc_t>(wpf[k]);
      }
    }
    __syncthreads();
    // The next group's loads are in flight while this one computes.
    if (g + gridDim.x < L.groups) prefetch(g + gridDim.x);

    // 2. Outputs: a thread owns R consecutive outputs of TH rows of one plane (items numbered
    // strip fastest, then row band, plane): it walks the NR staged rows once, adding each into
    // the output rows its filter touches; staged in shared memory as T, shifted by the output
    // span's misalignment so that step 3 moves whole aligned vectors.
    T* const dst = out + int64_t(p0) * ohw;
    const int mo = static_cast<int>(reinterpret_cast<uintptr_t>(dst) / sizeof(T) % V);
    T* const ys = ys_raw + mo;
    const int nitems = np * static_cast<int>(L.items.d);
    for (int it = tid; it < nitems; it += kPlaneThreads) {
      uint32_t t = static_cast<uint32_t>(it);
      const int rest = static_cast<int>(L.items.split(t));
      const int pl = static_cast<int>(t);
      uint32_t yy = static_cast<uint32_t>(rest);
      const int st = static_cast<int>(L.strips_div.split(yy));
      const int y0 = static_cast<int>(yy) * TH, x0 = st * R;
      const acc_t* xr = xs + pl * L.tile + y0 * S * L.pitch + x0 * S + L.lead;
      const acc_t* wr = ws + pl * TAPS;
      acc_t acc[TH][R];
#pragma unroll
      for (int b = 0; b < TH; ++b) {
#pragma unroll
        for (int o = 0; o < R; ++o) acc[b][o] = acc_t(0);
      }
#pragma unroll
      for (int r = 0; r < NR; ++r, xr += L.pitch) {
        acc_t xv[NX];
#pragma unroll
        for (int c = 0; c < NX; ++c) xv[c] = xr[c];
#pragma unroll
        for (int b = 0; b < TH; ++b) {
          const int kh = r - b * S;  // output row b uses staged row r as its filter row kh
          if (kh < 0 || kh >= KH) continue;
#pragma unroll
          for (int kw = 0; kw < KW; ++kw) {
            const acc_t wv = wr[kh * KW + kw];
#pragma unroll
            for (int o = 0; o < R; ++o) acc[b][o] += wv * xv[o * S + kw];
          }
        }
      }
      const acc_t b0 = bias ? static_cast<acc_t>(bias[channel(L, p0 + pl)]) : acc_t(0);
      stage_outputs<T>(ys, acc, b0, pl, L.oh, L.ow, y0, x0);
    }
    __syncthreads();

    // 3. The group's output span: aligned 16-byte vectors (ys_raw[j] is span element j - mo), the
    // partial vectors at its ends element by element. The barrier after the next scatter orders
    // these reads before the next group's outputs.
    store_span<T>(dst, ys_raw, np * ohw, mo, tid, kPlaneThreads);
  }
}

}  // namespace convx::cuda
