// Streaming NC(D)HW depthwise weight-grad: no shared-memory tiles, every value in registers.
//
// A thread owns a micro-tile of TH output rows x R output columns of a plane (fixed for the
// whole launch) and walks the planes (sample, output depth) of its channel in a fixed chunk:
// per plane it loads its TH*R dy values once and each of the (TH-1)*S + KH input row segments
// of (R-1)*S + KW values once, and adds every product into the KH*KW tap sums it keeps in
// registers (all sizes compile-time, loops fully unrolled, so every register index is static).
// The bounds of its micro-tile are bit masks computed once per tile, not per plane. A block
// (one channel, one chunk of planes) then sums its threads' tap sums in a fixed order (warp
// butterfly, warps in order) into one partial per (channel, chunk); sum_slots (nc_wgrad.cu)
// adds the chunks in order. No atomics: bitwise repeatable, the result a function of the shapes.
// Depth (3-D) is a runtime loop over filter depth slices, one partial each.
#pragma once

#include "ops/depthwise_conv/cuda/plan.cuh"

#include <ATen/OpMathType.h>

#include <algorithm>
#include <cstdint>
#include <limits>

namespace convx::cuda {

constexpr int kWgradThreads = 256;

// Output columns and rows of a thread's micro-tile: 8 columns x 1 row for one-row filters (1-D),
// 4 x 4 for 3-row filters, 4 x 2 for taller ones (fewer live dy values next to 25-49 tap sums).
// ptxas, sm_90: 3 x 3: 64-72 registers, 5 x 5: 80-97, 7 x 7: 150-165 (the unrolled row loads
// are hoisted; capping at 128 spills), 1-D: 48-113; no spills.
template <int KH>
constexpr int wgrad_cols() { return KH == 1 ? 8 : 4; }
template <int KH>
constexpr int wgrad_rows() { return KH == 1 ? 1 : KH == 3 ? 4 : 2; }

struct NcWgradTile {
  int items;          // micro-tiles per plane (bands x column groups)
  int cgroups;        // column groups of R outputs per band
  int IS, SP;         // thread t < IS * SP: tiles t % IS (+ k * IS), planes t / IS (+ k * SP)
  int threads;        // block size, a multiple of 32
  int chunk, chunks;  // planes per block, blocks per channel
};

// The launch layout from the shapes alone; false when a plane's 32-bit index arithmetic could
// overflow (the caller then takes the generic kernel).
inline bool choose_nc_wgrad(NcWgradTile& L, const Plan& P, int R, int TH, int S, int KH, int KW) {
  constexpr int64_t lim = std::numeric_limits<int32_t>::max() / 2;
  // Every in-plane offset the kernel forms lies within these bounds (padding included).
  const int64_t bh = P.in[1] + (P.q[1] + TH) * S + KH + P.pad[1][0];
  const int64_t bw = P.in[2] + (P.q[2] + R) * S + KW + P.pad[2][0];
  const int64_t npl = P.N * P.q[0];
  if (bh * bw > lim || (P.q[1] + TH) * (P.q[2] + R) > lim || npl > lim || P.in[0] > lim ||
      P.q[0] * int64_t(P.S[0]) + P.k[0] + P.pad[0][0] > lim || npl <= 0) {
    return false;
  }
  const int64_t cg = ceil_div(P.q[2], R), items = cg * ceil_div(P.q[1], TH);
  L.cgroups = static_cast<int>(cg);
  L.items = static_cast<int>(items);
  if (items >= kWgradThreads) {
    L.IS = kWgradThreads;
    L.SP = 1;
  } else {
    L.IS = static_cast<int>(items);
    L.SP = static_cast<int>(std::min<int64_t>(kWgradThreads / items, npl));
  }
  L.threads = static_cast<int>(ceil_div(int64_t(L.IS) * L.SP, 32) * 32);
  // Enough blocks to fill the GPU several times over, each thread walking at least 2 planes.
  const int64_t most = std::max<int64_t>(1, npl / (2 * int64_t(L.SP)));
  const int64_t chunks = std::clamp<int64_t>(ceil_div(2048, P.out_c), 1, most);
  L.chunk = static_cast<int>(ceil_div(npl, chunks));
  L.chunks = static_cast<int>(ceil_div(npl, L.chunk));
  return true;
}

// dst[i] = sum of v[i] over the block, in a fixed order: butterfly within each warp, then the
// warps in order through red (shared, warps x NV), converted to O. Block-uniform call.
template <int NV, typename acc_t, typename O>
__device__ __forceinline__ void wgrad_block_sum(acc_t (&v)[NV], acc_t* red, O* __restrict__ dst) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) {
#pragma unroll
    for (int i = 0; i < NV; ++i) v[i] += __shfl_xor_sync(0xffffffffu, v[i], off);
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  if (lane == 0) {
#pragma unroll
    for (int i = 0; i < NV; ++i) red[warp * NV + i] = v[i];
  }
  __syncthreads();
  for (int i = threadIdx.x; i < NV; i += blockDim.x) {
    acc_t s = acc_t(0);
    for (int w = 0; w < warps; ++w) s += red[w * NV + i];
    dst[i] = static_cast<O>(s);
  }
  __syncthreads();  // red is reused by the next depth slice / block
}

// Adds one plane's products into v: xp / gp point at the plane, xo / go are the micro-tile's
// first input / dy offsets in it, the masks say which rows / columns lie inside the tensor.
template <typename T, int KH, int KW, int S, typename acc_t>
__device__ __forceinline__ void stream_plane(const T* __restrict__ xp, const T* __restrict__ gp, int xo, int go,
                                             int IW, int QW, uint64_t xcols, uint32_t xrows, uint32_t gcols,
                                             uint32_t grows, acc_t (&v)[KH * KW]) {
  constexpr int R = wgrad_cols<KH>(), TH = wgrad_rows<KH>();
  constexpr int NX = (R - 1) * S + KW, NR = (TH - 1) * S + KH;
  acc_t g[TH][R];
#pragma unroll
  for (int t = 0; t < TH; ++t) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      g[t][r] = ((grows >> t) & (gcols >> r) & 1u) ? static_cast<acc_t>(gp[go + t * QW + r]) : acc_t(0);
    }
  }
