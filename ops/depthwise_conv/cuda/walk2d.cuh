// 7 x 7-class (and 5 x 5, session 13) depthwise filters at stride 1 on CUDA cores, a thread
// walking down a column strip of R = 4 output columns with a ring of K rows in registers: the
// weight-grad (walk_wgrad2d: a ring of the last K dy rows, the K * K tap sums in registers) and the
// forward / stride-1 data-grad (walk_conv2d: a ring of K output rows being summed, the filter in
// registers).
//
// Why: per input row segment of R + K - 1 values loaded, both do K * K * R FMAs (7 x 7: 10 loads
// for 196 FMAs), where nc_wgrad_stream reloads 8 input rows of 10 per 2 x 4 outputs (80 loads
// per 392 FMAs) and cl_wgrad_partial / cl_gather reload a filter row's inputs per output row.
// ConvNeXt's 7 x 7 weight-grad in fp32 took 0.25-0.27 ms on the H100 (convnext_56), where its
// 0.95 GMAC need 0.033 ms at the FP32 FMA rate.
//
// A work item is (sample, band of TH output rows, strip of R output columns) of one channel.
// Its thread walks steps t = 0 .. TH + K - 2; step t uses input row iy0 + t of the band's
// window, which meets the band's output row t - a through filter row a, for every a whose
// output row lies in the band. ring[a] holds band row t - a; after each step the ring moves one
// slot by register moves (K * R of them per K * K * R FMAs), so that the step loop is not
// unrolled: unrolling it K times (every ring index static, no moves) made a 7-step body of ~1400
// FMAs and measured slower where the two differ most (ConvNeXt-14 weight-grad 0.047 against 0.039
// ms; bench/results/h100/session12/cnx_call2_ab.log). The next step's rows are loaded before this
// step's products. Values outside the tensor (padding, strip columns past the row) are zeros;
// input rows outside the tensor skip their products.
// NCHW: a block (kWalkThreads) owns one channel and a chunk of its items, a thread one item at a
// time (strips fastest: a warp's loads cover neighbouring columns). NHWC: a block owns 32
// channels (lane = channel: every load and store is a warp's 32 consecutive channels) and a
// chunk of those channels' items, a warp one item at a time.
// Weight-grad: the block's tap sums are added in a fixed order (NCHW: warp butterfly, warps in
// order: wgrad_block_sum; NHWC: per channel the warps in order through shared memory) into
// part[channel][chunk][tap]; sum_slots adds the chunks in order. No atomics: bitwise repeatable,
// the result a function of the shapes.
// Forward: ring[a] sums output row t - a; after step t, ring[K - 1] (row t - K + 1) is complete:
// stored (+ bias, converted to T).
#pragma once

#include "ops/depthwise_conv/cuda/nc_wgrad_stream.cuh"
#include "ops/depthwise_conv/cuda/plan.cuh"

#include <ATen/OpMathType.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>

