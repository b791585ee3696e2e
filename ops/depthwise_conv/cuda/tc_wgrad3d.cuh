// Weight-grads of KD x 3 x 3 depthwise filters (KD 3 or 5; X3D's k3 and k5x3x3) at stride 1,
// multiplier 1, in fp16 / bf16 on tensor cores, deterministic: NCDHW (tcw3_nc) and NDHWC (tcw3_cl).
//
// Why: the CUDA-core kernels (nc_wgrad_depth3d, cl_wgrad_depth3d) spend 45 fp32 FMAs plus
// conversions per output position and ran the X3D k5x3x3 bf16 weight-grad at ~19% of the FMA
// peak (1.1 ms for 617 MB of x and dy). Here, per channel, pair of output rows (t, h + s), s < 2,
// and 16 columns starting at w0 (16-aligned in the staged row):
//     D[m][n] += sum_k X[t + a - pd][h + r - ph][w0 + k] * DY[t][h + s][w0 + k - d + pw]
// with m = 4a + r (the 4 KD X rows the pair meets: a < KD, r < 4) and n = d + 3s (column tap d
// of dy row s): one m16n8k16 step per 16 rows of A (mma16.cuh: exact products, fp32 sums; KD 3:
// one, 12 rows; KD 5: two, 16 + 4 rows). D[m][n] with r - s = b in [0, 3) is gw[a][b][d]'s share:
// every product x[i] * dy[o] with i = o + d - pw lands in the right tap, and those whose x lies in
// the padding are zero (so summing over the staged x columns covers them all); gw[a][b][d] =
// D[4a + b][d] + D[4a + b + 1][d + 3] at the end. 90 of the KD 5 steps' 256 outputs are used (54
// of 128 for KD 3); per pair and 16 columns the operands cost 10 (KD 3: 8) shared-memory
// wavefronts: A by ldmatrix (x4, and x2 for KD 5's last 4 rows), B (dy rows shifted by d) by two
// aligned words and a funnel shift per register, so the columns need no alignment of their own.
// (One output row per step, M = the 3 KD rows (a, b), N = d, took 16 wavefronts per two rows and
// 1.25x the time: bench/results/h100/session10/x3dwg_call1_bench.log.)
//
// NCDHW: tiles of 8 output depths x 8 output rows x 64 input columns of one (sample, channel);
// staged by 16-byte cp.async (zero-filled off the tensor) when rows are whole aligned vectors,
// else value by value; double-buffered so that the next tile's loads fly during this tile's
// steps. Warp w takes the row pair 2 (w % 4) at depths w / 4 + 2i, 4 independent accumulators per
// A tile (one per 16 columns). Shared layout per buffer: X planes of 10 rows of 72 values (9
// 16-byte units: odd) and a plane stride of 4 row strides mod 8 units, so the 8 rows of each
// ldmatrix phase (X rows (a, r) at a plane strides plus r row strides, 4a + r = 8 consecutive
// values) fall on 8 different bank groups; dy rows of 80 values (column j = dy column xc0 - 8 + j).
// NDHWC: blocks of 8 channels and 4 x 4-row tiles staged transposed into the same layout (below).
//
// Deterministic: a block is one channel (NDHWC: 8) x a fixed chunk of its tiles (from the shapes
// alone); the sums are in a fixed order (steps in tile order, the accumulators, the warps, then
// the blocks' partials [channel][chunk][tap] by sum_slots in chunk order).
#pragma once

#include "ops/depthwise_conv/cuda/cp_async.cuh"
#include "ops/depthwise_conv/cuda/mma16.cuh"
#include "ops/depthwise_conv/cuda/plan.cuh"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace convx::cuda {

constexpr int kTcw3Threads = 256, kTcw3Warps = 8;
constexpr int kTcw3WC = 64;                    // input columns per tile: 4 steps of 16
constexpr int kTcw3XRow = 72, kTcw3DRow = 80;  // shared row strides (values)

