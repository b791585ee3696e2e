// NCHW weight-grad of 7 x 7 filters at stride 1, multiplier 1, fp16 / bf16 on tensor cores with
// the reduction over ROWS, deterministic (tcw7r_nc).
//
// Why: tcw2_nc (tc_wgrad2d.cuh) reduces over 16 input columns per m16n8k16 step, so the column tap
// must shift one operand: its B fragment is the dy row shifted by the tap, 4 shared loads and 2
// funnel shifts per step, plus an ldmatrix.x2 for A: ~6 shared-memory wavefronts per step for 49
// useful of 128 products. ConvNeXt-56 ran at 73.7 us against 26 us for reading x and dy once
// (H100, bench/results/h100/session14/lead_start_kernels.log), and neither a deeper ring of
// stages nor other tile sizes moved it (session 14, wgnc_call1_ab.log). Here the step reduces over
// 16 ROWS, where a shift is only a different row address for ldmatrix:
//     D_i[m][n] += sum_k X[Y0 + k][s + m] * DY[Y0 + k + ph - i][c + n]      (k < 16, m < 16, n < 8)
// A = 16 X rows x 16 columns (ldmatrix.x4.trans of the staged rows), B_i = 16 dy rows x 8 columns
// (ldmatrix.x4.trans gives B_i and B_{i+1}), D_i[m][n] is tap (i, m - n - dl)'s share, dl =
// c - s - pw in {0, 1, 2}: every D entry with 0 <= m - n - dl <= 6 counts (56 of 128, 7 of the 16
// columns m per dy column n). One A serves the 7 tap rows (7 steps, 7 accumulators), so a step
// costs ~2.9 shared wavefronts and 2 ldmatrix / MMA instructions, and no shifts.
//
// Tiles: tr output rows (the plane's rows split evenly, at most 64) x 64 dy columns (from c0 =
// 64 t - 8 + e) of one (sample, channel) plane. Staged, in rows of 72 values (9 16-byte units,
// odd: ldmatrix's 8 rows on 8 bank groups): X rows h0 - ph + [0, 16 q) (16 q >= tr + 6; rows past
// tr + 6 and off the tensor zero), columns 64 t - 8 + [0, 72); dy rows h0 - 6 + [0, 16 q + 6) (rows
// outside the tile or the tensor zero: they belong to other tiles), columns c0 + [0, 64) (off the
// tensor zero). e = pw + dl is chosen in pw ... pw + 2 with the most factors of two (the dy
// vectors' alignment: ConvNeXt's pw 3 gives e 4, 8-byte copies). The dy columns c0 + 8 b + n
// (block b < 8) meet the X columns 64 t - 8 + 8 b + m: s = c - e, aligned for ldmatrix. Warp w
// owns block b = w and runs the q row blocks of the tile: one A, 4 ldmatrix.x4.trans for the B_i
// (the last repeats tap row 6), 7 MMAs each.
//
// Deterministic: a block is one channel x a fixed chunk of its tiles (from the shapes alone); the
// accumulators in a fixed order (tiles, row blocks), the warps' D through shared memory summed per
// tap in a fixed order (warps, then n), the chunks' partials in chunk order by the channel's last
// block (tc_wgrad1d.cuh's tcw_last_block / tcw_sum_chunks): bitwise repeatable, no float atomics.
#pragma once

#include "ops/depthwise_conv/cuda/cp_async.cuh"
#include "ops/depthwise_conv/cuda/mma16.cuh"
#include "ops/depthwise_conv/cuda/plan.cuh"
#include "ops/depthwise_conv/cuda/tc_wgrad1d.cuh"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace convx::cuda {

constexpr int kTcw7rThreads = 256, kTcw7rWarps = 8;
constexpr int kTcw7rRow = 72;   // staged row stride (values)
constexpr int kTcw7rRows = 64;  // most output rows per tile

