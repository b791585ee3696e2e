// Weight-grads of long 1-D depthwise filters (15 and 31 taps, stride 1, multiplier 1) in fp16 /
// bf16 on tensor cores, deterministic; NCL rows (tcw_rows) and (N, L, C) rows (tcw_cl).
//
// Why: the CUDA-core kernels (row1d_wgrad, cl_wgrad_partial) spend ~K FMAs plus conversions and
// shared / global loads per output and channel, so the 31-tap weight-grads ran at 10-25% of the
// copy bandwidth. Here per channel and segment of 256 outputs o = 16b + i (blocks b, position i):
//     M[i][j] = sum_b dy[16b + i] * x[16b + j - pad]      (16 x KW, KW = 15 + K rounded up to 16)
// is one GEMM with a 16-deep reduction over the blocks: KW / 8 m16n8k16 steps (mma16.cuh, exact
// products, fp32 sums), and
//     gw[k] = sum over segments of sum_i M[i][i + k]
// (dy[o] meets x[o + k - pad]: the diagonal sums, done once per warp at the end, on M summed over
// all its segments). NCL: both operands are read from a row segment staged in shared memory in its
// natural order: the fragments' register pairs (blocks b and b + 4, 64 values apart in the row,
// tcw_step) are built from 16-bit shared loads (A: 8, B: 4 KW / 8 per 256 outputs), so the staged window
// may start at any element: the staging needs no alignment and the loads from global memory are
// aligned 16-byte vectors wherever they lie inside the row. (N, L, C): the block transposes the
// staged tiles into channel rows and takes the fragments by ldmatrix.trans (see tcw_cl).
//
// Deterministic: every sum is in a fixed order (the MMA's within a warp's segment, segments in the
// warp's order, the 16 diagonal terms in order, the block's warps in order, then the blocks'
// partials [channel][chunk][tap] in chunk order, by the last block of the channel (group) to
// finish: an int counter, no float atomics), and the split into warps and blocks depends on the
// shapes only.
#pragma once

#include "ops/depthwise_conv/cuda/cp_async.cuh"
#include "ops/depthwise_conv/cuda/mma16.cuh"
#include "ops/depthwise_conv/cuda/plan.cuh"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace convx::cuda {

constexpr int kTcwWarps = 8, kTcwThreads = 32 * kTcwWarps;

// The split into blocks: as many chunks per channel (group) as one wave of resident blocks on an
// H100 (132 SMs) allows, at least one. A constant, so that the chunks (and the bits of the result)
// depend on the shapes only. Measured on the H100 (session 10, conf1d_call1.log), against the
// earlier ~1024 blocks (2.6 waves NCL, 3.9 (N, L, C)): Conformer k31 NCL 37.4 -> 32.1 us (one
// chunk: 512 blocks), (N, L, C) 55.3 -> 41.4 (8 chunks: 256 blocks); k15 NCL (one chunk) as before.
// tcw_rows runs 4 blocks per SM, tcw_cl 2. (The launchers, tc_wgrad1d.cu, pass these to
// tcw_rows_items / tcw_cl_items.)
constexpr int64_t kTcwRowsWave = 132 * 4, kTcwClWave = 132 * 2;

// n8 column tiles of M: KW / 8 (15 + K columns used: j = i + k).
template <int K>
__host__ __device__ constexpr int tcw_tiles() {
  return 2 * ((15 + K + 15) / 16);
}

// A 16-byte vector of 16-bit values (uint4 without the CUDA headers, for the CPU harness).
struct alignas(16) TcwVec {
  uint32_t w[4];
};

