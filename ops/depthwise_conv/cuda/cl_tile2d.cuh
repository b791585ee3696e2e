// Channels-last (NHWC) 2-D depthwise forward and stride-1 data-grad of square K x K filters at
// stride 1, multiplier 1, one phase: a register-blocked tile staged in shared memory. Dispatch
// instantiates K = 7 only, on 14 x 14 outputs, where it measured faster (cl_tile2d.cu; at 56 x 56
// and for 5 x 5 on 28 x 28 it was slower).
//
// Why: cl_gather gives each thread 4 channels x 8 outputs of one row and streams every filter
// row's input segment and weights from L1 (21 16-byte loads per 224 FMAs). Here a block stages a tile of TH + K - 1 input rows x TW + K - 1
// columns x CG 4-channel vectors by cp.async (zero-filled outside the image), plus the filter of
// its CG vectors in fp32, then each thread computes one 4-channel vector x M = 2 output rows x
// R = 7 consecutive outputs: per input row of its window it loads R + K - 1 vectors (each feeds
// up to K taps x M rows) and per (output row, tap) one weight vector that every lane of a warp
// shares (the warp's lanes are strips of the same channels: a broadcast). Per 14 outputs that is
// (M + K - 1) (R + K - 1) + M K K shared loads for 14 K K FMAs x 4 channels (7 x 7: 14.4 loads
// per output against cl_gather's 18.4 from L1). The cost: a warp's lanes are pixels, so its copies
// and stores touch 8-32 cache lines each, and a block computes only after its whole tile has
// arrived (on 56 x 56 planes L2-request- and latency-bound: cl_tile2d.cu).
//
// Shared memory: the filter [CG][K*K] fp32 vectors (lanes of one channel vector read the same
// address, those of the next one 16 K K bytes further: another bank group), then the input planes
// [CG][IH][pitch] vectors of T. A warp's lanes are (sx, sy) strips, sx fastest: lanes sx read
// columns 7 sx + c, 7 odd, so 8 consecutive strips of a row fall in 8 different 16-byte bank
// groups; the host picks pitch and plane (padding) so that lanes of other rows / vectors in the
// same quarter-warp miss each other too (cl_tile2d_conflicts).
#pragma once

#include "ops/depthwise_conv/cuda/cl_tiled.cuh"
#include "ops/depthwise_conv/cuda/cp_async.cuh"
#include "ops/depthwise_conv/cuda/plan.cuh"

#include <ATen/OpMathType.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace convx::cuda {

constexpr int kTile2dR = 7, kTile2dM = 2;  // outputs per thread along W, output rows per thread
constexpr int kTile2dThreads = 256;        // at most, per block

struct ClTile2d {
  int64_t N, blocks;
  int H, W, C, OH, OW, padH, padW;  // read / written sizes, channels, padding (negative allowed)
  int cvec, CG, SX, SY, TH, TW;     // channel vectors; per block: vectors, strips, output tile
  int IH, IW, pitch, plane;         // staged rows, columns, row pitch and plane size (vectors)
  int chunks, tilesX, tilesY, threads;
  bool flip;  // the data-grad: the filter rotated 180 degrees
};

// Bytes of dynamic shared memory: the fp32 filter, then the staged planes.
template <typename T, int K>
int64_t cl_tile2d_smem_bytes(const ClTile2d& L) {
  return int64_t(L.CG) * K * K * 16 + int64_t(L.CG) * L.plane * 4 * int64_t(sizeof(T));
}

// Shared-memory wavefronts beyond one per 128 bytes of the compute loop's input loads (the first
// column of a window row, every warp): 16-byte vectors are served 8 lanes at a time (bank groups
// = address mod 8), 8-byte vectors 16 at a time (mod 16).
inline int64_t cl_tile2d_conflicts(const ClTile2d& L, int esz) {
  const int ub = 4 * esz, G = 128 / ub, lanes = G;
  int64_t extra = 0;
  const int S = L.SX * L.SY, active = L.CG * S;
  for (int t0 = 0; t0 < active; t0 += lanes) {
    int64_t addr[16];
    int n = 0;
    for (int t = t0; t < std::min(active, t0 + lanes); ++t) {
      const int cg = t / S, s = t % S, sx = s % L.SX, sy = s / L.SX;
      addr[n++] = int64_t(cg) * L.plane + int64_t(sy) * kTile2dM * L.pitch + sx * kTile2dR;
    }
    int worst = 1;
    for (int g = 0; g < G; ++g) {
      int distinct = 0;
      for (int i = 0; i < n; ++i) {
        if (addr[i] % G != g) continue;
        bool seen = false;
        for (int j = 0; j < i; ++j) seen = seen || addr[j] == addr[i];
        distinct += seen ? 0 : 1;
      }
      worst = std::max(worst, distinct);
    }
    extra += worst - 1;
  }
  return extra;
}

