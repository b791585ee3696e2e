// NCHW weight-grad of K x K filters at stride 1 from whole planes staged in shared memory
// (plane_wgrad2d.cu): a block owns one channel and a chunk of its samples; per stage it copies S
// samples' x plane (zero-padded by the filter's reach) and dy plane into shared memory with
// 4-byte cp.async (one fp32 value or two 16-bit ones), double-buffered, and each thread adds the
// products of a tile of 4 output rows x 8 output columns into its K * K tap sums (fp32).
//
// Why: walk_wgrad2d (walk2d.cuh) reads its rows from global memory with a mask and a select per
// value and moves a register ring every step: about 2.2 instructions per FMA and 13.7 warps per SM
// (ConvNeXt-56 fp32, H100, session 12's Nsight Compute profile: 0.136 ms where 0.95 GMAC need
// ~0.03 ms at the FP32 FMA rate and the 154 MB ~0.05 ms at copy bandwidth). Here the zero halo
// removes every bounds check, and a tile's K + 3 staged x rows of 14 values (four shared loads
// each) feed 4 x 7 x 8 products each: 48 shared loads per 1568 FMAs, no moves.
//
// Shared layout per plane, values as stored (T): x as XR = GR + K - 1 rows of XP (row i = input
// row i - ph, column j = input column j - XO, zeros outside the input; XO = pw, rounded up to even
// for 16-bit so that pairs stay 4-byte aligned: a tile's values then start E = XO - pw into its
// 16-byte chunk), then dy as GR rows of GP (GR, GP = the output plane rounded up to the tile;
// zeros outside). Copies write only the cells inside
// the tensors, the same ones every stage; the rest is zeroed once. Tap sums: the block's in a
// fixed order (warp butterfly, warps in order: wgrad_block_sum) into part[channel][chunk][tap],
// then sum_slots over the chunks in order: bitwise repeatable, no atomics.
#pragma once

#include "ops/depthwise_conv/cuda/cp_async.cuh"
#include "ops/depthwise_conv/cuda/nc_wgrad_stream.cuh"
#include "ops/depthwise_conv/cuda/plan.cuh"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace convx::cuda {

constexpr int kPlaneWgRows = 4, kPlaneWgCols = 8, kPlaneWgMaxThreads = 256;

struct PlaneWg {
  int IH, IW, QH, QW, ph, pw, C, N;
  int XR, XP, GR, GP;  // staged x: XR rows of XP values; dy: GR rows of GP values
  int XO;              // staged column of input column 0
  int plane;           // values per staged plane (x then dy), a multiple of 8
  int S;               // planes (samples) per stage
  int strips, tiles;   // tiles per plane: GR / kPlaneWgRows rows of `strips`
  int per, chunks;     // samples per block (a multiple of S), blocks per channel
  int threads;         // whole warps covering S * tiles tiles
  int64_t smem;        // bytes: two stages
};

// The launch layout from the shapes alone; false when not covered (not one phase of a 2-D K x K
// filter at stride 1, multiplier 1, padding 0 .. K - 1, 16-bit rows of an odd width, or two stages
// of one plane beyond max_smem bytes). esz: bytes per value (4 or 2).
// tile_target: about how many tiles (threads) a stage should hold; target_blocks: blocks wanted
// in all (channels x chunks).
inline bool plane_wgrad2d_plan(PlaneWg& L, const Plan& P, int K, int tile_target, int64_t target_blocks,
                               int64_t max_smem, int esz) {
  if (P.phases != 1 || P.k[0] != 1 || P.k[1] != K || P.k[2] != K || P.S[0] != 1 || P.S[1] != 1 || P.S[2] != 1 ||
      P.in[0] != 1 || P.q[0] != 1 || P.in_div != 1 || P.out_c != P.in_c || P.N <= 0 || P.q[1] != P.out[1] ||
      P.q[2] != P.out[2] || P.q[1] <= 0 || P.q[2] <= 0)
    return false;
  const int64_t ph = P.pad[1][0], pw = P.pad[2][0];
  if (ph < 0 || pw < 0 || ph >= K || pw >= K) return false;
  if (esz == 2 && (P.in[2] % 2 != 0 || P.q[2] % 2 != 0)) return false;  // copies of whole pairs
  const int64_t XO = esz == 2 ? pw + (pw & 1) : pw;
  const int64_t GR = ceil_div(P.q[1], kPlaneWgRows) * kPlaneWgRows, GP = ceil_div(P.q[2], kPlaneWgCols) * kPlaneWgCols;
  const int64_t XR = GR + K - 1, XP = ceil_div(GP + K - 1 + (XO - pw), 8) * 8;
  const int64_t plane = XR * XP + GR * GP;
  const int64_t tiles = (GR / kPlaneWgRows) * (GP / kPlaneWgCols);
  if (tiles > kPlaneWgMaxThreads) return false;
  // S: about tile_target tiles, at most the batch and what two stages of max_smem hold
  const int64_t S = std::min({std::max<int64_t>(1, std::min<int64_t>(tile_target, kPlaneWgMaxThreads) / tiles), P.N,
                              max_smem / (2 * plane * esz)});
  if (S < 1) return false;
  const int64_t smem = 2 * S * plane * esz;
  // 32-bit plane offsets below (the batch and channel offsets are 64-bit)
  if (P.in[1] * P.in[2] > std::numeric_limits<int32_t>::max() / 2 || P.N > std::numeric_limits<int32_t>::max() / 2 ||
      P.in_c > std::numeric_limits<int32_t>::max() / 2)
    return false;
  const int64_t stages = ceil_div(P.N, S);
  const int64_t chunks0 = std::clamp<int64_t>(target_blocks / P.in_c, 1, stages);
  const int64_t per = S * ceil_div(stages, chunks0);
  L.IH = int(P.in[1]), L.IW = int(P.in[2]), L.QH = int(P.q[1]), L.QW = int(P.q[2]);
  L.ph = int(ph), L.pw = int(pw), L.C = int(P.in_c), L.N = int(P.N);
  L.XR = int(XR), L.XP = int(XP), L.GR = int(GR), L.GP = int(GP), L.XO = int(XO), L.plane = int(plane), L.S = int(S);
  L.strips = int(GP / kPlaneWgCols), L.tiles = int(tiles);
  L.per = int(per), L.chunks = int(ceil_div(P.N, per));
  L.threads = int(std::min<int64_t>(kPlaneWgMaxThreads, ceil_div(S * tiles, 32) * 32));
  L.smem = smem;
  return true;
}