// acc[nt] (M's columns 8nt .. 8nt + 7, fragment layout of mma16.cuh) += the 256 outputs' terms:
// dy[16b + i] = dy[e] for e < 256, x[16b + j - pad] = xw[16b + j] (xw: 240 + 8 NT values).
// A = DY^T (A[i][b] = dy[16b + i]), B = XW (B[b][j] = xw[16b + j]). The MMA's reduction row
// 2t + e (+ 8) takes block t + 4e (+ 8) (any block order gives the same M): a load's four lane
// groups t then read 16 values (32 bytes) apart, so every 16-bit shared load is one wavefront for
// any window alignment (blocks 2t + e put groups 0 / 2 and 1 / 3 on the same banks: 2-way
// conflicts). 8 + 4 NT loads per step; measured on the H100 (session 10, meas_ab.log): k15 NCL
// weight-grad 0.101 -> 0.097 ms, Conformer (N, L, C) 0.060 -> 0.056, Conformer NCL the same.
template <typename T, int NT>
__device__ __forceinline__ void tcw_step(const T* dy, const T* xw, float (&acc)[NT][4], int lane) {
  const int g = lane >> 2, t = lane & 3;
  const T* d = dy + 16 * t + g;
  const uint32_t a[4] = {pack16x2(d[0], d[64]), pack16x2(d[8], d[72]), pack16x2(d[128], d[192]),
                         pack16x2(d[136], d[200])};
  const T* xp = xw + 16 * t + g;
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    const uint32_t b[2] = {pack16x2(xp[8 * nt], xp[64 + 8 * nt]), pack16x2(xp[128 + 8 * nt], xp[192 + 8 * nt])};
    mma16816<T>(acc[nt], a, b);
  }
}

// The warp's M (acc) into red (16 rows of RW floats), then lane k < K returns sum_i M[i][i + k]
// (other lanes 0). Every lane calls it.
template <int K, int NT>
__device__ __forceinline__ float tcw_diagonal(const float (&acc)[NT][4], float* red, int lane) {
  constexpr int RW = 8 * NT + 1;  // odd row stride: the diagonal's lanes read distinct banks
  const int g = lane >> 2, t = lane & 3;
  __syncwarp();
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      red[g * RW + 8 * nt + 2 * t + e] = acc[nt][e];
      red[(g + 8) * RW + 8 * nt + 2 * t + e] = acc[nt][2 + e];
    }
  }
  __syncwarp();
  float s = 0.f;
  if (lane < K) {
#pragma unroll
    for (int i = 0; i < 16; ++i) s += red[i * RW + i + lane];
  }
  __syncwarp();
  return s;
}

// Loads the 8 values row[s .. s + 7] (row-relative, zero outside [0, n)) into v: one aligned
// 16-byte load when p = row + s is aligned and the vector lies inside the row, element loads
// where it straddles an end (so no load leaves the row).
template <typename T>
__device__ __forceinline__ TcwVec tcw_load(const T* row, int s, int n) {
  TcwVec v{};
  if (s >= 0 && s + 8 <= n) {
    v = *reinterpret_cast<const TcwVec*>(row + s);
  } else if (s + 8 > 0 && s < n) {
    T e[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) e[i] = (s + i >= 0 && s + i < n) ? row[s + i] : static_cast<T>(0.f);
    std::memcpy(&v, e, 16);
  }
  return v;
}

// Folded chunk sum (no second launch): a block that wrote its partials counts itself in
// `counter` (zeroed by the launcher); the block that arrives last -- it sees every other block's
// partials -- gets true. Block-uniform; flag: a shared int.
__device__ __forceinline__ bool tcw_last_block(unsigned* counter, unsigned chunks, int* flag) {
  __threadfence();  // this thread's partials are visible device-wide before the block counts
  __syncthreads();
  if (threadIdx.x == 0) *flag = atomicAdd(counter, 1u) == chunks - 1;
  __syncthreads();
  const bool last = *flag != 0;
  if (last) __threadfence();
  return last;
}

// gw[c * K + k] = sum over chunks, in chunk order, of part[c][chunk][k] for the n = channels * K
// outputs from channel c0 (read through L2: other blocks wrote them). The order is sum_slots'
// (wgrad_sum.cuh), so the bits do not depend on which block sums.
template <typename T, int K>
__device__ __forceinline__ void tcw_sum_chunks(const float* part, T* gw, int64_t c0, int n, uint32_t chunks) {
  for (int i = static_cast<int>(threadIdx.x); i < n; i += static_cast<int>(blockDim.x)) {
    const int64_t c = c0 + i / K;
    const float* p = part + c * chunks * K + i % K;
    float s = 0.f;
    uint32_t j = 0;
    for (; j + 8 <= chunks; j += 8) {  // eight loads in flight, added in order
      float v[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) v[u] = __ldcg(p + int64_t(j + u) * K);
#pragma unroll
      for (int u = 0; u < 8; ++u) s += v[u];
    }
    for (; j < chunks; ++j) s += __ldcg(p + int64_t(j) * K);
    gw[c * K + i % K] = static_cast<T>(s);
  }
}