// The tile's problem from a one-phase 2-D plan (forward, or the stride-1 data-grad with flip):
// K x K at stride 1, multiplier 1, channels a multiple of 4, sizes below 2^30; CG channel vectors
// and SY strips of M rows per block (threads CG x SX x SY <= 256). false when not covered.
inline bool cl_tile2d_plan(ClTile2d& L, const Plan& P, bool flip, int K, int CG, int SY, int esz) {
  constexpr int64_t lim = int64_t(1) << 30;
  if (P.phases != 1 || P.k[0] != 1 || P.in[0] != 1 || P.out[0] != 1 || P.in_div != 1 || P.J != 1 ||
      P.in_c != P.out_c || P.k[1] != K || P.k[2] != K || P.S[1] != 1 || P.S[2] != 1 || P.out_c % 4 != 0 ||
      P.in_c >= (int64_t(1) << 24) || P.in[1] >= lim || P.in[2] >= lim || P.out[1] >= lim || P.out[2] >= lim ||
      P.N <= 0 || P.out[1] <= 0 || P.out[2] <= 0)
    return false;
  L = ClTile2d{};
  L.N = P.N;
  L.H = static_cast<int>(P.in[1]), L.W = static_cast<int>(P.in[2]), L.C = static_cast<int>(P.in_c);
  L.OH = static_cast<int>(P.out[1]), L.OW = static_cast<int>(P.out[2]);
  L.padH = P.pad[1][0], L.padW = P.pad[2][0];
  L.flip = flip;
  L.cvec = L.C / 4;
  L.CG = std::min(CG, L.cvec);
  L.SX = static_cast<int>(std::min<int64_t>(8, ceil_div(L.OW, kTile2dR)));
  L.SY = static_cast<int>(std::min<int64_t>(SY, ceil_div(L.OH, kTile2dM)));
  if (L.CG < 1 || L.SY < 1 || int64_t(L.CG) * L.SX * L.SY > kTile2dThreads) return false;
  L.TW = L.SX * kTile2dR, L.TH = L.SY * kTile2dM;
  L.IW = L.TW + K - 1, L.IH = L.TH + K - 1;
  L.threads = (L.CG * L.SX * L.SY + 31) / 32 * 32;
  L.chunks = (L.cvec + L.CG - 1) / L.CG;
  L.tilesX = static_cast<int>(ceil_div(L.OW, L.TW)), L.tilesY = static_cast<int>(ceil_div(L.OH, L.TH));
  L.blocks = L.N * L.chunks * L.tilesX * L.tilesY;
  if (L.blocks >= lim) return false;
  // The padding with the fewest bank conflicts (the smallest on a tie).
  ClTile2d best = L;
  int64_t best_cost = -1;
  const int g = 128 / (4 * esz);
  for (int dp = 0; dp < g; ++dp) {
    for (int dq = 0; dq < g; ++dq) {
      ClTile2d t = L;
      t.pitch = L.IW + dp;
      t.plane = L.IH * t.pitch + dq;
      const int64_t cost = cl_tile2d_conflicts(t, esz);
      if (best_cost < 0 || cost < best_cost) best = t, best_cost = cost;
    }
  }
  L = best;
  return true;
}