// A tile of TB output depths x HB output rows (x 64 input columns) of one channel in shared
// memory: X planes of HB + 2 rows, the plane stride 4 row strides mod 8 16-byte units.
template <int KD, int TB, int HB>
struct Tcw3Tile {
  static constexpr int xrows = HB + 2, xplanes = TB + KD - 1;
  static constexpr int xplane = xrows * kTcw3XRow + 8 * (((4 - xrows) * (kTcw3XRow / 8) % 8 + 8) % 8);
  static constexpr int xvals = xplanes * xplane, dvals = TB * HB * kTcw3DRow, vals = xvals + dvals;
};
// NCDHW: a channel's 8 x 8 rows per block, two buffers. NDHWC: 8 channels' 4 x 4 rows, one buffer.
template <int KD>
using Tcw3NcTile = Tcw3Tile<KD, 8, kTcw3Warps>;
template <int KD>
using Tcw3ClTile = Tcw3Tile<KD, 4, 4>;
constexpr int kTcw3ClCh = 8;  // channels per NDHWC block: one 16-byte vector per position
constexpr int kTcw3ClThreads = 512;  // two warps per channel
template <int KD>
__host__ __device__ constexpr int tcw3_smem_bytes(bool cl) {
  return cl ? 2 * kTcw3ClCh * Tcw3ClTile<KD>::vals : 2 * 2 * Tcw3NcTile<KD>::vals;
}
// tcw3_nc blocks per SM (__launch_bounds__). KD 5: 4 (64 registers, no spills; 4 x 54.5 KB of
// shared memory fit the H100's 228 KB): a block has one tile's copies in flight while it works on
// the one before, so more blocks keep more bytes in flight. X3D k5x3x3 bf16 NCDHW weight-grad
// (H100, session 14, bench/results/h100/session14/x3d_call1_bench.log, alternating in one
// process, ms per call): 3 blocks and 21 chunks per channel (before) 0.4276 / 0.4300 / 0.4317;
// 3 blocks and 8 chunks 0.4276 / 0.4360 (no faster); 4 blocks and 8 chunks (kept) 0.4131 /
// 0.4211. KD 3 (not measured at 4) keeps 3.
template <int KD>
__host__ __device__ constexpr int tcw3_nc_blocks() {
  return KD == 5 ? 4 : 3;
}

struct Tcw3 {
  int T, H, W, To, Ho, Wo, pd, ph, pw;  // input and output sizes, padding
  uint32_t tt, th, tw;                  // tiles along depth, rows, columns
  uint32_t tiles, chunk, chunks;        // tiles per channel (group), per block; blocks per channel (group)
  uint32_t groups;                      // NDHWC: channel groups of kTcw3ClCh
  int C, vec;                           // channels; NCDHW rows staged by 16-byte vectors
};