// ------------------------------------------------------------------------------------------ NCL
// Work item: a segment of kTcwSeg outputs of one row (sample n, channel c), two 256-output steps.
// Block: one channel x a fixed chunk of its (sample, segment) items; warp w takes the chunk's
// items w, w + 8, ... (a block-uniform round count: a warp without an item stages zeros), staging
// each through its own shared area (dy, then the x window) with the next item's vectors prefetched
// into registers during the MMAs. Windows are staged from the 16-byte boundary at or before their
// first value (mis values earlier; the steps read from mis on).
constexpr int kTcwSeg = 512;
constexpr int kTcwDyVecs = kTcwSeg / 8 + 1;  // the segment's dy from up to 7 values early
template <int K>
__host__ __device__ constexpr int tcw_x_vecs() {  // the x window (255 + 240 + 8 NT + 1 values) from up to 7 early
  return (kTcwSeg + 8 * tcw_tiles<K>() - 16 + 7 + 7) / 8;
}
template <int K>
__host__ __device__ constexpr int tcw_warp_bytes() {  // staging, or (after the items) the diagonal's M
  const int stage = 16 * (kTcwDyVecs + tcw_x_vecs<K>()), red = 16 * (8 * tcw_tiles<K>() + 1) * 4;
  return stage > red ? stage : red;
}
template <int K>
__host__ __device__ constexpr int tcw_smem_bytes() {  // + the warps' tap sums
  return kTcwWarps * tcw_warp_bytes<K>() + kTcwWarps * 32 * 4;
}

struct TcwRows {
  uint32_t items_c, segs, chunk, chunks;  // items per channel, per block; blocks per channel
  int in_w, out_w, pad;
};

// 1-D, one phase, stride 1, multiplier 1, row lengths < 2^30, 0 <= pad < 2^29.
inline bool tcw_row_plan(const Plan& P) {
  if (P.phases != 1 || P.S[2] != 1 || P.J != 1 || P.in_div != 1 || P.k[0] != 1 || P.k[1] != 1) return false;
  if (P.in[0] != 1 || P.in[1] != 1 || P.out[0] != 1 || P.out[1] != 1 || P.N <= 0 || P.out_c <= 0) return false;
  if (P.in[2] >= (int64_t(1) << 30) || P.out[2] >= (int64_t(1) << 30) || P.out[2] <= 0) return false;
  return P.pad[2][0] >= 0 && P.pad[2][0] < (1 << 29);
}

// Fills L: at most `wave` blocks in all where the channels allow (chunks from the shapes alone),
// each warp at least 4 items. false when not covered or the counts do not fit 31 bits.
inline bool tcw_rows_items(TcwRows& L, const Plan& P, int64_t wave) {
  if (!tcw_row_plan(P)) return false;
  const int64_t segs = ceil_div(P.out[2], kTcwSeg), items_c = P.N * segs;
  if (items_c >= (int64_t(1) << 31)) return false;
  int64_t chunks = std::clamp<int64_t>(wave / P.out_c, 1, std::max<int64_t>(1, items_c / (4 * kTcwWarps)));
  const int64_t chunk = ceil_div(items_c, chunks);
  chunks = ceil_div(items_c, chunk);
  if (P.out_c * chunks >= (int64_t(1) << 31)) return false;
  L.items_c = static_cast<uint32_t>(items_c);
  L.segs = static_cast<uint32_t>(segs);
  L.chunk = static_cast<uint32_t>(chunk);
  L.chunks = static_cast<uint32_t>(chunks);
  L.in_w = static_cast<int>(P.in[2]);
  L.out_w = static_cast<int>(P.out[2]);
  L.pad = P.pad[2][0];
  return true;
}

