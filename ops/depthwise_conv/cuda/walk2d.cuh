// 7 x 7-class depthwise filters at stride 1 on CUDA cores, a thread walking down a column strip
// of R = 4 output columns with a ring of K rows in registers: the forward / stride-1 data-grad
// (walk_conv2d: a ring of K output rows being summed, the filter in registers) and the
// weight-grad (walk_wgrad2d: a ring of the last K dy rows, the K * K tap sums in registers).
//
// Why: per input row segment of R + K - 1 values loaded, both do K * K * R FMAs (7 x 7: 10 loads
// for 196 FMAs), where the kernels they replace reload the segment for every output row or pair
// of rows (nc_wgrad_stream: 80 input loads per 392 FMAs; cl_gather / cl_ring: one filter row's
// inputs per output row). ConvNeXt's 7 x 7 is compute-bound at 49 FMAs per output: 0.95 GMAC
// for convnext_56, 0.033 ms at the H100's fp32 FMA rate, against 0.09-0.14 ms forward and 0.25
// ms weight-grad before.
//
// A work item is (sample, band of TH output rows, strip of R output columns) of one channel.
// Its thread walks steps t = 0 .. TH + K - 2, loading input row iy0 + t of the band's window;
// that row meets the band's output row t - a through filter row a, for every a whose output
// row lies in the band. The step loop is unrolled by K so that every ring index is static.
// Values outside the tensor (padding, strip columns past the row) are zeros; input rows outside
// the tensor skip their products.
// NCHW: a block (kWalkThreads) owns one channel and a chunk of its items, a thread one item at a
// time (strips fastest: a warp's loads cover neighbouring columns). NHWC: a block owns 32
// channels (lane = channel: every load and store is a warp's 32 consecutive channels) and a
// chunk of those channels' items, a warp one item at a time.
// Weight-grad: the dy row of step t (band row t) goes into ring slot t % K; the block's tap sums
// are added in a fixed order (NCHW: warp butterfly, warps in order: wgrad_block_sum; NHWC: per
// channel the warps in order through shared memory) into part[channel][chunk][tap]; sum_slots
// adds the chunks in order. No atomics: bitwise repeatable, the result a function of the shapes.
// Forward: output row h sums into slot h % K from step h to step h + K - 1, then is stored
// (+ bias, converted to T) and its slot cleared.
#pragma once

#include "ops/depthwise_conv/cuda/nc_wgrad_stream.cuh"
#include "ops/depthwise_conv/cuda/plan.cuh"

#include <ATen/OpMathType.h>

#include <algorithm>
#include <cstdlib>
#include <cstdint>
#include <limits>

