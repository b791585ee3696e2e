// Channels-last 1-D rows ((N, L, C) held as (N, C, L) with stride 1 on C, and 1 x K filters on
// NHWC / NDHWC rows): the forward and the stride-1 data-grad (the forward with the filter
// rotated, padding K - 1 - p, which may be negative), channel multiplier 1.
//
// A thread owns V channels (one vector load: 16 bytes for the short filters, narrower for the
// long ones) x R consecutive outputs of one row. It loads its V channels' K taps once from the
// layer's own filter ([C][K] in T: V*K consecutive values, K vector loads; flipped for the
// data-grad; no preparation launch, which was 2.5 us of a 20 us call on short rows, H100 session
// 10) and keeps them in registers as acc_t, then streams the
// R + K - 1 input vectors of its column once each -- a warp's channel lanes read consecutive
// vectors of one position, so each load is one contiguous run -- converts each to fp32 once and
// adds it into every output it feeds (compile-time taps: the accumulators, weights and the one
// live input vector stay in registers). One vector store per output, bias fused.
//
// Why not cl_gather (the general channels-last tile): for 1-D rows it ran at 4 channels x 4
// outputs per thread with 8-byte 16-bit loads, re-loading the filter per row and the 31-tap
// rows in chunks of 8 (each chunk re-streams R + 7 inputs): the H100 profile of mamba k4 bf16
// showed it instruction / L1-bound (SM 72%, L1 78%, DRAM 55%, 64 registers). Here the long
// filters keep all K taps resident by narrowing V instead (31 taps x 2 channels = 62 weight
// registers), so no input is loaded twice by a thread.
//
// Block: CB channel-vector lanes x PS strips (CB <= 32, a warp's lanes along the channels; the PS
// strips of one block are consecutive, so the K - 1 inputs two neighbouring strips share come
// from L1). Blocks are numbered channel chunk fastest, then strip group, then row: the blocks in
// flight together read whole rows of the tensor. All per-thread index math is 32-bit (the host
// checks the bounds); pointer offsets are 64-bit.
#pragma once

#include "ops/depthwise_conv/cuda/cl_tiled.cuh"  // Pack
#include "ops/depthwise_conv/cuda/plan.cuh"

#include <ATen/OpMathType.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace convx::cuda {

constexpr int kClRowThreads = 256;

struct ClRow1d {
  int in_len, out_len;  // positions along the row, read / written (< 2^30)
  int pad;              // output position o reads input positions o - pad + k
  int C;                // channels (< 2^24)
  int cvecs;            // C / V
  int CB, PS;           // channel-vector lanes and strips per block (CB * PS <= kClRowThreads)
  uint32_t cchunks, sgroups, blocks;  // blocks = rows * sgroups * cchunks (< 2^31)
};

// The block shape and grid for V channels per thread and R outputs per strip; false when the
// problem does not fit the 32-bit item math.
inline bool cl_row1d_tile(ClRow1d& L, int64_t rows, int64_t in_len, int64_t out_len, int64_t pad, int64_t C, int V,
                          int R) {
  if (C % V != 0 || C >= (int64_t(1) << 24) || in_len >= (int64_t(1) << 30) || out_len >= (int64_t(1) << 30) ||
      pad <= -(int64_t(1) << 29) || pad >= (int64_t(1) << 29) || rows <= 0 || out_len <= 0)
    return false;
  const int64_t cvecs = C / V, strips = ceil_div(out_len, R);
  // Channel lanes: all of them up to 32; beyond, the largest count in [16, 32] that divides the
  // vectors (no idle lanes: C 1536 bf16 = 192 vectors = 6 x 32), else 32.
  int cb = 32;
  if (cvecs < 32) {
    cb = static_cast<int>(cvecs);
  } else {
    for (int c = 32; c >= 16; --c) {
      if (cvecs % c == 0) {
        cb = c;
        break;
      }
    }
  }
  L.CB = cb;
  L.PS = static_cast<int>(std::min<int64_t>(kClRowThreads / cb, strips));
  const int64_t cchunks = ceil_div(cvecs, cb), sgroups = ceil_div(strips, L.PS);
  const int64_t blocks = rows * sgroups * cchunks;
  if (blocks >= (int64_t(1) << 31)) return false;
  L.in_len = static_cast<int>(in_len);
  L.out_len = static_cast<int>(out_len);
  L.pad = static_cast<int>(pad);
  L.C = static_cast<int>(C);
  L.cvecs = static_cast<int>(cvecs);
  L.cchunks = static_cast<uint32_t>(cchunks);
  L.sgroups = static_cast<uint32_t>(sgroups);
  L.blocks = static_cast<uint32_t>(blocks);
  return true;
}