struct Tcw7r {
  int H, W, Ho, Wo, ph, pw;
  int tr, q;                 // output rows per tile; 16-row blocks of X rows per tile (16 q >= tr + 6)
  int e, dl;                 // the tile's dy columns start at 64 t - 8 + e; tap column j = m - n - dl
  int xv, dv;                // values per staged vector: x, dy (8, 4, 2 or 1)
  uint32_t th, tw;           // tiles along rows and columns
  uint32_t tiles, chunk, chunks;
  int C;
  int ps;                    // values per stage: 16 q X rows, then 16 q + 6 dy rows
};

// Stride 1, multiplier 1, 2-D 7 x 7, padding 0 ... 6, N > 0, rows wider than 32, a plane below
// 2^31 values; about `target` blocks (the chunks from the shapes alone). xa / ga: the addresses of
// x and dy (the staging vectors).
inline bool tcw7r_plan(Tcw7r& L, const Plan& P, int64_t target, uintptr_t xa, uintptr_t ga) {
  if (P.phases != 1 || P.S[0] != 1 || P.S[1] != 1 || P.S[2] != 1 || P.in_div != 1 || P.J != 1) return false;
  if (P.k[0] != 1 || P.in[0] != 1 || P.out[0] != 1 || P.pad[0][0] != 0) return false;
  if (P.k[1] != 7 || P.k[2] != 7 || P.N <= 0 || P.out_c <= 0 || P.in[2] <= 32) return false;
  for (int d = 1; d < 3; ++d) {
    if (P.pad[d][0] < 0 || P.pad[d][0] > 6 || P.out[d] <= 0) return false;
  }
  constexpr int64_t lim = int64_t(1) << 31;
  if (P.in[1] * P.in[2] >= lim || P.out[1] * P.out[2] >= lim || P.out_c >= lim) return false;
  L.H = static_cast<int>(P.in[1]), L.W = static_cast<int>(P.in[2]);
  L.Ho = static_cast<int>(P.out[1]), L.Wo = static_cast<int>(P.out[2]);
  L.ph = P.pad[1][0], L.pw = P.pad[2][0];
  // e in pw ... pw + 2 with the most factors of two (8 counts as 0: a whole vector)
  auto twos = [](int v) { return v % 8 == 0 ? 8 : v & -v; };
  L.e = L.pw;
  for (int e = L.pw + 1; e <= L.pw + 2; ++e) {
    if (twos(e) > twos(L.e)) L.e = e;
  }
  L.dl = L.e - L.pw;
  auto widest = [](int len, int align, uintptr_t addr) {  // vector values dividing all three
    for (int v = 8; v > 1; v /= 2) {
      if (len % v == 0 && align % v == 0 && addr % (2 * uintptr_t(v)) == 0) return v;
    }
    return 1;
  };
  L.xv = widest(L.W, 8, xa);
  L.dv = widest(L.Wo, L.e % 8 == 0 ? 8 : L.e, ga);
  const int64_t th = ceil_div(P.out[1], kTcw7rRows), tr = ceil_div(P.out[1], th);
  const int64_t tw = ceil_div(P.out[2] + 8 - L.e, 64);
  const int64_t tiles = P.N * th * tw;
  if (tiles >= lim) return false;
  int64_t chunks = std::clamp<int64_t>(ceil_div(target, P.out_c), 1, tiles);
  const int64_t chunk = ceil_div(tiles, chunks);
  chunks = ceil_div(tiles, chunk);
  if (P.out_c * chunks >= lim) return false;
  L.tr = static_cast<int>(tr);
  L.q = static_cast<int>(ceil_div(tr + 6, 16));
  L.th = static_cast<uint32_t>(th), L.tw = static_cast<uint32_t>(tw);
  L.tiles = static_cast<uint32_t>(tiles);
  L.chunk = static_cast<uint32_t>(chunk);
  L.chunks = static_cast<uint32_t>(chunks);
  L.C = static_cast<int>(P.out_c);
  L.ps = (32 * L.q + 6) * kTcw7rRow;
  return true;
}

