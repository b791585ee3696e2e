// Channels-last (NHWC) data-grad of a stride-2 depthwise convolution (the depthwise transposed
// convolution, a learned 2x upsampling) writing both column phases of an output row at once.
//
// The data-grad's plan (plan.cuh) has 2 x 2 phases: output (2q + ry, 2q + rx) is the
// correlation of the input at (q - pad[ry], q - pad[rx]) with the 2 x 2 sub-filter of phase
// (ry, rx); pads (1, 0) (k4 s2 p1, k3 s2 p1). cl_gather computes one phase per block, so each
// phase's block re-reads the input rows the other three read, and a thread's R outputs lie two
// pixels apart. Here a thread owns V channels, one row phase ry, R consecutive q-columns and TH
// consecutive q-rows: it loads the (TH + 1) input rows x (R + 2) columns its outputs read into
// registers at once (all loads in flight together, zeros outside the input), then emits, per
// q-row, the 2R consecutive output pixels of both column phases. Its row-phase twin (ry ^ 1) is
// the next group of lanes of the same block, so the input rows the two share are L1 hits.
//
// Window column c holds input column qx0 - 1 + c; output q-column j of column phase rx reads
// columns j + rx + tx (tx < 2, pad[rx] = 1 - rx). Window row i holds input row qy0 - pad[ry] + i;
// q-row i reads rows i + ty.
//
// Block: CB channel lanes (fastest) x 2 row phases x PX strips x PY bands; one tile per block.
// 64-bit tensor offsets; block and tile counts checked on the host (< 2^31 blocks).
#pragma once

#include "ops/depthwise_conv/cuda/cl_tiled.cuh"  // Pack
#include "ops/depthwise_conv/cuda/plan.cuh"

#include <ATen/OpMathType.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace convx::cuda {

struct ClS2Tile {
  int CB, PX, PY;  // channel lanes, strips (R q-columns), bands (TH q-rows)
  int64_t chunks, tilesW, tilesH, blocks;
};

// Whether the plan is the stride-2 data-grad this kernel covers: 2-D (no depth), multiplier 1,
// both dims 2 phases of 2-tap sub-filters with pads (1, 0).
inline bool cl_s2_covers(const Plan& P) {
  if (P.phases != 4 || P.os[0] != 1 || P.in[0] != 1 || P.out[0] != 1 || P.k[0] != 1 || P.J != 1 || P.in_div != 1)
    return false;
  for (int d = 1; d < 3; ++d) {
    if (P.os[d] != 2 || P.S[d] != 1 || P.k[d] != 2 || P.pad[d][0] != 1 || P.pad[d][1] != 0 || P.r[d][1] != 1)
      return false;
  }
  return true;
}

// Up to 32 channel lanes (wider channel counts in chunks), then strips and bands to about 256
// threads.
inline ClS2Tile choose_cl_s2_tile(const Plan& P, int V, int R, int TH) {
  ClS2Tile L{};
  const int64_t groups = P.out_c / V;
  L.CB = static_cast<int>(std::min<int64_t>(groups, 32));
  L.chunks = ceil_div(groups, L.CB);
  const int pix = std::max(1, 256 / (2 * L.CB));
  const int64_t strips = ceil_div(P.q[2], R), bands = ceil_div(P.q[1], TH);
  L.PX = static_cast<int>(std::min<int64_t>(strips, pix));
  L.PY = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(bands, pix / L.PX)));
  L.tilesW = ceil_div(strips, L.PX);
  L.tilesH = ceil_div(bands, L.PY);
  L.blocks = P.N * L.tilesH * L.tilesW * L.chunks;
  return L;
}

inline unsigned cl_s2_threads(const ClS2Tile& L) {
  return static_cast<unsigned>(ceil_div(int64_t(L.CB) * 2 * L.PX * L.PY, 32) * 32);
}