// x: [N, C, in_w], gy: [N, C, out_w]. Writes gw [C][K]: directly when L.chunks == 1, else
// through part [C][chunks][K] (fp32), summed by the channel's last block (counters: C, zeroed).
// Grid: C * chunks blocks of kTcwThreads; dynamic shared memory tcw_smem_bytes<K>().
// 4 resident blocks (31 taps: 64 registers, 20 bytes spilled; at 3 blocks 77 registers and no
// spills): with the one-wave split the H100 ran Conformer k31 at 32.0 us against 32.8 at 3 blocks,
// its backward 0.065 ms against 0.069 (session 10, conf1d_call2.log; at session 9's 2.6 waves 4
// blocks had measured slower).
template <typename T, int K>
__global__ void __launch_bounds__(kTcwThreads, 4)
tcw_rows(const T* __restrict__ x, const T* __restrict__ gy, float* __restrict__ part, unsigned* __restrict__ counters,
         T* __restrict__ gw, const Plan P, const TcwRows L) {
  constexpr int NT = tcw_tiles<K>(), NX = tcw_x_vecs<K>();
  constexpr int DL = (kTcwDyVecs + 31) / 32, XL = (NX + 31) / 32;  // vectors per lane
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  unsigned char* const area = smem_raw + warp * tcw_warp_bytes<K>();
  TcwVec* const dys = reinterpret_cast<TcwVec*>(area);
  TcwVec* const xs = dys + kTcwDyVecs;
  float* const sums = reinterpret_cast<float*>(smem_raw + kTcwWarps * tcw_warp_bytes<K>());
  const uint32_t co = blockIdx.x / L.chunks, chunk = blockIdx.x % L.chunks;
  const uint32_t t0 = chunk * L.chunk, t1 = t0 + L.chunk < L.items_c ? t0 + L.chunk : L.items_c;

  // The prefetched item: its vectors and how far before its windows they start.
  TcwVec pd[DL], px[XL];
  int pmd = 0, pmx = 0;
  auto fetch = [&](uint32_t t, bool live) {
#pragma unroll
    for (int i = 0; i < DL; ++i) pd[i] = TcwVec{};
#pragma unroll
    for (int i = 0; i < XL; ++i) px[i] = TcwVec{};
    pmd = pmx = 0;
    if (!live) return;
    const uint32_t seg = t % L.segs, n = t / L.segs;
    const T* xr = x + (int64_t(n) * P.in_c + co) * L.in_w;
    const T* gr = gy + (int64_t(n) * P.out_c + co) * L.out_w;
    const int o0 = static_cast<int>(seg) * kTcwSeg, x0 = o0 - L.pad;
    pmd = static_cast<int>((reinterpret_cast<uintptr_t>(gr + o0) % 16) / sizeof(T));
    pmx = static_cast<int>((reinterpret_cast<uintptr_t>(xr + x0) % 16) / sizeof(T));
#pragma unroll
    for (int i = 0; i < DL; ++i) {
      const int v = lane + 32 * i;
      if (v < kTcwDyVecs) pd[i] = tcw_load(gr, o0 - pmd + 8 * v, L.out_w);
    }
#pragma unroll
    for (int i = 0; i < XL; ++i) {
      const int v = lane + 32 * i;
      if (v < NX) px[i] = tcw_load(xr, x0 - pmx + 8 * v, L.in_w);
    }
  };

  float acc[NT][4];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.f;
  uint32_t t = t0 + warp;
  fetch(t, t < t1);
  for (uint32_t first = t0; first < t1; first += kTcwWarps, t += kTcwWarps) {
    const int md = pmd, mx = pmx;
    __syncwarp();  // the warp's reads of the previous item are done
#pragma unroll
    for (int i = 0; i < DL; ++i) {
      if (lane + 32 * i < kTcwDyVecs) dys[lane + 32 * i] = pd[i];
    }
#pragma unroll
    for (int i = 0; i < XL; ++i) {
      if (lane + 32 * i < NX) xs[lane + 32 * i] = px[i];
    }
    __syncwarp();
    fetch(t + kTcwWarps, t + kTcwWarps < t1);
    const T* dv = reinterpret_cast<const T*>(dys) + md;
    const T* xv = reinterpret_cast<const T*>(xs) + mx;
#pragma unroll
    for (int s = 0; s < kTcwSeg / 256; ++s) tcw_step<T, NT>(dv + 256 * s, xv + 256 * s, acc, lane);
  }

  // Diagonal sums per warp, then the warps in order.
  const float s = tcw_diagonal<K, NT>(acc, reinterpret_cast<float*>(area), lane);
  if (lane < K) sums[warp * 32 + lane] = s;
  __syncthreads();
  if (threadIdx.x < K) {
    float sum = 0.f;
#pragma unroll
    for (int w = 0; w < kTcwWarps; ++w) sum += sums[w * 32 + threadIdx.x];
    if (L.chunks == 1) {
      gw[int64_t(co) * K + threadIdx.x] = static_cast<T>(sum);
    } else {
      part[(int64_t(co) * L.chunks + chunk) * K + threadIdx.x] = sum;
    }
  }
  if (L.chunks > 1 && tcw_last_block(counters + co, L.chunks, reinterpret_cast<int*>(sums)))
    tcw_sum_chunks<T, K>(part, gw, co, K, L.chunks);
}

