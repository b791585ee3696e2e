// fp32 NCHW weight-grad of K x K filters at stride 1 from whole planes staged in shared memory
// (plane_wgrad2d.cu): a block owns one channel and a chunk of its samples; per stage it copies S
// samples' x plane (zero-padded by the filter's reach) and dy plane into shared memory with
// cp.async, double-buffered, and each thread adds the products of a tile of 4 output rows x 8
// output columns into its K * K tap sums.
//
// Why: walk_wgrad2d (walk2d.cuh) reads its rows from global memory with a mask and a select per
// value and moves a register ring every step: about 2.2 instructions per FMA and 13.7 warps per SM
// (ConvNeXt-56 fp32, H100, session 12's Nsight Compute profile: 0.136 ms where 0.95 GMAC need
// ~0.03 ms at the FP32 FMA rate and the 154 MB ~0.05 ms at copy bandwidth). Here the zero halo
// removes every bounds check, and a tile's K + 3 staged x rows of 14 values (four shared loads
// each) feed 4 x 7 x 8 products each: 48 shared loads per 1568 FMAs, no moves.
//
// Shared layout per plane: x as XR = GR + K - 1 rows of XP floats (row i = input row i - ph,
// column j = input column j - pw, zeros outside the input), then dy as GR rows of GP floats (GR, GP
// = the output plane rounded up to the tile; zeros outside). Copies write only the cells inside
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
  int XR, XP, GR, GP;  // staged x: XR rows of XP floats; dy: GR rows of GP floats
  int plane;           // floats per staged plane (x then dy), a multiple of 4
  int S;               // planes (samples) per stage
  int strips, tiles;   // tiles per plane: GR / kPlaneWgRows rows of `strips`
  int per, chunks;     // samples per block (a multiple of S), blocks per channel
  int threads;         // whole warps covering S * tiles tiles
  int64_t smem;        // bytes: two stages
};

// The launch layout from the shapes alone; false when not covered (not one phase of a 2-D K x K
// filter at stride 1, multiplier 1, padding 0 .. K - 1, or two stages of one plane beyond max_smem
// bytes).
// tile_target: about how many tiles (threads) a stage should hold; target_blocks: blocks wanted
// in all (channels x chunks).
inline bool plane_wgrad2d_plan(PlaneWg& L, const Plan& P, int K, int tile_target, int64_t target_blocks,
                               int64_t max_smem) {
  if (P.phases != 1 || P.k[0] != 1 || P.k[1] != K || P.k[2] != K || P.S[0] != 1 || P.S[1] != 1 || P.S[2] != 1 ||
      P.in[0] != 1 || P.q[0] != 1 || P.in_div != 1 || P.out_c != P.in_c || P.N <= 0 || P.q[1] != P.out[1] ||
      P.q[2] != P.out[2] || P.q[1] <= 0 || P.q[2] <= 0)
    return false;
  const int64_t ph = P.pad[1][0], pw = P.pad[2][0];
  if (ph < 0 || pw < 0 || ph >= K || pw >= K) return false;
  const int64_t GR = ceil_div(P.q[1], kPlaneWgRows) * kPlaneWgRows, GP = ceil_div(P.q[2], kPlaneWgCols) * kPlaneWgCols;
  const int64_t XR = GR + K - 1, XP = ceil_div(GP + K - 1, 4) * 4;
  const int64_t plane = XR * XP + GR * GP;
  const int64_t tiles = (GR / kPlaneWgRows) * (GP / kPlaneWgCols);
  if (tiles > kPlaneWgMaxThreads) return false;
  // S: about tile_target tiles, at most the batch and what two stages of max_smem hold
  const int64_t S = std::min({std::max<int64_t>(1, std::min<int64_t>(tile_target, kPlaneWgMaxThreads) / tiles), P.N,
                              max_smem / (2 * plane * int64_t(sizeof(float)))});
  if (S < 1) return false;
  const int64_t smem = 2 * S * plane * int64_t(sizeof(float));
  // 32-bit plane offsets below (the batch and channel offsets are 64-bit)
  if (P.in[1] * P.in[2] > std::numeric_limits<int32_t>::max() / 2 || P.N > std::numeric_limits<int32_t>::max() / 2 ||
      P.in_c > std::numeric_limits<int32_t>::max() / 2)
    return false;
  const int64_t stages = ceil_div(P.N, S);
  const int64_t chunks0 = std::clamp<int64_t>(target_blocks / P.in_c, 1, stages);
  const int64_t per = S * ceil_div(stages, chunks0);
  L.IH = int(P.in[1]), L.IW = int(P.in[2]), L.QH = int(P.q[1]), L.QW = int(P.q[2]);
  L.ph = int(ph), L.pw = int(pw), L.C = int(P.in_c), L.N = int(P.N);
  L.XR = int(XR), L.XP = int(XP), L.GR = int(GR), L.GP = int(GP), L.plane = int(plane), L.S = int(S);
  L.strips = int(GP / kPlaneWgCols), L.tiles = int(tiles);
  L.per = int(per), L.chunks = int(ceil_div(P.N, per));
  L.threads = int(std::min<int64_t>(kPlaneWgMaxThreads, ceil_div(S * tiles, 32) * 32));
  L.smem = smem;
  return true;
}