// Dynamic shared memory: S stages, at least the warps' D (7 x 128 floats each) and a flag.
template <int S>
__host__ __device__ inline int tcw7r_smem_bytes(const Tcw7r& L) {
  return std::max(S * 2 * L.ps, 4 * (kTcw7rWarps * 7 * 128 + 4));
}
template <int S>
__host__ __device__ constexpr int tcw7r_smem_max() {  // tiles of 64 rows: q = 5
  return S * 2 * (32 * 5 + 6) * kTcw7rRow > 4 * (kTcw7rWarps * 7 * 128 + 4) ? S * 2 * (32 * 5 + 6) * kTcw7rRow
                                                                            : 4 * (kTcw7rWarps * 7 * 128 + 4);
}

// x: [N, C, H, W], gy: [N, C, Ho, Wo]. Writes gw [C][49]: directly when L.chunks == 1, else through
// part [C][chunks][49] (fp32), summed by the channel's last block (counters: C, zeroed). Grid:
// C * chunks blocks of kTcw7rThreads (a channel's chunks adjacent); dynamic shared memory
// tcw7r_smem_bytes<S>(L). Tiles: columns fastest, then row bands, then samples. Ring of S stages:
// at tile i, after its copies landed and the barrier, tile i + S - 1's copies go to the buffer
// tile i - 1 used.
template <typename T, int S>
__global__ void __launch_bounds__(kTcw7rThreads, 4)
tcw7r_nc(const T* __restrict__ x, const T* __restrict__ gy, float* __restrict__ part, unsigned* __restrict__ counters,
         T* __restrict__ gw, const Tcw7r L) {
  constexpr int NV = 49, R = kTcw7rRow;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* const buf = reinterpret_cast<T*>(smem_raw);
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int64_t co = blockIdx.x / L.chunks;
  const uint32_t chunk = blockIdx.x % L.chunks;
  const uint32_t i0 = chunk * L.chunk, i1 = i0 + L.chunk < L.tiles ? i0 + L.chunk : L.tiles;
  const int64_t in_plane = int64_t(L.H) * L.W, out_plane = int64_t(L.Ho) * L.Wo;
  const int xrows = 16 * L.q, drows = xrows + 6;
  // This thread's staging: x vector column xc of rows xr0 + k xrs, dy vector column dc of rows
  // dr0 + k drs (threads past the last whole row of vectors stage nothing).
  const int XQ = R / L.xv, DQ = 64 / L.dv;
  const int xrs = kTcw7rThreads / XQ, xc = tid % XQ, xr0 = tid < xrs * XQ ? tid / XQ : xrows;
  const int drs = kTcw7rThreads / DQ, dc = tid % DQ, dr0 = tid < drs * DQ ? tid / DQ : drows;
  const T zero = static_cast<T>(0.f);
  auto put = [&](T* dst, const T* src, int v) {  // one vector of v values: src, or zeros when null
    if (v == 1) {
      *dst = src ? *src : zero;
    } else if (src) {
      cp_async_n(dst, src, 2 * v);
    } else {
      for (int u = 0; u < v; ++u) dst[u] = zero;
    }
  };
  auto stage = [&](uint32_t i, int b) {
    const int t = static_cast<int>(i % L.tw), h0 = static_cast<int>(i / L.tw % L.th) * L.tr;
    const int64_t n = i / L.tw / L.th;
    const T* xp = x + (n * L.C + co) * in_plane;
    const T* gp = gy + (n * L.C + co) * out_plane;
    T* const xs = buf + b * L.ps;
    T* const ds = xs + xrows * R;
    const int w = 64 * t - 8 + L.xv * xc, c = 64 * t - 8 + L.e + L.dv * dc;
    const bool wok = w >= 0 && w < L.W, cok = c >= 0 && c < L.Wo;
    for (int r = xr0; r < xrows; r += xrs) {
      const int h = h0 - L.ph + r;
      put(xs + r * R + L.xv * xc, wok && r < L.tr + 6 && h >= 0 && h < L.H ? xp + int64_t(h) * L.W + w : nullptr, L.xv);
    }
    for (int r = dr0; r < drows; r += drs) {
      const int h = h0 - 6 + r;
      put(ds + r * R + L.dv * dc, cok && r >= 6 && r < L.tr + 6 && h < L.Ho ? gp + int64_t(h) * L.Wo + c : nullptr,
          L.dv);
    }
    cp_async_commit();
  };
  // ldmatrix.x4.trans addresses (values from the stage's X / dy rows): A matrix lane / 8 = (k half,
  // m half) = (lane / 16, lane / 8 % 2), row k = lane % 8 + 8 (lane / 16) of the block, columns 8 w
  // + 8 (lane / 8 % 2); B: matrices 0, 1 = tap row i's k halves, 2, 3 = tap row i + 1's.
  const int a_off = (lane % 8 + 8 * (lane / 16)) * R + 8 * warp + 8 * (lane / 8 % 2);
  const int b_k = lane % 8 + 8 * (lane / 8 % 2), b_i = lane / 16;

  float acc[7][4] = {};
#pragma unroll
  for (int s = 0; s < S - 1; ++s) {
    if (i0 + s < i1) {
      stage(i0 + s, s);
    } else {
      cp_async_commit();  // an empty group: the waits count S - 1 groups ahead
    }
  }
  for (uint32_t i = i0; i < i1; ++i) {
    const int b = static_cast<int>((i - i0) % S);
    cp_async_wait<S - 2>();  // this thread's copies of tile i have landed
    __syncthreads();         // everyone's copies of tile i are visible; tile i - 1's buffer is free
    const uint32_t nx = i + S - 1;
    if (nx < i1) {
      stage(nx, static_cast<int>((nx - i0) % S));
    } else {
      cp_async_commit();
    }
    const T* xs = buf + b * L.ps;
    const T* ds = xs + xrows * R + 8 * warp;
    for (int qq = 0; qq < L.q; ++qq) {
      uint32_t a[4];
      tc_ldsm_x4_trans(a, reinterpret_cast<const uint32_t*>(xs + 16 * qq * R + a_off));
#pragma unroll
      for (int ip = 0; ip < 4; ++ip) {
        const int ti = std::min(2 * ip + b_i, 6);  // the last pair repeats tap row 6
        uint32_t f[4];
        tc_ldsm_x4_trans(f, reinterpret_cast<const uint32_t*>(ds + (16 * qq - ti + 6 + b_k) * R));
        const uint32_t b0[2] = {f[0], f[1]}, b1[2] = {f[2], f[3]};
        mma16816<T>(acc[2 * ip], a, b0);
        if (ip < 3) mma16816<T>(acc[2 * ip + 1], a, b1);
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // every warp is done with the tiles: the area holds the warps' D
  // D_i of warp w at red[(w * 7 + i) * 128 + m * 8 + n]; lane (g, t) holds m = g, g + 8, n = 2t, 2t + 1.
  float* const red = reinterpret_cast<float*>(smem_raw);
  {
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int i = 0; i < 7; ++i) {
      float* const d = red + (warp * 7 + i) * 128 + 2 * t;
      d[g * 8] = acc[i][0];
      d[g * 8 + 1] = acc[i][1];
      d[(g + 8) * 8] = acc[i][2];
      d[(g + 8) * 8 + 1] = acc[i][3];
    }
  }
  __syncthreads();
  if (tid < NV) {
    const int ti = tid / 7, tj = tid % 7;
    float sum = 0.f;
    for (int w = 0; w < kTcw7rWarps; ++w) {
#pragma unroll
      for (int n = 0; n < 8; ++n) sum += red[(w * 7 + ti) * 128 + (n + L.dl + tj) * 8 + n];
    }
    if (L.chunks == 1) {
      gw[co * NV + tid] = static_cast<T>(sum);
    } else {
      part[(co * L.chunks + chunk) * NV + tid] = sum;
    }
  }
  if (L.chunks > 1 &&
      tcw_last_block(counters + co, L.chunks, reinterpret_cast<int*>(red + kTcw7rWarps * 7 * 128)))
    tcw_sum_chunks<T, NV>(part, gw, co, NV, L.chunks);
}

}  // namespace convx::cuda