// Values E .. E + NX - 1 from p (shared, 16-byte aligned) into v as float.
template <typename T, int E, int NX>
__device__ __forceinline__ void plane_wg_row(const T* p, float (&v)[NX]) {
  if constexpr (sizeof(T) == 4) {
    static_assert(E == 0, "fp32 tiles start on their 16-byte chunk");
#pragma unroll
    for (int c = 0; c + 4 <= NX; c += 4) {
      const float4 q = *reinterpret_cast<const float4*>(p + c);
      v[c] = q.x, v[c + 1] = q.y, v[c + 2] = q.z, v[c + 3] = q.w;
    }
    if constexpr (NX % 4 >= 2) {
      const float2 q = *reinterpret_cast<const float2*>(p + NX / 4 * 4);
      v[NX / 4 * 4] = q.x, v[NX / 4 * 4 + 1] = q.y;
    }
    if constexpr (NX % 2 == 1) v[NX - 1] = static_cast<float>(p[NX - 1]);
  } else {
    constexpr int NC = (E + NX + 7) / 8;  // 16-byte chunks of 8 values
    T f[NC * 8];
#pragma unroll
    for (int k = 0; k < NC; ++k) *reinterpret_cast<uint4*>(f + 8 * k) = *reinterpret_cast<const uint4*>(p + 8 * k);
#pragma unroll
    for (int c = 0; c < NX; ++c) v[c] = static_cast<float>(f[E + c]);
  }
}