template <typename T, int K>
__global__ void __launch_bounds__(kTile2dThreads, 2)
cl_tile2d(const T* __restrict__ in, const T* __restrict__ wt, const T* __restrict__ bias, T* __restrict__ out,
          const ClTile2d L) {
  using acc_t = at::opmath_type<T>;
  using Vec = Pack<T, 4>;
  constexpr int R = kTile2dR, M = kTile2dM, NX = R + K - 1, KK = K * K;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  float4* wsm = reinterpret_cast<float4*>(smem_raw);
  Vec* xsm = reinterpret_cast<Vec*>(smem_raw + int64_t(L.CG) * KK * 16);
  const int tid = threadIdx.x;

  int64_t b = blockIdx.x;
  const int tx = static_cast<int>(b % L.tilesX);
  b /= L.tilesX;
  const int ty = static_cast<int>(b % L.tilesY);
  b /= L.tilesY;
  const int chunk = static_cast<int>(b % L.chunks);
  const int64_t n = b / L.chunks;
  const int cv0 = chunk * L.CG;  // the block's first channel vector

  // The input tile: rows iy0 + yy, columns ix0 + xx (yy < IH, xx < IW), vectors cv0 + cg; a
  // thread takes fixed (cg, xx) entries and walks them down the rows (no division per copy).
  const int iy0 = ty * L.TH - L.padH, ix0 = tx * L.TW - L.padW;
  const int64_t rs = int64_t(L.W) * L.C;  // elements per input row
  const T* xin = in + n * L.H * rs;
  for (int e = tid; e < L.CG * L.IW; e += L.threads) {
    const int cg = e % L.CG, xx = e / L.CG;
    const int ix = ix0 + xx, cv = cv0 + cg;
    const bool colok = ix >= 0 && ix < L.W && cv < L.cvec;
    const T* src = xin + int64_t(colok ? ix : 0) * L.C + int64_t(colok ? cv : 0) * 4;
    Vec* dst = xsm + int64_t(cg) * L.plane + xx;
    for (int yy = 0; yy < L.IH; ++yy, dst += L.pitch) {
      const int iy = iy0 + yy;
      const bool ok = colok && iy >= 0 && iy < L.H;
      const T* s = ok ? src + int64_t(iy) * rs : in;
      if constexpr (sizeof(Vec) == 16) {
        cp_async16(dst, s, ok ? 16 : 0);  // zero-filled outside the image
      } else if (ok) {
        cp_async_n(dst, s, static_cast<int>(sizeof(Vec)));
      } else {
        *dst = Vec{};
      }
    }
  }
  cp_async_commit();
  // The filter of the block's vectors in fp32, [cg][tap] (rotated for the data-grad), while the
  // copies fly; channels past C read zero.
  for (int i = tid; i < L.CG * KK * 4; i += L.threads) {
    const int v = i % 4, tap = (i / 4) % KK, cg = i / (4 * KK);
    const int64_t c = int64_t(cv0 + cg) * 4 + v;
    const float wv = c < L.C ? static_cast<float>(wt[c * KK + (L.flip ? KK - 1 - tap : tap)]) : 0.f;
    reinterpret_cast<float*>(wsm)[i] = wv;
  }
  cp_async_wait<0>();
  __syncthreads();

  const int S = L.SX * L.SY;
  if (tid >= L.CG * S) return;
  const int cg = tid / S, s = tid % S, sx = s % L.SX, sy = s / L.SX;
  const int cv = cv0 + cg;
  const int oy0 = ty * L.TH + sy * M, ox0 = tx * L.TW + sx * R;
  if (cv >= L.cvec || oy0 >= L.OH || ox0 >= L.OW) return;

  acc_t acc[M][R][4];
  {
    Vec bv{};
    if (bias) bv = *reinterpret_cast<const Vec*>(bias + int64_t(cv) * 4);
#pragma unroll
    for (int m = 0; m < M; ++m) {
#pragma unroll
      for (int r = 0; r < R; ++r) {
#pragma unroll
        for (int v = 0; v < 4; ++v) acc[m][r][v] = bias ? static_cast<acc_t>(bv.v[v]) : acc_t(0);
      }
    }
  }
  const float4* wc = wsm + cg * KK;
  const Vec* xr = xsm + int64_t(cg) * L.plane + sy * M * L.pitch + sx * R;
#pragma unroll
  for (int j = 0; j < M + K - 1; ++j, xr += L.pitch) {
    // Window row j: its NX vectors, each feeding the taps of up to M output rows.
    acc_t x[NX][4];
#pragma unroll
    for (int c = 0; c < NX; ++c) {
      const Vec p = xr[c];
#pragma unroll
      for (int v = 0; v < 4; ++v) x[c][v] = static_cast<acc_t>(p.v[v]);
    }
#pragma unroll
    for (int m = 0; m < M; ++m) {
      const int kh = j - m;
      if (kh < 0 || kh >= K) continue;
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const float4 w = wc[kh * K + k];
#pragma unroll
        for (int r = 0; r < R; ++r) {
          acc[m][r][0] += w.x * x[r + k][0];
          acc[m][r][1] += w.y * x[r + k][1];
          acc[m][r][2] += w.z * x[r + k][2];
          acc[m][r][3] += w.w * x[r + k][3];
        }
      }
    }
  }

  T* o = out + ((n * L.OH + oy0) * L.OW + ox0) * L.C + int64_t(cv) * 4;
#pragma unroll
  for (int m = 0; m < M; ++m) {
    if (oy0 + m >= L.OH) break;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (ox0 + r >= L.OW) break;
      Vec p;
#pragma unroll
      for (int v = 0; v < 4; ++v) p.v[v] = static_cast<T>(acc[m][r][v]);
      *reinterpret_cast<Vec*>(o + (int64_t(m) * L.OW + r) * L.C) = p;
    }
  }
}

}  // namespace convx::cuda
