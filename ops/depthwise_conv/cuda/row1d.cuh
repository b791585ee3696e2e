// NCL forward / data-grad (and, at the end of this file, weight-grad) of long 1-D filters (15
// and 31 taps, stride 1, one phase) through shared memory: a warp owns a segment of 32*R
// consecutive outputs of one row (one sample and channel). It stages the segment's input
// (32*R + K - 1 values, rounded up) once in shared memory as fp32, then each lane computes R
// consecutive outputs from it with the filter in registers.
//
// Why not nc_stream_vec (which covers these filters otherwise): there every thread loads its own
// (R-1)+K input values from global memory/L1 as 16-byte vectors and aligns them with a select
// network, so per output it issues ~5 loaded values, the selects and the conversions besides the
// K FMAs, at 115 registers (25% occupancy); the H100 rows ran at 16-22% of bandwidth in 16-bit.
// Here per output: one global load + one conversion + one shared store (staging), (R+K-1)/(4R)
// 16-byte shared loads (k31 R8: 1.25, k15 R16: 0.5) and the K FMAs.
//
//  - Warps are independent (no block barriers, only __syncwarp): a block is 8 warps that share
//    nothing but the launch. Work items (row, segment) are handed to warps in a grid-stride loop
//    over one wave of warps; the global loads of a warp's next item are issued into registers
//    before it computes the current one, so they are in flight during the FMAs (one wave holds
//    too few bytes in flight without this). The loop count is block-uniform (idle warps of the
//    last round still pass the __syncwarp), which the CPU harness relies on.
//  - Shared layout per warp: 32 filter taps (zero past K), then the staged values with 4 floats
//    of padding after every 32: lane l reads 16-byte vectors at l*R + 4q, and without the padding
//    the 8 lanes of a quarter-warp would hit the same banks twice (stride R = 8 or 16 floats).
//  - Loads are element-wise and bounds-checked (zero outside the row), any alignment and length;
//    stores are 16-byte vectors when the lane's R outputs are whole and aligned, else elements.
//  - 32-bit item split and in-row offsets (checked on the host: items < 2^31, row lengths
//    < 2^30), 64-bit row offsets.
#pragma once

#include "ops/depthwise_conv/cuda/plan.cuh"

#include <ATen/OpMathType.h>

#include <algorithm>
#include <cstdint>