// Stride 1, multiplier 1, KD x 3 x 3 with KD 3 or 5, padding 0 ... k - 1 per dim, N > 0, a
// (sample, channel) volume below 2^31 values, tile counts within 32 bits; NDHWC (cl): KD 5,
// channels a multiple of 8 and x, dy 16-byte aligned (`aligned`). About `target` blocks in all
// (the chunks from the shapes alone).
inline bool tcw3_plan(Tcw3& L, const Plan& P, bool cl, int64_t target, bool aligned) {
  // NDHWC k3 measured slower than cl_wgrad_depth3d (X3D bf16: 725 against 548 us, session 10).
  if (cl && P.k[0] != 5) return false;
  if (P.phases != 1 || P.S[0] != 1 || P.S[1] != 1 || P.S[2] != 1 || P.in_div != 1 || P.J != 1) return false;
  if ((P.k[0] != 3 && P.k[0] != 5) || P.k[1] != 3 || P.k[2] != 3 || P.N <= 0 || P.out_c <= 0) return false;
  if (cl && (!aligned || P.out_c % kTcw3ClCh != 0)) return false;
  for (int d = 0; d < 3; ++d) {
    if (P.pad[d][0] < 0 || P.pad[d][0] > P.k[d] - 1 || P.out[d] <= 0) return false;
  }
  constexpr int64_t lim = int64_t(1) << 31;
  if (P.in[0] * P.in[1] * P.in[2] >= lim || P.out[0] * P.out[1] * P.out[2] >= lim || P.out_c >= lim) return false;
  const int TB = cl ? 4 : 8, HB = cl ? 4 : kTcw3Warps;
  const int64_t tt = ceil_div(P.out[0], TB), th = ceil_div(P.out[1], HB), tw = ceil_div(P.in[2], kTcw3WC);
  const int64_t tiles = P.N * tt * th * tw, groups = cl ? P.out_c / kTcw3ClCh : P.out_c;
  if (tiles >= lim) return false;
  int64_t chunks = std::clamp<int64_t>(ceil_div(target, groups), 1, tiles);
  const int64_t chunk = ceil_div(tiles, chunks);
  chunks = ceil_div(tiles, chunk);
  if (groups * chunks >= lim) return false;
  L.T = static_cast<int>(P.in[0]), L.H = static_cast<int>(P.in[1]), L.W = static_cast<int>(P.in[2]);
  L.To = static_cast<int>(P.out[0]), L.Ho = static_cast<int>(P.out[1]), L.Wo = static_cast<int>(P.out[2]);
  L.pd = P.pad[0][0], L.ph = P.pad[1][0], L.pw = P.pad[2][0];
  L.tt = static_cast<uint32_t>(tt), L.th = static_cast<uint32_t>(th), L.tw = static_cast<uint32_t>(tw);
  L.tiles = static_cast<uint32_t>(tiles);
  L.chunk = static_cast<uint32_t>(chunk);
  L.chunks = static_cast<uint32_t>(chunks);
  L.groups = static_cast<uint32_t>(groups);
  L.C = static_cast<int>(P.out_c);
  L.vec = aligned && L.W % 8 == 0 && L.Wo % 8 == 0;
  return true;
}

// Tile i's origin: sample n, first output depth t0 and row h0, first input column xc0 (columns
// fastest, then rows: consecutive tiles share halo rows).
struct Tcw3At {
  int n, t0, h0, xc0;
};
__device__ __forceinline__ Tcw3At tcw3_at(uint32_t i, const Tcw3& L, int TB, int HB) {
  const uint32_t wc = i % L.tw, hb = i / L.tw % L.th, tb = i / L.tw / L.th % L.tt, n = i / L.tw / L.th / L.tt;
  return {static_cast<int>(n), static_cast<int>(tb) * TB, static_cast<int>(hb) * HB, static_cast<int>(wc) * kTcw3WC};
}

// A tiles per step: the 4 KD X rows (a, r) of an output row pair, m = 4a + r: KD 3 one (12 rows),
// KD 5 two (16 + 4 rows; the second loaded by ldmatrix.x2, its rows 8-15 zero).
template <int KD>
__host__ __device__ constexpr int tcw3_mt() {
  return KD > 4 ? 2 : 1;
}

// This lane's operands, as offsets from the pair's (0, 0) X row and first dy row: its ldmatrix rows
// of A (tile 0: m = lane % 8 + 8 (lane / 8 % 2), column half lane / 16; tile 1: m = 16 + lane % 8,
// column half lane / 8 % 2; rows past 4 KD repeat the last) at X row (m / 4, m % 4); its B column
// n = min(g, 5) = d + 3 s (the column tap d of the pair's dy row s; columns 6, 7 unused) as word f
// (from the pair's first dy row) and a shift sh: B[k][n] = dy column w0 + k - d + pw of row s =
// staged column w0 + k - d + pw + 8.
struct Tcw3Lane {
  int a0, a1, f, sh;
};
template <int KD, int XPS>
__device__ __forceinline__ Tcw3Lane tcw3_lane(int lane, int pw) {
  auto row = [](int m) { return (m / 4) * XPS + (m % 4) * kTcw3XRow; };
  const int m0 = std::min((lane & 7) + (lane & 8), 4 * KD - 1), m1 = std::min(16 + (lane & 7), 4 * KD - 1);
  const int n = std::min(lane >> 2, 5), d = n % 3, s = n / 3;
  const int e = 2 * (lane & 3) - d + pw + 8;
  return {row(m0) + (lane & 16 ? 8 : 0), row(m1) + (lane & 8 ? 8 : 0), s * (kTcw3DRow / 2) + (e >> 1), (e & 1) * 16};
}

