// Channels-last (NHWC) 2-D depthwise forward and stride-1 data-grad with the input rows staged
// in a shared-memory ring by cp.async: square 3x3 / 5x5 / 7x7 filters, multiplier 1, one phase.
//
// Why: cl_gather gives each thread one output row and re-reads the rows of its filter from
// L1/L2 with plain loads, so at the 128-register cap (25% occupancy) a block's loads go out in
// bursts at the start of its strip and nothing is in flight while it computes (MobileNetV2 3x3
// fp16 at 55% of copy bandwidth). Here a block owns CB channel vectors (16 bytes each) x a tile
// of PX * R output columns x a band of TH output rows and walks the band PY output rows per
// step; the input rows of the next D steps are in flight (cp.async, no registers held) while
// the current step computes, so the memory pipe stays busy whatever the occupancy. Each input
// byte crosses DRAM once per band (the KH - S rows shared with the next band and the KW - S
// columns shared with the next tile come from L2).
//
// Ring: NSLOT = KSPAN + (D + 1) * RS row slots of IWT columns x CB vectors, KSPAN =
// (PY - 1) * S + KH input rows feed one step, RS = S * PY new rows per step; slot = row % NSLOT.
// Copy group 0 holds rows [0, KSPAN), group g >= 1 rows [(g - 1) * RS + KSPAN, g * RS + KSPAN);
// step j waits for group j (D newer groups may stay in flight), then a barrier, then issues group
// j + D + 1 into the slots of rows [(j - 1) * RS, j * RS), last read in step j - 1. Rows and
// columns outside the tensor are zero-filled by the copy itself (cp.async with 0 source bytes),
// so the compute has no bounds tests.
//
// A thread computes V channels (one 16-byte vector) x R consecutive outputs of one output row
// per step, as cl_row does from global memory: per filter row it takes that row's KW weight
// vectors (the layer's own filter in T, staged [tap][channel] in shared memory once per block,
// rotated for the data-grad: no preparation launch) and streams the (R - 1) * S + KW input
// vectors of its segment, each converted once and added into every output it feeds; fp32
// accumulation, bias fused, one 16-byte store per output.
#pragma once

#include "ops/depthwise_conv/cuda/cl_tiled.cuh"
#include "ops/depthwise_conv/cuda/cp_async.cuh"
#include "ops/depthwise_conv/cuda/plan.cuh"

#include <ATen/OpMathType.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace convx::cuda {

constexpr int kRingR = 4;               // outputs per thread along W
constexpr int kRingThreads = 256;       // at most, per block
constexpr int64_t kRingSmemSM = 228 << 10, kRingSmemMax = 227 << 10;  // H100: per SM, per block

struct ClRing {
  int H, W, C, OH, OW, padH, padW;  // input / output sizes, channels, padding (negative allowed)
  int cvec, CB, PX, PY, TH, D;      // channel vectors, lanes, strips, rows per step, band rows, lookahead (0, 1)
  int IWT, NSLOT, KSPAN, RS;        // ring geometry (cl_ring.cuh's header)
  int chunks, wtiles, bands, threads;
  int64_t N, blocks;
  bool flip;  // the data-grad: the filter rotated 180 degrees
};

template <typename T>
constexpr int ring_vec() {
  return 16 / static_cast<int>(sizeof(T));
}

inline int64_t ring_smem_bytes(const ClRing& L, int KH, int KW, int esz) {
  const int64_t wbytes = (int64_t(KH) * KW * L.CB * (16 / esz) * esz + 15) / 16 * 16;
  return int64_t(L.NSLOT) * L.IWT * L.CB * 16 + wbytes;
}