// Whether the plan is one the kernel covers: one phase at stride 1, multiplier 1, a filter 1 wide
// in the leading dims with no padding there (so every (sample, depth, row) is an independent 1-D
// row; rows = their count). The filter width is checked by the launcher.
inline bool cl_row1d_plan(const Plan& P, int64_t& rows) {
  if (P.phases != 1 || P.in_div != 1 || P.J != 1 || P.out_c != P.in_c || P.S[2] != 1) return false;
  for (int d = 0; d < 2; ++d) {
    if (P.k[d] != 1 || P.S[d] != 1 || P.pad[d][0] != 0 || P.in[d] != P.out[d]) return false;
  }
  rows = P.N * P.in[0] * P.in[1];
  return true;
}

// Tiles (channels per thread V, outputs per strip R), picked on the H100 (session 8, temporary
// knob, bench/results/h100/session8/): 16-bit k <= 4: 8 channels (16-byte loads) x 8 outputs
// (x 4 outputs: within 2%); fp32 k <= 4: 4 x 8 (4 x 16: within 2%); 15 and 31 taps: 2 channels x
// 16 outputs, all K weight vectors in registers (k15 bf16 0.132 ms vs 0.161 at 4 x 8; k31 bf16
// 0.055 vs 0.082 at 2 x 8).
template <typename T, int K>
struct ClRowTile {
  static constexpr int V = K <= 4 ? 16 / static_cast<int>(sizeof(T)) : 2;
  static constexpr int R = K <= 4 ? 8 : 16;
  // Blocks per SM asked of ptxas (64 / 80 / 128 registers): the accumulators and weights,
  // V * (K + R), decide; above 48 the 80-register cap spilled (ptxas -v, sm_90).
  static constexpr int MINB = V * (K + R) <= 40 ? 4 : (V * (K + R) <= 48 ? 3 : 2);
};

inline unsigned cl_row1d_threads(const ClRow1d& L) {
  return static_cast<unsigned>(ceil_div(int64_t(L.CB) * L.PS, 32) * 32);
}

// w: the layer's filter [C][K], aligned to V elements (the launcher checks); FLIP: rotated (the
// data-grad; a run-time choice spilled fp32 k4 at its 80-register cap).
template <typename T, int K, int V, int R, int MINB, bool FLIP>
__global__ void __launch_bounds__(kClRowThreads, MINB)
cl_row1d(const T* __restrict__ in, const T* __restrict__ w, const T* __restrict__ bias, T* __restrict__ out,
         const ClRow1d L) {
  using acc_t = at::opmath_type<T>;
  constexpr int NX = R + K - 1;                     // input vectors of a strip
  constexpr int XW = static_cast<int>(sizeof(T)) * V / 4;  // 32-bit words per vector
  static_assert(XW >= 1 && sizeof(T) * V % 4 == 0, "vectors are whole 32-bit words");
  uint32_t b = blockIdx.x;
  const uint32_t cc = b % L.cchunks;
  b /= L.cchunks;
  const uint32_t sg = b % L.sgroups, row = b / L.sgroups;
  const int t = threadIdx.x, cl = t % L.CB, sp = t / L.CB;
  const int cv = static_cast<int>(cc) * L.CB + cl;
  const int o0 = (static_cast<int>(sg) * L.PS + sp) * R;
  if (sp >= L.PS || cv >= L.cvecs || o0 >= L.out_len) return;
  const int c0 = cv * V;

  acc_t wv[K][V];
  {
    // Channel c0 + v's tap j is element v * K + j of the thread's K vectors (loaded as 32-bit
    // words, then viewed as T, as the inputs below).
    const auto* wc = reinterpret_cast<const Pack<uint32_t, XW>*>(w + static_cast<int64_t>(c0) * K);
    Pack<T, V> f[K];
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const auto raw = wc[j];
      memcpy(&f[j], &raw, sizeof(raw));
    }
#pragma unroll
    for (int k = 0; k < K; ++k) {
#pragma unroll
      for (int v = 0; v < V; ++v) {
        const int e = v * K + (FLIP ? K - 1 - k : k);
        wv[k][v] = static_cast<acc_t>(f[e / V].v[e % V]);
      }
    }
  }
  acc_t acc[R][V];
  {
    Pack<T, V> bv{};
    if (bias) bv = *reinterpret_cast<const Pack<T, V>*>(bias + c0);
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
      for (int v = 0; v < V; ++v) acc[r][v] = bias ? static_cast<acc_t>(bv.v[v]) : acc_t(0);
    }
  }
  const int i0 = o0 - L.pad;
  // May point before the row (or the tensor): only positions inside the row are read.
  const T* x = in + (static_cast<int64_t>(row) * L.in_len + i0) * L.C + c0;
