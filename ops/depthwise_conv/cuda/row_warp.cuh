// NCL forward / stride-1 data-grad of short 1-D filters (2, 3, 4 and 15 taps; one phase, stride
// 1, data-grad channel multiplier 1) with warp-wide 16-byte vectors and register shuffles.
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
// Work items are (row, segment), segment fastest; one warp per item in a grid-stride loop over
// warps. The item split is 32-bit by FastDiv (items < 2^31 and in-row offsets < 2^30, checked on
// the host), row offsets are 64-bit. Warps share nothing: no shared memory, no barriers; every
// shuffle is executed by the whole warp (its control flow is warp-uniform).
#pragma once

#include "ops/depthwise_conv/cuda/nc_stream.cuh"
#include "ops/depthwise_conv/cuda/plan.cuh"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

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
};

// Fills L when the problem is one this kernel covers with U vectors per lane: the forward or
// stride-1 data-grad of a 1-D row (one phase, stride 1, channel multiplier only in the forward's
// in_div), items < 2^31, row lengths and padding well inside 30 bits.
inline bool row_warp_items(RowWarp& L, const Plan& P, int V, int U) {
  if (P.phases != 1 || P.S[2] != 1 || P.J != 1 || P.k[0] != 1 || P.k[1] != 1) return false;
  if (P.in[0] != 1 || P.in[1] != 1 || P.out[0] != 1 || P.out[1] != 1) return false;
  if (P.in[2] >= (int64_t(1) << 29) || P.out[2] >= (int64_t(1) << 29)) return false;
  if (P.pad[2][0] <= -(1 << 28) || P.pad[2][0] >= (1 << 28)) return false;
  const int64_t segs = ceil_div(P.out[2] + V - 1, int64_t(32) * U * V);
  const int64_t items = P.N * P.out_c * segs;
  if (items <= 0 || items >= (int64_t(1) << 31)) return false;
  L.items = static_cast<uint32_t>(items);
  L.segs = fast_div(static_cast<uint32_t>(segs));
  L.out_c = fast_div(static_cast<uint32_t>(P.out_c));
  L.in_div = fast_div(static_cast<uint32_t>(P.in_div));
  L.in_w = static_cast<int>(P.in[2]);
  L.out_w = static_cast<int>(P.out[2]);
  L.pad = P.pad[2][0];
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

// One item's outputs for input misalignment M: A[u] is the lane's input vector of sub-segment u,
// A[U] the halo vector (lanes < row_warp_shifts). o0: the lane's first output of sub-segment 0.
template <typename T, int K, int U, int M>
__device__ __forceinline__ void row_warp_outputs(const uint32_t (&A)[U + 1][4], int lane, const float (&wv)[K],
                                                 float b0, T* orow, int o0, int out_w) {
  constexpr int V = 16 / int(sizeof(T)), NE = V + K - 1;  // window: NE values from element M
  constexpr int NV = (M + NE + V - 1) / V;                 // vectors the window touches
  constexpr int EPW = 4 / int(sizeof(T));                  // elements per word
#pragma unroll
  for (int u = 0; u < U; ++u) {
    uint32_t win[NV][4];
#pragma unroll
    for (int q = 0; q < 4; ++q) win[0][q] = A[u][q];
#pragma unroll
    for (int s = 1; s < NV; ++s) {
      // Vector 32u + lane + s: lane + s's A[u], or past the warp lane + s - 32's A[u + 1].
      const int need = M + NE - s * V < V ? M + NE - s * V : V;  // elements used from it
      const int words = (need + EPW - 1) / EPW;
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        if (q < words) {
          const uint32_t send = lane < s ? A[u + 1][q] : A[u][q];
          win[s][q] = __shfl_sync(0xffffffffu, send, (lane + s) & 31);
        } else {
          win[s][q] = 0;
        }
      }
    }
    float x[NE];
#pragma unroll
    for (int j = 0; j < NE; ++j) x[j] = row_elem<T>(win[(M + j) / V], (M + j) % V);
    float acc[V];
#pragma unroll
    for (int o = 0; o < V; ++o) {
      float a = 0.f;
#pragma unroll
      for (int t = 0; t < K; ++t) a += wv[t] * x[o + t];
      acc[o] = a + b0;
    }
    const int o = o0 + 32 * u * V;
    T* const dst = orow + o;
    if (o >= 0 && o + V <= out_w) {
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
        if (o + e >= 0 && o + e < out_w) dst[e] = static_cast<T>(acc[e]);
      }
    }
  }
}

// in: [rows / in_div rows of in_w]; w: [out_c][K] fp32 (the data-grad's rotated); out: [rows of
// out_w]; bias: out_c entries or null. Any block size that is a multiple of 32.
template <typename T, int K, int U, int MINB>
__global__ void __launch_bounds__(kRowWarpThreads, MINB)
row_warp(const T* __restrict__ in, const float* __restrict__ w, const T* __restrict__ bias, T* __restrict__ out,
         const RowWarp L) {
  constexpr int V = 16 / int(sizeof(T)), SEG = 32 * U * V, NS = row_warp_shifts<T, K>();
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
    const int first = s0 - L.pad;  // input of the segment's first output
    const int m = (static_cast<int>(reinterpret_cast<uintptr_t>(irow) / sizeof(T) % V) + first) & (V - 1);
    const int p0 = first - m;  // 16-byte aligned
    uint32_t A[U + 1][4];
#pragma unroll
    for (int u = 0; u < U; ++u) row_load<T>(irow, p0 + (32 * u + lane) * V, L.in_w, A[u]);
#pragma unroll
    for (int q = 0; q < 4; ++q) A[U][q] = 0;
    if (lane < NS) row_load<T>(irow, p0 + (32 * U + lane) * V, L.in_w, A[U]);
    const uint32_t co = row - L.out_c.div(row) * L.out_c.d;
    float wv[K];
#pragma unroll
    for (int t = 0; t < K; ++t) wv[t] = w[int64_t(co) * K + t];
    const float b0 = bias ? static_cast<float>(bias[co]) : 0.f;
    const int o0 = s0 + lane * V;
    switch (m) {
#define CONVX_ROW_WARP_CASE(M)                                                                \
  case M:                                                                                     \
    if constexpr (M < V) row_warp_outputs<T, K, U, M>(A, lane, wv, b0, orow, o0, L.out_w); \
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
}

}  // namespace convx::cuda
