// Tensor-core channels-last (NHWC) 2-D depthwise correlation for fp16 / bf16: KH x KW filters
// (KW <= 9) at stride 1, multiplier 1, one phase -- the forward and the stride-1 data-grad (the
// forward with the filter rotated 180 degrees). ConvNeXt's 7 x 7.
//
// Why: 49 fp32 FMAs per 16-bit output keep the CUDA-core kernels (cl_ring, walk2d) issue-bound
// at 23% of copy bandwidth on ConvNeXt 56 x 56 (H100). tc_rows_nc.cuh runs the same sum on
// m16n8k16 MMAs for NCHW: per channel and filter row kh a Toeplitz product, M = 16 output rows,
// N = 8 consecutive outputs along W, K = a window of 16 inputs of the input row:
//     D[m][n] += sum_j  X[h0 + m + kh - padH][w0 - padW + j] * Tw[kh][j][n],  Tw[kh][j][n] = w[kh][j - n]
// (0 off the filter; j - n < KW <= 9 keeps j < 16). An MMA needs 16 rows of one channel, which
// NHWC interleaves with the other channels; here they are transposed through shared memory:
//
// A block owns 8 channels (one 16-byte vector per pixel) x a chunk of up to 8 blocks of 8 output
// columns (a warp each) and walks a run of (sample, 16-row h-tile) steps. A step's brick (16 +
// KH - 1 input rows x 8 (warps + 1) columns x 8 channels) lands by 16-byte cp.async (zero-filled
// outside the image, no registers held; the next brick(s) in flight while this one computes) in
// a raw [row][column][8 channels] area; ldmatrix.trans then turns each 8 pixels x 8 channels
// matrix into per-lane words of one channel (lane (g, t): channel g, pixels 2t, 2t + 1), stored
// into 8 channel planes [row][column] (rows an odd number of 16-byte units apart, planes 4 words
// mod 8 apart: the stores and the A fragments' ldmatrix are conflict-free). Each warp then runs,
// per channel e and filter row kh, one ldmatrix.x4 (A: plane e's rows kh ... kh + 15 at its
// window) and one MMA with channel e's Toeplitz B fragment (built once per block in shared
// memory), so a lane ends with the 8 channels' sums at its 4 pixels: packed (bias added) into
// 16-byte NHWC vectors and stored directly. fp32 accumulation, products exact, as tc_rows_nc.
// H100 (session 13): ConvNeXt-56 fp16 / bf16 0.082 ms against cl_ring's 0.109 (31% of copy
// bandwidth), ConvNeXt-14 0.033 against walk2d's 0.053; latency-bound at 2 blocks per SM (126
// registers, 86 KB of shared memory on 56-wide rows) with barriers between a step's phases
// (docs/performance.md, "Session 13: tc7c").
#pragma once

#include "ops/depthwise_conv/cuda/tc_row1d.cuh"

#include <algorithm>
#include <cstdint>