// One pair of output rows (h, h + 1), 4 steps of 16 columns: xr = the pair's (0, 0) X row, dw =
// its first dy row's words from the lane's f. acc[tile][j]: columns 16 j ... (independent
// accumulators).
template <typename T, int KD>
__device__ __forceinline__ void tcw3_pair(float (&acc)[tcw3_mt<KD>()][4][4], const T* xr, const uint32_t* dw,
                                          const Tcw3Lane& ln) {
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    // (q1:q0) >> sh, sh 0 or 16: two 16-bit values from an even or odd position.
    const uint32_t b[2] = {static_cast<uint32_t>(((uint64_t(dw[8 * j + 1]) << 32) | dw[8 * j]) >> ln.sh),
                           static_cast<uint32_t>(((uint64_t(dw[8 * j + 5]) << 32) | dw[8 * j + 4]) >> ln.sh)};
    uint32_t a[4];
    tc_ldsm_x4(a, reinterpret_cast<const uint32_t*>(xr + ln.a0 + 16 * j));
    mma16816<T>(acc[0][j], a, b);
    if constexpr (KD > 4) {
      tc_ldsm_x2(a, reinterpret_cast<const uint32_t*>(xr + ln.a1 + 16 * j));
      mma16816<T>(acc[1][j], a, b);
    }
  }
}

// The warp's D tiles (its accumulators summed in order) into red[tcw3_mt * 128], each row-major
// 16 x 8; then tcw3_tap reads tap (a, b, d) = i < 9 KD as D[4a + b][d] + D[4a + b + 1][d + 3]
// (the pair's rows h and h + 1).
template <int KD>
__device__ __forceinline__ void tcw3_store_d(const float (&acc)[tcw3_mt<KD>()][4][4], float* red, int lane) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mt = 0; mt < tcw3_mt<KD>(); ++mt) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      red[mt * 128 + (g + (r >= 2 ? 8 : 0)) * 8 + 2 * t + (r & 1)] =
          ((acc[mt][0][r] + acc[mt][1][r]) + acc[mt][2][r]) + acc[mt][3][r];
    }
  }
}
__device__ __forceinline__ float tcw3_tap(const float* red, int i) {
  const int m = 4 * (i / 9) + i / 3 % 3, d = i % 3;
  return red[(m / 16) * 128 + (m % 16) * 8 + d] + red[((m + 1) / 16) * 128 + ((m + 1) % 16) * 8 + d + 3];
}

// ---------------------------------------------------------------------------------------- NCDHW
// One tile of a (sample, channel) into xs / ds: X planes t0 - pd + p (p < TB + KD - 1), rows
// h0 - ph + r (r < HB + 2), columns xc0 + [0, 64); dy depths t0 + [0, TB), rows h0 + [0, HB),
// columns xc0 - 8 + [0, 80); zeros off the tensors.
template <typename T, int KD>
__device__ __forceinline__ void tcw3_nc_stage(T* xs, T* ds, const T* xc, const T* gc, const Tcw3& L, Tcw3At o) {
  using G = Tcw3NcTile<KD>;
  constexpr int TB = 8, HB = kTcw3Warps;
  const int tid = static_cast<int>(threadIdx.x);
  if (L.vec) {
    constexpr int NX = G::xplanes * G::xrows * (kTcw3WC / 8), ND = TB * HB * (kTcw3DRow / 8);
    for (int v = tid; v < NX + ND; v += kTcw3Threads) {
      if (v < NX) {
        const int q = v % 8, r = v / 8 % G::xrows, p = v / (8 * G::xrows);
        const int t = o.t0 - L.pd + p, h = o.h0 - L.ph + r, w = o.xc0 + 8 * q;
        const bool ok = t >= 0 && t < L.T && h >= 0 && h < L.H && w < L.W;
        cp_async16(xs + p * G::xplane + r * kTcw3XRow + 8 * q, ok ? xc + (t * L.H + h) * L.W + w : xc, ok ? 16 : 0);
      } else {
        const int u = v - NX, q = u % (kTcw3DRow / 8), row = u / (kTcw3DRow / 8);
        const int t = o.t0 + row / HB, h = o.h0 + row % HB, c = o.xc0 - 8 + 8 * q;
        const bool ok = t < L.To && h < L.Ho && c >= 0 && c < L.Wo;
        cp_async16(ds + row * kTcw3DRow + 8 * q, ok ? gc + (t * L.Ho + h) * L.Wo + c : gc, ok ? 16 : 0);
      }
    }
  } else {
    constexpr int NX = G::xplanes * G::xrows * kTcw3WC, ND = TB * HB * kTcw3DRow;
    const T zero = static_cast<T>(0.f);
    for (int v = tid; v < NX + ND; v += kTcw3Threads) {
      if (v < NX) {
        const int q = v % kTcw3WC, r = v / kTcw3WC % G::xrows, p = v / (kTcw3WC * G::xrows);
        const int t = o.t0 - L.pd + p, h = o.h0 - L.ph + r, w = o.xc0 + q;
        const bool ok = t >= 0 && t < L.T && h >= 0 && h < L.H && w < L.W;
        xs[p * G::xplane + r * kTcw3XRow + q] = ok ? xc[(t * L.H + h) * L.W + w] : zero;
      } else {
        const int u = v - NX, q = u % kTcw3DRow, row = u / kTcw3DRow;
        const int t = o.t0 + row / HB, h = o.h0 + row % HB, c = o.xc0 - 8 + q;
        const bool ok = t < L.To && h < L.Ho && c >= 0 && c < L.Wo;
        ds[row * kTcw3DRow + q] = ok ? gc[(t * L.Ho + h) * L.Wo + c] : zero;
      }
    }
  }
  cp_async_commit();
}