namespace convx::cuda {

constexpr int kWalkThreads = 128, kWalkCols = 4;

struct Walk2d {
  int strips, bands, TH;  // strips of kWalkCols output columns per row, bands of TH output rows
  int items;              // per channel (NCHW) / per group of 32 channels (NHWC)
  int groups;             // channels (NCHW) / channel groups of 32 (NHWC)
  int chunk, chunks;      // items per block, blocks per channel (group)
  int IH, IW, QH, QW, ph, pw, C;
  bool vec;  // NCHW rows in 4-value vectors (walk_row): widths % 4, width padding % 4 == 3
};

// The launch layout from the shapes alone; false when not covered (not one phase of a 2-D K x K
// filter at stride 1 with multiplier 1, or sizes beyond the kernels' 32-bit in-plane arithmetic).
inline bool walk2d_plan(Walk2d& L, const Plan& P, int K, bool cl, int64_t target_blocks, int band_rows = 8) {
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
  // Bands of about band_rows rows: enough items to spread evenly; each band reloads K - 1 input rows.
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
  // (the launcher also checks the tensors' alignment to 4 values)
  L.vec = !cl && P.in[2] % 4 == 0 && P.q[2] % 4 == 0 && ((L.pw % 4) + 4) % 4 == 3;
  return true;
}

// Four consecutive values, one 16-byte (fp32) / 8-byte (16-bit) access.
template <typename T>
struct alignas(4 * sizeof(T)) Walk4 {
  T v[4];
};

// Input row segment xr[0 .. NX) (x columns ix0 + c) into xv, zeros outside the row. VEC (NCHW,
// ps 1): read as the vectors starting one column before xr, each entirely inside or outside the
// row (walk2d_plan: widths % 4, padding % 4 == 3, aligned planes): vm bit j says vector j is
// inside. Otherwise value by value, xm bit c says column c is inside.
template <typename T, int NX, bool VEC, typename acc_t>
__device__ __forceinline__ void walk_row(const T* __restrict__ xr, int ps, uint32_t xm, uint32_t vm, acc_t (&xv)[NX]) {
  if constexpr (VEC) {
    constexpr int NV4 = (NX + 4) / 4;
    acc_t all[4 * NV4];
#pragma unroll
    for (int j = 0; j < NV4; ++j) {
      if ((vm >> j) & 1u) {
        const Walk4<T> q = *reinterpret_cast<const Walk4<T>*>(xr - 1 + 4 * j);
#pragma unroll
        for (int i = 0; i < 4; ++i) all[4 * j + i] = static_cast<acc_t>(q.v[i]);
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) all[4 * j + i] = acc_t(0);
      }
    }
#pragma unroll
    for (int c = 0; c < NX; ++c) xv[c] = all[c + 1];
  } else {
#pragma unroll
    for (int c = 0; c < NX; ++c) xv[c] = ((xm >> c) & 1u) ? static_cast<acc_t>(xr[c * ps]) : acc_t(0);
  }
}

// The column masks of an item: xm (input columns ix0 + c), vm (VEC: the vectors from ix0 - 1),
// om (the R output columns).
template <int NX, int R>
__device__ __forceinline__ void walk_masks(int ix0, int qx0, const Walk2d& L, uint32_t& xm, uint32_t& vm,
                                           uint32_t& om) {
  xm = vm = om = 0;
#pragma unroll
  for (int c = 0; c < NX; ++c) xm |= uint32_t(ix0 + c >= 0 && ix0 + c < L.IW) << c;
#pragma unroll
  for (int j = 0; j < (NX + 4) / 4; ++j) vm |= uint32_t(ix0 - 1 + 4 * j >= 0 && ix0 - 1 + 4 * j < L.IW) << j;
#pragma unroll
  for (int r = 0; r < R; ++r) om |= uint32_t(qx0 + r < L.QW) << r;
}

// Weight-grad: one item's products added into v. x / g point at the channel's plane of the sample, ps / gs the
// element steps of a position (1 NCHW, C NHWC).
template <typename T, int K, bool VEC, typename acc_t>
__device__ __forceinline__ void wgrad_item(const T* __restrict__ x, const T* __restrict__ g, int ps, const Walk2d& L,
                                          int band, int strip, acc_t (&v)[K * K]) {
  constexpr int R = kWalkCols, NX = R + K - 1;
  const int qy0 = band * L.TH, qx0 = strip * R;
  const int th = L.QH - qy0 < L.TH ? L.QH - qy0 : L.TH;
  const int iy0 = qy0 - L.ph, ix0 = qx0 - L.pw;
  uint32_t xm, vm, gm;
  walk_masks<NX, R>(ix0, qx0, L, xm, vm, gm);
  // 32-bit in-plane offsets (walk2d_plan bounds them, padding included)
  const int gpitch = L.QW * ps, xpitch = L.IW * ps;
  const int go = qy0 * gpitch + qx0 * ps, xo = iy0 * xpitch + ix0 * ps;
  acc_t ring[K][R];
  const int steps = th + K - 1;
  for (int t0 = 0; t0 < steps; t0 += K) {
#pragma unroll
    for (int u = 0; u < K; ++u) {
      const int t = t0 + u;
      if (t >= steps) break;
      if (t < th) {
        const T* gr = g + (go + t * gpitch);
        if constexpr (VEC) {  // the strip's 4 columns: all inside the row or none
          const Walk4<T> q = (gm & 1u) ? *reinterpret_cast<const Walk4<T>*>(gr) : Walk4<T>{};
#pragma unroll
          for (int r = 0; r < R; ++r) ring[u][r] = (gm & 1u) ? static_cast<acc_t>(q.v[r]) : acc_t(0);
        } else {
#pragma unroll
          for (int r = 0; r < R; ++r) ring[u][r] = ((gm >> r) & 1u) ? static_cast<acc_t>(gr[r * ps]) : acc_t(0);
        }
      }
      const int iy = iy0 + t;
      if (iy < 0 || iy >= L.IH) continue;  // a padding row: no products
      acc_t xv[NX];
      walk_row<T, NX, VEC>(x + (xo + t * xpitch), ps, xm, vm, xv);
#pragma unroll
      for (int a = 0; a < K; ++a) {
        if (t - a >= 0 && t - a < th) {
          const int s = (u - a + K) % K;
#pragma unroll
          for (int b = 0; b < K; ++b) {
#pragma unroll
            for (int r = 0; r < R; ++r) v[a * K + b] += xv[r + b] * ring[s][r];
          }
        }
      }
    }
  }
}