namespace convx::cuda {

constexpr int kTcCl2dMaxWarps = 8;
constexpr int kTcCl2dRows = 16;  // output rows per step (the MMA's M)

struct TcCl2d {
  uint32_t blocks, cgroups, chunks;  // blocks = runs * chunks * cgroups (channel group fastest)
  int N, H, W, OH, OW, C, padH, padW, kw;
  int nw, vw, prow, pw;  // warps per chunk; staged columns; words per plane row; words per plane
  int htiles, per;       // 16-row tiles per plane; steps per run (a step: one sample's h-tile)
  int stages;            // raw bricks in the ring (1-3)
  int flip;              // data-grad: the filter rotated 180 degrees
};

struct alignas(8) TcCl2dPair {  // one lane's B fragment
  uint32_t x, y;
};

template <int KH>
__host__ __device__ constexpr int tc_cl2d_brick_rows() {
  return kTcCl2dRows + KH - 1;
}
// Shared memory: B fragments [8 channels][KH][32 lanes], the block's filter (16-bit, <= 9 wide),
// 8 channel planes, the raw bricks.
template <int KH>
__host__ __device__ constexpr int tc_cl2d_head_bytes() {
  return 8 * KH * 32 * 8 + (8 * KH * 9 * 2 + 15) / 16 * 16;
}
template <int KH>
inline int64_t tc_cl2d_smem_bytes(const TcCl2d& L) {
  return tc_cl2d_head_bytes<KH>() + int64_t(8) * L.pw * 4 + int64_t(L.stages) * tc_cl2d_brick_rows<KH>() * L.vw * 16;
}

// in: [N][H][W][C]; out: [N][OH][OW][C]; w: [C][KH][kw] (the layer's filter); bias: C or null.
// 16-byte aligned tensors, C a multiple of 8. 126 registers, no spill (sm_90): 2 blocks per SM,
// which the shared memory of 56-wide rows allows anyway; __launch_bounds__(256, 3) (80
// registers, 124 bytes spilled) was slower on the H100 (ConvNeXt-56 fp16 forward 0.109 against
// 0.089 ms at the same tiles, bench/results/h100/session13/tc7c_call2_ab.log).
template <typename T, int KH>
__global__ void __launch_bounds__(32 * kTcCl2dMaxWarps, 2)
tc_cl2d(const T* __restrict__ in, const T* __restrict__ w, const T* __restrict__ bias, T* __restrict__ out,
        const TcCl2d L) {
  static_assert(sizeof(T) == 2, "tc_cl2d: fp16 / bf16");
  constexpr int BR = tc_cl2d_brick_rows<KH>();
  extern __shared__ __align__(16) unsigned char smem_raw[];
  TcCl2dPair* const btab = reinterpret_cast<TcCl2dPair*>(smem_raw);
  uint16_t* const fs = reinterpret_cast<uint16_t*>(smem_raw + 8 * KH * 32 * 8);
  uint32_t* const planes = reinterpret_cast<uint32_t*>(smem_raw + tc_cl2d_head_bytes<KH>());
  TcVec* const raw = reinterpret_cast<TcVec*>(planes + 8 * L.pw);
  const int tid = static_cast<int>(threadIdx.x), nthr = static_cast<int>(blockDim.x);
  const int lane = tid % 32, warp = tid / 32, g = lane / 4, t = lane % 4;

  uint32_t b = blockIdx.x;
  const int c0 = static_cast<int>(b % L.cgroups) * 8;
  b /= L.cgroups;
  const int ck = static_cast<int>(b % L.chunks);
  const int64_t run = b / L.chunks;
  const int64_t s0 = run * L.per;
  const int nsteps = static_cast<int>(std::min<int64_t>(L.per, int64_t(L.N) * L.htiles - s0));
  const int ob = 8 * L.nw * ck, ic0 = ob - L.padW;  // the chunk's first output column, its window's first input column
  const int units = BR * L.vw;

  // Brick of step i (raw slot i % stages): rows 16 ht - padH + r, columns ic0 + x; one commit
  // per call (empty past the run), so that group j is always the j-th commit.
  // Index math without divisions in the loops (the first H100 version, with them, was
  // issue-bound on them: 0.111 ms against 0.082 now, tc7c_call1_ab.log / tc7c_call2_ab.log): a
  // thread's brick units tid, tid + nthr, ... as (row, column) stepped by (dr, dx).
  const int r_tid = tid / L.vw, x_tid = tid % L.vw, dr = nthr / L.vw, dx = nthr % L.vw;
  auto issue = [&](int i) {
    if (i < nsteps) {
      const int64_t s = s0 + i;
      const int64_t n = s / L.htiles;
      const int ih0 = static_cast<int>(s % L.htiles) * kTcCl2dRows - L.padH;
      TcVec* const dst = raw + (i % L.stages) * units;
      const T* const img = in + n * L.H * L.W * L.C + c0;
      int r = r_tid, x = x_tid;
      for (int v = tid; v < units; v += nthr) {
        const int ih = ih0 + r, ic = ic0 + x;
        const bool ok = ih >= 0 && ih < L.H && ic >= 0 && ic < L.W;
        cp_async16(dst + v, ok ? img + (int64_t(ih) * L.W + ic) * L.C : in, ok ? 16 : 0);
        r += dr, x += dx;
        if (x >= L.vw) x -= L.vw, ++r;
      }
    }
    cp_async_commit();
  };
  const int first = L.stages == 1 ? 1 : L.stages - 1;
  for (int i = 0; i < first; ++i) issue(i);

  // The 8 channels' filters (rotated for the data-grad), then their B fragments, while the
  // first bricks are in flight.
  const int taps = KH * L.kw;
  for (int e = tid; e < 8 * taps; e += nthr) {
    const int ch = e / taps, tap = e % taps;
    fs[e] = tc_bits(w[int64_t(c0 + ch) * taps + (L.flip ? taps - 1 - tap : tap)]);
  }
  __syncthreads();
  for (int e = tid; e < 8 * KH * 32; e += nthr) {
    const int l = e % 32, r = e / 32;  // r = channel * KH + kh
    uint32_t v[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int tap = 2 * (l % 4) + 8 * h - l / 4;  // Tw[j][n], j = 2 t + 8 h (and j + 1), n = g
      const uint32_t lo = tap >= 0 && tap < L.kw ? fs[r * L.kw + tap] : 0u;
      const uint32_t hi = tap + 1 >= 0 && tap + 1 < L.kw ? fs[r * L.kw + tap + 1] : 0u;
      v[h] = lo | (hi << 16);
    }
    btab[e] = TcCl2dPair{v[0], v[1]};
  }
  float bv[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) bv[e] = bias ? static_cast<float>(bias[c0 + e]) : 0.f;

  // Transposition: matrices of 8 pixels (a row's columns 8 q ... 8 q + 7) x 8 channels, four per
  // ldmatrix.x4.trans; every warp makes the same number of calls (the CPU harness's shim needs
  // block-uniform calls), clamping past the last matrix and storing nothing there. Matrix m is
  // (row m / q8s, q = m % q8s); a round moves m by 4 nw = (dq rows, dm).
  const int q8s = L.vw / 8, mats = BR * q8s, rounds = (mats + 4 * L.nw - 1) / (4 * L.nw);
  const int dq = 4 * L.nw / q8s, dm = 4 * L.nw % q8s;
  const int mq0 = 4 * warp + lane / 8, ms0 = 4 * warp;  // this lane's first loaded / stored matrices
  // This lane's ldmatrix word offset in a plane: row lane % 8 + 8 (lane / 8 % 2), columns of its warp's window.
  const int aoff = (lane % 8 + 8 * (lane / 8 % 2)) * L.prow + 4 * warp + 4 * (lane / 16);

  for (int i = 0; i < nsteps; ++i) {
    if (L.stages == 3) {
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();  // brick i is in; the previous step's plane reads are done
    if (L.stages > 1) issue(i + L.stages - 1);  // into the slot transposed in step i - 1
    {
      const TcVec* const src = raw + (i % L.stages) * units;
      int lr = mq0 / q8s, lq = mq0 % q8s, sr = ms0 / q8s, sq = ms0 % q8s;
      for (int k = 0, m0 = ms0; k < rounds; ++k, m0 += 4 * L.nw) {
        const bool in_l = m0 + lane / 8 < mats;
        uint32_t a[4];
        tc_ldsm_x4_trans(a, reinterpret_cast<const uint32_t*>(src + (in_l ? lr * L.vw + lq * 8 : 0) + lane % 8));
        int r = sr, q = sq;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          if (m0 + j < mats) planes[g * L.pw + r * L.prow + q * 4 + t] = a[j];
          if (++q == q8s) q = 0, ++r;
        }
        lr += dq, lq += dm;
        if (lq >= q8s) lq -= q8s, ++lr;
        sr += dq, sq += dm;
        if (sq >= q8s) sq -= q8s, ++sr;
      }
    }
    __syncthreads();  // the planes are complete; the raw slot is free
    if (L.stages == 1) issue(i + 1);

    float acc[8][4];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[e][q] = 0.f;
    }
#pragma unroll
    for (int kh = 0; kh < KH; ++kh) {
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        uint32_t a[4];
        tc_ldsm_x4(a, planes + e * L.pw + kh * L.prow + aoff);
        const TcCl2dPair bp = btab[(e * KH + kh) * 32 + lane];
        const uint32_t bf[2] = {bp.x, bp.y};
        mma16816<T>(acc[e], a, bf);
      }
    }
    const int64_t s = s0 + i;
    const int64_t n = s / L.htiles;
    const int oh0 = static_cast<int>(s % L.htiles) * kTcCl2dRows;
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int oh = oh0 + g + 8 * hh;
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        const int oc = ob + 8 * warp + 2 * t + k;
        if (oh < L.OH && oc < L.OW) {
          TcVec v;
#pragma unroll
          for (int j = 0; j < 4; ++j)
            v.v[j] = pack16x2<T>(static_cast<T>(acc[2 * j][2 * hh + k] + bv[2 * j]),
                                 static_cast<T>(acc[2 * j + 1][2 * hh + k] + bv[2 * j + 1]));
          *reinterpret_cast<TcVec*>(out + ((n * L.OH + oh) * L.OW + oc) * L.C + c0) = v;
        }
      }
    }
  }
  cp_async_wait<0>();  // no copy outlives the block (the last groups are empty)
}

