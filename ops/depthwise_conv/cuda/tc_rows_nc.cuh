// Tensor-core 2-D / 3-D depthwise correlation for fp16 / bf16 (and fp32 as TF32, see below) in
// NCHW / NCDHW (forward and the stride-1 data-grad, which is the forward with the filter
// rotated), channel multiplier 1, stride 1, one kernel family over the spatial rank (2-D is the
// 3-D case with one plane and a filter one plane deep).
//
// Why: the CUDA-core kernels spend KD*KH*KW fp32 FMAs per 16-bit output (45 for X3D's 5x3x3) and
// stay instruction-bound far below the copy bandwidth. A correlation at stride 1 is a sum over
// the filter's KD*KH rows of 1-D Toeplitz products along W, which tc_row1d.cuh runs on
// m16n8k16 MMAs (mma16.cuh: products exact, sums fp32). Here the MMA's M is 16 output rows
// (consecutive h of one plane), its N a block of 8 consecutive outputs along W, its K a window
// of 16 (KS k-steps: 16 KS) inputs of the input row: for filter row (kd, kh) and block b
//     D[m][n] += sum_j  X[id][h0 + m + kh - padH][wb + j] * Tw[kd][kh][j][n],
//     Tw[j][n] = w[kd][kh][j - n - sh] (0 off the filter),
// wb = the block's window start, 16-byte aligned in the staged brick, sh = the block's output
// start minus padW minus wb, in [0, 16 KS - 7 - KW] (chosen to waste the fewest blocks). One
// MMA covers 128 outputs and, for KW <= 9, one filter row (an eighth to a half of its
// products are taps). Measured on the H100 (session 10, docs/performance.md) this is issue-bound,
// not memory-bound: X3D 0.711 ms against the CUDA-core kernel's 0.743, so the launcher takes only
// the filters where it measured faster.
// The A fragment (16 rows, one window each) is one ldmatrix.x4 over 16 consecutive staged
// rows; the staged rows are an odd number of 16-byte units apart, so each 8x8 matrix's rows sit
// in 8 different bank groups.
//
// Depth (3-D, KD > 1): a block walks the input planes of its output depths once: plane id feeds
// output planes id + padD - kd for every kd, so each A fragment serves KD MMAs into KD rolling
// accumulators (the loop is unrolled by KD so the slots are registers), and output plane od is
// stored once its last input plane (od - padD + KD - 1) is done. With KD = 1 (2-D, or 1 x KH x
// KW 3-D filters) a block walks h-tiles of one plane instead, MT M-tiles (16 MT output rows) per
// step: each B fragment then feeds MT MMAs and the brick's KH - 1 halo rows serve 16 MT outputs
// (fp32 31x31 takes MT = 2: 0.506 ms against 0.620 with MT = 1, H100, k31tf_call2_ab.log).
//
// Staging: the brick of a step (16 MT + KH - 1 input rows x the chunk's windows) goes to shared
// memory by cp.async in vectors as wide as the rows' alignment allows (16, 8, 4 bytes; single
// elements for odd widths), tcn_stages bricks in flight (the next steps load while this one
// computes); zeros where rows / columns fall off the input. A block walks several samples of
// its channel one after another (columns), so the B fragments are built once per block.
//
// fp32 (TF32, only where torch.backends.cudnn.allow_tf32 allows it): the same with m16n8k8 MMAs
// (K = 8 inputs per k-step: 31 taps take 5 k-steps, against 3 of 16 for 16-bit), values
// rounded to TF32 (round to nearest) as the filter is read and as each brick lands, so that
// the products are of rounded, not truncated, operands (the tensor core drops the low mantissa
// bits: error 5.1e-4 of the output scale instead of 3.0e-4 on RepLKNet's row, for 7% of the
// time, 0.472 against 0.506 ms, k31tf_call2_ab.log); fp32 accumulation as for 16-bit.
// Channels-last fp32 (session 12, instantiation CL): the same bricks of one channel, staged by
// one 4-byte cp.async per value at a stride of C elements and stored one value at a time; blocks
// numbered channel-fastest, so that the blocks of the 8 channels sharing each 32-byte sector run
// together and L2 serves the sector to all of them (RepLKNet NHWC 0.855 ms against the exact
// cl_gather's 1.109, H100, bench/results/h100/session12/clk_call2_ab.log; NCHW: 0.50).
//
// Weights: the layer's own filter (no prepared copy): the block copies its channel's
// filter (rotated for the data-grad) to shared memory and builds the B fragments of every
// (kd, kh, k-step) there, kept in registers when few enough (KD KH KS <= 16), else read per MMA.
#pragma once