// Dy row segment of a strip (R values) into o, zeros outside the row (VEC: all 4 or none).
template <typename T, int R, bool VEC, typename acc_t>
__device__ __forceinline__ void walk_strip(const T* __restrict__ gr, int ps, uint32_t gm, bool ok, acc_t (&o)[R]) {
  if constexpr (VEC) {
    const bool in = ok && (gm & 1u);
    Walk4<T> q{};
    if (in) q = *reinterpret_cast<const Walk4<T>*>(gr);
#pragma unroll
    for (int r = 0; r < R; ++r) o[r] = in ? static_cast<acc_t>(q.v[r]) : acc_t(0);
  } else {
#pragma unroll
    for (int r = 0; r < R; ++r) o[r] = (ok && ((gm >> r) & 1u)) ? static_cast<acc_t>(gr[r * ps]) : acc_t(0);
  }
}

// Variant 1 of wgrad_item (A/B): one step per loop iteration, the dy ring shifted by register
// moves (ring[a] = band row t - a), the next step's input and dy rows loaded before this step's
// products.
template <typename T, int K, bool VEC, typename acc_t>
__device__ __forceinline__ void wgrad_item_shift(const T* __restrict__ x, const T* __restrict__ g, int ps,
                                                 const Walk2d& L, int band, int strip, acc_t (&v)[K * K]) {
  constexpr int R = kWalkCols, NX = R + K - 1;
  const int qy0 = band * L.TH, qx0 = strip * R;
  const int th = L.QH - qy0 < L.TH ? L.QH - qy0 : L.TH;
  const int iy0 = qy0 - L.ph, ix0 = qx0 - L.pw;
  uint32_t xm, vm, gm;
  walk_masks<NX, R>(ix0, qx0, L, xm, vm, gm);
  const int gpitch = L.QW * ps, xpitch = L.IW * ps;
  const int go = qy0 * gpitch + qx0 * ps, xo = iy0 * xpitch + ix0 * ps;
  acc_t ring[K][R];
#pragma unroll
  for (int k = 0; k < K; ++k) {
#pragma unroll
    for (int r = 0; r < R; ++r) ring[k][r] = acc_t(0);
  }
  const int steps = th + K - 1;
  acc_t xn[NX], gn[R];
  bool xok = iy0 >= 0 && iy0 < L.IH;
  if (xok) walk_row<T, NX, VEC>(x + xo, ps, xm, vm, xn);
  walk_strip<T, R, VEC>(g + go, ps, gm, true, gn);
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
    // the next step's rows
    const int iyn = iy0 + t + 1;
    xok = t + 1 < steps && iyn >= 0 && iyn < L.IH;
    if (xok) walk_row<T, NX, VEC>(x + (xo + (t + 1) * xpitch), ps, xm, vm, xn);
    walk_strip<T, R, VEC>(g + (go + (t + 1) * gpitch), ps, gm, t + 1 < th, gn);
    if (!ok) continue;  // a padding row: no products
#pragma unroll
    for (int a = 0; a < K; ++a) {
      if (t - a >= 0 && t - a < th) {
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
template <typename T, int K, bool CL, bool VEC, int V>
__global__ void __launch_bounds__(kWalkThreads, V == 0 ? 4 : 3)
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
      const T* xp = x + int64_t(n) * in_plane * L.C + c;
      const T* gp = gy + int64_t(n) * out_plane * L.C + c;
      if constexpr (V == 0) wgrad_item<T, K, VEC>(xp, gp, L.C, L, band, strip, v);
      else wgrad_item_shift<T, K, VEC>(xp, gp, L.C, L, band, strip, v);
    } else {
      const T* xp = x + (int64_t(n) * L.C + c) * in_plane;
      const T* gp = gy + (int64_t(n) * L.C + c) * out_plane;
      if constexpr (V == 0) wgrad_item<T, K, VEC>(xp, gp, 1, L, band, strip, v);
      else wgrad_item_shift<T, K, VEC>(xp, gp, 1, L, band, strip, v);
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
template <typename T, int K, bool VEC, typename acc_t>
__device__ __forceinline__ void conv_item(const T* __restrict__ x, T* __restrict__ y, int ps, const Walk2d& L,
                                          int band, int strip, const acc_t (&wr)[K * K], acc_t bias) {
  constexpr int R = kWalkCols, NX = R + K - 1;
  const int qy0 = band * L.TH, qx0 = strip * R;
  const int th = L.QH - qy0 < L.TH ? L.QH - qy0 : L.TH;
  const int iy0 = qy0 - L.ph, ix0 = qx0 - L.pw;
  uint32_t xm, vm, ym;
  walk_masks<NX, R>(ix0, qx0, L, xm, vm, ym);
  // 32-bit in-plane offsets (walk2d_plan bounds them, padding included)
  const int ypitch = L.QW * ps, xpitch = L.IW * ps;
  const int yo = qy0 * ypitch + qx0 * ps, xo = iy0 * xpitch + ix0 * ps;
  acc_t ring[K][R];
#pragma unroll
  for (int s = 0; s < K; ++s) {
#pragma unroll
    for (int r = 0; r < R; ++r) ring[s][r] = acc_t(0);
  }
  const int steps = th + K - 1;
  for (int t0 = 0; t0 < steps; t0 += K) {
#pragma unroll
    for (int u = 0; u < K; ++u) {
      const int t = t0 + u;
      if (t >= steps) break;
      const int iy = iy0 + t;
      if (iy >= 0 && iy < L.IH) {  // a padding row adds nothing
        acc_t xv[NX];
        walk_row<T, NX, VEC>(x + (xo + t * xpitch), ps, xm, vm, xv);
#pragma unroll
        for (int a = 0; a < K; ++a) {
          if (t - a >= 0 && t - a < th) {
            const int s = (u - a + K) % K;
#pragma unroll
            for (int r = 0; r < R; ++r) {
#pragma unroll
              for (int b = 0; b < K; ++b) ring[s][r] += xv[r + b] * wr[a * K + b];
            }
          }
        }
      }
      if (t >= K - 1) {  // output row t - K + 1 is complete
        const int h = t - (K - 1);
        const int sl = (u + 1) % K;
        T* yr = y + (yo + h * ypitch);
        if constexpr (VEC) {  // the strip's 4 columns: all inside the row or none
          Walk4<T> q;
#pragma unroll
          for (int r = 0; r < R; ++r) q.v[r] = static_cast<T>(ring[sl][r] + bias);
          if (ym & 1u) *reinterpret_cast<Walk4<T>*>(yr) = q;
        } else {
#pragma unroll
          for (int r = 0; r < R; ++r) {
            if ((ym >> r) & 1u) yr[r * ps] = static_cast<T>(ring[sl][r] + bias);
          }
        }
#pragma unroll
        for (int r = 0; r < R; ++r) ring[sl][r] = acc_t(0);
      }
    }
  }
}

// Variant 1 of conv_item (A/B): one step per loop iteration, the output ring shifted by
// register moves (ring[a] = band output row t - a), the next step's input row loaded before this
// step's products.
template <typename T, int K, bool VEC, typename acc_t>
__device__ __forceinline__ void conv_item_shift(const T* __restrict__ x, T* __restrict__ y, int ps, const Walk2d& L,
                                                int band, int strip, const acc_t (&wr)[K * K], acc_t bias) {
  constexpr int R = kWalkCols, NX = R + K - 1;
  const int qy0 = band * L.TH, qx0 = strip * R;
  const int th = L.QH - qy0 < L.TH ? L.QH - qy0 : L.TH;
  const int iy0 = qy0 - L.ph, ix0 = qx0 - L.pw;
  uint32_t xm, vm, ym;
  walk_masks<NX, R>(ix0, qx0, L, xm, vm, ym);
  const int ypitch = L.QW * ps, xpitch = L.IW * ps;
  const int yo = qy0 * ypitch + qx0 * ps, xo = iy0 * xpitch + ix0 * ps;
  acc_t ring[K][R];
#pragma unroll
  for (int k = 0; k < K; ++k) {
#pragma unroll
    for (int r = 0; r < R; ++r) ring[k][r] = acc_t(0);
  }
  const int steps = th + K - 1;
  acc_t xn[NX];
  bool xok = iy0 >= 0 && iy0 < L.IH;
  if (xok) walk_row<T, NX, VEC>(x + xo, ps, xm, vm, xn);
#pragma unroll 1
  for (int t = 0; t < steps; ++t) {
    acc_t xv[NX];
#pragma unroll
    for (int c = 0; c < NX; ++c) xv[c] = xn[c];
    const bool ok = xok;
    const int iyn = iy0 + t + 1;
    xok = t + 1 < steps && iyn >= 0 && iyn < L.IH;
    if (xok) walk_row<T, NX, VEC>(x + (xo + (t + 1) * xpitch), ps, xm, vm, xn);
    if (ok) {
#pragma unroll
      for (int a = 0; a < K; ++a) {
        if (t - a >= 0 && t - a < th) {
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
      if constexpr (VEC) {
        Walk4<T> q;
#pragma unroll
        for (int r = 0; r < R; ++r) q.v[r] = static_cast<T>(ring[K - 1][r] + bias);
        if (ym & 1u) *reinterpret_cast<Walk4<T>*>(yr) = q;
      } else {
#pragma unroll
        for (int r = 0; r < R; ++r) {
          if ((ym >> r) & 1u) yr[r * ps] = static_cast<T>(ring[K - 1][r] + bias);
        }
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

template <typename T, int K, bool CL, bool VEC, int V>
__global__ void __launch_bounds__(kWalkThreads, V == 0 ? 4 : 3)
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
      const T* xp = x + int64_t(n) * in_plane * L.C + c;
      T* yp = y + int64_t(n) * out_plane * L.C + c;
      if constexpr (V == 0) conv_item<T, K, VEC>(xp, yp, L.C, L, band, strip, wr, bv);
      else conv_item_shift<T, K, VEC>(xp, yp, L.C, L, band, strip, wr, bv);
    } else {
      const T* xp = x + (int64_t(n) * L.C + c) * in_plane;
      T* yp = y + (int64_t(n) * L.C + c) * out_plane;
      if constexpr (V == 0) conv_item<T, K, VEC>(xp, yp, 1, L, band, strip, wr, bv);
      else conv_item_shift<T, K, VEC>(xp, yp, 1, L, band, strip, wr, bv);
    }
  }
}

}  // namespace convx::cuda
