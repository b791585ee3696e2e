// Register-tiled depthwise forward / data-grad for channels-last tensors (NHWC, NDHWC and the
// (N, L, C) layout of rank 1), channel multiplier 1, channels a multiple of the vector width.
//
// Each thread computes V channels (16 bytes of the tensor: 4 fp32, 8 fp16/bf16) of R
// consecutive outputs along W. It streams the input row segment once, as 16-byte vector loads,
// and applies each input vector to every output of its strip that it touches, so one load
// serves up to min(R, KW) taps. The filter is read in the opmath type, laid out [tap][channel]
// so that a warp's channel lanes read consecutive weights. A block is CB channel lanes x a tile
// of PY bands (of TH rows each, one thread per band) by PX strips: a thread loads each input row
// of its band once, and neighbouring bands of one block reuse each other's inputs in L1.
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

// Output rows per thread (a band): each input row segment is loaded once for the band and
// applied to every band row it meets, and the block's index arithmetic is shared by TH*R
// outputs. R*TH*V accumulators stay at 32 (nvcc -Xptxas -v: more need > 128 registers); filters of one row
// (1xK, rank 1) and the runtime-height 31x31 keep one row.
template <typename T, int KH, int KW>
constexpr int cl_band_rows() {
  if (KH <= 1) return 1;
  const int th = 32 / (cl_outputs_per_thread<KW>() * cl_vec_width<T>());
  return th < 1 ? 1 : (th > 4 ? 4 : th);
}

struct ClTile {
  int CB, PX, PY;  // channel lanes, strips along W, bands of rows; threads = CB * PX * PY
  bool i32;        // block indices fit in 32 bits
  int64_t chunks, tilesW, tilesH, blocks;
};

// A block: CB channel lanes x PY bands (of TH rows) x PX strips (of R outputs), as close to 256
// threads as the channel lanes allow (the launch rounds up to whole warps).
inline ClTile choose_cl_tile(const Plan& P, int V, int R, int TH) {
  ClTile L{};
  const int64_t groups = P.out_c / V;
  L.CB = static_cast<int>(groups <= 64 ? groups : 32);
  L.chunks = ceil_div(groups, L.CB);
  const int pix = std::max(1, 256 / L.CB);
  L.PY = static_cast<int>(std::min<int64_t>(ceil_div(P.q[1], TH), pix));
  L.PX = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(ceil_div(P.q[2], R), pix / L.PY)));
  L.tilesW = ceil_div(P.q[2], int64_t(L.PX) * R);
  L.tilesH = ceil_div(P.q[1], int64_t(L.PY) * TH);
  L.blocks = P.N * P.q[0] * L.tilesH * L.tilesW * L.chunks * P.phases;
  L.i32 = L.blocks <= int64_t(1) << 30;  // the launch caps the grid at 2^30 blocks
  return L;
}

inline unsigned cl_block_threads(const ClTile& L) {
  return static_cast<unsigned>(ceil_div(int64_t(L.CB) * L.PX * L.PY, 32) * 32);
}