namespace convx::cuda {

constexpr int kRowWarps = 8;
constexpr int kRowThreads = 32 * kRowWarps;

// Outputs per lane: 16 for k15 (8 16-byte shared loads per 16 x 15 FMAs), 8 for k31 (16 would
// hold 16 accumulators + 31 taps + 17 prefetched values: past the 80-register cap of 3 blocks).
template <int K>
__host__ __device__ constexpr int row_outputs() {
  return K >= 31 ? 8 : 16;
}
template <int K, int R>
__host__ __device__ constexpr int row_quads() {  // 16-byte shared loads per lane: R + K - 1 values, rounded up
  return (R + K - 1 + 3) / 4;
}
template <int K, int R>
__host__ __device__ constexpr int row_loads() {  // staged values per lane: 32 of them cover the warp's reads
  return (31 * R + 4 * row_quads<K, R>() + 31) / 32;
}
template <int K, int R>
__host__ __device__ constexpr int row_warp_floats() {  // shared floats per warp: taps + padded values
  return 32 + 36 * row_loads<K, R>();
}
template <int K, int R>
__host__ __device__ constexpr int row_smem_bytes() {
  return kRowWarps * row_warp_floats<K, R>() * 4;
}

struct Row1d {
  uint32_t items, segs, out_c, in_div;
  int in_w, out_w, pad;
};

// Fills L when the problem is one this kernel covers with R outputs per lane: the forward or
// stride-1 data-grad of a 1-D row (one phase, stride 1, channel multiplier only in the forward's
// in_div), items < 2^31, row lengths < 2^30.
inline bool row1d_items(Row1d& L, const Plan& P, int R) {
  if (P.phases != 1 || P.S[2] != 1 || P.J != 1 || P.k[0] != 1 || P.k[1] != 1) return false;
  if (P.in[0] != 1 || P.in[1] != 1 || P.out[0] != 1 || P.out[1] != 1) return false;
  if (P.in[2] >= (int64_t(1) << 30) || P.out[2] >= (int64_t(1) << 30)) return false;
  if (P.pad[2][0] <= -(1 << 29) || P.pad[2][0] >= (1 << 29)) return false;
  const int64_t segs = ceil_div(P.out[2], 32 * R);
  const int64_t items = P.N * P.out_c * segs;
  if (items <= 0 || items >= (int64_t(1) << 31)) return false;
  L.items = static_cast<uint32_t>(items);
  L.segs = static_cast<uint32_t>(segs);
  L.out_c = static_cast<uint32_t>(P.out_c);
  L.in_div = static_cast<uint32_t>(P.in_div);
  L.in_w = static_cast<int>(P.in[2]);
  L.out_w = static_cast<int>(P.out[2]);
  L.pad = P.pad[2][0];
  return true;
}

// Shared index of staged value a: 4 floats of padding after every 32.
__device__ __forceinline__ int row_phys(int a) { return a + ((a >> 5) << 2); }

// in: [N, in_c, in_w]; w: prepared weights [out_c][K] (fp32; the data-grad's rotated);
// out: [N, out_c, out_w]; bias: out_c entries or null. Dynamic shared memory:
// row_smem_bytes<K, R>().
template <typename T, int K, int R>
__global__ void __launch_bounds__(kRowThreads, 3)
row1d(const T* __restrict__ in, const float* __restrict__ w, const T* __restrict__ bias,
      T* __restrict__ out, const Plan P, const Row1d L) {
  static_assert(R % 8 == 0 && K <= 32, "lane outputs in whole 16-byte vectors, one tap per lane");
  constexpr int SEG = 32 * R, NQ = row_quads<K, R>(), NL = row_loads<K, R>();
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  float* const taps = reinterpret_cast<float*>(smem_raw) + warp * row_warp_floats<K, R>();
  float* const vals = taps + 32;

  // The prefetched item: its input values (raw, converted when staged: a conversion here would
  // wait for the loads), its filter tap `lane`, bias, row and segment.
  T pre[NL];
  float pre_w = 0.f, pre_b = 0.f;
  uint32_t pre_row = 0, pre_seg = 0;
  auto fetch = [&](uint32_t item) {
    pre_seg = item % L.segs;
    pre_row = item / L.segs;
    const uint32_t co = pre_row % L.out_c, n = pre_row / L.out_c;
    const T* src = in + (int64_t(n) * P.in_c + co / L.in_div) * L.in_w;
    const int x0 = static_cast<int>(pre_seg) * SEG - L.pad + lane;
#pragma unroll
    for (int i = 0; i < NL; ++i) {
      const int x = x0 + 32 * i;
      pre[i] = static_cast<T>(0.f);
      if (x >= 0 && x < L.in_w) pre[i] = src[x];
    }
    pre_w = lane < K ? w[int64_t(co) * K + lane] : 0.f;
    pre_b = bias ? static_cast<float>(bias[co]) : 0.f;
  };

  const uint32_t step = gridDim.x * kRowWarps;
  uint32_t item = blockIdx.x * kRowWarps + warp;
  if (item < L.items) fetch(item);
  for (uint32_t first = blockIdx.x * kRowWarps; first < L.items; first += step, item += step) {
    const bool live = item < L.items;
    const uint32_t row = pre_row, seg = pre_seg;
    const float b0 = pre_b;
    __syncwarp();  // the warp's reads of the previous item are done
    if (live) {
      taps[lane] = pre_w;
#pragma unroll
      for (int i = 0; i < NL; ++i) vals[lane + 36 * i] = static_cast<float>(pre[i]);  // row_phys(lane + 32 i)
    }
    __syncwarp();
    if (!live) continue;
    if (item + step < L.items) fetch(item + step);

    float wv[K];
#pragma unroll
    for (int q = 0; q < (K + 3) / 4; ++q) {
      const float4 t = *reinterpret_cast<const float4*>(taps + 4 * q);
      const float t4[4] = {t.x, t.y, t.z, t.w};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if (4 * q + e < K) wv[4 * q + e] = t4[e];
      }
    }
    float acc[R];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = 0.f;
    // Value c of the lane's window (input of its outputs r with tap c - r) feeds every
    // accumulator it touches; taps in increasing order per output.
#pragma unroll
    for (int q = 0; q < NQ; ++q) {
      const float4 v = *reinterpret_cast<const float4*>(vals + row_phys(lane * R + 4 * q));
      const float v4[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const int j = 4 * q + e - r;
          if (j >= 0 && j < K) acc[r] += wv[j] * v4[e];
        }
      }
    }