#pragma unroll
  for (int j = 0; j < NR; ++j) {
    acc_t xv[NX];
    const bool row = (xrows >> j) & 1u;
#pragma unroll
    for (int c = 0; c < NX; ++c) {
      xv[c] = (row && ((xcols >> c) & 1u)) ? static_cast<acc_t>(xp[xo + j * IW + c]) : acc_t(0);
    }
    // Input row j meets filter row kh = j - t*S of output row t.
#pragma unroll
    for (int t = 0; t < TH; ++t) {
      const int kh = j - t * S;
      if (kh >= 0 && kh < KH) {
#pragma unroll
        for (int kw = 0; kw < KW; ++kw) {
#pragma unroll
          for (int r = 0; r < R; ++r) v[kh * KW + kw] += g[t][r] * xv[r * S + kw];
        }
      }
    }
  }
}

// part[co][chunk][kd * KH * KW + tap]: the block's sum over its chunk of planes for channel co.
// With one chunk per channel that is the weight-grad itself: O = T writes it (no sum launch).
template <typename T, int KH, int KW, int S, typename O = at::opmath_type<T>>
__global__ void __launch_bounds__(kWgradThreads)
nc_wgrad_stream(const T* __restrict__ x, const T* __restrict__ gy, O* __restrict__ part, const Plan P,
                const NcWgradTile L) {
  using acc_t = at::opmath_type<T>;
  constexpr int R = wgrad_cols<KH>(), TH = wgrad_rows<KH>();
  constexpr int NV = KH * KW, NX = (R - 1) * S + KW, NR = (TH - 1) * S + KH;
  static_assert(NX <= 64 && NR <= 32, "micro-tile masks");
  __shared__ acc_t red[(kWgradThreads / 32) * NV];
  const int tid = threadIdx.x;
  const bool active = tid < L.IS * L.SP;
  const int sg = tid / L.IS, i0 = tid - sg * L.IS;
  // 32-bit within a plane and for plane counters (choose_nc_wgrad proved it fits).
  const int IH = static_cast<int>(P.in[1]), IW = static_cast<int>(P.in[2]), ID = static_cast<int>(P.in[0]);
  const int QH = static_cast<int>(P.q[1]), QW = static_cast<int>(P.q[2]), QD = static_cast<int>(P.q[0]);
  const int npl = static_cast<int>(P.N) * QD;
  const int64_t in_plane = P.in[0] * P.in[1] * P.in[2], out_plane = P.q[0] * P.q[1] * P.q[2];
  const int64_t taps = int64_t(P.k[0]) * NV;
  const int64_t blocks = P.out_c * L.chunks;
  // Stepping a plane index p = n * QD + qd by SP without a division.
  const int dn = L.SP / QD, dq = L.SP - dn * QD;
  for (int64_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    const int64_t co = b / L.chunks;
    const int ck = static_cast<int>(b - co * L.chunks);
    const int p0 = ck * L.chunk, p1 = p0 + L.chunk < npl ? p0 + L.chunk : npl;
    const T* xc = x + (co / P.in_div) * in_plane;  // sample 0 of the channel
    const T* gc = gy + co * out_plane;
    for (int kd = 0; kd < P.k[0]; ++kd) {
      acc_t v[NV];
#pragma unroll
      for (int i = 0; i < NV; ++i) v[i] = acc_t(0);
      for (int it = i0; active && it < L.items; it += L.IS) {
        const int band = it / L.cgroups, cg = it - band * L.cgroups;
        const int qy0 = band * TH, qx0 = cg * R;
        const int iy0 = qy0 * S - P.pad[1][0], ix0 = qx0 * S - P.pad[2][0];
        uint64_t xcols = 0;
#pragma unroll
        for (int c = 0; c < NX; ++c) xcols |= uint64_t(ix0 + c >= 0 && ix0 + c < IW) << c;
        uint32_t xrows = 0, gcols = 0, grows = 0;
#pragma unroll
        for (int j = 0; j < NR; ++j) xrows |= uint32_t(iy0 + j >= 0 && iy0 + j < IH) << j;
#pragma unroll
        for (int r = 0; r < R; ++r) gcols |= uint32_t(qx0 + r < QW) << r;
#pragma unroll
        for (int t = 0; t < TH; ++t) grows |= uint32_t(qy0 + t < QH) << t;
        const int xo = iy0 * IW + ix0, go = qy0 * QW + qx0;
        int p = p0 + sg;
        int n = p / QD, qd = p - n * QD;
        for (; p < p1; p += L.SP) {
          const int id = qd * P.S[0] - P.pad[0][0] + kd;
          if (id >= 0 && id < ID) {
            const T* xp = xc + int64_t(n) * P.in_c * in_plane + int64_t(id) * IH * IW;
            const T* gp = gc + int64_t(n) * P.out_c * out_plane + int64_t(qd) * QH * QW;
            stream_plane<T, KH, KW, S>(xp, gp, xo, go, IW, QW, xcols, xrows, gcols, grows, v);
          }
          n += dn;
          qd += dq;
          if (qd >= QD) {
            qd -= QD;
            ++n;
          }
        }
      }
      wgrad_block_sum<NV>(v, red, part + (co * L.chunks + ck) * taps + kd * NV);
    }
  }
}

}  // namespace convx::cuda