// KH == 0: the filter height is read from the plan (a runtime loop, for tall filters; TH = 1).
template <typename T, int KH, int KW, int S, int R, int TH>
__global__ void __launch_bounds__(256)
cl_gather(const T* __restrict__ in, const at::opmath_type<T>* __restrict__ wt,
          const T* __restrict__ bias, T* __restrict__ out, const Plan P, const ClTile L) {
  static_assert(KH > 0 || TH == 1, "runtime filter heights take one row per thread");
  using acc_t = at::opmath_type<T>;
  constexpr int V = cl_vec_width<T>();
  constexpr int NX = (R - 1) * S + KW;
  const int tid = threadIdx.x;
  const int cl = tid % L.CB, p = tid / L.CB, px = p % L.PX, py = p / L.PX;
  const int kh_n = KH > 0 ? KH : P.k[1];
  const int nj = (TH - 1) * S + kh_n;  // input rows of a band
  for (int64_t b = blockIdx.x; b < L.blocks; b += gridDim.x) {
    int ph, chunk, twi, thi, qd;
    int64_t n;
    if (L.i32) {  // 32-bit divisions (a few instructions each, not a 64-bit division routine)
      uint32_t t = static_cast<uint32_t>(b);
      ph = static_cast<int>(t % uint32_t(P.phases)), t /= uint32_t(P.phases);
      chunk = static_cast<int>(t % uint32_t(L.chunks)), t /= uint32_t(L.chunks);
      twi = static_cast<int>(t % uint32_t(L.tilesW)), t /= uint32_t(L.tilesW);
      thi = static_cast<int>(t % uint32_t(L.tilesH)), t /= uint32_t(L.tilesH);
      qd = static_cast<int>(t % uint32_t(P.q[0])), n = t / uint32_t(P.q[0]);
    } else {
      int64_t t = b;
      ph = static_cast<int>(t % P.phases), t /= P.phases;
      chunk = static_cast<int>(t % L.chunks), t /= L.chunks;
      twi = static_cast<int>(t % L.tilesW), t /= L.tilesW;
      thi = static_cast<int>(t % L.tilesH), t /= L.tilesH;
      qd = static_cast<int>(t % P.q[0]), n = t / P.q[0];
    }
    const int pw = ph % P.os[2], phh = (ph / P.os[2]) % P.os[1], pd = ph / (P.os[2] * P.os[1]);
    const int64_t co0 = (int64_t(chunk) * L.CB + cl) * V;
    const int64_t qy0 = (int64_t(thi) * L.PY + py) * TH, qx0 = (int64_t(twi) * L.PX + px) * R;
    if (py >= L.PY || co0 >= P.out_c || qd >= P.qn[0][pd] || qy0 >= P.qn[1][phh] || qx0 >= P.qn[2][pw]) continue;

    acc_t acc[TH][R][V];
    {
      Pack<T, V> bv{};
      if (bias) bv = *reinterpret_cast<const Pack<T, V>*>(bias + co0);
#pragma unroll
      for (int t = 0; t < TH; ++t) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
#pragma unroll
          for (int v = 0; v < V; ++v) acc[t][r][v] = bias ? static_cast<acc_t>(bv.v[v]) : acc_t(0);
        }
      }
    }
    const int64_t iy = qy0 * S - P.pad[1][phh], ix = qx0 * S - P.pad[2][pw];
    const acc_t* wph = wt + ph * P.wphase + co0;
    for (int kd = 0; kd < P.k[0]; ++kd) {
      const int64_t id = int64_t(qd) * P.S[0] - P.pad[0][pd] + kd;
      if (id < 0 || id >= P.in[0]) continue;
      const T* plane = in + (n * P.in[0] + id) * P.in[1] * P.in[2] * P.in_c + co0;
      const acc_t* wd = wph + int64_t(kd) * kh_n * KW * P.wrows;
      // Input row iy + j: filter row j - t*S of band row t. Not unrolled: only the weight row
      // depends on j (register indices do not), and an unrolled loop loads every row at once.
#pragma unroll 1
      for (int j = 0; j < nj; ++j) {
        const int64_t ih = iy + j;
        if (ih < 0 || ih >= P.in[1]) continue;
        const T* row = plane + ih * P.in[2] * P.in_c;
#pragma unroll
        for (int c = 0; c < NX; ++c) {
          const int64_t iw = ix + c;
          Pack<T, V> xv{};
          if (iw >= 0 && iw < P.in[2]) xv = *reinterpret_cast<const Pack<T, V>*>(row + iw * P.in_c);
#pragma unroll
          for (int t = 0; t < TH; ++t) {
            const int kh = j - t * S;
            if (kh < 0 || kh >= kh_n) continue;
            const acc_t* wrow = wd + int64_t(kh) * KW * P.wrows;
#pragma unroll
            for (int r = 0; r < R; ++r) {
              const int kw = c - r * S;
              if (kw < 0 || kw >= KW) continue;
              const Pack<acc_t, V> wv = *reinterpret_cast<const Pack<acc_t, V>*>(wrow + kw * P.wrows);
#pragma unroll
              for (int v = 0; v < V; ++v) acc[t][r][v] += wv.v[v] * static_cast<acc_t>(xv.v[v]);
            }
          }
        }
      }
    }
    const int64_t od = int64_t(qd) * P.os[0] + P.r[0][pd];
#pragma unroll
    for (int t = 0; t < TH; ++t) {
      if (qy0 + t >= P.qn[1][phh]) break;
      const int64_t oy = (qy0 + t) * P.os[1] + P.r[1][phh];
      T* orow = out + ((n * P.out[0] + od) * P.out[1] + oy) * P.out[2] * P.out_c + co0;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        if (qx0 + r >= P.qn[2][pw]) break;
        Pack<T, V> o;
#pragma unroll
        for (int v = 0; v < V; ++v) o.v[v] = static_cast<T>(acc[t][r][v]);
        *reinterpret_cast<Pack<T, V>*>(orow + ((qx0 + r) * P.os[2] + P.r[2][pw]) * P.out_c) = o;
      }
    }
  }
}

}  // namespace convx::cuda
