// NCL forward / stride-1 data-grad of short 1-D filters (2, 3, 4 and 15 taps; one phase, stride
// 1, data-grad channel multiplier 1) and the weight-grad of 2-4 taps, with warp-wide 16-byte
// vectors and register shuffles (the weight-grad: at the end of this file).
//
// Why not nc_stream_vec (which covers these filters otherwise): there a thread owns 8 outputs,
// loads the 16-byte vectors around its own window, shifts them into place with a per-thread
// select network and pays a 5-way item split per 8 outputs: ~60 thread-instructions per output
// for a 4-tap filter (H100, Nsight Compute: 70% SM throughput, 36% DRAM; bf16 as slow as fp32).
//
// Here a warp owns a segment of 32*U*V consecutive outputs of one row (V = 16 bytes of elements):
//  - Segments start at the output row's 16-byte boundaries (the row's first segment starts up to
//    V-1 elements before the row), so lane l's V outputs of sub-segment u, at 32u + l vectors
//    into the segment, are one aligned 16-byte store wherever they are whole inside the row.
//  - Input: lane l loads the aligned 16-byte input vectors 32u + l (u < U) from the aligned
//    boundary p0 at or before the segment's first input (lanes < NS also the halo vectors 32U + l);
//    coalesced, one load per 16 bytes. A vector that crosses the row's ends (or lies outside) is
//    loaded element by element with bounds tests, zero outside: nothing outside the row is read.
//  - The window of lane l's outputs starts m elements into its own vector, m = the input's
//    misalignment against the output segment, the same for the whole warp and row; it spans the
//    lane's vector and the next 1-3 lanes' vectors, fetched with __shfl_sync (only the words the
//    window needs). m is warp-uniform, so a switch picks a code path with compile-time indices:
//    no select network.
//  - fp32 accumulation with the taps in registers, bias fused, then one 16-byte store (or element
//    stores at the row's ends).
// Per output (bf16, 4 taps): about 1/8 load, 1/2 shuffle, 1.4 conversions, 4 FMAs, 1/2 pack,
// 1/8 store, against ~60 instructions in nc_stream_vec.
//
// A row's segments stop short of its end by up to 32 outputs (the row's last warp adds them one
// per lane, scalar): a row of 514 bf16 outputs is one segment of 512 plus a short tail, not two
// segments, the second a whole warp's work for 2-9 outputs (it made the k3 causal forward 1.5x
// slower than its data-grad, whose rows are 512: H100, session 10).
// The filter is the layer's own ([out_c][K] in T): tap t of the correlation is
// w[co * K + wbase + wstep * t] (the data-grad's rotation: wbase K - 1, wstep -1), no preparation
// launch.
// Work items are (row, segment), segment fastest; one warp per item in a grid-stride loop over
// warps. The item split is 32-bit by FastDiv (items < 2^31 and in-row offsets < 2^30, checked on
// the host), row offsets are 64-bit. Warps share nothing: no shared memory, no barriers; every
// shuffle is executed by the whole warp (its control flow is warp-uniform).
#pragma once

#include "ops/depthwise_conv/cuda/nc_stream.cuh"
#include "ops/depthwise_conv/cuda/pdl.cuh"
#include "ops/depthwise_conv/cuda/plan.cuh"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