// The ring's problem from a one-phase 2-D plan (forward, or the stride-1 data-grad with flip):
// square filters, multiplier 1, channels a multiple of the 16-byte vector of esz-byte elements,
// sizes below 2^30 (32-bit row / column arithmetic) and channels below 2^24; false otherwise.
inline bool ring_plan(ClRing& L, const Plan& P, bool flip, int D, int esz) {
  constexpr int64_t lim = int64_t(1) << 30;
  if (P.phases != 1 || P.k[0] != 1 || P.in[0] != 1 || P.out[0] != 1 || P.in_div != 1 || P.J != 1 ||
      P.in_c != P.out_c || P.k[1] != P.k[2] || P.S[1] != P.S[2] || P.out_c % (16 / esz) != 0 ||
      P.in_c >= (int64_t(1) << 24) || P.in[1] >= lim || P.in[2] >= lim || P.out[1] >= lim || P.out[2] >= lim)
    return false;
  L.N = P.N;
  L.H = static_cast<int>(P.in[1]), L.W = static_cast<int>(P.in[2]), L.C = static_cast<int>(P.in_c);
  L.OH = static_cast<int>(P.out[1]), L.OW = static_cast<int>(P.out[2]);
  L.padH = P.pad[1][0], L.padW = P.pad[2][0];
  L.D = D;
  L.flip = flip;
  return true;
}

inline void ring_geometry(ClRing& L, int KH, int KW, int S) {
  L.IWT = (L.PX * kRingR - 1) * S + KW;
  L.KSPAN = (L.PY - 1) * S + KH;
  L.RS = S * L.PY;
  L.NSLOT = L.KSPAN + (L.D + 1) * L.RS;
}

// The tile of a problem: channel lanes as cl_gather's (all up to 64; beyond, equal tiles of
// 32-64 lanes when the count allows); then, of the strips (the whole output width, halved down
// to one) x rows per step (up to 256 threads), the one with the most resident working threads (an SM of
// kRingSmemSM bytes of shared memory, 1 KB reserved per block, and the 128-register cap of
// __launch_bounds__(256, 2): at most 512 threads) times the share of its staged columns that
// are its own (not the neighbouring tile's halo); the larger block on a tie. false when no tile
// fits kRingSmemMax.
inline bool ring_tile(ClRing& L, int KH, int KW, int S, int esz) {
  L.cvec = L.C / (16 / esz);
  L.CB = 32;
  if (L.cvec <= 64) {
    L.CB = L.cvec;
  } else {
    for (int cb = 64; cb >= 32; --cb) {
      if (L.cvec % cb == 0) {
        L.CB = cb;
        break;
      }
    }
  }
  L.chunks = (L.cvec + L.CB - 1) / L.CB;
  ClRing best = L;
  int64_t best_score = -1;
  for (int px = std::max(1, std::min((L.OW + kRingR - 1) / kRingR, kRingThreads / L.CB));; px = (px + 1) / 2) {
    for (int py = std::max(1, std::min(kRingThreads / (L.CB * px), L.OH)); py >= 1; --py) {
      ClRing t = L;
      t.PX = px, t.PY = py;
      ring_geometry(t, KH, KW, S);
      const int64_t smem = ring_smem_bytes(t, KH, KW, esz);
      if (smem > kRingSmemMax) continue;
      const int64_t threads = (int64_t(L.CB) * px * py + 31) / 32 * 32;
      const int64_t resident = std::min(kRingSmemSM / (smem + 1024), 512 / threads) * L.CB * px * py;
      // resident threads x the share of the staged columns that are the tile's own (not halo)
      const int64_t score = (resident * px * kRingR * S * 4096 / t.IWT) * 1024 + threads;
      if (score > best_score) best_score = score, best = t;
    }
    if (px == 1) break;
  }
  if (best_score < 0) return false;
  L = best;
  L.threads = (L.CB * L.PX * L.PY + 31) / 32 * 32;
  L.wtiles = (L.OW + L.PX * kRingR - 1) / (L.PX * kRingR);
  return true;
}