// One tile's products added into v: dy rows q = 0 .. 3 (8 columns each, grow) and the K + 3 x rows
// they meet (8 + K - 1 columns each, xrow), every index static.
template <int K, typename GRow, typename XRow>
__device__ __forceinline__ void wg_tile(GRow grow, XRow xrow, float (&v)[K * K]) {
  constexpr int TR = kPlaneWgRows, TC = kPlaneWgCols, NX = TC + K - 1;
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

// part[channel][chunk][tap]: the block's sum over its samples (fp32). E = XO - pw.
template <typename T, int K, int E>
__global__ void __launch_bounds__(kPlaneWgMaxThreads, 2)
plane_wgrad2d(const T* __restrict__ x, const T* __restrict__ gy, float* __restrict__ part, const PlaneWg L) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* buf = reinterpret_cast<T*>(smem_raw);
  __shared__ float red[kPlaneWgMaxThreads / 32 * K * K];
  constexpr int NV = K * K, TR = kPlaneWgRows, TC = kPlaneWgCols, NX = TC + K - 1;
  constexpr int EPC = 4 / sizeof(T);  // values per 4-byte copy
  const int c = static_cast<int>(blockIdx.x / L.chunks), ck = static_cast<int>(blockIdx.x % L.chunks);
  const int n0 = ck * L.per, n1 = n0 + L.per < L.N ? n0 + L.per : L.N;
  const int stages = (n1 - n0 + L.S - 1) / L.S, stage = L.S * L.plane;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  {
    uint4* b4 = reinterpret_cast<uint4*>(buf);
    for (int i = threadIdx.x; i < 2 * stage / (16 / int(sizeof(T))); i += blockDim.x) b4[i] = uint4{0u, 0u, 0u, 0u};
  }
  __syncthreads();  // the zeros land before any copy into the same cells
  const int64_t in_plane = int64_t(L.IH) * L.IW, out_plane = int64_t(L.QH) * L.QW;
  const int xrows = L.IH < L.XR - L.ph ? L.IH : L.XR - L.ph, xcols = L.IW < L.XP - L.XO ? L.IW : L.XP - L.XO;
  // stage st's samples into buffer st & 1: rows over the warps, a row's columns over the lanes
  auto load = [&](int st) {
    T* sb = buf + (st & 1) * stage;
    const int nb = n0 + st * L.S, ns = n1 - nb < L.S ? n1 - nb : L.S;
    for (int r = warp; r < ns * xrows; r += warps) {
      const int s = r / xrows, iy = r - s * xrows;
      const T* src = x + (int64_t(nb + s) * L.C + c) * in_plane + int64_t(iy) * L.IW;
      T* dst = sb + s * L.plane + (iy + L.ph) * L.XP + L.XO;
      for (int j = EPC * lane; j < xcols; j += EPC * 32) cp_async_n(dst + j, src + j, 4);
    }
    for (int r = warp; r < ns * L.QH; r += warps) {
      const int s = r / L.QH, qy = r - s * L.QH;
      const T* src = gy + (int64_t(nb + s) * L.C + c) * out_plane + int64_t(qy) * L.QW;
      T* dst = sb + s * L.plane + L.XR * L.XP + qy * L.GP;
      for (int j = EPC * lane; j < L.QW; j += EPC * 32) cp_async_n(dst + j, src + j, 4);
    }
    cp_async_commit();
  };
  // this thread's tile: sample s of the stage, output rows TR * p .., columns TC * sx ..
  const bool has_tile = static_cast<int>(threadIdx.x) < L.S * L.tiles;
  const int s = threadIdx.x / L.tiles, t = threadIdx.x % L.tiles;
  const int p = t / L.strips, sx = t % L.strips;
  const int xo = s * L.plane + TR * p * L.XP + TC * sx, go = s * L.plane + L.XR * L.XP + TR * p * L.GP + TC * sx;
  float v[NV];
#pragma unroll
  for (int i = 0; i < NV; ++i) v[i] = 0.f;
  load(0);
  for (int st = 0; st < stages; ++st) {
    if (st + 1 < stages) {
      load(st + 1);
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();  // stage st landed for every thread
    if (has_tile && n0 + st * L.S + s < n1) {
      const T* sb = buf + (st & 1) * stage;
      wg_tile<K>([&](int q, float(&g)[TC]) { plane_wg_row<T, 0, TC>(sb + go + q * L.GP, g); },
                 [&](int i, float(&xv)[NX]) { plane_wg_row<T, E, NX>(sb + xo + i * L.XP, xv); }, v);
    }
    __syncthreads();  // buffer st & 1 is read before stage st + 2 overwrites it
  }
  wgrad_block_sum<NV>(v, red, part + (int64_t(c) * L.chunks + ck) * NV);
}

// Channels-last (NHWC): a block owns CB = 32 bytes of channels (8 fp32 / 16 16-bit: a pixel's
// sector) and a chunk of (sample, band of TH output rows) items, one item per stage. Staged per
// stage, pixel-major (a pixel's CB channels together, 16-byte cp.async): the band's TH + K - 1 x
// rows (column j = input column j - pw) and TH dy rows; groups of 8 pixels padded by one pixel so
// that the 4 tiles of a warp (fp32: lanes = 8 channels x 4 tiles) read distinct banks. Columns
// outside the input are zeroed once; x rows outside the input and dy rows past the plane are
// zeroed per stage (which rows they are depends on the band). A thread: one channel, one 4 x 8
// tile (wg_tile), scalar shared loads. Tap sums: per channel, the block's tiles in order through
// shared memory into part[channel][chunk][tap], then sum_slots: bitwise repeatable.
struct ClBandWg {
  int IH, IW, QH, QW, ph, pw, C, N;
  int TH, bands;          // output rows per band, bands per plane
  int XR, XG, GG;         // staged x rows; 8-pixel groups per staged x / dy row
  int items, per, chunks; // items (sample, band) per channel group; per block; blocks per group
  int groups, tiles;      // channel groups of CB; tiles of a band (threads: tiles x CB, whole warps)
  int threads;
  int64_t smem;           // bytes: two stages
};

// band_rows: TH (a multiple of kPlaneWgRows); false when not covered (as plane_wgrad2d_plan, and
// channels not a multiple of CB, tensors or channel rows not 16-byte aligned: checked by the
// launcher).
inline bool cl_band_wgrad2d_plan(ClBandWg& L, const Plan& P, int K, int band_rows, int64_t target_blocks,
                                 int64_t max_smem, int esz) {
  if (P.phases != 1 || P.k[0] != 1 || P.k[1] != K || P.k[2] != K || P.S[0] != 1 || P.S[1] != 1 || P.S[2] != 1 ||
      P.in[0] != 1 || P.q[0] != 1 || P.in_div != 1 || P.out_c != P.in_c || P.N <= 0 || P.q[1] != P.out[1] ||
      P.q[2] != P.out[2] || P.q[1] <= 0 || P.q[2] <= 0)
    return false;
  const int64_t ph = P.pad[1][0], pw = P.pad[2][0], CB = 32 / esz;
  if (ph < 0 || pw < 0 || ph >= K || pw >= K || P.in_c % CB != 0) return false;
  const int64_t TH = std::min<int64_t>(band_rows, ceil_div(P.q[1], kPlaneWgRows) * kPlaneWgRows);
  const int64_t GG = ceil_div(P.q[2], kPlaneWgCols), XG = ceil_div(GG * kPlaneWgCols + K - 1, 8);
  const int64_t XR = TH + K - 1, GS = 9 * CB;  // values per staged 8-pixel group (one pixel of padding)
  const int64_t stage = (XR * XG + TH * GG) * GS;
  const int64_t tiles = TH / kPlaneWgRows * GG, threads = ceil_div(tiles * CB, 32) * 32;
  const int64_t smem = 2 * stage * esz;
  if (threads > kPlaneWgMaxThreads || smem > max_smem || threads * K * K * 4 > smem) return false;
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

// Offset of pixel column j of a staged row (groups of 8 pixels, each group padded by one pixel).
template <int CB>
__device__ __forceinline__ int cl_band_col(int j) {
  return (j >> 3) * (9 * CB) + (j & 7) * CB;
}

template <typename T, int K>
__global__ void __launch_bounds__(kPlaneWgMaxThreads, 2)
cl_band_wgrad2d(const T* __restrict__ x, const T* __restrict__ gy, float* __restrict__ part, const ClBandWg L) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* buf = reinterpret_cast<T*>(smem_raw);
  constexpr int NV = K * K, TR = kPlaneWgRows, TC = kPlaneWgCols, NX = TC + K - 1;
  constexpr int CB = 32 / int(sizeof(T)), HV = 16 / int(sizeof(T));  // channels per block; per 16-byte copy
  const int grp = static_cast<int>(blockIdx.x / L.chunks), ck = static_cast<int>(blockIdx.x % L.chunks);
  const int i0 = ck * L.per, i1 = i0 + L.per < L.items ? i0 + L.per : L.items;
  const int XRS = L.XG * 9 * CB, GRS = L.GG * 9 * CB, xs_size = L.XR * XRS, stage = xs_size + L.TH * GRS;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  const int c0 = grp * CB;
  {
    uint4* b4 = reinterpret_cast<uint4*>(buf);
    for (int i = threadIdx.x; i < 2 * stage / HV; i += blockDim.x) b4[i] = uint4{0u, 0u, 0u, 0u};
  }
  __syncthreads();  // the zeros land before any copy into the same cells
  const int xcols = L.IW < L.XG * 8 - L.pw ? L.IW : L.XG * 8 - L.pw;
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
        cp_async16(dst + cl_band_col<CB>(pix + off) + h * HV, src + int64_t(pix) * L.C + h * HV, 16);
      }
    }
    cp_async_commit();
  };
  // this thread's channel and tile: output rows TR * p .. of the band, columns TC * sx ..
  const int ch = threadIdx.x % CB, tl = threadIdx.x / CB;
  const int p = tl / L.GG, sx = tl % L.GG;
  const int xo = TR * p * XRS + sx * 9 * CB + ch, go = xs_size + TR * p * GRS + sx * 9 * CB + ch;
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
    if (tl < L.tiles) wg_tile<K>(
        [&](int q, float(&g)[TC]) {
#pragma unroll
          for (int r = 0; r < TC; ++r) g[r] = static_cast<float>(sb[go + q * GRS + cl_band_col<CB>(r)]);
        },
        [&](int i, float(&xv)[NX]) {
#pragma unroll
          for (int c = 0; c < NX; ++c) xv[c] = static_cast<float>(sb[xo + i * XRS + cl_band_col<CB>(c)]);
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
    part[(int64_t(c0 + c) * L.chunks + ck) * NV + tap] = sum;
  }
}

}  // namespace convx::cuda
