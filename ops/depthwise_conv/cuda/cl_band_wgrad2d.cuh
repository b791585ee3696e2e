// Channels-last (NHWC) weight-grad of K x K filters at stride 1 from bands staged in shared memory
// (cl_band_wgrad2d.cu): a block owns CB = 32 bytes of channels (8 fp32 / 16 16-bit: a pixel's
// sector) and a chunk of (sample, band of TH output rows) items, one item per stage, double-buffered
// by 16-byte cp.async; each thread adds one channel's products over a tile of 4 output rows x TC
// output columns (TC 8 or 4) into its K * K tap sums (fp32).
//
// Why: walk_wgrad2d (walk2d.cuh) reads its rows from global memory with a mask and a select per
// value and moves a register ring every step (about 2.2 instructions per FMA, 13.7 warps per SM:
// session 12's profile), and its NHWC form took 185 us + a 57 us chunk sum on ConvNeXt-56 fp32
// (H100, bench/results/h100/session13/w7_call1_kernels.log). Here the zero halo removes every
// bounds check, and a tile's K + 3 staged x rows of TC + K - 1 values feed 4 x K x TC products
// each (7 x 7, TC 8: 172 shared loads per 1568 FMAs), no moves, every index static. Tiles of 4
// columns (session 14) take twice the threads per staged band at 0.148 loads per FMA instead of
// 0.110: fp32 ConvNeXt-56 runs 7 warps per block instead of 3.5, ConvNeXt-14 4 instead of 2.
//
// Staged per stage, pixel-major (a pixel's CB channels together, as stored): the band's TH + K - 1
// x rows (column j = input column j - pw) and TH dy rows; groups of TC pixels padded by one pixel,
// so that the 4 tiles of a warp (fp32: lanes = 8 channels x 4 tiles; 16-bit: 16 x 2) read distinct
// banks. Columns outside the input are zeroed once; x rows outside the input and dy rows past the
// plane are zeroed per stage (which rows they are depends on the band). Tap sums: per channel, the
// block's tiles in order through shared memory into part[channel][chunk][tap], then the chunks in
// order, by sum_slots or (fused) by the group's last block (an int counter; tc_wgrad1d.cuh's
// tcw_last_block / tcw_sum_chunks): the same order either way, bitwise repeatable, no float atomics.
#pragma once

#include "ops/depthwise_conv/cuda/cp_async.cuh"
#include "ops/depthwise_conv/cuda/plan.cuh"
#include "ops/depthwise_conv/cuda/tc_wgrad1d.cuh"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace convx::cuda {

constexpr int kBandWgRows = 4, kBandWgMaxThreads = 256;  // a thread's tile rows; a block

// One tile's products added into v: dy rows q = 0 .. 3 (TC columns each, grow) and the K + 3 x rows
// they meet (TC + K - 1 columns each, xrow), every index static.
template <int K, int TC, typename GRow, typename XRow>
__device__ __forceinline__ void wg_tile(GRow grow, XRow xrow, float (&v)[K * K]) {
  constexpr int TR = kBandWgRows, NX = TC + K - 1;
  float g[TR][TC];
#pragma unroll
  for (int q = 0; q < TR; ++q) grow(q, g[q]);
#pragma unroll
  for (int i = 0; i < TR + K - 1; ++i) {
    float xv[NX];
    xrow(i, xv);
#pragma unroll
    for (int q = 0; q < TR; ++q) {
      const int a = i - q;  // x row i meets output row q through filter row a
      if (a >= 0 && a < K) {
#pragma unroll
        for (int r = 0; r < TC; ++r) {
#pragma unroll
          for (int b = 0; b < K; ++b) v[a * K + b] += xv[r + b] * g[q][r];
        }
      }
    }
  }
}

struct ClBandWg {
  int IH, IW, QH, QW, ph, pw, C, N;
  int TH, bands;          // output rows per band, bands per plane
  int XR, XG, GG;         // staged x rows; TC-pixel groups per staged x / dy row
  int items, per, chunks; // items (sample, band) per channel group; per block; blocks per group
  int groups, tiles;      // channel groups of CB; tiles of a band (threads: tiles x CB, whole warps)
  int threads;
  int64_t smem;           // bytes: two stages
};