// Bands so that the grid fills `slots` resident blocks once (whole columns when the samples x
// tiles alone exceed them). false when the grid would exceed 2^31 - 1 blocks.
inline bool ring_bands(ClRing& L, int64_t slots) {
  const int64_t base = L.N * L.wtiles * L.chunks;
  const int64_t steps = (L.OH + L.PY - 1) / L.PY;
  const int64_t bands = std::clamp<int64_t>(slots / std::max<int64_t>(base, 1), 1, steps);
  L.TH = static_cast<int>((steps + bands - 1) / bands) * L.PY;
  L.bands = (L.OH + L.TH - 1) / L.TH;
  L.blocks = base * L.bands;
  return L.blocks < (int64_t(1) << 31);
}

// __launch_bounds__(256, 2): 95-120 registers, no spill (sm_90). The A/B run measured 80
// registers (3 blocks per SM; 16-bit kernels spill 20-92 bytes) slower on every row (MobileNetV2
// fp16 0.050 -> 0.061-0.063 ms), as was the filter staged in fp32 (no per-step conversion, twice
// the shared-memory loads: 0.050 -> 0.054).
template <typename T, int KH, int KW, int S>
__global__ void __launch_bounds__(kRingThreads, 2)
cl_ring(const T* __restrict__ in, const T* __restrict__ w, const T* __restrict__ bias, T* __restrict__ out,
        const ClRing L) {
  using acc_t = at::opmath_type<T>;
  constexpr int V = ring_vec<T>(), R = kRingR, NX = (R - 1) * S + KW;
  using Raw = Pack<uint32_t, 4>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Raw* const ring = reinterpret_cast<Raw*>(smem_raw);
  T* const wts = reinterpret_cast<T*>(smem_raw + int64_t(L.NSLOT) * L.IWT * L.CB * 16);

  const int tid = threadIdx.x, nthr = blockDim.x;
  uint32_t b = blockIdx.x;
  const int chunk = static_cast<int>(b % uint32_t(L.chunks));
  b /= uint32_t(L.chunks);
  const int wt = static_cast<int>(b % uint32_t(L.wtiles));
  b /= uint32_t(L.wtiles);
  const int band = static_cast<int>(b % uint32_t(L.bands));
  const int64_t n = b / uint32_t(L.bands);

  // The block's filter slice, [tap][CB * V] in T (zero beyond the channels).
  {
    const int cw = L.CB * V, c0 = chunk * cw;
    for (int i = tid; i < KH * KW * cw; i += nthr) {
      const int tap = i / cw, c = c0 + i % cw;
      wts[i] = c < L.C ? w[int64_t(c) * (KH * KW) + (L.flip ? KH * KW - 1 - tap : tap)] : T(0);
    }
  }

  const int y0 = band * L.TH, rows_out = std::min(L.TH, L.OH - y0);
  const int nrows = (rows_out - 1) * S + KH;  // input rows of the band
  const int iy0 = y0 * S - L.padH, ix0 = wt * L.PX * R * S - L.padW;
  const T* const img = in + n * L.H * L.W * L.C + int64_t(chunk) * L.CB * V;
  // This thread's copies: vectors tid, tid + nthr, ... of a row slot (column-major over lanes).
  const int dcol = nthr / L.CB, dlane = nthr % L.CB;
  auto issue = [&](int g) {
    const int lo = g == 0 ? 0 : (g - 1) * L.RS + L.KSPAN, hi = std::min(g * L.RS + L.KSPAN, nrows);
    for (int i = lo; i < hi; ++i) {
      const int iy = iy0 + i;
      const bool row_ok = iy >= 0 && iy < L.H;
      const T* const src_row = img + int64_t(row_ok ? iy : 0) * L.W * L.C;
      Raw* const dst = ring + (i % L.NSLOT) * L.IWT * L.CB;
      int col = tid / L.CB, lane = tid % L.CB;
      for (int v = tid; v < L.IWT * L.CB; v += nthr) {
        const int ix = ix0 + col;
        const bool ok = row_ok && ix >= 0 && ix < L.W && chunk * L.CB + lane < L.cvec;
        cp_async16(dst + v, ok ? src_row + int64_t(ix) * L.C + lane * V : in, ok ? 16 : 0);
        col += dcol;
        lane += dlane;
        if (lane >= L.CB) lane -= L.CB, ++col;
      }
    }
    cp_async_commit();  // empty groups too: group j is always the j-th commit
  };

  const int cl = tid % L.CB, p = tid / L.CB, px = p % L.PX, py = p / L.PX;
  const int ox = wt * L.PX * R + px * R;
  const bool active = py < L.PY && ox < L.OW && chunk * L.CB + cl < L.cvec;
  const int nout = std::min(R, L.OW - ox);
  acc_t bv[V];
  {
    Pack<T, V> bp{};
    if (bias && active) bp = *reinterpret_cast<const Pack<T, V>*>(bias + (int64_t(chunk) * L.CB + cl) * V);
#pragma unroll
    for (int v = 0; v < V; ++v) bv[v] = bias ? static_cast<acc_t>(bp.v[v]) : acc_t(0);
  }
  T* const obase = out + (n * L.OH * L.OW + ox) * L.C + (int64_t(chunk) * L.CB + cl) * V;
  const Raw* const mine = ring + px * R * S * L.CB + cl;  // the thread's segment in a row slot

  for (int g = 0; g <= L.D; ++g) issue(g);
  const int steps = (rows_out + L.PY - 1) / L.PY;
  for (int j = 0; j < steps; ++j) {
    if (L.D == 0) {
      cp_async_wait<0>();
    } else {
      cp_async_wait<1>();
    }
    __syncthreads();  // group j visible to the block; step j - 1's reads done
    issue(j + L.D + 1);
    const int oy = j * L.PY + py;
    if (!active || oy >= rows_out) continue;
    acc_t acc[R][V];
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
      for (int v = 0; v < V; ++v) acc[r][v] = bv[v];
    }
    int slot = (oy * S) % L.NSLOT;  // of filter row kh, stepped below (no division per row)
#pragma unroll 1
    for (int kh = 0; kh < KH; ++kh, slot = slot + 1 == L.NSLOT ? 0 : slot + 1) {
      const Raw* const row = mine + slot * L.IWT * L.CB;
      acc_t wv[KW][V];
#pragma unroll
      for (int k = 0; k < KW; ++k) {
        const Pack<T, V> pw = *reinterpret_cast<const Pack<T, V>*>(wts + (kh * KW + k) * L.CB * V + cl * V);
#pragma unroll
        for (int v = 0; v < V; ++v) wv[k][v] = static_cast<acc_t>(pw.v[v]);
      }
#pragma unroll
      for (int c = 0; c < NX; ++c) {
        const Raw raw = row[c * L.CB];
        Pack<T, V> xv;
        memcpy(&xv, &raw, sizeof(xv));
        acc_t xf[V];
#pragma unroll
        for (int v = 0; v < V; ++v) xf[v] = static_cast<acc_t>(xv.v[v]);
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const int k = c - r * S;
          if (k < 0 || k >= KW) continue;
#pragma unroll
          for (int v = 0; v < V; ++v) acc[r][v] += wv[k][v] * xf[v];
        }
      }
    }
    T* const o = obase + int64_t(y0 + oy) * L.OW * L.C;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (r >= nout) break;
      Pack<T, V> ov;
#pragma unroll
      for (int v = 0; v < V; ++v) ov.v[v] = static_cast<T>(acc[r][v]);
      *reinterpret_cast<Pack<T, V>*>(o + int64_t(r) * L.C) = ov;
    }
  }
  cp_async_wait<0>();  // no copy outlives the block (the last groups are empty or unread rows)
}

}  // namespace convx::cuda