#include "ops/depthwise_conv/cuda/tc_row1d.cuh"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace convx::cuda {

constexpr int kTcnRows = 16;   // output rows per M-tile
constexpr int kTcnMaxWarps = 8;

// What differs between the 16-bit kernel and the fp32 (TF32) one: a staged value's bits
// (TcnBits), the MMA's K (16 / 8 inputs: m16n8k16 / m16n8k8), values per 16 bytes, and the ring's
// depth: 6 bricks (5 loading while one computes) for 16-bit; for fp32, whose bricks are twice as
// large, 3 (MT = 1) or 2 (MT = 2: 31x31 on 56-wide rows, 2 x 22.8 KB ring + 39.7 KB B table +
// 3.8 KB filter = 89 KB, two blocks per SM; a deeper ring would leave one).
template <typename T>
using TcnBits = std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>;
template <typename T>
__host__ __device__ constexpr int tcn_k() { return sizeof(T) == 2 ? 16 : 8; }
template <typename T>
__host__ __device__ constexpr int tcn_vec16() { return 16 / static_cast<int>(sizeof(T)); }
template <typename T, int MT>
__host__ __device__ constexpr int tcn_stages() { return sizeof(T) == 2 ? 6 : MT == 1 ? 3 : 2; }
// A value's bits as staged and fed to the MMA: 16-bit as stored, fp32 rounded to TF32.
template <typename T>
__device__ __forceinline__ TcnBits<T> tcn_bits(T v) {
  TcnBits<T> b;
  std::memcpy(&b, &v, sizeof(T));
  if constexpr (sizeof(T) == 4) b = tf32_round(b);
  return b;
}
template <typename T>
__device__ __forceinline__ void tcn_mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  if constexpr (sizeof(T) == 2) mma16816<T>(d, a, b);
  else mma1688_tf32(d, a, b);
}

struct TcRowsNc {
  uint32_t items;           // blocks = C * na * nb * chunks * ngroups
  uint32_t na, nb, chunks, ngroups;  // KD > 1: na depth segments, nb h-tiles; KD == 1: na planes, nb h-segments
  int N, nper;              // samples; samples (columns) per block
  int D, H, W;              // input spatial sizes (D = 1 for 2-D)
  int OD, OH, OW;           // output spatial sizes
  int padD, padH;
  int wi0, ob0, sh;         // chunk 0: staged column 0 is input column wi0, its first block's outputs start at ob0
  int nw, pitch, vw;        // warps (blocks of 8 outputs) per chunk, staged row pitch and width (values)
  int kw, seg, C;           // filter width; output planes (KD > 1) or h-tiles (KD == 1) per segment; channels
  int vec;                  // staging vector in elements: 16 bytes' worth or a half, quarter, ... down to 1
  int flip;                 // data-grad: the filter rotated 180 degrees
  int sw;                   // elements between neighbours along W: 1 (NC*), C (channels-last, fp32 only)
};

struct alignas(8) TcnPair {  // one lane's B fragment (two registers)
  uint32_t x, y;
};

template <int KD, int KH, int KS>
__host__ __device__ constexpr int tcn_frags() {
  return KD * KH * KS;
}
__host__ __device__ constexpr int tcn_brick_rows(int KH, int MT) { return kTcnRows * MT + KH - 1; }
// Shared memory: B fragments (two words per lane), the channel's filter (staged bits, 16-byte
// rounded), the ring of bricks.
template <typename T, int KD, int KH, int KS>
__host__ __device__ constexpr int tcn_filter_bytes(int kw) {
  return (KD * KH * kw * int(sizeof(T)) + 15) / 16 * 16;
}
template <typename T, int KD, int KH, int KS, int MT = 1>
__host__ __device__ constexpr int tcn_smem_bytes(int kw, int pitch) {
  return 8 * 32 * tcn_frags<KD, KH, KS>() + tcn_filter_bytes<T, KD, KH, KS>(kw) +
         tcn_stages<T, MT>() * tcn_brick_rows(KH, MT) * pitch * int(sizeof(T));
}