// ---------------------------------------------------------------------------------- (N, L, C)
// Block: 16 channels (two 16-byte vectors per position: whole 32-byte sectors) x a fixed chunk of
// (sample, 256-output segment) items. Each item's dy segment and x window (position-major, as
// stored) arrive by cp.async into one of two raw buffers; the block transposes them by
// ldmatrix.trans into 32-bit shared rows, one per channel, starts the copies of the item after next
// into the buffer just read, and warp w runs one step for its channels 2w and 2w + 1, its
// fragments by ldmatrix.trans from the rows: two items in flight per block. (With the vectors
// prefetched through registers, one item in flight, the H100 ran Conformer k31 at 42.8 us against
// 41.4 with two; session 10, conf1d_call1.log.) Channels past C (C a multiple of 8, not of 16) are
// zeros and not written.
// Layouts: raw vector ch of position p at 2 p + (ch ^ ((p >> 2) & 1)) (the 8 positions of one
// ldmatrix.trans matrix on 8 bank groups); rows of dy 128 words, of x XLEN / 2, strides 4 mod 8
// words (a transposing store, 8 channels x 4 consecutive words, is conflict-free); 16-byte unit u
// of a row at tcw_unit(u), so a fragment's 8 blocks (units 2 b + c) sit on 8 bank groups. Against
// session 10's 16-bit transposing stores (8 per vector) and 16-bit fragment loads (8 + 4 NT per
// step), measured on the H100 (session 13, bench/results/h100/session13/conf_call1_ab.log,
// Conformer k31 bf16 weight-grad per call, alternating in one process): 45.1 -> 42.3 and 41.2 ->
// 40.4 us, the same bits; 96 registers instead of 121.
constexpr int kTcwClSeg = 256, kTcwClCh = 16;
constexpr int kTcwClDyStride = kTcwClSeg / 2 + 4;  // shared row stride of dy (words)
template <int K>
__host__ __device__ constexpr int tcw_cl_x_len() {  // x window positions: 240 + 8 NT
  return kTcwClSeg - 16 + 8 * tcw_tiles<K>();
}
template <int K>
__host__ __device__ constexpr int tcw_cl_x_stride() {  // shared row stride of x (words): 4 mod 8
  return tcw_cl_x_len<K>() / 2 % 8 == 4 ? tcw_cl_x_len<K>() / 2 : tcw_cl_x_len<K>() / 2 + 4;
}
__host__ __device__ constexpr int tcw_unit(int u) { return u ^ ((u >> 3) & 1); }
__host__ __device__ constexpr int tcw_cl_raw(int p, int ch) { return 2 * p + (ch ^ ((p >> 2) & 1)); }
template <int K>
__host__ __device__ constexpr int tcw_cl_rows_bytes() {  // the channel rows, or (after the items) the warps' M
  const int stage = 4 * kTcwClCh * (kTcwClDyStride + tcw_cl_x_stride<K>());
  const int red = kTcwWarps * 16 * (8 * tcw_tiles<K>() + 1) * 4;
  return stage > red ? stage : red;
}
template <int K>
__host__ __device__ constexpr int tcw_cl_smem_bytes() {  // + two raw items (dy and x vectors)
  return tcw_cl_rows_bytes<K>() + 2 * 16 * (2 * kTcwClSeg + 2 * tcw_cl_x_len<K>());
}

struct TcwCl {
  uint32_t items, segs, chunk, chunks, groups;  // items per channel group, per block; blocks per group; groups
  int in_w, out_w, pad, C;
};

