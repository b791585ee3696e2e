// Tiled depthwise kernels for NC(D)HW (and NCL): forward / data-grad (one phased-correlation
// kernel, plan.cuh) and the one-pass deterministic weight-grad.
//
// A block holds TZ planes; for each, TX x TY threads cover a tile of TY output rows by TX*R
// output columns: each thread computes R consecutive outputs of one row (a register micro-tile).
// The input tile of the plane, halo included and zero-filled outside the tensor, is staged in
// shared memory in the opmath type, so the inner loops have no bounds checks; with the filter
// size known at compile time a thread reads its row segment as 16-byte vectors and reuses every
// value for all the taps that touch it. Depth (3-D) is a runtime loop over tile refills.
#pragma once

#include "ops/depthwise_conv/cuda/plan.cuh"

#include <ATen/OpMathType.h>

#include <algorithm>
#include <type_traits>

namespace convx::cuda {

constexpr int kTileThreads = 256;
constexpr int kTileSmemBytes = 48 * 1024;

struct NcTile {
  int TX, TY, TZ;       // threads along W, along H, planes per block
  int rows, cols;       // shared tile of one plane (cols a multiple of 4)
  int64_t tilesW, tilesH, groups, blocks;
};

// Outputs per thread along W: more for wide filters, whose row segment is reused more.
template <int KW>
constexpr int nc_outputs_per_thread() {
  return KW >= 15 ? 8 : 4;
}

// Picks the block shape for outputs q (per phase) read through a filter of kh x kw taps with
// strides sh, sw. false when one plane's tile does not fit in shared memory (besides `fixed`
// bytes per block and `per_plane` bytes per plane of other shared data).
inline bool choose_nc_tile(NcTile& L, const Plan& P, int R, int kh, int kw, int sh, int sw,
                           int64_t planes, int esz, int64_t fixed = 0, int64_t per_plane = 0) {
  auto pow2 = [](int64_t v) {
    int p = 1;
    while (p < v && p < kTileThreads) p *= 2;
    return p;
  };
  L.TX = pow2(ceil_div(P.q[2], R));
  L.TY = std::min<int>(kTileThreads / L.TX, pow2(P.q[1]));
  L.TZ = std::min<int>(kTileThreads / (L.TX * L.TY), pow2(planes));
  auto fit = [&] {
    L.rows = (L.TY - 1) * sh + kh;
    L.cols = static_cast<int>((((L.TX * R - 1) * sw + kw + 3) / 4) * 4 + 4);
    return fixed + L.TZ * (int64_t(L.rows) * L.cols * esz + per_plane) <= kTileSmemBytes;
  };
  while (!fit()) {
    if (L.TZ > 1) {
      L.TZ /= 2;
    } else if (L.TY > 1) {
      L.TY /= 2;
    } else {
      return false;
    }
  }
  L.tilesW = ceil_div(P.q[2], int64_t(L.TX) * R);
  L.tilesH = ceil_div(P.q[1], L.TY);
  L.groups = ceil_div(planes, L.TZ);
  return true;
}

// Zero-filled copy of the input rows [iy0, iy0 + rows) x columns [ix0, ix0 + cols) of one
// (depth) slice into the plane's shared tile, by the G threads of its group.
template <typename T, typename acc_t>
__device__ __forceinline__ void fill_tile(acc_t* sm, const T* __restrict__ src, bool ok,
                                          int64_t iy0, int64_t ix0, int64_t IH, int64_t IW,
                                          const NcTile& L, int gt, int G) {
  // Row and column of element i, stepped by G without a division per element.
  const int n = L.rows * L.cols, dr = G / L.cols, dc = G - dr * L.cols;
  int rr = gt / L.cols, cc = gt - rr * L.cols;
  for (int i = gt; i < n; i += G) {
    const int64_t ih = iy0 + rr, iw = ix0 + cc;
    acc_t v = acc_t(0);
    if (ok && ih >= 0 && ih < IH && iw >= 0 && iw < IW) v = static_cast<acc_t>(src[ih * IW + iw]);
    sm[i] = v;
    rr += dr;
    cc += dc;
    if (cc >= L.cols) {
      cc -= L.cols;
      ++rr;
    }
  }
}

// The NX values of a tile row starting at s (16-byte aligned when acc_t is float).
template <int NX, typename acc_t>
__device__ __forceinline__ void load_row(const acc_t* s, acc_t (&xv)[(NX + 3) / 4 * 4]) {
  if constexpr (std::is_same_v<acc_t, float>) {
#pragma unroll
    for (int c = 0; c < (NX + 3) / 4; ++c) {
      const float4 v = reinterpret_cast<const float4*>(s)[c];
      xv[4 * c] = v.x, xv[4 * c + 1] = v.y, xv[4 * c + 2] = v.z, xv[4 * c + 3] = v.w;
    }
  } else {
#pragma unroll
    for (int c = 0; c < NX; ++c) xv[c] = s[c];
  }
}

// acc[r] += sum over the filter rows and taps of w * tile; s points at the thread's first
// input (row 0 of the filter), wk at the filter slice (kh x kw, row-major).
template <int KH, int KW, int S, int R, typename acc_t>
__device__ __forceinline__ void correlate(const acc_t* s, int cols, const acc_t* __restrict__ wk,
                                          int kh_n, int kw_n, int sw, acc_t (&acc)[R]) {
  if constexpr (KW > 0) {
    constexpr int NX = (R - 1) * S + KW;
#pragma unroll(KH > 0 ? KH : 1)
    for (int kh = 0; kh < (KH > 0 ? KH : kh_n); ++kh) {
      acc_t xv[(NX + 3) / 4 * 4];
      load_row<NX>(s + kh * cols, xv);
#pragma unroll
      for (int kw = 0; kw < KW; ++kw) {
        const acc_t wv = wk[kh * KW + kw];
#pragma unroll
        for (int r = 0; r < R; ++r) acc[r] += wv * xv[r * S + kw];
      }
    }
  } else {
    for (int kh = 0; kh < kh_n; ++kh) {
      const acc_t* row = s + kh * cols;
      for (int kw = 0; kw < kw_n; ++kw) {
        const acc_t wv = wk[kh * kw_n + kw];
#pragma unroll
        for (int r = 0; r < R; ++r) acc[r] += wv * row[r * sw + kw];
      }
    }
  }
}

// Forward / data-grad. w: prepared weights [phases][wrows][k0][k1][k2] in the opmath type.
// KH, KW, S = 0: read from the plan at run time.
template <typename T, int KH, int KW, int S, int R>
__global__ void __launch_bounds__(kTileThreads, 2)
nc_gather(const T* __restrict__ in, const at::opmath_type<T>* __restrict__ w,
          const T* __restrict__ bias, T* __restrict__ out, const Plan P, const NcTile L) {
  using acc_t = at::opmath_type<T>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int G = L.TX * L.TY, tid = threadIdx.x;
  const int tz = tid / G, gt = tid - tz * G, tx = gt % L.TX, ty = gt / L.TX;
  acc_t* sm = reinterpret_cast<acc_t*>(smem_raw) + tz * L.rows * L.cols;
  const int kh_n = KH > 0 ? KH : P.k[1], kw_n = KW > 0 ? KW : P.k[2];
  const int sh = S > 0 ? S : P.S[1], sw = S > 0 ? S : P.S[2];
  const int64_t planes = P.N * P.out_c * P.q[0];
  const int64_t in_plane = P.in[0] * P.in[1] * P.in[2], out_plane = P.out[0] * P.out[1] * P.out[2];
  const int64_t taps = int64_t(P.k[0]) * kh_n * kw_n;
  for (int64_t b = blockIdx.x; b < L.blocks; b += gridDim.x) {
    int64_t t = b;
    const int ph = static_cast<int>(t % P.phases);
    t /= P.phases;
    const int64_t twi = t % L.tilesW;
    t /= L.tilesW;
    const int64_t thi = t % L.tilesH;
    const int64_t pl = (t / L.tilesH) * L.TZ + tz;
    const int pw = ph % P.os[2], phh = (ph / P.os[2]) % P.os[1], pd = ph / (P.os[2] * P.os[1]);
    const int64_t qd = pl % P.q[0], co = (pl / P.q[0]) % P.out_c, n = pl / (P.q[0] * P.out_c);
    const bool plane_ok = pl < planes && qd < P.qn[0][pd];
    const int64_t iy0 = thi * L.TY * sh - P.pad[1][phh];
    const int64_t ix0 = twi * L.TX * R * sw - P.pad[2][pw];
    const int64_t qy = thi * L.TY + ty, qx0 = (twi * L.TX + tx) * R;

    acc_t acc[R];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = acc_t(0);
    for (int64_t j = 0; j < P.J; ++j) {
      const int64_t ci = (co / P.in_div) * P.J + j;
      const T* inp = in + (plane_ok ? (n * P.in_c + ci) * in_plane : 0);
      const acc_t* wj = w + ph * P.wphase + (co * P.J + j) * taps;
      for (int kd = 0; kd < P.k[0]; ++kd) {
        const int64_t id = qd * P.S[0] - P.pad[0][pd] + kd;
        const bool ok = plane_ok && id >= 0 && id < P.in[0];
        __syncthreads();  // everyone is done with the previous tile
        fill_tile(sm, inp + (ok ? id * P.in[1] * P.in[2] : 0), ok, iy0, ix0, P.in[1], P.in[2], L, gt, G);
        __syncthreads();
        if (ok) {
          correlate<KH, KW, S, R>(sm + ty * sh * L.cols + tx * R * sw, L.cols, wj + kd * kh_n * kw_n,
                                  kh_n, kw_n, sw, acc);
        }
      }
    }
    if (plane_ok && qy < P.qn[1][phh]) {
      const acc_t b0 = bias ? static_cast<acc_t>(bias[co]) : acc_t(0);
      const int64_t od = qd * P.os[0] + P.r[0][pd], oy = qy * P.os[1] + P.r[1][phh];
      T* orow = out + (n * P.out_c + co) * out_plane + (od * P.out[1] + oy) * P.out[2];
      const int64_t qwn = P.qn[2][pw];
      if (P.os[2] == 1 && qx0 + R <= qwn &&
          reinterpret_cast<uintptr_t>(orow + qx0) % (sizeof(T) * R) == 0) {
        struct alignas(sizeof(T) * R) V { T v[R]; } o;
#pragma unroll
        for (int r = 0; r < R; ++r) o.v[r] = static_cast<T>(acc[r] + b0);
        *reinterpret_cast<V*>(orow + qx0) = o;
      } else {
#pragma unroll
        for (int r = 0; r < R; ++r) {
          if (qx0 + r < qwn) orow[(qx0 + r) * P.os[2] + P.r[2][pw]] = static_cast<T>(acc[r] + b0);
        }
      }
    }
  }
}

// Sums v[i] over the G threads of each plane group in a fixed order (butterfly within a warp,
// then warps in order); the group's thread gt == i adds the total for i into sacc[i] (shared, of
// the group). red: shared scratch of 8 warps x NV. Block-uniform call.
template <int NV, typename acc_t>
__device__ __forceinline__ void group_sum_into(acc_t (&v)[NV], acc_t* red, acc_t* sacc, int G, int gt) {
  const int width = G < 32 ? G : 32;
  // Blocks of fewer than 32 threads fill one warp partly: only those lanes take part.
  const unsigned mask = blockDim.x >= 32 ? 0xffffffffu : (1u << blockDim.x) - 1;
  for (int off = width / 2; off > 0; off /= 2) {
#pragma unroll
    for (int i = 0; i < NV; ++i) v[i] += __shfl_xor_sync(mask, v[i], off);
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (G <= 32) {
    if (gt == 0) {
#pragma unroll
      for (int i = 0; i < NV; ++i) sacc[i] += v[i];
    }
    return;
  }
  if (lane == 0) {
#pragma unroll
    for (int i = 0; i < NV; ++i) red[warp * NV + i] = v[i];
  }
  __syncthreads();
  if (gt < NV) {
    const int w0 = (threadIdx.x - gt) / 32;  // first warp of the group
    acc_t s = acc_t(0);
    for (int wi = 0; wi < G / 32; ++wi) s += red[(w0 + wi) * NV + gt];
    sacc[gt] += s;
  }
  __syncthreads();
}

// Weight-grad of tall filters (31x31; every other specialised filter takes the streaming kernel
// of nc_wgrad_stream.cuh), one pass: block (channel group, tile, chunk of (sample, depth)
// planes); each z-group owns one channel co and walks its planes, staging x tiles in shared
// memory; per filter row the row's KW tap sums are formed in registers and summed into shared
// accumulators per plane. Per block, per channel: one partial per tap in part[co][slot][taps],
// slot = (tile, chunk). Fixed order everywhere: deterministic. KH must be 0 (rows at run time).
template <typename T, int KH, int KW, int S, int R>
__global__ void __launch_bounds__(kTileThreads, 2)
nc_wgrad(const T* __restrict__ x, const T* __restrict__ gy, at::opmath_type<T>* __restrict__ part,
         const Plan P, const NcTile L, int64_t chunk, int64_t chunks) {
  using acc_t = at::opmath_type<T>;
  static_assert(KH == 0, "filters with compile-time rows take nc_wgrad_stream.cuh");
  constexpr int NV = KW;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int G = L.TX * L.TY, tid = threadIdx.x;
  const int tz = tid / G, gt = tid - tz * G, tx = gt % L.TX, ty = gt / L.TX;
  acc_t* tiles = reinterpret_cast<acc_t*>(smem_raw);
  acc_t* sm = tiles + tz * L.rows * L.cols;
  const int kh_n = P.k[1];
  const int64_t taps = int64_t(P.k[0]) * kh_n * KW;
  acc_t* red = tiles + int64_t(L.TZ) * L.rows * L.cols;  // 8 warps x NV
  acc_t* sacc = red + (kTileThreads / 32) * NV + tz * kh_n * KW;  // per group: one depth slice
  const int64_t npl = P.N * P.q[0];  // (sample, output depth) planes per channel
  const int64_t in_plane = P.in[0] * P.in[1] * P.in[2], out_plane = P.q[0] * P.q[1] * P.q[2];
  const int64_t blocks = L.groups * L.tilesH * L.tilesW * chunks;
  for (int64_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    int64_t t = b;
    const int64_t ck = t % chunks;
    t /= chunks;
    const int64_t twi = t % L.tilesW;
    t /= L.tilesW;
    const int64_t thi = t % L.tilesH;
    const int64_t co = (t / L.tilesH) * L.TZ + tz;
    const bool ch_ok = co < P.out_c;
    const int64_t iy0 = thi * L.TY * S - P.pad[1][0], ix0 = twi * L.TX * R * S - P.pad[2][0];
    const int64_t qy = thi * L.TY + ty, qx0 = (twi * L.TX + tx) * R;
    const int64_t p0 = ck * chunk, p1 = p0 + chunk < npl ? p0 + chunk : npl;
    for (int kd = 0; kd < P.k[0]; ++kd) {
      for (int i = gt; i < kh_n * KW; i += G) sacc[i] = acc_t(0);
      acc_t v[NV];
#pragma unroll
      for (int i = 0; i < NV; ++i) v[i] = acc_t(0);
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t n = p / P.q[0], qd = p % P.q[0];
        const int64_t id = qd * P.S[0] - P.pad[0][0] + kd;
        const bool ok = ch_ok && id >= 0 && id < P.in[0];
        acc_t g[R];
        const T* gp = gy + (ch_ok ? (n * P.out_c + co) * out_plane + (qd * P.q[1] + qy) * P.q[2] : 0);
#pragma unroll
        for (int r = 0; r < R; ++r) {
          g[r] = (ok && qy < P.q[1] && qx0 + r < P.q[2]) ? static_cast<acc_t>(gp[qx0 + r]) : acc_t(0);
        }
        const T* src = x + (ok ? (n * P.in_c + co / P.in_div) * in_plane + id * P.in[1] * P.in[2] : 0);
        __syncthreads();
        fill_tile(sm, src, ok, iy0, ix0, P.in[1], P.in[2], L, gt, G);
        __syncthreads();
        const acc_t* s = sm + ty * S * L.cols + tx * R * S;
        constexpr int NX = (R - 1) * S + KW;
        for (int kh = 0; kh < kh_n; ++kh) {
          acc_t xv[(NX + 3) / 4 * 4];
          load_row<NX>(s + kh * L.cols, xv);
#pragma unroll
          for (int kw = 0; kw < KW; ++kw) {
            v[kw] = acc_t(0);
#pragma unroll
            for (int r = 0; r < R; ++r) v[kw] += g[r] * xv[r * S + kw];
          }
          group_sum_into<NV>(v, red, sacc + kh * KW, G, gt);
        }
      }
      __syncthreads();
      if (ch_ok) {
        const int64_t slot = (thi * L.tilesW + twi) * chunks + ck;
        const int64_t slots = L.tilesH * L.tilesW * chunks;
        acc_t* dst = part + (co * slots + slot) * taps + int64_t(kd) * kh_n * KW;
        for (int i = gt; i < kh_n * KW; i += G) dst[i] = sacc[i];
      }
      __syncthreads();
    }
  }
}

}  // namespace convx::cuda
