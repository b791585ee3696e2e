// Register-tiled depthwise forward / data-grad for channels-last tensors (NHWC, NDHWC and the
// (N, L, C) layout of rank 1), channel multiplier 1, channels a multiple of the vector width.
//
// Each thread computes V channels of R consecutive outputs of one output row: V = 4 (16-byte
// fp32 loads, 8-byte fp16 / bf16 loads) or, on the 16-bit fast path (launch_cl_gather16), V = 8
// (16-byte fp16 / bf16 loads). Per input row it loads that filter row's taps (at most
// kClTapChunk at a time: wide filters go in chunks) and then streams the row segment
// ((R - 1) * S + taps vectors) one vector at a time, applying each vector to every output of the
// strip it touches. Only the accumulators, one filter row and one input vector live in
// registers, so that the kernel runs at 37.5-50% occupancy (cl_min_blocks; 25% for the R = 8
// tiles of the square and 31x31 filters; the previous design held every tap of a band of rows: 123-144 registers, 12.5-25%,
// latency-bound) and hides the load latency with warps instead of with a thread's own state;
// the rows shared by neighbouring outputs are re-read from L1 by the threads of the block (one
// thread per output row). The filter, laid out [tap][channel] so that a warp's channel lanes
// read consecutive weights, is read in its weight type WT: fp32 (the opmath type), or the 16-bit
// input type itself on the 16-bit fast path (the weight tensor is 16-bit: the same values, half
// the filter bytes through L1 per output); accumulation is in fp32 (the opmath type).
#pragma once

#include "ops/depthwise_conv/cuda/plan.cuh"

#include <ATen/OpMathType.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace convx::cuda {

template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

// Channels per thread: 4 (16-byte fp32 loads, 8-byte fp16 / bf16 loads); 8 on the 16-bit fast
// path (16-byte loads).
constexpr int kClVec = 4, kClVec16 = 8;

// Outputs per thread along W: 8 for the square 2x2-7x7 filters (of the three tiles measured on
// the H100 in session 4 -- R = 4; R = 2 with 16-byte 16-bit loads; R = 8 -- R = 8 was the fastest
// on every channels-last 2-D row despite its 128 registers: 3 loads per 8 outputs of a 3x3 row,
// e.g. MobileNetV2 k3 fp32 forward 0.101 ms vs 0.126 and 0.143), 4 for the one-row filters, whose
// taps go in chunks, and 8 for the 31-wide 2-D filters (KH = 0: 31 rows at run time): 19 loads
// per 128 FMA instructions at R = 4 kept the L1 busy (Nsight Compute: L1 60%, SM 53% at 37.5%
// occupancy); at R = 8 (23 loads per 256, 128 registers) RepLKNet 31x31 NHWC N32 C128 56^2 went
// from 1.354 to 1.101 ms fp32, 1.203 to 1.101 fp16, 1.270 to 1.080 bf16 (forward and data-grad
// alike; H100, bench/results/h100/session12/clk_call1_ab.log; R = 12: 1.22 ms, R = 8 at 80
// registers: 1.44, spilling).
//
// 16-byte 16-bit vectors (V = 8, the 16-bit fast path; not yet measured on a GPU): R = 8 for
// 2x2 and 3x3 at stride 1 -- the same 10 loads per 8 outputs of a 3x3 row as fp32, now 16 bytes
// each; 64 accumulators + 24 weights fit 128 registers without a spill in the row loop -- and
// R = 4 otherwise (3x3 stride 2 at R = 8 spills in the row loop: 17 input vectors per row).
template <int KH, int KW, int V = 4, int S = 1>
constexpr int cl_outputs() {
  if (KH == 0 && KW == 31) return 8;
  if (KH < 2 || KH != KW || KW > 7) return 4;
  return V <= 4 || (KW <= 3 && S == 1) ? 8 : 4;
}

// Filter taps of one row held in registers at a time (1x15, 1x31, 31x31 go in chunks).
constexpr int kClTapChunk = 8;

// Blocks of 256 threads per SM asked of ptxas (__launch_bounds__): 4 = 64 registers (50%
// occupancy), 3 = 80, 2 = 128. From -Xptxas -v over every specialisation (sm_90): the
// row loop (filter row + streamed inputs + accumulators) spills nothing at 64 registers while
// (KC + R) * V <= 32 and at 80 beyond that, except from R * V = 32 accumulators on (R = 8 x 4
// channels, R = 4 or 8 x 8 channels), which need 128 (the row loop of 3x3 s2 spills at 80).
// What spills at those caps is block set-up state (indices, pointers), reloaded once per output
// strip, not per row.
template <int KW, int R, int V = 4>
constexpr int cl_min_blocks() {
  constexpr int KC = KW < kClTapChunk ? KW : kClTapChunk;
  return R * V >= 32 ? 2 : ((KC + R) * V <= 32 ? 4 : 3);
}