namespace convx::cuda {

constexpr int kRowWarpThreads = 256;

// Sub-segments per warp item (vectors per lane): two for short filters, so each lane has two
// 16-byte loads in flight; one for 15 taps (its window already holds 22 values in 16-bit).
template <int K>
__host__ __device__ constexpr int row_warp_vectors() {
  return K <= 4 ? 2 : 1;
}
// Halo lanes: shifts beyond the own vector the worst misalignment needs.
template <typename T, int K>
__host__ __device__ constexpr int row_warp_shifts() {
  constexpr int V = 16 / int(sizeof(T));
  return (V - 1 + V + K - 1 + V - 1) / V - 1;
}

struct RowWarp {
  uint32_t items;          // rows * segs
  FastDiv segs, out_c, in_div;
  int in_w, out_w, pad;
  int wbase, wstep;        // tap t of the correlation: w[co * K + wbase + wstep * t]
};

// Segments of SEG outputs per row: the fewest that leave at most 32 outputs past the last one
// for any row misalignment (< V elements), at least one.
inline int64_t row_warp_segments(int64_t out_w, int V, int SEG) {
  return std::max<int64_t>(1, ceil_div(out_w + V - 1 - 32, int64_t(SEG)));
}

// Fills L when the problem is one this kernel covers with U vectors per lane: the forward or
// stride-1 data-grad of a 1-D row (one phase, stride 1, channel multiplier only in the forward's
// in_div), items < 2^31, row lengths and padding well inside 30 bits.
inline bool row_warp_items(RowWarp& L, const Plan& P, int V, int U) {
  if (P.phases != 1 || P.S[2] != 1 || P.J != 1 || P.k[0] != 1 || P.k[1] != 1) return false;
  if (P.in[0] != 1 || P.in[1] != 1 || P.out[0] != 1 || P.out[1] != 1) return false;
  if (P.in[2] >= (int64_t(1) << 29) || P.out[2] >= (int64_t(1) << 29)) return false;
  if (P.pad[2][0] <= -(1 << 28) || P.pad[2][0] >= (1 << 28)) return false;
  const int64_t segs = row_warp_segments(P.out[2], V, 32 * U * V);
  const int64_t items = P.N * P.out_c * segs;
  if (items <= 0 || items >= (int64_t(1) << 31)) return false;
  L.items = static_cast<uint32_t>(items);
  L.segs = fast_div(static_cast<uint32_t>(segs));
  L.out_c = fast_div(static_cast<uint32_t>(P.out_c));
  L.in_div = fast_div(static_cast<uint32_t>(P.in_div));
  L.in_w = static_cast<int>(P.in[2]);
  L.out_w = static_cast<int>(P.out[2]);
  L.pad = P.pad[2][0];
  L.wbase = 0;
  L.wstep = 1;
  return true;
}

struct alignas(16) RowWords {
  uint32_t w[4];
};

// Element e (compile-time after unrolling) of a 16-byte vector held as 4 words, as float.
template <typename T>
__device__ __forceinline__ float row_elem(const uint32_t (&v)[4], int e) {
  float f;
  if constexpr (sizeof(T) == 4) {
    std::memcpy(&f, &v[e], 4);
  } else if constexpr (std::is_same_v<T, c10::BFloat16>) {
    const uint32_t u = (e & 1) ? (v[e >> 1] & 0xffff0000u) : (v[e >> 1] << 16);
    std::memcpy(&f, &u, 4);
  } else {
    const uint16_t h = static_cast<uint16_t>((e & 1) ? (v[e >> 1] >> 16) : (v[e >> 1] & 0xffffu));
    f = static_cast<float>(c10::Half(h, c10::Half::from_bits()));
  }
  return f;
}

template <typename T>
__device__ __forceinline__ uint32_t row_bits(T x) {
  if constexpr (sizeof(T) == 4) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    return u;
  } else {
    return x.x;
  }
}

// v = row[p .. p+V), zero outside [0, n). p is 16-byte aligned in memory.
template <typename T>
__device__ __forceinline__ void row_load(const T* row, int p, int n, uint32_t (&v)[4]) {
  constexpr int V = 16 / int(sizeof(T));
  if (p >= 0 && p <= n - V) {
    const RowWords x = *reinterpret_cast<const RowWords*>(row + p);
#pragma unroll
    for (int q = 0; q < 4; ++q) v[q] = x.w[q];
  } else {
#pragma unroll
    for (int q = 0; q < 4; ++q) v[q] = 0;
#pragma unroll
    for (int e = 0; e < V; ++e) {
      if (p + e >= 0 && p + e < n) {
        const uint32_t b = row_bits<T>(row[p + e]);
        if constexpr (sizeof(T) == 4) {
          v[e] = b;
        } else {
          v[e >> 1] |= (e & 1) ? (b << 16) : b;
        }
      }
    }
  }
}

// Calls f(std::integral_constant<int, M>{}) for the warp-uniform misalignment m < V, so that the
// window's register indices are compile-time.
template <int V, typename F>
__device__ __forceinline__ void row_warp_case(int m, F&& f) {
  switch (m) {
#define CONVX_ROW_WARP_CASE(M)                                          \
  case M:                                                               \
    if constexpr (M < V) f(std::integral_constant<int, M>{}); \
    break;
    CONVX_ROW_WARP_CASE(0)
    CONVX_ROW_WARP_CASE(1)
    CONVX_ROW_WARP_CASE(2)
    CONVX_ROW_WARP_CASE(3)
    CONVX_ROW_WARP_CASE(4)
    CONVX_ROW_WARP_CASE(5)
    CONVX_ROW_WARP_CASE(6)
    CONVX_ROW_WARP_CASE(7)
#undef CONVX_ROW_WARP_CASE
  }
}