namespace convx::cuda {

// 128 threads, 3 blocks per SM (ptxas, sm_90: 137-144 registers at 7 x 7, 96 at 5 x 5 (5 blocks
// per SM), no spills). Bands of 16 rows:
// 8-row bands (K - 1 = 6 re-read input rows per 8) measured slower on every row routed here
// (cnx_call2_ab.log: ConvNeXt-56 fp32 NHWC weight-grad 0.220 against 0.197 ms).
constexpr int kWalkThreads = 128, kWalkCols = 4, kWalkBandRows = 16;

struct Walk2d {
  int strips, bands, TH;  // strips of kWalkCols output columns per row, bands of TH output rows
  int items;              // per channel (NCHW) / per group of 32 channels (NHWC)
  int groups;             // channels (NCHW) / channel groups of 32 (NHWC)
  int chunk, chunks;      // items per block, blocks per channel (group)
  int IH, IW, QH, QW, ph, pw, C;
};

// The launch layout from the shapes alone; false when not covered (not one phase of a 2-D K x K
// filter at stride 1 with multiplier 1, or sizes beyond the kernels' 32-bit in-plane arithmetic).
// band_rows: kWalkBandRows (the CPU harness also tries smaller bands).
inline bool walk2d_plan(Walk2d& L, const Plan& P, int K, bool cl, int64_t target_blocks,
                        int band_rows = kWalkBandRows) {
  constexpr int64_t lim = std::numeric_limits<int32_t>::max() / 2;
  if (P.phases != 1 || P.k[0] != 1 || P.k[1] != K || P.k[2] != K || P.S[0] != 1 || P.S[1] != 1 || P.S[2] != 1 ||
      P.in[0] != 1 || P.q[0] != 1 || P.in_div != 1 || P.out_c != P.in_c || P.N <= 0 || P.q[1] != P.out[1] ||
      P.q[2] != P.out[2] || P.q[1] <= 0 || P.q[2] <= 0) {
    return false;
  }
  // Every in-plane offset formed (padding rows and columns included) lies within these bounds.
  const int64_t rows = P.in[1] + P.q[1] + K + std::abs(P.pad[1][0]), cols = P.in[2] + P.q[2] + K + std::abs(P.pad[2][0]);
  if (rows * cols * (cl ? P.in_c : 1) > lim) return false;
  const int64_t strips = ceil_div(P.q[2], kWalkCols);
  // Bands of about band_rows rows: enough items to spread evenly; each band re-reads K - 1 input rows.
  const int64_t bands = ceil_div(P.q[1], band_rows), TH = ceil_div(P.q[1], bands);
  const int64_t items = P.N * bands * strips;
  if (items > lim) return false;
  const int64_t groups = cl ? ceil_div(P.in_c, 32) : P.in_c;
  // Chunks of whole rounds (every thread / warp of a block walks the same number of items).
  const int64_t unit = cl ? kWalkThreads / 32 : kWalkThreads, units = ceil_div(items, unit);
  const int64_t chunks = std::clamp<int64_t>(ceil_div(target_blocks, groups), 1, units);
  const int64_t chunk = unit * ceil_div(units, chunks);
  if (groups * ceil_div(items, chunk) > lim) return false;
  L.strips = int(strips), L.bands = int(bands), L.TH = int(TH), L.items = int(items);
  L.groups = int(groups), L.chunk = int(chunk), L.chunks = int(ceil_div(items, chunk));
  L.IH = int(P.in[1]), L.IW = int(P.in[2]), L.QH = int(P.q[1]), L.QW = int(P.q[2]);
  L.ph = P.pad[1][0], L.pw = P.pad[2][0], L.C = int(P.in_c);
  return true;
}

// n values from r[0], r[ps], ... into o, zeros where bit c of m is clear (outside the row) or
// when !ok (a row outside the tensor or the band).
template <typename T, int NX, typename acc_t>
__device__ __forceinline__ void walk_row(const T* __restrict__ r, int ps, uint32_t m, bool ok, acc_t (&o)[NX]) {
#pragma unroll
  for (int c = 0; c < NX; ++c) o[c] = (ok && ((m >> c) & 1u)) ? static_cast<acc_t>(r[c * ps]) : acc_t(0);
}

// An item's geometry: first output row / column, rows in the band, the input window's origin,
// the column masks (xm: input columns ix0 + c, om: the R output columns inside the row) and the
// 32-bit in-plane offsets of its first output / input element and the row pitches, for a position
// step of ps elements (1 NCHW, C NHWC; walk2d_plan bounds them, padding included).
struct WalkItem {
  int qy0, qx0, th, iy0, ix0;
  uint32_t xm, om;
  int opitch, xpitch, oo, xo;
};

template <typename acc_t, int K, int R>
__device__ __forceinline__ void zero_ring(acc_t (&ring)[K][R]) {
#pragma unroll
  for (int k = 0; k < K; ++k) {
#pragma unroll
    for (int r = 0; r < R; ++r) ring[k][r] = acc_t(0);
  }
}

template <int NX, int R>
__device__ __forceinline__ WalkItem walk_item(const Walk2d& L, int band, int strip, int ps) {
  WalkItem I;
  I.qy0 = band * L.TH, I.qx0 = strip * R;
  I.th = L.QH - I.qy0 < L.TH ? L.QH - I.qy0 : L.TH;
  I.iy0 = I.qy0 - L.ph, I.ix0 = I.qx0 - L.pw;
  I.opitch = L.QW * ps, I.xpitch = L.IW * ps;
  I.oo = I.qy0 * I.opitch + I.qx0 * ps, I.xo = I.iy0 * I.xpitch + I.ix0 * ps;
  I.xm = I.om = 0;
#pragma unroll
  for (int c = 0; c < NX; ++c) I.xm |= uint32_t(I.ix0 + c >= 0 && I.ix0 + c < L.IW) << c;
#pragma unroll
  for (int r = 0; r < R; ++r) I.om |= uint32_t(I.qx0 + r < L.QW) << r;
  return I;
}

// Weight-grad: one item's products added into v. x / g point at the channel's plane of the
// sample, ps the element step of a position (1 NCHW, C NHWC).
template <typename T, int K, typename acc_t>
__device__ __forceinline__ void wgrad_item(const T* __restrict__ x, const T* __restrict__ g, int ps, const Walk2d& L,
                                           int band, int strip, acc_t (&v)[K * K]) {
  constexpr int R = kWalkCols, NX = R + K - 1;
  const WalkItem I = walk_item<NX, R>(L, band, strip, ps);
  const int gpitch = I.opitch, xpitch = I.xpitch, go = I.oo, xo = I.xo;
  acc_t ring[K][R];
  zero_ring(ring);
  const int steps = I.th + K - 1;
  acc_t xn[NX], gn[R];
  bool xok = I.iy0 >= 0 && I.iy0 < L.IH;
  walk_row<T, NX>(x + xo, ps, I.xm, xok, xn);
  walk_row<T, R>(g + go, ps, I.om, true, gn);
#pragma unroll 1
  for (int t = 0; t < steps; ++t) {
    acc_t xv[NX];
#pragma unroll
    for (int c = 0; c < NX; ++c) xv[c] = xn[c];
#pragma unroll
    for (int k = K - 1; k > 0; --k) {
#pragma unroll
      for (int r = 0; r < R; ++r) ring[k][r] = ring[k - 1][r];
    }
#pragma unroll
    for (int r = 0; r < R; ++r) ring[0][r] = gn[r];
    const bool ok = xok;
    // the next step's rows (dy rows past the band are zeros)
    const int iyn = I.iy0 + t + 1;
    xok = t + 1 < steps && iyn >= 0 && iyn < L.IH;
    walk_row<T, NX>(x + (xo + (t + 1) * xpitch), ps, I.xm, xok, xn);
    walk_row<T, R>(g + (go + (t + 1) * gpitch), ps, I.om, t + 1 < I.th, gn);
    if (!ok) continue;  // a padding row: no products
#pragma unroll
    for (int a = 0; a < K; ++a) {
      if (t - a >= 0 && t - a < I.th) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
#pragma unroll
          for (int b = 0; b < K; ++b) v[a * K + b] += xv[r + b] * ring[a][r];
        }
      }
    }
  }
}