// in: [N][C][D][H][W]; out: [N][C][OD][OH][OW]; w: [C][KD][KH][kw] (the layer's filter); bias: C or null.
// 3 blocks per SM for 3-D (80 registers, 16 bytes spilled: X3D 0.711 ms against 0.847 with 124
// registers and 2 blocks, H100, tcnc_req2_bench.log); 4 for 2-D (at most 64 registers, no spill);
// 2 for fp32, which shared memory limits to 2 anyway (78 registers at MT = 2, 84 channels-last,
// no spill).
// CL: channels-last tensors (fp32 only; L.sw = C), a separate instantiation so that the NC* ones
// compile to the code they had before.
template <typename T, int KD, int KH, int KS, int MT = 1, bool CL = false>
__global__ void __launch_bounds__(32 * kTcnMaxWarps, KD > 1 ? 3 : sizeof(T) == 4 ? 2 : 4)
tc_rows_nc(const T* __restrict__ in, const T* __restrict__ w, const T* __restrict__ bias, T* __restrict__ out,
           const TcRowsNc L) {
  using Bits = TcnBits<T>;
  static_assert(MT == 1 || KD == 1, "tc_rows_nc: several M-tiles per step for 2-D walks only");
  constexpr int F = tcn_frags<KD, KH, KS>(), BR = tcn_brick_rows(KH, MT), KK = tcn_k<T>(), STAGES = tcn_stages<T, MT>();
  constexpr int ROWS = kTcnRows * MT;  // output rows per step
  constexpr bool kBReg = F <= 16;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  TcnPair* const btab = reinterpret_cast<TcnPair*>(smem_raw);  // [F][32]
  Bits* const fs = reinterpret_cast<Bits*>(smem_raw + 8 * 32 * F);
  Bits* const ring = reinterpret_cast<Bits*>(smem_raw + 8 * 32 * F + tcn_filter_bytes<T, KD, KH, KS>(L.kw));
  const int tid = static_cast<int>(threadIdx.x), nthr = static_cast<int>(blockDim.x);
  const int lane = tid % 32, warp = tid / 32, g = lane / 4, t = lane % 4;

  // Block: channel c, chunk ck, (KD > 1) depth segment ia and h-tile ib or (KD == 1) plane ia
  // and h-segment ib, samples [n0, n1) -- its columns, walked one after another.
  // Channels-last: the channel fastest, so that the blocks of neighbouring channels, which read
  // and write the same 32-byte sectors, run together.
  static_assert(!CL || sizeof(T) == 4, "tc_rows_nc: channels-last for fp32 only");
  const int sw = CL ? L.sw : 1;
  uint32_t item = blockIdx.x;
  int c = 0;
  if (sw != 1) c = static_cast<int>(item % uint32_t(L.C)), item /= uint32_t(L.C);
  const int ng = static_cast<int>(item % L.ngroups);
  item /= L.ngroups;
  const int ck = static_cast<int>(item % L.chunks);
  item /= L.chunks;
  const int ib = static_cast<int>(item % L.nb);
  item /= L.nb;
  const int ia = static_cast<int>(item % L.na);
  if (sw == 1) c = static_cast<int>(item / L.na);
  const int n0 = ng * L.nper, ncols = std::min(L.nper, L.N - n0);

  // The channel's filter, rotated for the data-grad, then its B fragments.
  const int ftaps = KD * KH * L.kw;
  for (int e = tid; e < ftaps; e += nthr) {
    const int src = L.flip ? ftaps - 1 - e : e;
    fs[e] = tcn_bits(w[int64_t(c) * ftaps + src]);
  }
  __syncthreads();
  for (int e = tid; e < F * 32; e += nthr) {
    const int f = e / 32, l = e % 32, s = f % KS, r = f / KS;  // r = kd * KH + kh
    const int gg = l / 4, tt = l % 4;
    uint32_t v[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if constexpr (sizeof(T) == 2) {
        const int tap = 16 * s + 2 * tt + 8 * h - gg - L.sh;  // Tw[j][n], j = 16 s + 2 t + 8 h (and j + 1), n = g
        const uint32_t lo = tap >= 0 && tap < L.kw ? fs[r * L.kw + tap] : 0u;
        const uint32_t hi = tap + 1 >= 0 && tap + 1 < L.kw ? fs[r * L.kw + tap + 1] : 0u;
        v[h] = lo | (hi << 16);
      } else {
        const int tap = 8 * s + tt + 4 * h - gg - L.sh;  // Tw[j][n], j = 8 s + t + 4 h, n = g
        v[h] = tap >= 0 && tap < L.kw ? fs[r * L.kw + tap] : 0u;
      }
    }
    btab[e] = TcnPair{v[0], v[1]};
  }
  __syncthreads();
  TcnPair bf[kBReg ? F : 1];
#pragma unroll
  for (int f = 0; f < (kBReg ? F : 1); ++f) bf[f] = btab[f * 32 + lane];
  const float b0 = bias ? static_cast<float>(bias[c]) : 0.f;

  // Steps of a column: KD > 1: input planes od0 - padD + i, i < nl + KD - 1 (rounded up to a
  // multiple of KD: the extra steps only store), of h-tile ib; KD == 1: h-tiles ht0 + i of plane ia.
  int spc, nreal, od0 = 0, od1 = 1, ht0;
  if constexpr (KD > 1) {
    od0 = ia * L.seg;
    od1 = std::min(od0 + L.seg, L.OD);
    nreal = od1 - od0 + KD - 1;
    spc = (nreal + KD - 1) / KD * KD;
    ht0 = ib;
  } else {
    ht0 = ib * L.seg;
    nreal = spc = std::min(L.seg, (L.OH + ROWS - 1) / ROWS - ht0);
  }
  const int nsteps = ncols * spc;
  const int64_t plane_in = int64_t(L.H) * L.W, plane_out = int64_t(L.OH) * L.OW;
  const int wic = L.wi0 + 8 * L.nw * ck;  // staged column 0 of this chunk
  // This thread's share of a brick: column units cu0 + k cs (units of vec values), rows
  // j0 + k rs; threads past cs * rs stage nothing.
  const int upr = L.vw / L.vec, cs = std::min(upr, nthr), rs = nthr / cs;
  const int cu0 = tid % cs, j0 = tid / cs < rs ? tid / cs : BR;

  // Staging cursor: column scol, step si (the step gi = scol * spc + si).
  int scol = 0, si = 0, sgi = 0;
  auto stage_next = [&] {
    const int id = KD > 1 ? od0 - L.padD + si : ia - L.padD;
    if (si < nreal && id >= 0 && id < L.D) {
      Bits* const dst = ring + (sgi % STAGES) * BR * L.pitch;
      const int hb = ROWS * (KD > 1 ? ht0 : ht0 + si) - L.padH;
      const int64_t n = n0 + scol;
      const T* const src = in + (sw == 1 ? ((n * L.C + c) * L.D + id) * plane_in : (n * L.D + id) * plane_in * L.C + c);
      for (int j = j0; j < BR; j += rs) {
        const int ih = hb + j;
        const bool row_in = ih >= 0 && ih < L.H;
        const T* const srow = src + int64_t(ih) * L.W * sw;
        for (int cu = cu0; cu < upr; cu += cs) {
          const int v = cu * L.vec, iw = wic + v;
          Bits* const d = dst + j * L.pitch + v;
          // vectors; channels-last fp32 one 4-byte copy per value (L.vec = 1)
          if (row_in && iw >= 0 && iw + L.vec <= L.W && (L.vec > 1 || sw != 1)) {
            cp_async_n(d, srow + int64_t(iw) * sw, int(sizeof(T)) * L.vec);
          } else {
            for (int e = 0; e < L.vec; ++e)
              d[e] = row_in && iw + e >= 0 && iw + e < L.W ? tcn_bits(srow[int64_t(iw + e) * sw]) : Bits(0);
          }
        }
      }
    }
    ++sgi;
    if (++si == spc) si = 0, ++scol;
  };

  // fp32: the values this thread copied into brick gi (its own cp.async copies, complete after
  // its wait) rounded to TF32 in place before the barrier publishes them; the tensor core would
  // otherwise drop their low mantissa bits. Element-wise copies were rounded when written.
  auto round_own = [&](int gi) {
    const int i = gi % spc, id = KD > 1 ? od0 - L.padD + i : ia - L.padD;
    if (i >= nreal || id < 0 || id >= L.D) return;  // nothing was staged for this step
    const int hb = ROWS * (KD > 1 ? ht0 : ht0 + i) - L.padH;
    Bits* const dst = ring + (gi % STAGES) * BR * L.pitch;
    for (int j = j0; j < BR; j += rs) {
      const int ih = hb + j;
      if (ih < 0 || ih >= L.H) continue;
      for (int cu = cu0; cu < upr; cu += cs) {
        const int v = cu * L.vec, iw = wic + v;
        if (iw < 0 || iw + L.vec > L.W || (L.vec == 1 && sw == 1)) continue;
        Bits* const d = dst + j * L.pitch + v;
        if (L.vec == 4) {  // 16 bytes: one shared load and store
          uint4 q = *reinterpret_cast<const uint4*>(d);
          q = make_uint4(tf32_round(q.x), tf32_round(q.y), tf32_round(q.z), tf32_round(q.w));
          *reinterpret_cast<uint4*>(d) = q;
        } else {
          for (int e = 0; e < L.vec; ++e) d[e] = tf32_round(d[e]);
        }
      }
    }
  };

  // This lane's ldmatrix offset (values) in a brick: row lane % 8 + 8 (lane / 8 % 2), 16 bytes
  // times lane / 16 into the warp's block.
  const int aoff = (lane % 8 + 8 * (lane / 8 % 2)) * L.pitch + 8 * warp + tcn_vec16<T>() * (lane / 16);
  const int oc = L.ob0 + 8 * (L.nw * ck + warp) + 2 * t;  // this lane's first output column
  const bool oc0 = oc >= 0 && oc < L.OW, oc1 = oc + 1 >= 0 && oc + 1 < L.OW;
  auto store = [&](const float (&acc)[4], int n, int od, int oh0) {
    T* const prow = out + (sw == 1 ? ((int64_t(n) * L.C + c) * L.OD + od) * plane_out + oc
                                     : ((int64_t(n) * L.OD + od) * plane_out + oc) * L.C + c);
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int oh = oh0 + g + 8 * hh;
      if (oh >= L.OH) continue;
      T* const p = prow + int64_t(oh) * L.OW * sw;
      const T v0 = static_cast<T>(acc[2 * hh] + b0), v1 = static_cast<T>(acc[2 * hh + 1] + b0);
      if (sw == 1 && oc0 && oc1 && reinterpret_cast<uintptr_t>(p) % (2 * sizeof(T)) == 0) {
        if constexpr (sizeof(T) == 2) *reinterpret_cast<uint32_t*>(p) = pack16x2<T>(v0, v1);
        else *reinterpret_cast<float2*>(p) = make_float2(v0, v1);
      } else {
        if (oc0) p[0] = v0;
        if (oc1) p[sw] = v1;
      }
    }
  };

  for (int k = 0; k < STAGES - 1; ++k) {
    if (k < nsteps) stage_next();
    cp_async_commit();
  }
  float acc[KD * MT][4] = {};
  int col = 0;
  for (int gi0 = 0; gi0 < nsteps; gi0 += spc, ++col) {
    for (int i0 = 0; i0 < spc; i0 += KD) {
#pragma unroll
      for (int jj = 0; jj < KD; ++jj) {
        const int i = i0 + jj, gi = gi0 + i;
        cp_async_wait<STAGES - 2>();
        if constexpr (sizeof(T) == 4) round_own(gi);
        __syncthreads();  // brick gi is in; every warp is done with brick gi - 1, whose slot is refilled next
        if (gi + STAGES - 1 < nsteps) stage_next();
        cp_async_commit();
        const int id = KD > 1 ? od0 - L.padD + i : ia - L.padD;
        if (i < nreal && id >= 0 && id < L.D) {  // block-uniform
          const Bits* const brick = ring + (gi % STAGES) * BR * L.pitch + aoff;
          if constexpr (kBReg) {
#pragma unroll
            for (int kh = 0; kh < KH; ++kh) {
#pragma unroll
              for (int s = 0; s < KS; ++s) {
                uint32_t a[4];
                tc_ldsm_x4(a, reinterpret_cast<const uint32_t*>(brick + kh * L.pitch + KK * s));
#pragma unroll
                for (int kd = 0; kd < KD; ++kd) {
                  const uint32_t b[2] = {bf[(kd * KH + kh) * KS + s].x, bf[(kd * KH + kh) * KS + s].y};
                  tcn_mma<T>(acc[(jj - kd + KD) % KD], a, b);
                }
              }
            }
          } else if constexpr (MT > 1) {  // KD == 1: each B fragment feeds the MT M-tiles
#pragma unroll 1
            for (int kh = 0; kh < KH; ++kh) {
#pragma unroll
              for (int s = 0; s < KS; ++s) {
                const TcnPair bv = btab[(kh * KS + s) * 32 + lane];
                const uint32_t b[2] = {bv.x, bv.y};
#pragma unroll
                for (int m = 0; m < MT; ++m) {
                  uint32_t a[4];
                  tc_ldsm_x4(a, reinterpret_cast<const uint32_t*>(brick + (kh + kTcnRows * m) * L.pitch + KK * s));
                  tcn_mma<T>(acc[m], a, b);
                }
              }
            }
          } else {
#pragma unroll 1
            for (int kh = 0; kh < KH; ++kh) {
#pragma unroll
              for (int s = 0; s < KS; ++s) {
                uint32_t a[4];
                tc_ldsm_x4(a, reinterpret_cast<const uint32_t*>(brick + kh * L.pitch + KK * s));
#pragma unroll
                for (int kd = 0; kd < KD; ++kd) {
                  const TcnPair bv = btab[((kd * KH + kh) * KS + s) * 32 + lane];
                  const uint32_t b[2] = {bv.x, bv.y};
                  tcn_mma<T>(acc[(jj - kd + KD) % KD], a, b);
                }
              }
            }
          }
        }
        // Output plane od0 + i - (KD - 1) (KD == 1: this step's h-tile) is complete.
        if constexpr (MT > 1) {
          if (i < nreal) {
#pragma unroll
            for (int m = 0; m < MT; ++m) store(acc[m], n0 + col, ia, ROWS * (ht0 + i) + kTcnRows * m);
          }
#pragma unroll
          for (int m = 0; m < MT; ++m)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[m][e] = 0.f;
        } else {
          const int done = (jj + 1) % KD;
          if (i >= KD - 1 && i < nreal) {
            if constexpr (KD > 1) store(acc[done], n0 + col, od0 + i - (KD - 1), kTcnRows * ht0);
            else store(acc[done], n0 + col, ia, kTcnRows * (ht0 + i));
          }
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[done][e] = 0.f;
        }
      }
    }
  }
  cp_async_wait<0>();  // no copy outlives the block (the last groups are empty)
}