    const int o0 = static_cast<int>(seg) * SEG + lane * R;
    if (o0 >= L.out_w) continue;
    T* const o = out + int64_t(row) * L.out_w + o0;
    constexpr int SV = 16 / int(sizeof(T));  // divides R
    struct alignas(16) Out { T v[SV]; };
    if (o0 + R <= L.out_w && reinterpret_cast<uintptr_t>(o) % 16 == 0) {
#pragma unroll
      for (int s = 0; s < R / SV; ++s) {
        Out u;
#pragma unroll
        for (int e = 0; e < SV; ++e) u.v[e] = static_cast<T>(acc[s * SV + e] + b0);
        *reinterpret_cast<Out*>(o + s * SV) = u;
      }
    } else {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        if (o0 + r < L.out_w) o[r] = static_cast<T>(acc[r] + b0);
      }
    }
  }
}


// ---------------------------------------------------------------- weight-grad
// gw[co][j] = sum over samples n and outputs o of dy[n][co][o] * x[n][co / in_div][o - pad + j]
// (the forward's plan), deterministic. Block = one output channel x one fixed chunk of its
// (sample, segment) items; a warp stages an item's x window and dy segment in shared memory as
// above (same padded layout, same prefetch of the next item), and lane l keeps the K tap sums of
// its R outputs in registers across all its items. Then the 32 lanes are added by a butterfly,
// the 8 warps in order through shared memory, one partial per block [channel][chunk][tap]; a
// second kernel adds the chunks in order. The chunks depend on the shapes only (about 2048
// blocks, at least 16 items each), so the bits are the same on every run and device.
template <int K>
__host__ __device__ constexpr int row_wgrad_outputs() {
  return 8;  // K sums + R dy + prefetched x and dy stay under the 80-register cap (k15 R 16: 85+)
}
template <int K, int R>
__host__ __device__ constexpr int row_wgrad_warp_floats() {  // padded x window + padded dy segment
  return 36 * row_loads<K, R>() + 36 * R;
}
template <int K, int R>
__host__ __device__ constexpr int row_wgrad_smem_bytes() {  // + the warps' sums
  return (kRowWarps * row_wgrad_warp_floats<K, R>() + kRowWarps * 32) * 4;
}

struct Row1dW {
  uint32_t items_c, segs, chunk, chunks, in_div;  // items per channel, per block, blocks per channel
  int in_w, out_w, pad;
};

// Fills L for R outputs per lane; false when not covered (as row1d_items) or the blocks or
// items do not fit 31 bits.
inline bool row1d_wgrad_items(Row1dW& L, const Plan& P, int R) {
  Row1d F{};
  if (!row1d_items(F, P, R)) return false;
  const int64_t items_c = P.N * int64_t(F.segs);
  int64_t chunks = std::min(ceil_div(2048, P.out_c), std::max<int64_t>(1, items_c / 16));
  const int64_t chunk = ceil_div(items_c, chunks);
  chunks = ceil_div(items_c, chunk);
  if (P.out_c * chunks >= (int64_t(1) << 31)) return false;
  L.items_c = static_cast<uint32_t>(items_c);
  L.segs = F.segs;
  L.chunk = static_cast<uint32_t>(chunk);
  L.chunks = static_cast<uint32_t>(chunks);
  L.in_div = F.in_div;
  L.in_w = F.in_w;
  L.out_w = F.out_w;
  L.pad = F.pad;
  return true;
}