// w: the prepared sub-filters [phase = ry * 2 + rx][tap = ty * 2 + tx][channel] (opmath type).
template <typename T, int V, int R, int TH, int MINB>
__global__ void __launch_bounds__(256, MINB)
cl_stride2_dgrad(const T* __restrict__ in, const at::opmath_type<T>* __restrict__ w, const T* __restrict__ bias,
                 T* __restrict__ out, const Plan P, const ClS2Tile L) {
  using acc_t = at::opmath_type<T>;
  constexpr int NW = sizeof(T) * V / 4;  // 32-bit words per vector
  using Raw = Pack<uint32_t, NW>;
  constexpr int NC = R + 2, NR = TH + 1;
  const int tid = threadIdx.x;
  const int cl = tid % L.CB, p = tid / L.CB, ry = p % 2, px = (p / 2) % L.PX, py = p / (2 * L.PX);
  int64_t b = blockIdx.x;
  const int64_t chunk = b % L.chunks;
  b /= L.chunks;
  const int64_t twi = b % L.tilesW;
  b /= L.tilesW;
  const int64_t thi = b % L.tilesH, n = b / L.tilesH;
  const int64_t c0 = (chunk * L.CB + cl) * V;
  const int64_t qx0 = (twi * L.PX + px) * R, qy0 = (thi * L.PY + py) * TH;
  if (py >= L.PY || c0 >= P.out_c || qx0 >= P.q[2] || qy0 >= P.qn[1][ry]) return;
  const int64_t C = P.out_c, IH = P.in[1], IW = P.in[2], OH = P.out[1], OW = P.out[2];

  // The input window, as loaded (converted when used).
  Raw x[NR][NC];
  const int64_t iy0 = qy0 - P.pad[1][ry], ix0 = qx0 - 1;
#pragma unroll
  for (int i = 0; i < NR; ++i) {
    const int64_t iy = iy0 + i;
    const bool rok = iy >= 0 && iy < IH;
    const T* row = in + ((n * IH + iy) * IW + ix0) * C + c0;
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      x[i][c] = Raw{};
      if (rok && ix0 + c >= 0 && ix0 + c < IW) x[i][c] = *reinterpret_cast<const Raw*>(row + c * C);
    }
  }
  // This row phase's 8 taps (both column phases).
  acc_t wv[2][4][V];
#pragma unroll
  for (int rx = 0; rx < 2; ++rx) {
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      const Pack<acc_t, V> v = *reinterpret_cast<const Pack<acc_t, V>*>(w + (ry * 2 + rx) * P.wphase + t * P.wrows + c0);
#pragma unroll
      for (int e = 0; e < V; ++e) wv[rx][t][e] = v.v[e];
    }
  }
  acc_t b0[V];
  {
    Pack<T, V> bv{};
    if (bias) bv = *reinterpret_cast<const Pack<T, V>*>(bias + c0);
#pragma unroll
    for (int e = 0; e < V; ++e) b0[e] = bias ? static_cast<acc_t>(bv.v[e]) : acc_t(0);
  }
#pragma unroll
  for (int i = 0; i < TH; ++i) {
    const int64_t oy = 2 * (qy0 + i) + ry;
    if (oy >= OH) break;
    acc_t acc[2 * R][V];
#pragma unroll
    for (int o = 0; o < 2 * R; ++o) {
#pragma unroll
      for (int e = 0; e < V; ++e) acc[o][e] = b0[e];
    }
#pragma unroll
    for (int ty = 0; ty < 2; ++ty) {
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        Pack<T, V> xv;
        memcpy(&xv, &x[i + ty][c], sizeof(xv));
        acc_t xf[V];
#pragma unroll
        for (int e = 0; e < V; ++e) xf[e] = static_cast<acc_t>(xv.v[e]);
#pragma unroll
        for (int j = 0; j < R; ++j) {
#pragma unroll
          for (int rx = 0; rx < 2; ++rx) {
            const int tx = c - j - rx;
            if (tx < 0 || tx > 1) continue;
#pragma unroll
            for (int e = 0; e < V; ++e) acc[2 * j + rx][e] += wv[rx][ty * 2 + tx][e] * xf[e];
          }
        }
      }
    }
    T* orow = out + ((n * OH + oy) * OW + 2 * qx0) * C + c0;
#pragma unroll
    for (int o = 0; o < 2 * R; ++o) {
      if (2 * qx0 + o >= OW) break;
      Pack<T, V> ov;
#pragma unroll
      for (int e = 0; e < V; ++e) ov.v[e] = static_cast<T>(acc[o][e]);
      *reinterpret_cast<Pack<T, V>*>(orow + o * C) = ov;
    }
  }
}

}  // namespace convx::cuda