struct ClTile {
  int CB, PX, PY;  // channel lanes, strips along W, output rows; threads = CB * PX * PY
  bool i32;        // block indices fit in 32 bits
  int64_t chunks, tilesW, tilesH, blocks;
};

// A block: CB channel lanes x PY output rows x PX strips (of R outputs), as close to 256 threads
// as the channel lanes allow (the launch rounds up to whole warps). Beyond 64 lanes the channels
// are cut into equal tiles of 32-64 lanes when the count allows it (C = 960 fp32: 4 x 60, not
// 7.5 x 32).
inline ClTile choose_cl_tile(const Plan& P, int V, int R) {
  ClTile L{};
  const int64_t groups = P.out_c / V;
  L.CB = 32;
  if (groups <= 64) {
    L.CB = static_cast<int>(groups);
  } else {
    for (int cb = 64; cb >= 32; --cb) {
      if (groups % cb == 0) {
        L.CB = cb;
        break;
      }
    }
  }
  L.chunks = ceil_div(groups, L.CB);
  const int pix = std::max(1, 256 / L.CB);
  L.PY = static_cast<int>(std::min<int64_t>(P.q[1], pix));
  L.PX = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(ceil_div(P.q[2], R), pix / L.PY)));
  L.tilesW = ceil_div(P.q[2], int64_t(L.PX) * R);
  L.tilesH = ceil_div(P.q[1], int64_t(L.PY));
  L.blocks = P.N * P.q[0] * L.tilesH * L.tilesW * L.chunks * P.phases;
  L.i32 = L.blocks <= int64_t(1) << 30;  // the launch caps the grid at 2^30 blocks
  return L;
}

inline unsigned cl_block_threads(const ClTile& L) {
  return static_cast<unsigned>(ceil_div(int64_t(L.CB) * L.PX * L.PY, 32) * 32);
}

// The 16-bit fast path (launch_cl_gather16): 2-D 3x3 filters read at stride 1 (the forward at
// stride 1 and the stride-1 data-grad). Measured on the H100 (bench/results/h100/session5/
// ab_knobs.log, fp16/bf16 NHWC): MobileNetV2 56x56 forward 0.076 -> 0.069 ms, 7x7 0.016 -> 0.014,
// their backward 3-5% faster; the 2x2 sub-filters of the stride-2 data-grads (k3/k4 s2) 5-7%
// slower, the 3x3 stride-2 forward 1-2% slower, and on 5x5 / 7x7 neither 16-byte vectors nor
// 16-bit weights beat the previous tile: those keep it.
inline bool cl16_specialised(const Plan& P) {
  const int s = P.S[1] == P.S[2] ? P.S[1] : 0;
  return P.k[0] == 1 && P.in[0] == 1 && P.k[1] == 3 && P.k[2] == 3 && s == 1;
}

// The launcher only takes channel counts up to this, so that offsets within a filter row
// (tap * channels) and within a row segment (column * channels) are 32-bit.
constexpr int64_t kClMaxChannels = int64_t(1) << 24;

// NK taps of one filter row on the thread's strip: w -> the first tap's weights (stride ws per
// tap), row -> the segment's first input vector (stride cs per column), cols bit c set when
// column c of the segment lies inside the input row (outside it reads zero).
template <int NK, int S, int R, int V, typename T, typename WT, typename acc_t>
__device__ __forceinline__ void cl_row(acc_t (&acc)[R][V], const T* __restrict__ row,
                                       const WT* __restrict__ w, int cs, int ws, uint32_t cols) {
  constexpr int NX = (R - 1) * S + NK;
  acc_t wv[NK][V];
#pragma unroll
  for (int k = 0; k < NK; ++k) {
    // one vector load per tap (as 32-bit words, like the inputs), converted once per row
    const auto raw = *reinterpret_cast<const Pack<uint32_t, sizeof(WT) * V / 4>*>(w + k * ws);
    Pack<WT, V> p;
    memcpy(&p, &raw, sizeof(p));
#pragma unroll
    for (int v = 0; v < V; ++v) wv[k][v] = static_cast<acc_t>(p.v[v]);
  }
#pragma unroll
  for (int c = 0; c < NX; ++c) {
    // Loaded as 32-bit words (zero outside the row) and only then viewed as T: element-wise
    // 16-bit selects cost a byte permute per element and registers.
    Pack<uint32_t, sizeof(T) * V / 4> raw{};
    if ((cols >> c) & 1u) raw = *reinterpret_cast<const Pack<uint32_t, sizeof(T) * V / 4>*>(row + c * cs);
    Pack<T, V> xv;
    memcpy(&xv, &raw, sizeof(xv));
    acc_t xf[V];
#pragma unroll
    for (int v = 0; v < V; ++v) xf[v] = static_cast<acc_t>(xv.v[v]);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int k = c - r * S;
      if (k < 0 || k >= NK) continue;
#pragma unroll
      for (int v = 0; v < V; ++v) acc[r][v] += wv[k][v] * xf[v];
    }
  }
}