// The input window of the lane's V outputs of sub-segment u (compile-time after unrolling) for
// misalignment M: x[j] = input of output 0 at tap j. A[u] is the lane's input vector of
// sub-segment u, A[U] its halo vector (lanes < row_warp_shifts).
template <typename T, int K, int U, int M>
__device__ __forceinline__ void row_warp_window(const uint32_t (&A)[U + 1][4], int lane, int u,
                                                float (&x)[16 / sizeof(T) + K - 1]) {
  constexpr int V = 16 / int(sizeof(T)), NE = V + K - 1;  // NE values from element M
  constexpr int NV = (M + NE + V - 1) / V;                 // vectors the window touches
  constexpr int EPW = 4 / int(sizeof(T));                  // elements per word
  uint32_t win[NV][4];
#pragma unroll
  for (int q = 0; q < 4; ++q) win[0][q] = A[u][q];
#pragma unroll
  for (int s = 1; s < NV; ++s) {
    // Vector 32u + lane + s: lane + s's A[u], or past the warp lane + s - 32's A[u + 1]; only
    // the words the window uses.
    const int need = M + NE - s * V < V ? M + NE - s * V : V;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      win[s][q] = 0;
      if (q < (need + EPW - 1) / EPW) {
        const uint32_t send = lane < s ? A[u + 1][q] : A[u][q];
        win[s][q] = __shfl_sync(0xffffffffu, send, (lane + s) & 31);
      }
    }
  }
#pragma unroll
  for (int j = 0; j < NE; ++j) x[j] = row_elem<T>(win[(M + j) / V], (M + j) % V);
}

// The lane's input vectors of a segment whose first input (row position) is `first`: A[u] from
// the 16-byte boundary p0 at or before it, A[U] the halo; returns the misalignment m = first - p0.
template <typename T, int K, int U>
__device__ __forceinline__ int row_warp_load(const T* irow, int first, int in_w, int lane, uint32_t (&A)[U + 1][4]) {
  constexpr int V = 16 / int(sizeof(T)), NS = row_warp_shifts<T, K>();
  const int m = (static_cast<int>(reinterpret_cast<uintptr_t>(irow) / sizeof(T) % V) + first) & (V - 1);
  const int p0 = first - m;
#pragma unroll
  for (int u = 0; u < U; ++u) row_load<T>(irow, p0 + (32 * u + lane) * V, in_w, A[u]);
#pragma unroll
  for (int q = 0; q < 4; ++q) A[U][q] = 0;
  if (lane < NS) row_load<T>(irow, p0 + (32 * U + lane) * V, in_w, A[U]);
  return m;
}

// The scalar taps of output o of a row (the tail past the last segment): x[o - pad + t], zero
// outside the row.
template <typename T, int K>
__device__ __forceinline__ void row_warp_taps(const T* irow, int o, int pad, int in_w, float (&x)[K]) {
#pragma unroll
  for (int t = 0; t < K; ++t) {
    const int i = o - pad + t;
    x[t] = (i >= 0 && i < in_w) ? static_cast<float>(irow[i]) : 0.f;
  }
}