// part[channel][chunk][tap]: the block's sum over its chunk of items.
template <typename T, int K, bool CL>
__global__ void __launch_bounds__(kWalkThreads, 3)
walk_wgrad2d(const T* __restrict__ x, const T* __restrict__ gy, at::opmath_type<T>* __restrict__ part,
             const Walk2d L) {
  using acc_t = at::opmath_type<T>;
  constexpr int NV = K * K, W = kWalkThreads / 32;
  __shared__ acc_t red[CL ? W * NV * 32 : W * NV];
  const int64_t b = blockIdx.x;
  const int grp = static_cast<int>(b / L.chunks), ck = static_cast<int>(b - int64_t(grp) * L.chunks);
  const int i0 = ck * L.chunk, i1 = i0 + L.chunk < L.items ? i0 + L.chunk : L.items;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t in_plane = int64_t(L.IH) * L.IW, out_plane = int64_t(L.QH) * L.QW;
  const int c = CL ? grp * 32 + lane : grp;
  const bool live = c < L.C;
  acc_t v[NV];
#pragma unroll
  for (int i = 0; i < NV; ++i) v[i] = acc_t(0);
  const int first = CL ? i0 + warp : i0 + static_cast<int>(threadIdx.x), step = CL ? W : kWalkThreads;
  for (int it = first; live && it < i1; it += step) {
    const int strip = it % L.strips, rest = it / L.strips;
    const int band = rest % L.bands, n = rest / L.bands;
    if constexpr (CL) {
      wgrad_item<T, K>(x + int64_t(n) * in_plane * L.C + c, gy + int64_t(n) * out_plane * L.C + c, L.C, L, band, strip,
                       v);
    } else {
      wgrad_item<T, K>(x + (int64_t(n) * L.C + c) * in_plane, gy + (int64_t(n) * L.C + c) * out_plane, 1, L, band,
                       strip, v);
    }
  }
  if constexpr (CL) {
    // red[warp][tap][lane], then per (tap, lane) the warps in order
#pragma unroll
    for (int i = 0; i < NV; ++i) red[(warp * NV + i) * 32 + lane] = v[i];
    __syncthreads();
    for (int j = threadIdx.x; j < NV * 32; j += kWalkThreads) {
      const int tap = j / 32, l = j % 32;
      acc_t s = acc_t(0);
      for (int w = 0; w < W; ++w) s += red[(w * NV + tap) * 32 + l];
      if (grp * 32 + l < L.C) part[(int64_t(grp * 32 + l) * L.chunks + ck) * NV + tap] = s;
    }
  } else {
    wgrad_block_sum<NV>(v, red, part + (int64_t(c) * L.chunks + ck) * NV);
  }
}

