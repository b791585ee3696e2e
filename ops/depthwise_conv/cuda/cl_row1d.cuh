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
// flight together read whole rows of the tensor. Or (ClRowTile::FLAT) a flat grid of one item per
// thread, items (row, strip, channel vector) with the channel vector fastest: a warp still reads
// 32 consecutive vectors of one position, and no block is left with a row's last strip alone.
// All per-thread index math is 32-bit (the host checks the bounds); pointer offsets are 64-bit.
#pragma once

#include "ops/depthwise_conv/cuda/cl_tiled.cuh"  // Pack
#include "ops/depthwise_conv/cuda/pdl.cuh"
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
  uint32_t strips, items;             // the flat grid: items = rows * strips * cvecs (< 2^31)
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
  if (blocks >= (int64_t(1) << 31) || rows * strips * cvecs >= (int64_t(1) << 31)) return false;
  L.strips = static_cast<uint32_t>(strips);
  L.items = static_cast<uint32_t>(rows * strips * cvecs);
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
  // One strip per thread over a flat (row, strip, channel vector) grid (FLAT) rather than blocks
  // of CB lanes x PS strips of one row: a row whose strips are not a multiple of PS left a last,
  // nearly empty strip group per row (short_k3's 514 outputs: 65 strips, 9 groups of 8). H100,
  // session 12 (bench/results/h100/session12/oned_call1_ab.log, per call, block grid -> flat):
  // short_k3 bf16 forward 20.7 -> 20.3 us; Conformer-256 fp32 k31 forward 107.9 -> 105.1,
  // data-grad 106.5 -> 104.4; Mamba bf16 k4 forward 98.4 -> 98.4, data-grad 98.3 -> 98.8; but
  // RWKV fp32 k4 forward 184.0 -> 185.2 and data-grad 184.1 -> 185.4: fp32 2-4 taps keep the
  // block grid.
  static constexpr bool FLAT = !(sizeof(T) == 4 && K <= 4);
};

inline unsigned cl_row1d_threads(const ClRow1d& L) {
  return static_cast<unsigned>(ceil_div(int64_t(L.CB) * L.PS, 32) * 32);
}

// w: the layer's filter [C][K], aligned to V elements (the launcher checks); FLIP: rotated (the
// data-grad; a run-time choice spilled fp32 k4 at its 80-register cap); FLAT: the grid (above).
// Grid: FLAT: ceil(items / kClRowThreads) blocks of kClRowThreads; else blocks of
// cl_row1d_threads(L).
template <typename T, int K, int V, int R, int MINB, bool FLIP, bool FLAT>
__global__ void __launch_bounds__(kClRowThreads, MINB)
cl_row1d(const T* __restrict__ in, const T* __restrict__ w, const T* __restrict__ bias, T* __restrict__ out,
         const ClRow1d L) {
  using acc_t = at::opmath_type<T>;
  constexpr int NX = R + K - 1;                     // input vectors of a strip
  constexpr int XW = static_cast<int>(sizeof(T)) * V / 4;  // 32-bit words per vector
  static_assert(XW >= 1 && sizeof(T) * V % 4 == 0, "vectors are whole 32-bit words");
  pdl_trigger();  // a programmatically launched next kernel may start (it waits for this one's writes)
  uint32_t row;
  int cv, o0;
  if constexpr (FLAT) {
    const uint32_t item = blockIdx.x * blockDim.x + threadIdx.x;
    if (item >= L.items) return;
    const uint32_t rest = item / static_cast<uint32_t>(L.cvecs);
    cv = static_cast<int>(item - rest * static_cast<uint32_t>(L.cvecs));
    row = rest / L.strips;
    o0 = static_cast<int>(rest - row * L.strips) * R;
  } else {
    uint32_t b = blockIdx.x;
    const uint32_t cc = b % L.cchunks;
    b /= L.cchunks;
    const uint32_t sg = b % L.sgroups;
    row = b / L.sgroups;
    const int t = threadIdx.x, cl = t % L.CB, sp = t / L.CB;
    cv = static_cast<int>(cc) * L.CB + cl;
    o0 = (static_cast<int>(sg) * L.PS + sp) * R;
    if (sp >= L.PS || cv >= L.cvecs || o0 >= L.out_len) return;
  }
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

}  // namespace convx::cuda
