// Register-tiled depthwise forward / data-grad for channels-last tensors (NHWC, NDHWC and the
// (N, L, C) layout of rank 1), channel multiplier 1, channels a multiple of the vector width.
//
// Each thread computes V channels (16 bytes of the tensor: 4 fp32, 8 fp16/bf16) of R
// consecutive outputs along W. It streams the input row segment once, as 16-byte vector loads,
// and applies each input vector to every output of its strip that it touches, so one load
// serves up to min(R, KW) taps. The filter is read in the opmath type, laid out [tap][channel]
// so that a warp's channel lanes read consecutive weights. A block is CB channel lanes x a tile
// of PY rows by PX strips: neighbouring rows of one block reuse each other's inputs in L1.
#pragma once

#include "ops/depthwise_conv/cuda/plan.cuh"

#include <ATen/OpMathType.h>

#include <algorithm>

namespace convx::cuda {

template <typename T>
constexpr int cl_vec_width() {
  return sizeof(T) >= 8 ? 2 : (sizeof(T) == 4 ? 4 : 8);
}

template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

// Outputs per thread along W.
template <int KW>
constexpr int cl_outputs_per_thread() {
  return KW >= 15 ? 2 : 4;
}

struct ClTile {
  int CB, PX, PY;  // channel lanes, strips along W, rows; blockDim = CB * PX * PY
  int64_t chunks, tilesW, tilesH, blocks;
};

inline ClTile choose_cl_tile(const Plan& P, int V, int R) {
  ClTile L{};
  const int64_t groups = P.out_c / V;
  L.CB = static_cast<int>(groups <= 64 ? groups : 32);
  L.chunks = ceil_div(groups, L.CB);
  const int pix = std::max(1, 256 / L.CB);
  L.PY = static_cast<int>(std::min<int64_t>(P.q[1], std::min(4, pix)));
  L.PX = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(ceil_div(P.q[2], R), pix / L.PY)));
  L.tilesW = ceil_div(P.q[2], int64_t(L.PX) * R);
  L.tilesH = ceil_div(P.q[1], L.PY);
  L.blocks = P.N * P.q[0] * L.tilesH * L.tilesW * L.chunks * P.phases;
  return L;
}

// KH == 0: the filter height is read from the plan (a runtime loop, for tall filters).
template <typename T, int KH, int KW, int S, int R>
__global__ void __launch_bounds__(256)
cl_gather(const T* __restrict__ in, const at::opmath_type<T>* __restrict__ wt,
          const T* __restrict__ bias, T* __restrict__ out, const Plan P, const ClTile L) {
  using acc_t = at::opmath_type<T>;
  constexpr int V = cl_vec_width<T>();
  constexpr int NX = (R - 1) * S + KW;
  const int tid = threadIdx.x;
  const int cl = tid % L.CB, p = tid / L.CB, px = p % L.PX, py = p / L.PX;
  const int kh_n = KH > 0 ? KH : P.k[1];
  for (int64_t b = blockIdx.x; b < L.blocks; b += gridDim.x) {
    int64_t t = b;
    const int ph = static_cast<int>(t % P.phases);
    t /= P.phases;
    const int64_t chunk = t % L.chunks;
    t /= L.chunks;
    const int64_t twi = t % L.tilesW;
    t /= L.tilesW;
    const int64_t thi = t % L.tilesH;
    t /= L.tilesH;
    const int64_t qd = t % P.q[0], n = t / P.q[0];
    const int pw = ph % P.os[2], phh = (ph / P.os[2]) % P.os[1], pd = ph / (P.os[2] * P.os[1]);
    const int64_t co0 = (chunk * L.CB + cl) * V;
    const int64_t qy = thi * L.PY + py, qx0 = (twi * L.PX + px) * R;
    if (py >= L.PY || co0 >= P.out_c || qd >= P.qn[0][pd] || qy >= P.qn[1][phh] || qx0 >= P.qn[2][pw]) continue;

    acc_t acc[R][V];
    {
      Pack<T, V> bv{};
      if (bias) bv = *reinterpret_cast<const Pack<T, V>*>(bias + co0);
#pragma unroll
      for (int r = 0; r < R; ++r) {
#pragma unroll
        for (int v = 0; v < V; ++v) acc[r][v] = bias ? static_cast<acc_t>(bv.v[v]) : acc_t(0);
      }
    }
    const int64_t iy = qy * S - P.pad[1][phh], ix = qx0 * S - P.pad[2][pw];
    const acc_t* wph = wt + ph * P.wphase + co0;
    for (int kd = 0; kd < P.k[0]; ++kd) {
      const int64_t id = qd * P.S[0] - P.pad[0][pd] + kd;
      if (id < 0 || id >= P.in[0]) continue;
#pragma unroll(KH > 0 ? KH : 1)
      for (int kh = 0; kh < kh_n; ++kh) {
        const int64_t ih = iy + kh;
        if (ih < 0 || ih >= P.in[1]) continue;
        const T* row = in + ((n * P.in[0] + id) * P.in[1] + ih) * P.in[2] * P.in_c + co0;
        const acc_t* wrow = wph + (int64_t(kd) * kh_n + kh) * KW * P.wrows;
#pragma unroll
        for (int c = 0; c < NX; ++c) {
          const int64_t iw = ix + c;
          Pack<T, V> xv{};
          if (iw >= 0 && iw < P.in[2]) xv = *reinterpret_cast<const Pack<T, V>*>(row + iw * P.in_c);
#pragma unroll
          for (int r = 0; r < R; ++r) {
            const int kw = c - r * S;
            if (kw < 0 || kw >= KW) continue;
            const Pack<acc_t, V> wv = *reinterpret_cast<const Pack<acc_t, V>*>(wrow + kw * P.wrows);
#pragma unroll
            for (int v = 0; v < V; ++v) acc[r][v] += wv.v[v] * static_cast<acc_t>(xv.v[v]);
          }
        }
      }
    }
    const int64_t od = qd * P.os[0] + P.r[0][pd], oy = qy * P.os[1] + P.r[1][phh];
    T* orow = out + ((n * P.out[0] + od) * P.out[1] + oy) * P.out[2] * P.out_c + co0;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (qx0 + r >= P.qn[2][pw]) break;
      Pack<T, V> o;
#pragma unroll
      for (int v = 0; v < V; ++v) o.v[v] = static_cast<T>(acc[r][v]);
      *reinterpret_cast<Pack<T, V>*>(orow + ((qx0 + r) * P.os[2] + P.r[2][pw]) * P.out_c) = o;
    }
  }
}

}  // namespace convx::cuda