#pragma unroll
  for (int c = 0; c < NX; ++c) {
    // Loaded as 32-bit words (zero outside the row) and only then viewed as T.
    Pack<uint32_t, XW> raw{};
    if (static_cast<unsigned>(i0 + c) < static_cast<unsigned>(L.in_len))
      raw = *reinterpret_cast<const Pack<uint32_t, XW>*>(x + static_cast<int64_t>(c) * L.C);
    Pack<T, V> xv;
    memcpy(&xv, &raw, sizeof(xv));
    acc_t xf[V];
#pragma unroll
    for (int v = 0; v < V; ++v) xf[v] = static_cast<acc_t>(xv.v[v]);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int k = c - r;
      if (k < 0 || k >= K) continue;
#pragma unroll
      for (int v = 0; v < V; ++v) acc[r][v] += wv[k][v] * xf[v];
    }
  }
  T* o = out + (static_cast<int64_t>(row) * L.out_len + o0) * L.C + c0;
  const int nout = L.out_len - o0;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    if (r >= nout) break;
    Pack<T, V> ov;
#pragma unroll
    for (int v = 0; v < V; ++v) ov.v[v] = static_cast<T>(acc[r][v]);
    *reinterpret_cast<Pack<T, V>*>(o + static_cast<int64_t>(r) * L.C) = ov;
  }
}

// ---------------------------------------------------------------- weight-grad (2-4 taps)
// gw[c][t] = sum over rows and outputs o of dy[row][o][c] * x[row][o - pad + t][c], deterministic.
// Why not cl_wgrad_partial (the general channels-last weight-grad): for short 1-D rows it ran at
// strips of 4 outputs (each strip re-loads its K - 1 halo vectors: 1.5 x-loads per output at 3
// taps) with a 3-D item split and a column mask per item: short_k3 bf16 (N, L, C) 25 us for 50
// MB (2 TB/s), H100 session 10.
// Here a thread owns V channels (16 bytes) and walks items = (row, strip of R outputs) of its
// block's fixed range; per item it loads the R dy vectors and R + K - 1 x vectors once (a window
// of K x vectors moved one position per output), in fp32 registers: K x V tap sums. Block: CB
// channel-vector lanes x PS strip lanes as cl_row1d's (the PS lanes take consecutive strips, so
// the halo vectors two strips share come from L1). The PS lanes' sums are added in lane order
// through shared memory; with one chunk per channel chunk that is the weight-grad, written by the
// block, else one partial per block [channel][chunk][tap] that sum_slots adds in order. The
// chunks depend on the shapes only.
struct ClRow1dW {
  int in_len, out_len, pad, C, cvecs, CB, PS;
  uint32_t strips, items, chunk, chunks, cchunks;  // items = rows * strips; blocks = cchunks * chunks
};

// Blocks of one wave at 3 per SM on an H100 (132 SMs): a constant, so that the chunks (and the
// bits of the result) depend on the shapes only.
constexpr int64_t kClRowWgradWave = 132 * 3;

// The block shape and item split for V channels per thread and strips of R outputs; false when
// the problem does not fit the 32-bit item math.
inline bool cl_row1d_wgrad_tile(ClRow1dW& L, int64_t rows, int64_t in_len, int64_t out_len, int64_t pad, int64_t C,
                                int V, int R, int64_t wave = kClRowWgradWave) {
  ClRow1d F{};
  if (!cl_row1d_tile(F, rows, in_len, out_len, pad, C, V, R)) return false;
  const int64_t strips = ceil_div(out_len, R), items = rows * strips;
  if (items >= (int64_t(1) << 31)) return false;
  L.in_len = F.in_len;
  L.out_len = F.out_len;
  L.pad = F.pad;
  L.C = F.C;
  L.cvecs = F.cvecs;
  L.CB = F.CB;
  L.PS = kClRowThreads / F.CB;
  L.cchunks = F.cchunks;
  // One wave of blocks, each lane at least 2 items.
  int64_t chunks = std::clamp<int64_t>(ceil_div(wave, F.cchunks), 1,
                                       std::max<int64_t>(1, items / (2 * int64_t(L.PS))));
  const int64_t chunk = ceil_div(items, chunks);
  chunks = ceil_div(items, chunk);
  if (int64_t(F.cchunks) * chunks >= (int64_t(1) << 31)) return false;
  L.strips = static_cast<uint32_t>(strips);
  L.items = static_cast<uint32_t>(items);
  L.chunk = static_cast<uint32_t>(chunk);
  L.chunks = static_cast<uint32_t>(chunks);
  return true;
}