// in: [rows / in_div rows of in_w]; w: the layer's [out_c][K] (L.wbase, L.wstep); out: [rows of
// out_w]; bias: out_c entries or null. Any block size that is a multiple of 32.
template <typename T, int K, int U, int MINB>
__global__ void __launch_bounds__(kRowWarpThreads, MINB)
row_warp(const T* __restrict__ in, const T* __restrict__ w, const T* __restrict__ bias, T* __restrict__ out,
         const RowWarp L) {
  constexpr int V = 16 / int(sizeof(T)), SEG = 32 * U * V;
  pdl_trigger();  // a programmatically launched next kernel may start (it waits for this one's writes)
  const int lane = static_cast<int>(threadIdx.x % 32);
  const uint32_t wpb = blockDim.x / 32, step = gridDim.x * wpb;
  for (uint32_t item = blockIdx.x * wpb + threadIdx.x / 32; item < L.items; item += step) {
    uint32_t row = item;
    const uint32_t seg = L.segs.split(row);
    T* const orow = out + int64_t(row) * L.out_w;
    const int ao = static_cast<int>(reinterpret_cast<uintptr_t>(orow) / sizeof(T) % V);
    const int s0 = static_cast<int>(seg) * SEG - ao;  // the segment's first output (16-byte aligned)
    if (s0 >= L.out_w) continue;                        // warp-uniform
    const T* const irow = in + int64_t(L.in_div.div(row)) * L.in_w;
    uint32_t A[U + 1][4];
    const int m = row_warp_load<T, K, U>(irow, s0 - L.pad, L.in_w, lane, A);
    // The row's tail past its last segment (at most 32 outputs, one per lane): its taps are
    // loaded with the segment's vectors, not after its FMAs, so its loads wait one memory latency
    // with them, not a second one (H100, session 12, oned_call1_ab.log: Mamba k4 bf16 forward
    // 95.1 -> 94.2 us, data-grad 98.8 -> 96.8; short_k3 21.1 -> 21.0; RWKV fp32 181.6 -> 182.1).
    const int ot = s0 + SEG + lane;
    const bool tail = seg + 1 == L.segs.d && ot < L.out_w;
    float xt[K];
    if (tail) row_warp_taps<T, K>(irow, ot, L.pad, L.in_w, xt);
    const uint32_t co = row - L.out_c.div(row) * L.out_c.d;
    float wv[K];
#pragma unroll
    for (int t = 0; t < K; ++t) wv[t] = static_cast<float>(w[int64_t(co) * K + L.wbase + L.wstep * t]);
    const float b0 = bias ? static_cast<float>(bias[co]) : 0.f;
    row_warp_case<V>(m, [&](auto Mc) {
#pragma unroll
      for (int u = 0; u < U; ++u) {
        float x[V + K - 1];
        row_warp_window<T, K, U, decltype(Mc)::value>(A, lane, u, x);
        float acc[V];
#pragma unroll
        for (int o = 0; o < V; ++o) {
          float a = 0.f;
#pragma unroll
          for (int t = 0; t < K; ++t) a += wv[t] * x[o + t];
          acc[o] = a + b0;
        }
        const int o = s0 + (32 * u + lane) * V;
        T* const dst = orow + o;
        if (o >= 0 && o + V <= L.out_w) {
          RowWords r;
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            if constexpr (sizeof(T) == 4) {
              r.w[q] = row_bits<T>(acc[q]);
            } else {
              r.w[q] = row_bits<T>(static_cast<T>(acc[2 * q])) | (row_bits<T>(static_cast<T>(acc[2 * q + 1])) << 16);
            }
          }
          *reinterpret_cast<RowWords*>(dst) = r;
        } else {
#pragma unroll
          for (int e = 0; e < V; ++e) {
            if (o + e >= 0 && o + e < L.out_w) dst[e] = static_cast<T>(acc[e]);
          }
        }
      }
    });
    if (tail) {
      float a = 0.f;
#pragma unroll
      for (int t = 0; t < K; ++t) a += wv[t] * xt[t];
      orow[ot] = static_cast<T>(a + b0);
    }
  }
}

// ---------------------------------------------------------------- weight-grad
// gw[co][t] = sum over samples n and outputs o of dy[n][co][o] * x[n][co / in_div][o - pad + t]
// (the forward's plan), deterministic. Block = one channel x a fixed chunk of its (sample,
// segment) items; a warp takes the chunk's items in turn, segments as in the forward (aligned
// to the dy row; dy zero outside the row, so the segment's overhang adds nothing): lane l loads
// its dy vectors and x vectors, takes the x window from its neighbours and keeps the K tap sums
// in registers across its items (a row's tail past its last segment: one output per lane, as
// in the forward). Then the 32 lanes are added by a butterfly, the warps in order through shared
// memory: with one chunk per channel (the rows of session 10's bench: short_k3, mamba_k4,
// rwkv_k4) that is the weight-grad itself, written by the block (no second launch); else one
// partial per block [channel][chunk][tap], which sum_slots (wgrad_sum.cuh) adds in order. The
// chunks depend on the shapes only.
struct RowWarpW {
  uint32_t items_c, chunk, chunks;  // items per channel, per block, blocks per channel
  FastDiv segs;
  uint32_t in_c, out_c, in_div;
  int in_w, out_w, pad;
};

inline bool row_warp_wgrad_items(RowWarpW& L, const Plan& P, int V, int U) {
  RowWarp F{};
  if (!row_warp_items(F, P, V, U)) return false;
  const int64_t items_c = P.N * int64_t(F.segs.d);
  int64_t chunks = std::min(ceil_div(2048, P.out_c), std::max<int64_t>(1, items_c / 16));
  const int64_t chunk = ceil_div(items_c, chunks);
  chunks = ceil_div(items_c, chunk);
  if (P.out_c * chunks >= (int64_t(1) << 31)) return false;
  L.items_c = static_cast<uint32_t>(items_c);
  L.chunk = static_cast<uint32_t>(chunk);
  L.chunks = static_cast<uint32_t>(chunks);
  L.segs = F.segs;
  L.in_c = static_cast<uint32_t>(P.in_c);
  L.out_c = static_cast<uint32_t>(P.out_c);
  L.in_div = static_cast<uint32_t>(P.in_div);
  L.in_w = F.in_w;
  L.out_w = F.out_w;
  L.pad = F.pad;
  return true;
}