// Forward / stride-1 data-grad: one item's outputs. x / y point at the channel's plane of the
// sample, ps the element step of a position (1 NCHW, C NHWC), wr the filter (taps as correlated).
template <typename T, int K, typename acc_t>
__device__ __forceinline__ void conv_item(const T* __restrict__ x, T* __restrict__ y, int ps, const Walk2d& L,
                                          int band, int strip, const acc_t (&wr)[K * K], acc_t bias) {
  constexpr int R = kWalkCols, NX = R + K - 1;
  const WalkItem I = walk_item<NX, R>(L, band, strip, ps);
  const int ypitch = I.opitch, xpitch = I.xpitch, yo = I.oo, xo = I.xo;
  acc_t ring[K][R];
  zero_ring(ring);
  const int steps = I.th + K - 1;
  acc_t xn[NX];
  bool xok = I.iy0 >= 0 && I.iy0 < L.IH;
  walk_row<T, NX>(x + xo, ps, I.xm, xok, xn);
#pragma unroll 1
  for (int t = 0; t < steps; ++t) {
    acc_t xv[NX];
#pragma unroll
    for (int c = 0; c < NX; ++c) xv[c] = xn[c];
    const bool ok = xok;
    const int iyn = I.iy0 + t + 1;
    xok = t + 1 < steps && iyn >= 0 && iyn < L.IH;
    walk_row<T, NX>(x + (xo + (t + 1) * xpitch), ps, I.xm, xok, xn);
    if (ok) {  // a padding row adds nothing
#pragma unroll
      for (int a = 0; a < K; ++a) {
        if (t - a >= 0 && t - a < I.th) {
#pragma unroll
          for (int b = 0; b < K; ++b) {
#pragma unroll
            for (int r = 0; r < R; ++r) ring[a][r] += xv[r + b] * wr[a * K + b];
          }
        }
      }
    }
    if (t >= K - 1) {  // output row t - K + 1 is complete
      T* yr = y + (yo + (t - (K - 1)) * ypitch);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        if ((I.om >> r) & 1u) yr[r * ps] = static_cast<T>(ring[K - 1][r] + bias);
      }
    }
#pragma unroll
    for (int k = K - 1; k > 0; --k) {
#pragma unroll
      for (int r = 0; r < R; ++r) ring[k][r] = ring[k - 1][r];
    }
#pragma unroll
    for (int r = 0; r < R; ++r) ring[0][r] = acc_t(0);
  }
}

template <typename T, int K, bool CL>
__global__ void __launch_bounds__(kWalkThreads, 3)
walk_conv2d(const T* __restrict__ x, const T* __restrict__ w, bool flip, const T* __restrict__ bias,
            T* __restrict__ y, const Walk2d L) {
  using acc_t = at::opmath_type<T>;
  constexpr int NV = K * K, W = kWalkThreads / 32;
  const int64_t b = blockIdx.x;
  const int grp = static_cast<int>(b / L.chunks), ck = static_cast<int>(b - int64_t(grp) * L.chunks);
  const int i0 = ck * L.chunk, i1 = i0 + L.chunk < L.items ? i0 + L.chunk : L.items;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int c = CL ? grp * 32 + lane : grp;
  if (c >= L.C) return;  // no barriers below
  acc_t wr[NV];
#pragma unroll
  for (int i = 0; i < NV; ++i) wr[i] = static_cast<acc_t>(w[int64_t(c) * NV + (flip ? NV - 1 - i : i)]);
  const acc_t bv = bias ? static_cast<acc_t>(bias[c]) : acc_t(0);
  const int64_t in_plane = int64_t(L.IH) * L.IW, out_plane = int64_t(L.QH) * L.QW;
  const int first = CL ? i0 + warp : i0 + static_cast<int>(threadIdx.x), step = CL ? W : kWalkThreads;
  for (int it = first; it < i1; it += step) {
    const int strip = it % L.strips, rest = it / L.strips;
    const int band = rest % L.bands, n = rest / L.bands;
    if constexpr (CL) {
      conv_item<T, K>(x + int64_t(n) * in_plane * L.C + c, y + int64_t(n) * out_plane * L.C + c, L.C, L, band, strip,
                      wr, bv);
    } else {
      conv_item<T, K>(x + (int64_t(n) * L.C + c) * in_plane, y + (int64_t(n) * L.C + c) * out_plane, 1, L, band,
                      strip, wr, bv);
    }
  }
}

}  // namespace convx::cuda