// x: [N, C, T, H, W], gy: [N, C, To, Ho, Wo]. Writes gw [C][9 KD] when L.chunks == 1, else part
// [C][chunks][9 KD] (fp32). Grid: C * chunks blocks of kTcw3Threads (chunks of a channel
// adjacent); dynamic shared memory tcw3_smem_bytes<KD>(false). Double-buffered: tile i + 1's
// copies fly during tile i's steps. Warp w takes the output rows h0 + w at the 8 depths.
template <typename T, int KD>
__global__ void __launch_bounds__(kTcw3Threads, tcw3_nc_blocks<KD>())
tcw3_nc(const T* __restrict__ x, const T* __restrict__ gy, float* __restrict__ part, T* __restrict__ gw,
        const Tcw3 L) {
  using G = Tcw3NcTile<KD>;
  constexpr int NV = 9 * KD;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* const buf = reinterpret_cast<T*>(smem_raw);
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  const int64_t co = blockIdx.x / L.chunks;
  const uint32_t chunk = blockIdx.x % L.chunks;
  const uint32_t i0 = chunk * L.chunk, i1 = i0 + L.chunk < L.tiles ? i0 + L.chunk : L.tiles;
  auto stage = [&](uint32_t i, int b) {
    const Tcw3At o = tcw3_at(i, L, 8, kTcw3Warps);
    const T* xc = x + (int64_t(o.n) * L.C + co) * (int64_t(L.T) * L.H * L.W);
    const T* gc = gy + (int64_t(o.n) * L.C + co) * (int64_t(L.To) * L.Ho * L.Wo);
    T* xs = buf + b * G::vals;
    tcw3_nc_stage<T, KD>(xs, xs + G::xvals, xc, gc, L, o);
  };
  const Tcw3Lane ln = tcw3_lane<KD, G::xplane>(lane, L.pw);

  float acc[tcw3_mt<KD>()][4][4];
#pragma unroll
  for (int mt = 0; mt < tcw3_mt<KD>(); ++mt) {
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[mt][j][0] = acc[mt][j][1] = acc[mt][j][2] = acc[mt][j][3] = 0.f;
  }
  if (i0 < i1) stage(i0, 0);
  for (uint32_t i = i0; i < i1; ++i) {
    const int b = static_cast<int>(i - i0) & 1;
    if (i + 1 < i1) {
      stage(i + 1, b ^ 1);
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    const T* xs = buf + b * G::vals;
    const T* ds = xs + G::xvals;
#pragma unroll 2
    for (int i = 0; i < 4; ++i) {  // warp w: rows 2 (w % 4) + [0, 2) at depths w / 4 + 2 i
      const int td = (warp >> 2) + 2 * i, hh = 2 * (warp & 3);
      tcw3_pair<T, KD>(acc, xs + td * G::xplane + hh * kTcw3XRow,
                       reinterpret_cast<const uint32_t*>(ds + (td * kTcw3Warps + hh) * kTcw3DRow) + ln.f, ln);
    }
    __syncthreads();  // the buffer is restaged two tiles on
  }
  // The warps in order (through the idle buffers).
  float* const red = reinterpret_cast<float*>(smem_raw);
  tcw3_store_d<KD>(acc, red + warp * tcw3_mt<KD>() * 128, lane);
  __syncthreads();
  if (threadIdx.x < NV) {
    float sum = 0.f;
#pragma unroll
    for (int w = 0; w < kTcw3Warps; ++w) sum += tcw3_tap(red + w * tcw3_mt<KD>() * 128, threadIdx.x);
    if (L.chunks == 1) {
      gw[co * NV + threadIdx.x] = static_cast<T>(sum);
    } else {
      part[(co * L.chunks + chunk) * NV + threadIdx.x] = sum;
    }
  }
}

// ---------------------------------------------------------------------------------------- NDHWC
// A 16-byte vector of 16-bit values (uint4 without the CUDA headers, for the CPU harness).
struct alignas(16) Tcw3Vec {
  uint32_t w[4];
};

// x: [N, T, H, W, C], gy: [N, To, Ho, Wo, C] (16-byte aligned, C a multiple of 8). Writes as
// tcw3_nc. Grid: groups * chunks blocks of kTcw3ClThreads (groups fastest: the blocks in flight
// read whole 32-byte sectors of the same positions); dynamic shared memory tcw3_smem_bytes<KD>(
// true). Block: 8 channels (one 16-byte vector per position) x a chunk of 4 x 4-row tiles; the
// next tile's vectors (position-major, as stored) are loaded into registers during this tile's
// steps, then stored transposed into the channels' shared tiles (the NCDHW layout, one 16-bit
// store per value). Warps w and w + 8 take channel c0 + w's 16 output rows (depths 0-1, 2-3):
// one block per SM (81 KB of shared memory), 16 warps to cover the steps' latencies.
template <typename T, int KD>
__global__ void __launch_bounds__(kTcw3ClThreads, 1)
tcw3_cl(const T* __restrict__ x, const T* __restrict__ gy, float* __restrict__ part, T* __restrict__ gw,
        const Tcw3 L) {
  using G = Tcw3ClTile<KD>;
  constexpr int TB = 4, HB = 4, NV = 9 * KD;
  constexpr int NX = G::xplanes * G::xrows * kTcw3WC, ND = TB * HB * kTcw3DRow;  // vectors per tile
  constexpr int PT = (NX + ND + kTcw3ClThreads - 1) / kTcw3ClThreads;
  static_assert(NX % kTcw3WC == 0, "whole X rows");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* const tiles = reinterpret_cast<T*>(smem_raw);  // channel k's tile at k * G::vals
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const uint32_t group = blockIdx.x % L.groups, chunk = blockIdx.x / L.groups;
  const int c0 = static_cast<int>(group) * kTcw3ClCh;
  const uint32_t i0 = chunk * L.chunk, i1 = i0 + L.chunk < L.tiles ? i0 + L.chunk : L.tiles;

  // Vector k of this thread: v = tid + 256 k, X (plane, row, column) or dy (row, column) as in
  // tcw3_nc_stage; zeros off the tensors.
  Tcw3Vec pv[PT];
  auto fetch = [&](uint32_t i, bool live) {
    const Tcw3At o = tcw3_at(i, L, TB, HB);
    const T* xn = x + int64_t(o.n) * L.T * L.H * L.W * L.C + c0;
    const T* gn = gy + int64_t(o.n) * L.To * L.Ho * L.Wo * L.C + c0;
#pragma unroll
    for (int k = 0; k < PT; ++k) {
      const int v = tid + kTcw3ClThreads * k;
      pv[k] = Tcw3Vec{};
      if (!live) continue;
      if (v < NX) {  // 512 k is a multiple of 64: the column is the thread's, the row advances by 8
        const int rr = tid / kTcw3WC + (kTcw3ClThreads / kTcw3WC) * k, r = rr % G::xrows, p = rr / G::xrows;
        const int t = o.t0 - L.pd + p, h = o.h0 - L.ph + r, w = o.xc0 + tid % kTcw3WC;
        if (t >= 0 && t < L.T && h >= 0 && h < L.H && w < L.W) {
          pv[k] = *reinterpret_cast<const Tcw3Vec*>(xn + ((int64_t(t) * L.H + h) * L.W + w) * L.C);
        }
      } else if (v < NX + ND) {
        const int u = v - NX, q = u % kTcw3DRow, row = u / kTcw3DRow;
        const int t = o.t0 + row / HB, h = o.h0 + row % HB, c = o.xc0 - 8 + q;
        if (t < L.To && h < L.Ho && c >= 0 && c < L.Wo) {
          pv[k] = *reinterpret_cast<const Tcw3Vec*>(gn + ((int64_t(t) * L.Ho + h) * L.Wo + c) * L.C);
        }
      }
    }
  };
  auto store = [&]() {
#pragma unroll
    for (int k = 0; k < PT; ++k) {
      const int v = tid + kTcw3ClThreads * k;
      if (v >= NX + ND) continue;
      int off;
      if (v < NX) {
        off = v / (kTcw3WC * G::xrows) * G::xplane + v / kTcw3WC % G::xrows * kTcw3XRow + v % kTcw3WC;
      } else {
        off = G::xvals + (v - NX) / kTcw3DRow * kTcw3DRow + (v - NX) % kTcw3DRow;
      }
      T e[8];
      std::memcpy(e, &pv[k], 16);
#pragma unroll
      for (int c = 0; c < kTcw3ClCh; ++c) tiles[c * G::vals + off] = e[c];
    }
  };
  const Tcw3Lane ln = tcw3_lane<KD, G::xplane>(lane, L.pw);
  const int ch = warp % kTcw3ClCh, half = warp / kTcw3ClCh;  // channel c0 + ch, depths 2 half + [0, 2)
  const T* const mine = tiles + ch * G::vals;

  float acc[tcw3_mt<KD>()][4][4];
#pragma unroll
  for (int mt = 0; mt < tcw3_mt<KD>(); ++mt) {
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[mt][j][0] = acc[mt][j][1] = acc[mt][j][2] = acc[mt][j][3] = 0.f;
  }
  fetch(i0, i0 < i1);
  for (uint32_t i = i0; i < i1; ++i) {
    __syncthreads();  // the block's steps on the previous tile are done
    store();
    __syncthreads();
    fetch(i + 1, i + 1 < i1);
#pragma unroll 1
    for (int td = 2 * half; td < 2 * half + 2; ++td) {
#pragma unroll
      for (int hh = 0; hh < HB; hh += 2) {
        tcw3_pair<T, KD>(acc, mine + td * G::xplane + hh * kTcw3XRow,
                         reinterpret_cast<const uint32_t*>(mine + G::xvals + (td * HB + hh) * kTcw3DRow) + ln.f, ln);
      }
    }
  }
  __syncthreads();  // the tiles are done: the area holds the warps' D
  float* const red = reinterpret_cast<float*>(smem_raw);
  tcw3_store_d<KD>(acc, red + warp * tcw3_mt<KD>() * 128, lane);
  __syncthreads();
  const int64_t co = c0 + warp;
  for (int i = lane; warp < kTcw3ClCh && i < NV; i += 32) {  // a channel's two warps in order; 45 taps: two rounds
    constexpr int RW = tcw3_mt<KD>() * 128;  // floats per warp
    const float s = tcw3_tap(red + warp * RW, i) + tcw3_tap(red + (warp + kTcw3ClCh) * RW, i);
    if (L.chunks == 1) {
      gw[co * NV + i] = static_cast<T>(s);
    } else {
      part[(co * L.chunks + chunk) * NV + i] = s;
    }
  }
}

}  // namespace convx::cuda