// x: [rows][in_len][C], gy: [rows][out_len][C] (C a multiple of V, 16-byte aligned); part:
// [C][chunks][K] fp32, or null with one chunk: then gw [C][K] is written. Grid: cchunks * chunks
// blocks of CB * PS threads.
template <typename T, int K, int V, int R>
__global__ void __launch_bounds__(kClRowThreads)
cl_row1d_wgrad(const T* __restrict__ x, const T* __restrict__ gy, float* __restrict__ part, T* __restrict__ gw,
               const ClRow1dW L) {
  constexpr int XW = static_cast<int>(sizeof(T)) * V / 4;  // 32-bit words per vector
  __shared__ float red[kClRowThreads * V * K];
  const uint32_t cc = blockIdx.x % L.cchunks, chunk = blockIdx.x / L.cchunks;
  const int t = threadIdx.x, cl = t % L.CB, sp = t / L.CB;
  const int cv = static_cast<int>(cc) * L.CB + cl;
  const int c0 = cv * V;
  float acc[K][V];
#pragma unroll
  for (int k = 0; k < K; ++k) {
#pragma unroll
    for (int v = 0; v < V; ++v) acc[k][v] = 0.f;
  }
  // One vector of row position p (zero outside [0, n)), as fp32.
  const auto load = [&](const T* row, int p, int n, float (&f)[V]) {
    Pack<uint32_t, XW> raw{};
    if (static_cast<unsigned>(p) < static_cast<unsigned>(n))
      raw = *reinterpret_cast<const Pack<uint32_t, XW>*>(row + static_cast<int64_t>(p) * L.C);
    Pack<T, V> e;
    memcpy(&e, &raw, sizeof(e));
#pragma unroll
    for (int v = 0; v < V; ++v) f[v] = static_cast<float>(e.v[v]);
  };
  if (sp < L.PS && cv < L.cvecs) {
    const uint32_t begin = chunk * L.chunk, end = begin + L.chunk < L.items ? begin + L.chunk : L.items;
    for (uint32_t it = begin + sp; it < end; it += L.PS) {
      const uint32_t row = it / L.strips;
      const int o0 = static_cast<int>(it - row * L.strips) * R, i0 = o0 - L.pad;
      const T* const gr = gy + static_cast<int64_t>(row) * L.out_len * L.C + c0;
      const T* const xr = x + static_cast<int64_t>(row) * L.in_len * L.C + c0;
      float xw[K][V];  // xw[k]: input of output o0 + r at tap k
#pragma unroll
      for (int k = 0; k + 1 < K; ++k) load(xr, i0 + k, L.in_len, xw[k + 1]);
#pragma unroll
      for (int r = 0; r < R; ++r) {
#pragma unroll
        for (int k = 0; k + 1 < K; ++k) {
#pragma unroll
          for (int v = 0; v < V; ++v) xw[k][v] = xw[k + 1][v];
        }
        load(xr, i0 + r + K - 1, L.in_len, xw[K - 1]);
        float g[V];
        load(gr, o0 + r, L.out_len, g);  // zero past the row's end: adds nothing
#pragma unroll
        for (int k = 0; k < K; ++k) {
#pragma unroll
          for (int v = 0; v < V; ++v) acc[k][v] += g[v] * xw[k][v];
        }
      }
    }
  }
  // Fixed-order block sum: the PS strip lanes of each channel in lane order.
  const int span = L.CB * V;  // channels of the block
  if (sp < L.PS) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
#pragma unroll
      for (int v = 0; v < V; ++v) red[(sp * K + k) * span + cl * V + v] = acc[k][v];
    }
  }
  __syncthreads();
  for (int e = t; e < K * span; e += static_cast<int>(blockDim.x)) {
    const int k = e / span, j = e % span;
    const int64_t c = static_cast<int64_t>(cc) * span + j;
    if (c >= L.C) continue;
    float s = 0.f;
    for (int q = 0; q < L.PS; ++q) s += red[(q * K + k) * span + j];
    if (part == nullptr) {
      gw[c * K + k] = static_cast<T>(s);
    } else {
      part[(c * L.chunks + chunk) * K + k] = s;
    }
  }
}

}  // namespace convx::cuda