// x[0 .. n) from shared memory into registers, 16-byte loads where n allows (p 16-byte aligned).
template <int NX>
__device__ __forceinline__ void plane_wg_row(const float* p, float (&v)[NX]) {
#pragma unroll
  for (int c = 0; c + 4 <= NX; c += 4) {
    const float4 q = *reinterpret_cast<const float4*>(p + c);
    v[c] = q.x, v[c + 1] = q.y, v[c + 2] = q.z, v[c + 3] = q.w;
  }
  if constexpr (NX % 4 >= 2) {
    const float2 q = *reinterpret_cast<const float2*>(p + NX / 4 * 4);
    v[NX / 4 * 4] = q.x, v[NX / 4 * 4 + 1] = q.y;
  }
  if constexpr (NX % 2 == 1) v[NX - 1] = p[NX - 1];
}

// part[channel][chunk][tap]: the block's sum over its samples.
template <int K>
__global__ void __launch_bounds__(kPlaneWgMaxThreads, 2)
plane_wgrad2d(const float* __restrict__ x, const float* __restrict__ gy, float* __restrict__ part, const PlaneWg L) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  float* buf = reinterpret_cast<float*>(smem_raw);
  __shared__ float red[kPlaneWgMaxThreads / 32 * K * K];
  constexpr int NV = K * K, TR = kPlaneWgRows, TC = kPlaneWgCols, NX = TC + K - 1;
  const int c = static_cast<int>(blockIdx.x / L.chunks), ck = static_cast<int>(blockIdx.x % L.chunks);
  const int n0 = ck * L.per, n1 = n0 + L.per < L.N ? n0 + L.per : L.N;
  const int stages = (n1 - n0 + L.S - 1) / L.S, stage = L.S * L.plane;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  {
    float4* b4 = reinterpret_cast<float4*>(buf);
    for (int i = threadIdx.x; i < stage / 2; i += blockDim.x) b4[i] = float4{0.f, 0.f, 0.f, 0.f};
  }
  __syncthreads();  // the zeros land before any copy into the same cells
  const int64_t in_plane = int64_t(L.IH) * L.IW, out_plane = int64_t(L.QH) * L.QW;
  const int xrows = L.IH < L.XR - L.ph ? L.IH : L.XR - L.ph, xcols = L.IW < L.XP - L.pw ? L.IW : L.XP - L.pw;
  // stage st's samples into buffer st & 1: rows over the warps, a row's columns over the lanes
  auto load = [&](int st) {
    float* sb = buf + (st & 1) * stage;
    const int nb = n0 + st * L.S, ns = n1 - nb < L.S ? n1 - nb : L.S;
    for (int r = warp; r < ns * xrows; r += warps) {
      const int s = r / xrows, iy = r - s * xrows;
      const float* src = x + (int64_t(nb + s) * L.C + c) * in_plane + int64_t(iy) * L.IW;
      float* dst = sb + s * L.plane + (iy + L.ph) * L.XP + L.pw;
      for (int j = lane; j < xcols; j += 32) cp_async_n(dst + j, src + j, 4);
    }
    for (int r = warp; r < ns * L.QH; r += warps) {
      const int s = r / L.QH, qy = r - s * L.QH;
      const float* src = gy + (int64_t(nb + s) * L.C + c) * out_plane + int64_t(qy) * L.QW;
      float* dst = sb + s * L.plane + L.XR * L.XP + qy * L.GP;
      for (int j = lane; j < L.QW; j += 32) cp_async_n(dst + j, src + j, 4);
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
      const float* sb = buf + (st & 1) * stage;
      float g[TR][TC];
#pragma unroll
      for (int q = 0; q < TR; ++q) plane_wg_row<TC>(sb + go + q * L.GP, g[q]);
#pragma unroll
      for (int i = 0; i < TR + K - 1; ++i) {
        float xv[NX];
        plane_wg_row<NX>(sb + xo + i * L.XP, xv);
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
    __syncthreads();  // buffer st & 1 is read before stage st + 2 overwrites it
  }
  wgrad_block_sum<NV>(v, red, part + (int64_t(c) * L.chunks + ck) * NV);
}

}  // namespace convx::cuda
