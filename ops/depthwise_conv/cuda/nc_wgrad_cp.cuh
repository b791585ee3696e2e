// NCHW fp32 weight-grad of K x K filters at stride 1 with padding K / 2 ('same'), the input planes
// staged by cp.async as nc_plane_cp.cuh stages them for the forward.
//
// Why (session 13): nc_wgrad_stream reads every window element from L1 by a 4-byte load with
// bounds masks (EfficientNet 5x5 fp32 weight-grad 0.090 ms, 35% of the copy bandwidth) and
// walk_wgrad2d re-reads 4 of every 18 input rows and loads element by element (0.062 ms). Here a
// block owns a unit (one channel, a chunk of samples) and walks it a group of PB samples' planes at a
// time: the group's x planes are copied into zero-haloed tiles in nc_plane_cp's layout (8-byte
// chunks; bands of TH rows skewed for the 16-byte window loads; two buffers, the next group's
// copies in flight while this one computes), a thread owns TH x 4 outputs of dy (read as 16-byte
// vectors from global memory, loaded before the group's barrier) and adds their products with its
// window (NR rows of two 16-byte shared loads) into the K * K tap sums it keeps in registers over the
// whole unit. At the unit's end the block sums its threads' tap sums in a fixed order
// (wgrad_block_sum) into part[channel][chunk][tap]; sum_slots adds the chunks in order. No atomics:
// bitwise repeatable, the partition a function of the shapes.
#pragma once

#include "ops/depthwise_conv/cuda/nc_plane_cp.cuh"
#include "ops/depthwise_conv/cuda/nc_wgrad_stream.cuh"

#include <algorithm>
#include <cstdint>