// Fills L: at most `wave` blocks where the channel groups allow (chunks from the shapes alone),
// each at least 4 items; C a multiple of 8 below 2^24. false otherwise.
inline bool tcw_cl_items(TcwCl& L, const Plan& P, int64_t wave) {
  if (!tcw_row_plan(P) || P.out_c % 8 != 0 || P.out_c >= (int64_t(1) << 24)) return false;
  const int64_t segs = ceil_div(P.out[2], kTcwClSeg), items = P.N * segs, groups = ceil_div(P.out_c, kTcwClCh);
  if (items >= (int64_t(1) << 31)) return false;
  int64_t chunks = std::clamp<int64_t>(wave / groups, 1, std::max<int64_t>(1, items / 4));
  const int64_t chunk = ceil_div(items, chunks);
  chunks = ceil_div(items, chunk);
  if (groups * chunks >= (int64_t(1) << 31)) return false;
  L.items = static_cast<uint32_t>(items);
  L.segs = static_cast<uint32_t>(segs);
  L.chunk = static_cast<uint32_t>(chunk);
  L.chunks = static_cast<uint32_t>(chunks);
  L.groups = static_cast<uint32_t>(groups);
  L.in_w = static_cast<int>(P.in[2]);
  L.out_w = static_cast<int>(P.out[2]);
  L.pad = P.pad[2][0];
  L.C = static_cast<int>(P.out_c);
  return true;
}