// The launch layout from the shapes alone; false when not covered (not one phase of a 2-D K x K
// filter at stride 1, multiplier 1, padding 0 .. K - 1, channels a multiple of CB, two stages
// within max_smem bytes). tc: a tile's output columns TC (the staged rows' pixel groups);
// band_rows: TH, a multiple of kBandWgRows (capped at the plane's rows); target_blocks: blocks
// wanted in all (channel groups x chunks); esz: bytes per value. The tensors' 16-byte alignment is
// the launcher's check.
inline bool cl_band_wgrad2d_plan(ClBandWg& L, const Plan& P, int K, int tc, int band_rows, int64_t target_blocks,
                                 int64_t max_smem, int esz) {
  if (P.phases != 1 || P.k[0] != 1 || P.k[1] != K || P.k[2] != K || P.S[0] != 1 || P.S[1] != 1 || P.S[2] != 1 ||
      P.in[0] != 1 || P.q[0] != 1 || P.in_div != 1 || P.out_c != P.in_c || P.N <= 0 || P.q[1] != P.out[1] ||
      P.q[2] != P.out[2] || P.q[1] <= 0 || P.q[2] <= 0)
    return false;
  const int64_t ph = P.pad[1][0], pw = P.pad[2][0], CB = 32 / esz;
  if (ph < 0 || pw < 0 || ph >= K || pw >= K || P.in_c % CB != 0) return false;
  const int64_t TH = std::min<int64_t>(band_rows, ceil_div(P.q[1], kBandWgRows) * kBandWgRows);
  const int64_t GG = ceil_div(P.q[2], tc), XG = ceil_div(GG * tc + K - 1, tc);
  const int64_t XR = TH + K - 1, GS = (tc + 1) * CB;  // values per staged pixel group (one pixel of padding)
  const int64_t stage = (XR * XG + TH * GG) * GS;
  const int64_t tiles = TH / kBandWgRows * GG, threads = ceil_div(tiles * CB, 32) * 32;
  const int64_t smem = 2 * stage * esz;
  if (threads > kBandWgMaxThreads || smem > max_smem || threads * K * K * 4 > smem) return false;  // + tap sums
  if (P.in[1] * P.in[2] * P.in_c > std::numeric_limits<int32_t>::max() / 2 ||
      P.q[1] * P.q[2] * P.in_c > std::numeric_limits<int32_t>::max() / 2 || P.N > std::numeric_limits<int32_t>::max() / 64)
    return false;
  const int64_t bands = ceil_div(P.q[1], TH), items = P.N * bands, groups = P.in_c / CB;
  const int64_t chunks0 = std::clamp<int64_t>(target_blocks / groups, 1, items);
  const int64_t per = ceil_div(items, chunks0);
  L.IH = int(P.in[1]), L.IW = int(P.in[2]), L.QH = int(P.q[1]), L.QW = int(P.q[2]);
  L.ph = int(ph), L.pw = int(pw), L.C = int(P.in_c), L.N = int(P.N);
  L.TH = int(TH), L.bands = int(bands), L.XR = int(XR), L.XG = int(XG), L.GG = int(GG);
  L.items = int(items), L.per = int(per), L.chunks = int(ceil_div(items, per));
  L.groups = int(groups), L.tiles = int(tiles), L.threads = int(threads), L.smem = smem;
  return true;
}

// Offset of pixel column j of a staged row (groups of TC pixels, each group padded by one pixel).
template <int CB, int TC>
__device__ __forceinline__ int cl_band_col(int j) {
  return (j / TC) * ((TC + 1) * CB) + (j % TC) * CB;
}