// x: [N, in_c, in_w], gy: [N, out_c, out_w]; part: [out_c][chunks][K] (fp32), or null with one
// chunk: then gw [out_c][K] is written. Grid: out_c * chunks blocks of up to kRowWarpThreads (a
// multiple of 32).
template <typename T, int K, int U>
__global__ void __launch_bounds__(kRowWarpThreads)
row_warp_wgrad(const T* __restrict__ x, const T* __restrict__ gy, float* __restrict__ part, T* __restrict__ gw,
               const RowWarpW L) {
  constexpr int V = 16 / int(sizeof(T)), SEG = 32 * U * V;
  __shared__ float red[kRowWarpThreads / 32][K];
  pdl_wait();  // launched programmatically (row_warp.cu): the previous kernel's writes are visible
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  const uint32_t wpb = blockDim.x / 32;
  const uint32_t co = blockIdx.x / L.chunks, chunk = blockIdx.x % L.chunks;
  const uint32_t ci = co / L.in_div;
  const uint32_t t0 = chunk * L.chunk, t1 = t0 + L.chunk < L.items_c ? t0 + L.chunk : L.items_c;
  float acc[K];
#pragma unroll
  for (int t = 0; t < K; ++t) acc[t] = 0.f;
  for (uint32_t t = t0 + warp; t < t1; t += wpb) {
    uint32_t n = t;
    const uint32_t seg = L.segs.split(n);
    const T* const grow = gy + (int64_t(n) * L.out_c + co) * L.out_w;
    const int ao = static_cast<int>(reinterpret_cast<uintptr_t>(grow) / sizeof(T) % V);
    const int s0 = static_cast<int>(seg) * SEG - ao;
    if (s0 >= L.out_w) continue;  // warp-uniform
    uint32_t A[U + 1][4], D[U][4];
    const T* const xrow = x + (int64_t(n) * L.in_c + ci) * L.in_w;
    const int m = row_warp_load<T, K, U>(xrow, s0 - L.pad, L.in_w, lane, A);
#pragma unroll
    for (int u = 0; u < U; ++u) row_load<T>(grow, s0 + (32 * u + lane) * V, L.out_w, D[u]);
    // The row's tail past its last segment (one output per lane), loaded with the segment (as in
    // the forward; short_k3 weight-grad 23.6 -> 23.1 us, RWKV 179.5 -> 176.7, session 12).
    const int ot = s0 + SEG + lane;
    const bool tail = seg + 1 == L.segs.d && ot < L.out_w;
    float xt[K], gt = 0.f;
    if (tail) {
      row_warp_taps<T, K>(xrow, ot, L.pad, L.in_w, xt);
      gt = static_cast<float>(grow[ot]);
    }
    row_warp_case<V>(m, [&](auto Mc) {
#pragma unroll
      for (int u = 0; u < U; ++u) {
        float xv[V + K - 1];
        row_warp_window<T, K, U, decltype(Mc)::value>(A, lane, u, xv);
#pragma unroll
        for (int o = 0; o < V; ++o) {
          const float g = row_elem<T>(D[u], o);
#pragma unroll
          for (int t = 0; t < K; ++t) acc[t] += g * xv[o + t];
        }
      }
    });
    if (tail) {
#pragma unroll
      for (int t = 0; t < K; ++t) acc[t] += gt * xt[t];
    }
  }
  // Fixed-order block sum: lanes by a butterfly, then warps in order.
#pragma unroll
  for (int t = 0; t < K; ++t) {
#pragma unroll
    for (int off = 16; off > 0; off /= 2) acc[t] += __shfl_xor_sync(0xffffffffu, acc[t], off);
  }
  if (lane == 0) {
#pragma unroll
    for (int t = 0; t < K; ++t) red[warp][t] = acc[t];
  }
  __syncthreads();
  if (threadIdx.x < K) {
    float sum = 0.f;
    for (uint32_t v = 0; v < wpb; ++v) sum += red[v][threadIdx.x];
    if (part == nullptr) {
      gw[int64_t(co) * K + threadIdx.x] = static_cast<T>(sum);
    } else {
      part[(int64_t(co) * L.chunks + chunk) * K + threadIdx.x] = sum;
    }
  }
}

}  // namespace convx::cuda