// KH == 0: the filter height is read from the plan (a runtime loop, for tall filters).
template <typename T, typename WT, int KH, int KW, int S, int V, int R, int MINB>
__global__ void __launch_bounds__(256, MINB)
cl_gather(const T* __restrict__ in, const WT* __restrict__ wt,
          const T* __restrict__ bias, T* __restrict__ out, const Plan P, const ClTile L) {
  using acc_t = at::opmath_type<T>;
  constexpr int KC = KW < kClTapChunk ? KW : kClTapChunk, KR = KW % KC;
  static_assert((R - 1) * S + KC <= 32, "a row segment's columns are a 32-bit mask");
  const int tid = threadIdx.x;
  const int cl = tid % L.CB, p = tid / L.CB, px = p % L.PX, py = p / L.PX;
  const int kh_n = KH > 0 ? KH : P.k[1];
  const int cs = static_cast<int>(P.in_c), ws = static_cast<int>(P.wrows);
  const int64_t rs = P.in[2] * P.in_c, ds = P.in[1] * rs;  // elements per input row, plane
  const int64_t wrow = int64_t(KW) * P.wrows;                 // weights per filter row
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
    const int64_t qy = int64_t(thi) * L.PY + py, qx0 = (int64_t(twi) * L.PX + px) * R;
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
    const int64_t iz = int64_t(qd) * P.S[0] - P.pad[0][pd];
    // Filter rows (and depths) whose input row exists: no per-row border test in the loops.
    const int kh0 = static_cast<int>(iy < 0 ? -iy : 0);
    const int kh1 = static_cast<int>(P.in[1] - iy < kh_n ? P.in[1] - iy : kh_n);
    const int kd0 = static_cast<int>(iz < 0 ? -iz : 0);
    const int kd1 = static_cast<int>(P.in[0] - iz < P.k[0] ? P.in[0] - iz : P.k[0]);
    // Input (iz + kd0, iy + kh0, ix) and its weights; the column may lie left of the row and
    // the pointer before the row: only the columns of `cols` are read.
    const T* x0 = in + ((n * P.in[0] + iz + kd0) * P.in[1] + iy + kh0) * rs + ix * P.in_c + co0;
    const WT* w0 = wt + ph * P.wphase + (int64_t(kd0) * kh_n + kh0) * KW * P.wrows + co0;
    // The strip's first output and how many of its R outputs exist, computed before the loops
    // so that the block indices are dead during them (fewer live registers).
    const int64_t od = int64_t(qd) * P.os[0] + P.r[0][pd], oy = qy * P.os[1] + P.r[1][phh];
    T* o0 = out + ((n * P.out[0] + od) * P.out[1] + oy) * P.out[2] * P.out_c + co0 +
            (qx0 * P.os[2] + P.r[2][pw]) * P.out_c;
    const int64_t ostep = int64_t(P.os[2]) * P.out_c;
    const int nout = static_cast<int>(P.qn[2][pw] - qx0 < R ? P.qn[2][pw] - qx0 : R);
    // Taps [kc0, kc0 + NK) of every filter row.
    auto taps = [&](auto nk, int kc0) {
      constexpr int NK = decltype(nk)::value;
      constexpr int NX = (R - 1) * S + NK;
      uint32_t cols = 0;
#pragma unroll
      for (int c = 0; c < NX; ++c) {
        const int64_t iw = ix + kc0 + c;
        cols |= (iw >= 0 && iw < P.in[2]) ? 1u << c : 0u;
      }
#pragma unroll 1
      for (int kd = kd0; kd < kd1; ++kd) {
        const T* row = x0 + (kd - kd0) * ds + kc0 * cs;
        const WT* w = w0 + (int64_t(kd - kd0) * kh_n * KW + kc0) * P.wrows;
#pragma unroll 1
        for (int kh = kh0; kh < kh1; ++kh, row += rs, w += wrow)
          cl_row<NK, S, R, V>(acc, row, w, cs, ws, cols);
      }
    };
#pragma unroll 1
    for (int kc0 = 0; kc0 + KC <= KW; kc0 += KC) taps(std::integral_constant<int, KC>{}, kc0);
    if constexpr (KR != 0) taps(std::integral_constant<int, KR>{}, KW - KR);

#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (r >= nout) break;
      Pack<T, V> o;
#pragma unroll
      for (int v = 0; v < V; ++v) o.v[v] = static_cast<T>(acc[r][v]);
      *reinterpret_cast<Pack<T, V>*>(o0 + r * ostep) = o;
    }
  }
}

}  // namespace convx::cuda