namespace convx::cuda {

struct NcWgradCp {
  int C, N;           // channels, samples
  int chunk, chunks;  // samples per unit, units per channel
  int gpu;            // groups (of up to L.pb samples) per unit
  int units;          // C * chunks
};

// The staging layout (L: nc_plane_cp's, for the forward plan P of the weight-grad, outputs = dy)
// and the units, groups_per_unit groups of L.pb samples each. false when nc_plane_cp's layout
// declines, when dy's rows are not whole aligned 16-byte vectors (L.direct) or the units do not
// fit 32 bits.
inline bool choose_nc_wgrad_cp(NcPlaneCp& L, NcWgradCp& W, const Plan& P, int k, int th, const float* x,
                               const float* gy, int groups_per_unit) {
  if (!choose_nc_plane_cp(L, P, k, k, 1, th, 4, 8, x, gy, false, true) || !L.direct) return false;
  W.C = static_cast<int>(P.out_c), W.N = static_cast<int>(P.N);
  const int64_t chunk = std::min<int64_t>(P.N, int64_t(L.pb) * groups_per_unit);
  const int64_t chunks = ceil_div(P.N, chunk);
  if (P.out_c * chunks >= (int64_t(1) << 31)) return false;
  W.chunk = static_cast<int>(chunk), W.chunks = static_cast<int>(chunks);
  W.gpu = static_cast<int>(ceil_div(chunk, L.pb));
  W.units = static_cast<int>(P.out_c * chunks);
  return true;
}

// Three blocks per SM (at most 85 registers); part[unit][tap], unit = channel * chunks + chunk.
template <int K, int TH>
__global__ void __launch_bounds__(kCpThreads, 3)
nc_wgrad_cp(const float* __restrict__ x, const float* __restrict__ gy, float* __restrict__ part, const NcPlaneCp L,
            const NcWgradCp W) {
  constexpr int V = 4, R = V, CE = 2;        // fp32: a strip is one 16-byte vector; 8-byte copies
  constexpr int NX = R - 1 + K, NR = TH - 1 + K, TAPS = K * K;
  constexpr int LEAD = cp_lead<float, K, 8>();
  constexpr int NB = (LEAD + NX + V - 1) / V;  // 16-byte vectors of a window row
  extern __shared__ __align__(16) unsigned char smem_raw[];
  float* const tiles = reinterpret_cast<float*>(smem_raw);  // [2][pb][tile]
  __shared__ float red[(kCpThreads / 32) * TAPS];

  const int tid = static_cast<int>(threadIdx.x), nthreads = static_cast<int>(blockDim.x);
  const int ihw = L.ih * L.iw, ohw = L.oh * L.ow;
  // Group k of unit u: channel, first sample, samples.
  auto group = [&](int u, int k, int& c, int& n0, int& np) {
    c = u / W.chunks;
    const int ck = u - c * W.chunks, end = std::min(ck * W.chunk + W.chunk, W.N);
    n0 = ck * W.chunk + k * L.pb;
    np = std::min(L.pb, end - n0);  // <= 0: the unit's last groups may be empty
  };
  auto issue = [&](int u, int k, int b) {
    int c, n0, np;
    group(u, k, c, n0, np);
    float* const dst = tiles + b * L.pb * L.tile + L.col0;
    const int n = np * L.rows * static_cast<int>(L.cpr.d);
    for (int i = tid; i < n; i += nthreads) {
      uint32_t t = static_cast<uint32_t>(i);
      const int q = static_cast<int>(L.cpr.split(t));
      const int y = static_cast<int>(L.rows_div.split(t));
      const int pl = static_cast<int>(t);
      cp_async_n(dst + pl * L.tile + cp_row(y + L.pad_t, TH, L.bs, L.pitch) + q * CE,
                 x + (int64_t(n0 + pl) * W.C + c) * ihw + y * L.iw + q * CE, 8);
    }
  };
  // The TH x R dy values of item it (zeros below the plane); the plane's rows are whole vectors.
  auto load_dy = [&](int it, int c, int n0, float (&g)[TH][R]) {
    uint32_t t = static_cast<uint32_t>(it);
    const int rest = static_cast<int>(L.items.split(t));
    const int pl = static_cast<int>(t);
    uint32_t yy = static_cast<uint32_t>(rest);
    const int st = static_cast<int>(L.strips_div.split(yy));
    const int y0 = static_cast<int>(yy) * TH;
    const float* const gp = gy + (int64_t(n0 + pl) * W.C + c) * ohw + y0 * L.ow + st * R;
#pragma unroll
    for (int b = 0; b < TH; ++b) {
      float4 v4 = float4{0.f, 0.f, 0.f, 0.f};
      if (y0 + b < L.oh) v4 = *reinterpret_cast<const float4*>(gp + b * L.ow);
      g[b][0] = v4.x, g[b][1] = v4.y, g[b][2] = v4.z, g[b][3] = v4.w;
    }
  };

  // Zero both buffers once: the halo and the pitch padding are never written again.
  {
    float4* const z = reinterpret_cast<float4*>(tiles);
    for (int i = tid; i < 2 * L.pb * L.tile / 4; i += nthreads) z[i] = float4{0.f, 0.f, 0.f, 0.f};
  }
  __syncthreads();
  int u = static_cast<int>(blockIdx.x), k = 0;
  if (u < W.units) issue(u, 0, 0);
  cp_async_commit();
  float v[TAPS];
#pragma unroll
  for (int i = 0; i < TAPS; ++i) v[i] = 0.f;

  for (int s = 0; u < W.units; ++s) {
    int un = u, kn = k + 1;
    if (kn == W.gpu) kn = 0, un += static_cast<int>(gridDim.x);
    // The next group's copies are in flight while this one computes.
    if (un < W.units) issue(un, kn, (s + 1) & 1);
    cp_async_commit();
    int c, n0, np;
    group(u, k, c, n0, np);
    const int nitems = std::max(np, 0) * static_cast<int>(L.items.d);
    float g[TH][R];
    if (tid < nitems) load_dy(tid, c, n0, g);  // in flight across the barrier
    cp_async_wait<1>();
    __syncthreads();

    const float* const tb = tiles + (s & 1) * L.pb * L.tile;
    for (int it = tid; it < nitems; it += nthreads) {
      if (it != tid) load_dy(it, c, n0, g);
      uint32_t t = static_cast<uint32_t>(it);
      const int rest = static_cast<int>(L.items.split(t));
      const int pl = static_cast<int>(t);
      uint32_t yy = static_cast<uint32_t>(rest);
      const int st = static_cast<int>(L.strips_div.split(yy));
      // Window row r of the item: staged row y0 + r, band y0 / TH + r / TH (y0 a multiple of TH).
      const float* const xb = tb + pl * L.tile + static_cast<int>(yy) * L.bs + st * R;
#pragma unroll
      for (int r = 0; r < NR; ++r) {
        const float* const xr = xb + (r / TH) * L.bs + (r % TH) * L.pitch;
        Raw16 w4[NB];
#pragma unroll
        for (int i = 0; i < NB; ++i) w4[i] = reinterpret_cast<const Raw16*>(xr)[i];
        float xv[NX];
#pragma unroll
        for (int cc = 0; cc < NX; ++cc) xv[cc] = raw_get<float>(w4[(LEAD + cc) / V], (LEAD + cc) % V);
#pragma unroll
        for (int b = 0; b < TH; ++b) {
          const int kh = r - b;  // dy row b meets window row r through filter row kh
          if (kh < 0 || kh >= K) continue;
#pragma unroll
          for (int kw = 0; kw < K; ++kw) {
#pragma unroll
            for (int o = 0; o < R; ++o) v[kh * K + kw] += g[b][o] * xv[o + kw];
          }
        }
      }
    }
    if (kn == 0) {  // the unit's last group: its partial, in a fixed order
      wgrad_block_sum<TAPS>(v, red, part + int64_t(u) * TAPS);
#pragma unroll
      for (int i = 0; i < TAPS; ++i) v[i] = 0.f;
    }
    // Every thread is done with buffer s & 1 (the next iteration copies into it).
    __syncthreads();
    u = un, k = kn;
  }
  cp_async_wait<0>();
}

}  // namespace convx::cuda