// x: [N, in_w, C], gy: [N, out_w, C], 16-byte aligned. Writes gw [C][K]: directly when L.chunks
// == 1, else through part [C][chunks][K] (fp32), summed by the group's last block (counters:
// groups, zeroed). Grid: groups * chunks blocks (group fastest: the blocks in flight read whole
// positions) of kTcwThreads; dynamic shared memory tcw_cl_smem_bytes<K>() (> 48 KB).
template <typename T, int K>
__global__ void __launch_bounds__(kTcwThreads, 2)
tcw_cl(const T* __restrict__ x, const T* __restrict__ gy, float* __restrict__ part, unsigned* __restrict__ counters,
        T* __restrict__ gw, const TcwCl L) {
  constexpr int NT = tcw_tiles<K>(), XLEN = tcw_cl_x_len<K>(), XS = tcw_cl_x_stride<K>();
  constexpr int ND = 2 * kTcwClSeg, NX = 2 * XLEN;  // vectors per item
  static_assert(ND % 32 == 0 && NX % 32 == 0, "whole ldmatrix rounds (16 positions x 2 vectors)");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  uint32_t* const dy32 = reinterpret_cast<uint32_t*>(smem_raw);  // [16][kTcwClDyStride]
  uint32_t* const x32 = dy32 + kTcwClCh * kTcwClDyStride;        // [16][XS]
  TcwVec* const raw0 = reinterpret_cast<TcwVec*>(smem_raw + tcw_cl_rows_bytes<K>());  // [2][ND + NX]
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const uint32_t group = blockIdx.x % L.groups, chunk = blockIdx.x / L.groups;
  const int c0 = static_cast<int>(group) * kTcwClCh;
  const uint32_t t0 = chunk * L.chunk, t1 = t0 + L.chunk < L.items ? t0 + L.chunk : L.items;

  // Vector v of an item: position v / 2 (dy: v < ND; x: v - ND), channels c0 + 8 (v % 2).
  auto issue = [&](uint32_t t) {  // item t (if any) into raw buffer t % 2; one commit either way
    if (t < t1) {
      TcwVec* const raw = raw0 + (t & 1) * (ND + NX);
      const uint32_t seg = t % L.segs, n = t / L.segs;
      const int o0 = static_cast<int>(seg) * kTcwClSeg, x0 = o0 - L.pad;
      const T* gr = gy + int64_t(n) * L.out_w * L.C + c0;
      const T* xr = x + int64_t(n) * L.in_w * L.C + c0;
      for (int v = tid; v < ND + NX; v += kTcwThreads) {
        const int ch = 8 * (v & 1);
        bool ok = c0 + ch < L.C;
        const T* p = gy;
        if (v < ND) {
          const int o = o0 + v / 2;
          ok = ok && o < L.out_w;
          if (ok) p = gr + int64_t(o) * L.C + ch;
        } else {
          const int xi = x0 + (v - ND) / 2;
          ok = ok && xi >= 0 && xi < L.in_w;
          if (ok) p = xr + int64_t(xi) * L.C + ch;
        }
        cp_async16(raw + (v < ND ? tcw_cl_raw(v / 2, v & 1) : ND + tcw_cl_raw((v - ND) / 2, v & 1)), p, ok ? 16 : 0);
      }
    }
    cp_async_commit();
  };

  float acc[2][NT][4];
#pragma unroll
  for (int c = 0; c < 2; ++c) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) acc[c][nt][0] = acc[c][nt][1] = acc[c][nt][2] = acc[c][nt][3] = 0.f;
  }
  issue(t0);
  issue(t0 + 1);
  for (uint32_t t = t0; t < t1; ++t) {
    cp_async_wait<1>();  // item t's copies are done (t + 1's may be in flight)
    __syncthreads();     // ... every thread's; the block's reads of the previous item's rows are done
    const TcwVec* const raw = raw0 + (t & 1) * (ND + NX);
    {
      // ldmatrix.trans q: positions 16 q' + [0, 16) of dy (q < ND / 32) or x, both vectors; matrix
      // j = (positions 8 (2 q' + j / 2) + [0, 8), vector j % 2); lane (g, t) receives channel 8 (j %
      // 2) + g's word 4 (2 q' + j / 2) + t. A block-uniform round count (the CPU harness's
      // ldmatrix is a block-wide exchange): the last round's idle warps load and drop.
      const int g = lane / 4, tq = lane % 4, j = lane / 8;
#pragma unroll 1
      for (int q0 = 0; q0 < (ND + NX) / 32; q0 += kTcwWarps) {
        const bool live = q0 + warp < (ND + NX) / 32;
        const int q = live ? q0 + warp : (ND + NX) / 32 - 1;
        const bool isx = q >= ND / 32;
        const int q2 = isx ? q - ND / 32 : q, p = 8 * (2 * q2 + j / 2) + lane % 8;
        uint32_t a[4];
        tc_ldsm_x4_trans(a, reinterpret_cast<const uint32_t*>(raw + (isx ? ND : 0) + tcw_cl_raw(p, j & 1)));
        uint32_t* const rows = isx ? x32 : dy32;
        const int rs = isx ? XS : kTcwClDyStride;
        if (live) {
#pragma unroll
          for (int jj = 0; jj < 4; ++jj) rows[(8 * (jj & 1) + g) * rs + 4 * tcw_unit(2 * q2 + jj / 2) + tq] = a[jj];
        }
      }
    }
    __syncthreads();  // raw buffer t % 2 is free
    issue(t + 2);
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      // A = DY^T (A[i][b] = dy[16 b + i]): matrix j = (i half j % 2, blocks 8 (j / 2) + [0, 8)), its
      // rows b at units 2 b + j % 2; B (B[b][n] = x[16 b + n]): per pair of n8 tiles, matrix j =
      // (tile 2 np + j / 2, blocks 8 (j % 2) + [0, 8)), rows at units 2 b + tile.
      const int cl = 2 * warp + c, r = lane % 8, j = lane / 8;
      const uint32_t* const dr = dy32 + cl * kTcwClDyStride;
      const uint32_t* const xr = x32 + cl * XS;
      uint32_t a[4];
      tc_ldsm_x4_trans(a, dr + 4 * tcw_unit(2 * (r + 8 * (j >> 1)) + (j & 1)));
#pragma unroll
      for (int np = 0; np < NT / 2; ++np) {
        uint32_t bb[4];
        tc_ldsm_x4_trans(bb, xr + 4 * tcw_unit(2 * (r + 8 * (j & 1)) + 2 * np + (j >> 1)));
        const uint32_t b0[2] = {bb[0], bb[1]}, b1[2] = {bb[2], bb[3]};
        mma16816<T>(acc[c][2 * np], a, b0);
        mma16816<T>(acc[c][2 * np + 1], a, b1);
      }
    }
  }
  cp_async_wait<0>();

  __syncthreads();  // staging done: the area holds the warps' M
  float* const red = reinterpret_cast<float*>(smem_raw) + warp * 16 * (8 * NT + 1);
#pragma unroll
  for (int c = 0; c < 2; ++c) {
    const float s = tcw_diagonal<K, NT>(acc[c], red, lane);
    const int co = c0 + 2 * warp + c;
    if (lane < K && co < L.C) {
      if (L.chunks == 1) {
        gw[int64_t(co) * K + lane] = static_cast<T>(s);
      } else {
        part[(int64_t(co) * L.chunks + chunk) * K + lane] = s;
      }
    }
  }
  if (L.chunks > 1 && tcw_last_block(counters + group, L.chunks, reinterpret_cast<int*>(smem_raw)))
    tcw_sum_chunks<T, K>(part, gw, c0, (L.C - c0 < kTcwClCh ? L.C - c0 : kTcwClCh) * K, L.chunks);
}

}  // namespace convx::cuda