// ------------------------------------------------------------------------------------ plan
// Ceiling to a multiple of 8 for any sign.
inline int64_t tcn_ceil8(int64_t x) { return x >= 0 ? (x + 7) / 8 * 8 : -((-x) / 8 * 8); }

// NC(D)HW, one phase at stride 1, multiplier 1, a 2-D or 3-D filter (KH > 1 or KD > 1) whose
// width needs KS k-steps of the MMA's K (tcn_k<T>). `target`: blocks wanted (depth / h segments
// are cut to reach it). `in` decides the staging vector. cl: channels-last tensors (fp32 only:
// one 4-byte cp.async per value). false when not covered.
template <typename T>
bool tc_rows_nc_plan(TcRowsNc& L, const Plan& P, bool flip, const T* in, int64_t target, int& KD, int& KH, int& KS,
                     int mt = 1, bool cl = false) {
  constexpr int KK = tcn_k<T>(), E = tcn_vec16<T>();
  if (P.phases != 1 || P.J != 1 || P.in_div != 1 || P.out_c != P.in_c || (cl && sizeof(T) != 4)) return false;
  for (int d = 0; d < 3; ++d) {
    if (P.S[d] != 1 || P.in[d] >= (int64_t(1) << 30) || P.out[d] >= (int64_t(1) << 30) || P.out[d] <= 0) return false;
    if (P.pad[d][0] <= -(1 << 20) || P.pad[d][0] >= (1 << 20)) return false;
  }
  KD = P.k[0], KH = P.k[1];
  const int kw = P.k[2];
  if (KD == 1 && KH == 1) return false;  // 1-D rows: tc_row1d
  if (kw < 1 || kw > 41) return false;
  KS = (7 + kw + KK - 1) / KK;
  // sh in [0, KK KS - 7 - kw]: the one that leaves the fewest blocks of 8 outputs, then an even
  // first output (paired stores), then the first output nearest the row start.
  const int padW = P.pad[2][0];
  int64_t best_nb = -1, best_ob0 = 0;
  for (int sh = 0; sh <= KK * KS - 7 - kw; ++sh) {
    const int64_t wi0 = -tcn_ceil8(int64_t(padW) + sh), ob0 = wi0 + padW + sh;
    const int64_t nb = ceil_div(P.out[2] - ob0, 8);
    const bool better = best_nb < 0 || nb < best_nb ||
                        (nb == best_nb && (ob0 % 2 == 0) > (best_ob0 % 2 == 0)) ||
                        (nb == best_nb && (ob0 % 2 == 0) == (best_ob0 % 2 == 0) && ob0 > best_ob0);
    if (better) {
      best_ob0 = ob0;
      best_nb = nb;
      L.sh = sh;
      L.wi0 = static_cast<int>(wi0);
      L.ob0 = static_cast<int>(ob0);
    }
  }
  const int64_t chunks = ceil_div(best_nb, kTcnMaxWarps);
  L.nw = static_cast<int>(ceil_div(best_nb, chunks));
  L.chunks = static_cast<uint32_t>(chunks);
  L.vw = 8 * (L.nw - 1) + KK * KS;
  L.pitch = E * ((L.vw / E) | 1);
  L.D = static_cast<int>(P.in[0]), L.H = static_cast<int>(P.in[1]), L.W = static_cast<int>(P.in[2]);
  L.OD = static_cast<int>(P.out[0]), L.OH = static_cast<int>(P.out[1]), L.OW = static_cast<int>(P.out[2]);
  L.padD = P.pad[0][0], L.padH = P.pad[1][0];
  L.kw = kw;
  L.C = static_cast<int>(P.out_c);
  L.flip = flip ? 1 : 0;
  const uintptr_t a = reinterpret_cast<uintptr_t>(in);
  L.vec = E;
  while (L.vec > 1 && (L.W % L.vec != 0 || a % (L.vec * sizeof(T)) != 0)) L.vec /= 2;
  if (cl) L.vec = 1;
  L.sw = cl ? L.C : 1;
  const int64_t htiles = ceil_div(P.out[1], kTcnRows * mt), per_n = P.out_c * chunks;
  int64_t na, nb;
  if (KD > 1) {
    int64_t segs, dl;
    depth_segments(P.out[0], KD, P.N * htiles * per_n, target, segs, dl);
    na = segs, nb = htiles, L.seg = static_cast<int>(dl);
  } else {
    const int64_t segs = std::clamp<int64_t>(ceil_div(target, std::max<int64_t>(P.N * P.out[0] * per_n, 1)), 1, htiles);
    const int64_t hl = ceil_div(htiles, segs);
    na = P.out[0], nb = ceil_div(htiles, hl), L.seg = static_cast<int>(hl);
  }
  // Samples per block: as many as leave `target` blocks (the filter's B fragments are built once
  // per block, and a block's bricks stream through the ring without a break).
  const int64_t others = per_n * na * nb;
  const int64_t groups = std::clamp<int64_t>(ceil_div(target, others), 1, std::max<int64_t>(P.N, 1));
  const int64_t nper = ceil_div(P.N, groups);
  const int64_t ngroups = ceil_div(P.N, nper);
  const int64_t items = others * ngroups;
  if (P.N <= 0 || P.N >= (int64_t(1) << 30) || items <= 0 || items >= (int64_t(1) << 31)) return false;
  if (nper * (P.out[0] + 2 * KD) * htiles >= (int64_t(1) << 30)) return false;  // a block's step count fits int
  L.items = static_cast<uint32_t>(items);
  L.na = static_cast<uint32_t>(na), L.nb = static_cast<uint32_t>(nb), L.ngroups = static_cast<uint32_t>(ngroups);
  L.N = static_cast<int>(P.N), L.nper = static_cast<int>(nper);
  return true;
}

}  // namespace convx::cuda