// x: [N, in_c, in_w], gy: [N, out_c, out_w]; part: [out_c][chunks][K] (fp32). Grid: out_c *
// chunks blocks of kRowThreads; dynamic shared memory row_wgrad_smem_bytes<K, R>().
template <typename T, int K, int R>
__global__ void __launch_bounds__(kRowThreads, 3)
row1d_wgrad(const T* __restrict__ x, const T* __restrict__ gy, float* __restrict__ part, const Plan P,
            const Row1dW L) {
  static_assert(R % 4 == 0 && K <= 32, "16-byte shared reads, one tap per lane");
  constexpr int SEG = 32 * R, NQ = row_quads<K, R>(), NL = row_loads<K, R>();
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  float* const vals = reinterpret_cast<float*>(smem_raw) + warp * row_wgrad_warp_floats<K, R>();
  float* const dys = vals + 36 * NL;
  float* const red = reinterpret_cast<float*>(smem_raw) + kRowWarps * row_wgrad_warp_floats<K, R>();
  const uint32_t co = blockIdx.x / L.chunks, chunk = blockIdx.x % L.chunks;
  const uint32_t t0 = chunk * L.chunk, t1 = t0 + L.chunk < L.items_c ? t0 + L.chunk : L.items_c;

  // The prefetched item's x window and dy values, raw (see row1d).
  T px[NL], pg[R];
  auto fetch = [&](uint32_t t) {
    const uint32_t seg = t % L.segs, n = t / L.segs;
    const T* xs = x + (int64_t(n) * P.in_c + co / L.in_div) * L.in_w;
    const T* gs = gy + (int64_t(n) * P.out_c + co) * L.out_w;
    const int x0 = static_cast<int>(seg) * SEG - L.pad + lane, o0 = static_cast<int>(seg) * SEG + lane;
#pragma unroll
    for (int i = 0; i < NL; ++i) {
      const int xi = x0 + 32 * i;
      px[i] = static_cast<T>(0.f);
      if (xi >= 0 && xi < L.in_w) px[i] = xs[xi];
    }
#pragma unroll
    for (int i = 0; i < R; ++i) {
      pg[i] = static_cast<T>(0.f);
      if (o0 + 32 * i < L.out_w) pg[i] = gs[o0 + 32 * i];
    }
  };

  float acc[K];
#pragma unroll
  for (int j = 0; j < K; ++j) acc[j] = 0.f;
  uint32_t t = t0 + warp;
  if (t < t1) fetch(t);
  for (uint32_t first = t0; first < t1; first += kRowWarps, t += kRowWarps) {
    const bool live = t < t1;
    __syncwarp();  // the warp's reads of the previous item are done
    if (live) {
#pragma unroll
      for (int i = 0; i < NL; ++i) vals[lane + 36 * i] = static_cast<float>(px[i]);  // row_phys(lane + 32 i)
#pragma unroll
      for (int i = 0; i < R; ++i) dys[lane + 36 * i] = static_cast<float>(pg[i]);
    }
    __syncwarp();
    if (!live) continue;
    if (t + kRowWarps < t1) fetch(t + kRowWarps);

    float g[R];
#pragma unroll
    for (int q = 0; q < R / 4; ++q) {
      const float4 v = *reinterpret_cast<const float4*>(dys + row_phys(lane * R + 4 * q));
      g[4 * q] = v.x, g[4 * q + 1] = v.y, g[4 * q + 2] = v.z, g[4 * q + 3] = v.w;
    }
    // Window value c meets output r at tap c - r.
#pragma unroll
    for (int q = 0; q < NQ; ++q) {
      const float4 v = *reinterpret_cast<const float4*>(vals + row_phys(lane * R + 4 * q));
      const float v4[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const int j = 4 * q + e - r;
          if (j >= 0 && j < K) acc[j] += g[r] * v4[e];
        }
      }
    }
  }

  // Fixed-order block sum: lanes by a butterfly, then warps in order.
#pragma unroll
  for (int j = 0; j < K; ++j) {
#pragma unroll
    for (int off = 16; off > 0; off /= 2) acc[j] += __shfl_xor_sync(0xffffffffu, acc[j], off);
  }
  if (lane == 0) {
#pragma unroll
    for (int j = 0; j < K; ++j) red[warp * 32 + j] = acc[j];
  }
  __syncthreads();
  if (threadIdx.x < K) {
    float sum = 0.f;
#pragma unroll
    for (int w = 0; w < kRowWarps; ++w) sum += red[w * 32 + threadIdx.x];
    part[(int64_t(co) * L.chunks + chunk) * K + threadIdx.x] = sum;
  }
}

}  // namespace convx::cuda