// One phase at stride 1, multiplier 1, a 2-D KH x kw filter (kw <= 9), channels a multiple of 8
// (below 2^24), sizes below 2^30; `stages` raw bricks in flight; `target`: blocks wanted (runs of
// steps are cut to reach it). false when not covered.
template <int KH>
inline bool tc_cl2d_plan(TcCl2d& L, const Plan& P, bool flip, int stages, int64_t target) {
  constexpr int64_t lim = int64_t(1) << 30;
  if (P.phases != 1 || P.J != 1 || P.in_div != 1 || P.in_c != P.out_c || P.out_c % 8 != 0 ||
      P.out_c >= (int64_t(1) << 24) || P.k[0] != 1 || P.in[0] != 1 || P.out[0] != 1 || P.k[1] != KH ||
      P.k[2] < 1 || P.k[2] > 9 || P.S[1] != 1 || P.S[2] != 1 || stages < 1 || stages > 3)
    return false;
  for (int d = 1; d < 3; ++d) {
    if (P.in[d] >= lim || P.out[d] >= lim || P.out[d] <= 0 || P.pad[d][0] <= -(1 << 20) || P.pad[d][0] >= (1 << 20))
      return false;
  }
  const int64_t nb = ceil_div(P.out[2], 8), chunks = ceil_div(nb, kTcCl2dMaxWarps);
  L.nw = static_cast<int>(ceil_div(nb, chunks));
  L.vw = 8 * L.nw + 8;
  // Plane rows an odd number of 16-byte units apart (the 8 rows of an ldmatrix in 8 bank groups);
  // planes 4 words mod 8 apart (the 8 channels of a transposition store in 8 bank groups).
  L.prow = 4 * ((L.vw / 8) | 1);
  L.pw = (tc_cl2d_brick_rows<KH>() * L.prow + 7) / 8 * 8 + 4;
  L.N = static_cast<int>(std::min<int64_t>(P.N, lim));
  L.H = static_cast<int>(P.in[1]), L.W = static_cast<int>(P.in[2]);
  L.OH = static_cast<int>(P.out[1]), L.OW = static_cast<int>(P.out[2]);
  L.C = static_cast<int>(P.out_c);
  L.padH = P.pad[1][0], L.padW = P.pad[2][0];
  L.kw = P.k[2];
  L.stages = stages;
  L.flip = flip ? 1 : 0;
  L.htiles = static_cast<int>(ceil_div(P.out[1], kTcCl2dRows));
  const int64_t cgroups = P.out_c / 8, others = cgroups * chunks, total = P.N * L.htiles;
  const int64_t runs_wanted = std::clamp<int64_t>(ceil_div(target, others), 1, std::max<int64_t>(total, 1));
  const int64_t per = ceil_div(total, runs_wanted), runs = ceil_div(total, per);
  const int64_t blocks = runs * others;
  if (P.N <= 0 || P.N >= lim || per >= lim || blocks <= 0 || blocks >= (int64_t(1) << 31)) return false;
  L.per = static_cast<int>(per);
  L.cgroups = static_cast<uint32_t>(cgroups);
  L.chunks = static_cast<uint32_t>(chunks);
  L.blocks = static_cast<uint32_t>(blocks);
  return true;
}

}  // namespace convx::cuda