// Grid: groups x chunks blocks of L.threads. counters (groups, zeroed) null: every block writes its
// partials to part[channel][chunk][tap] for sum_slots; else the group's last block sums them.
template <typename T, int K, int TC>
__global__ void __launch_bounds__(kBandWgMaxThreads, 2)
cl_band_wgrad2d(const T* __restrict__ x, const T* __restrict__ gy, float* __restrict__ part,
                unsigned* __restrict__ counters, T* __restrict__ gw, const ClBandWg L) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* buf = reinterpret_cast<T*>(smem_raw);
  constexpr int NV = K * K, TR = kBandWgRows, NX = TC + K - 1;
  constexpr int CB = 32 / int(sizeof(T)), HV = 16 / int(sizeof(T));  // channels per block; per 16-byte copy
  constexpr int GS = (TC + 1) * CB;  // values per staged pixel group
  const int grp = static_cast<int>(blockIdx.x / L.chunks), ck = static_cast<int>(blockIdx.x % L.chunks);
  const int i0 = ck * L.per, i1 = i0 + L.per < L.items ? i0 + L.per : L.items;
  const int XRS = L.XG * GS, GRS = L.GG * GS, xs_size = L.XR * XRS, stage = xs_size + L.TH * GRS;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  const int c0 = grp * CB;
  {
    uint4* b4 = reinterpret_cast<uint4*>(buf);
    for (int i = threadIdx.x; i < 2 * stage / HV; i += blockDim.x) b4[i] = uint4{0u, 0u, 0u, 0u};
  }
  __syncthreads();  // the zeros land before any copy into the same cells
  const int xcols = L.IW < L.XG * TC - L.pw ? L.IW : L.XG * TC - L.pw;
  // item it into buffer b: x rows qy0 - ph .. (zeros outside the input), dy rows qy0 .. (zeros past
  // the plane); a warp per row, lanes over 16-byte halves of pixels
  auto load = [&](int it, int b) {
    T* sb = buf + b * stage;
    const int n = it / L.bands, qy0 = (it - n * L.bands) * L.TH;
    for (int r = warp; r < L.XR + L.TH; r += warps) {
      const bool is_x = r < L.XR;
      const int row = is_x ? qy0 - L.ph + r : qy0 + r - L.XR;
      T* dst = sb + (is_x ? r * XRS : xs_size + (r - L.XR) * GRS);
      const int ncols = is_x ? xcols : L.QW, off = is_x ? L.pw : 0;
      if (is_x ? (row < 0 || row >= L.IH) : row >= L.QH) {
        const int words = (is_x ? XRS : GRS) / HV;  // the whole staged row, padding included
        for (int j = lane; j < words; j += 32) reinterpret_cast<uint4*>(dst)[j] = uint4{0u, 0u, 0u, 0u};
        continue;
      }
      const T* src = is_x ? x + ((int64_t(n) * L.IH + row) * L.IW) * L.C + c0
                          : gy + ((int64_t(n) * L.QH + row) * L.QW) * L.C + c0;
      for (int j = lane; j < 2 * ncols; j += 32) {
        const int pix = j >> 1, h = j & 1;
        cp_async16(dst + cl_band_col<CB, TC>(pix + off) + h * HV, src + int64_t(pix) * L.C + h * HV, 16);
      }
    }
    cp_async_commit();
  };
  // this thread's channel and tile: output rows TR * p .. of the band, columns TC * sx ..
  const int ch = threadIdx.x % CB, tl = threadIdx.x / CB;
  const int p = tl / L.GG, sx = tl % L.GG;
  const int xo = TR * p * XRS + sx * GS + ch, go = xs_size + TR * p * GRS + sx * GS + ch;
  float v[NV];
#pragma unroll
  for (int i = 0; i < NV; ++i) v[i] = 0.f;
  if (i0 < i1) load(i0, 0);
  for (int it = i0; it < i1; ++it) {
    const int b = (it - i0) & 1;
    if (it + 1 < i1) {
      load(it + 1, b ^ 1);
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();  // item it landed for every thread
    const T* sb = buf + b * stage;
    if (tl < L.tiles) wg_tile<K, TC>(
        [&](int q, float(&g)[TC]) {
#pragma unroll
          for (int r = 0; r < TC; ++r) g[r] = static_cast<float>(sb[go + q * GRS + cl_band_col<CB, TC>(r)]);
        },
        [&](int i, float(&xv)[NX]) {
#pragma unroll
          for (int c = 0; c < NX; ++c) xv[c] = static_cast<float>(sb[xo + i * XRS + cl_band_col<CB, TC>(c)]);
        },
        v);
    __syncthreads();  // buffer b is read before item it + 2 overwrites it
  }
  // per channel, the tiles in order: red[thread][tap] over the staging buffers
  float* red = reinterpret_cast<float*>(smem_raw);
#pragma unroll
  for (int i = 0; i < NV; ++i) red[threadIdx.x * NV + i] = v[i];
  __syncthreads();
  for (int j = threadIdx.x; j < CB * NV; j += blockDim.x) {
    const int c = j % CB, tap = j / CB;
    float sum = 0.f;
    for (int t = 0; t < L.tiles; ++t) sum += red[(t * CB + c) * NV + tap];
    if (counters != nullptr && L.chunks == 1) {
      gw[int64_t(c0 + c) * NV + tap] = static_cast<T>(sum);
    } else {
      part[(int64_t(c0 + c) * L.chunks + ck) * NV + tap] = sum;
    }
  }
  // the group's last block: the chunks' partials in chunk order (sum_slots' order, the same bits);
  // its flag in smem_raw once every thread has read red (tcw_last_block's first barrier)
  if (counters != nullptr && L.chunks > 1 &&
      tcw_last_block(counters + grp, unsigned(L.chunks), reinterpret_cast<int*>(smem_raw)))
    tcw_sum_chunks<T, NV>(part, gw, c0, CB * NV, unsigned(L.chunks));
}

}  // namespace convx::cuda
