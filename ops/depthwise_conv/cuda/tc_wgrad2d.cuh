// Weight-grads of K x K depthwise filters (K 5, 7) at stride 1, multiplier 1, in fp16 / bf16 on
// tensor cores, deterministic, NCHW (tcw2_nc) and NHWC (tcw2_cl): tc_wgrad3d's scheme with one
// filter depth and one output row per step.
//
// Why: the CUDA-core kernels spend K*K fp32 FMAs plus conversions per output: ConvNeXt's 7 x 7
// 16-bit weight-grad took 234 us NCHW (nc_wgrad_stream) and 146 us NHWC (cl_wgrad_partial) for 77
// MB of x and dy (session 10 / 11 kernels logs). Here, per channel, output row h and 16 input
// columns w0 + k:
//     D[m][d] += sum_k X[h + m - ph][w0 + k] * DY[h][w0 + k - d + pw]      (m, d < K)
// is one m16n8k16 step (mma16.cuh: exact products, fp32 sums) with A = the K X rows the output
// row meets (ldmatrix.x2: 2 shared wavefronts; A's rows 8-15 zero, rows K ... 7 repeating row K - 1)
// and B = the dy row shifted by the column tap d (two aligned words and a funnel shift per
// register, 4 wavefronts), so neither operand needs more alignment than the staged rows have.
// D[b][d] is tap (b, d)'s share, summed over rows, tiles and blocks. Every product x[i] * dy[o]
// with i = o + d - pw lands in one step (the X columns of the tiles cover the input row once; dy
// outside the tensor and X in the padding are staged as zeros), so the taps need no bounds tests.
//
// Tiles: tr output rows (the planes' rows split evenly, at most 64 NCHW / 16 NHWC) x 16 NJ input
// columns (NJ 1, 2 or 4: the narrowest that covers a row up to 64 wide; wider rows take tiles of
// 64) of one (sample, channel) plane; X rows h0 - ph + [0, tr + K - 1), dy rows h0 + [0, tr) with
// columns xc0 - 8 + [0, 16 NJ + 16), in shared rows of 72 (X: 9 16-byte units, odd, so the 8 rows
// of an ldmatrix phase fall on 8 bank groups) and 80 values.
//
// Deterministic: a block is one channel (NHWC: 8) x a fixed chunk of its tiles (from the shapes
// alone); the sums are in a fixed order (steps in tile order, the accumulators, the warps, then the
// blocks' partials [channel][chunk][tap] in chunk order by the channel's last block: an int
// counter, no float atomics; tc_wgrad1d.cuh's tcw_last_block / tcw_sum_chunks).
//
// The launcher (tc_wgrad2d.cu) takes 7 x 7 only; 5 x 5 (CPU harness) did not beat the CUDA-core
// kernels on the H100. 3 x 3 (two output rows per step, N = 6 of 8) measured slower than them on
// MobileNetV2 (session 11, wg2d_call2_ab.log: NHWC 0.067 -> 0.119 ms) and was dropped.
#pragma once

#include "ops/depthwise_conv/cuda/cp_async.cuh"
#include "ops/depthwise_conv/cuda/mma16.cuh"
#include "ops/depthwise_conv/cuda/plan.cuh"
#include "ops/depthwise_conv/cuda/tc_wgrad1d.cuh"
#include "ops/depthwise_conv/cuda/tc_wgrad3d.cuh"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace convx::cuda {

constexpr int kTcw2Threads = 256, kTcw2Warps = 8;
constexpr int kTcw2Rows = 64;                  // NCHW: most output rows per tile
constexpr int kTcw2ClRows = 16;                // NHWC: most output rows per tile
constexpr int kTcw2ClCh = 8;                   // NHWC: channels per block, one 16-byte vector per position
constexpr int kTcw2XRow = 72, kTcw2DRow = 80;  // shared row strides (values; X: 9 16-byte units, odd)

struct Tcw2 {
  int H, W, Ho, Wo, ph, pw;
  int tr;                          // output rows per tile
  int nj;                          // 16-column steps per tile: 1, 2 or 4 (the kernels' NJ)
  int vec;                         // NCHW: values per staged vector: 8, 4, 2, or 1 (value by value)
  uint32_t th, tw;                 // tiles along rows and columns
  uint32_t tiles, chunk, chunks;   // tiles per channel (group), per block; blocks per channel (group)
  uint32_t groups;                 // channels (NHWC: channel groups of kTcw2ClCh)
  int C;                           // channels
  int ps;                          // a channel's shared tile (values): tr + K - 1 X rows, then tr dy rows
};

// Stride 1, multiplier 1, 2-D K x K (K 5, 7), padding 0 ... K - 1, N > 0, a plane below 2^31
// values, tile counts within 32 bits; NHWC (cl): channels a multiple of 8 and x, dy 16-byte
// aligned. About `target` blocks in all (the chunks from the shapes alone). xa / ga: the addresses
// of x and dy (the staging vector's alignment).
inline bool tcw2_plan(Tcw2& L, const Plan& P, bool cl, int64_t target, uintptr_t xa, uintptr_t ga) {
  if (P.phases != 1 || P.S[0] != 1 || P.S[1] != 1 || P.S[2] != 1 || P.in_div != 1 || P.J != 1) return false;
  if (P.k[0] != 1 || P.in[0] != 1 || P.out[0] != 1 || P.pad[0][0] != 0) return false;
  const int K = P.k[1];
  if (P.k[2] != K || (K != 5 && K != 7) || P.N <= 0 || P.out_c <= 0) return false;
  for (int d = 1; d < 3; ++d) {
    if (P.pad[d][0] < 0 || P.pad[d][0] > K - 1 || P.out[d] <= 0) return false;
  }
  constexpr int64_t lim = int64_t(1) << 31;
  if (P.in[1] * P.in[2] >= lim || P.out[1] * P.out[2] >= lim || P.out_c >= lim) return false;
  if (cl && (P.out_c % kTcw2ClCh != 0 || xa % 16 != 0 || ga % 16 != 0)) return false;
  const int64_t th = ceil_div(P.out[1], cl ? kTcw2ClRows : kTcw2Rows), tr = ceil_div(P.out[1], th);
  const int nj = P.in[2] <= 16 ? 1 : P.in[2] <= 32 ? 2 : 4;
  const int64_t tw = ceil_div(P.in[2], 16 * nj);
  const int64_t tiles = P.N * th * tw, groups = cl ? P.out_c / kTcw2ClCh : P.out_c;
  if (tiles >= lim) return false;
  int64_t chunks = std::clamp<int64_t>(ceil_div(target, groups), 1, tiles);
  const int64_t chunk = ceil_div(tiles, chunks);
  chunks = ceil_div(tiles, chunk);
  if (groups * chunks >= lim) return false;
  L.H = static_cast<int>(P.in[1]), L.W = static_cast<int>(P.in[2]);
  L.Ho = static_cast<int>(P.out[1]), L.Wo = static_cast<int>(P.out[2]);
  L.ph = P.pad[1][0], L.pw = P.pad[2][0];
  L.tr = static_cast<int>(tr), L.nj = nj;
  L.th = static_cast<uint32_t>(th), L.tw = static_cast<uint32_t>(tw);
  L.tiles = static_cast<uint32_t>(tiles);
  L.chunk = static_cast<uint32_t>(chunk);
  L.chunks = static_cast<uint32_t>(chunks);
  L.groups = static_cast<uint32_t>(groups);
  L.C = static_cast<int>(P.out_c);
  // NHWC: padded to an odd number of 8-value units, so that the transposing stores of the 8
  // channels fall on distinct banks.
  L.ps = static_cast<int>((tr + K - 1) * kTcw2XRow + tr * kTcw2DRow);
  if (cl && L.ps / 8 % 2 == 0) L.ps += 8;
  // The widest vector (16 bytes at most) that divides both row lengths and both addresses: every
  // row of every plane then starts on a vector boundary, and the tiles' columns are multiples of 8.
  L.vec = 1;
  for (int v = 8; v > 1 && !cl; v /= 2) {
    if (L.W % v == 0 && L.Wo % v == 0 && xa % (2 * v) == 0 && ga % (2 * v) == 0) {
      L.vec = v;
      break;
    }
  }
  return true;
}

// This lane's operands, as offsets from the output row's first staged X row and its dy row (values;
// dy: words): its ldmatrix row of A (lanes < 16: m = lane % 8, rows past K - 1 repeating the last,
// column half lane / 8) and its B column d = g (clamped to K - 1; unused columns of D) as word f and
// shift sh: B[k][d] = dy column w0 + k - d + pw = staged column w0 + k - d + pw + 8.
struct Tcw2Lane {
  int a, f, sh;
};
template <int K>
__device__ __forceinline__ Tcw2Lane tcw2_lane(int lane, int pw) {
  const int m = std::min(lane & 7, K - 1), d = std::min(lane >> 2, K - 1);
  const int e = 2 * (lane & 3) - d + pw + 8;
  return {m * kTcw2XRow + (lane & 8), e >> 1, (e & 1) * 16};
}

// The NJ steps of 16 columns of one output row: xr = its first X row, dw = its dy row's words from
// the lane's f; acc[j]: columns 16 j ... (independent accumulators). A dead row (a warp past the
// tile's last: every warp makes the same calls, as the CPU harness's warp exchange needs) adds
// zeros.
template <typename T, int NJ>
__device__ __forceinline__ void tcw2_row(float (&acc)[NJ][4], const T* xr, const uint32_t* dw, const Tcw2Lane& ln,
                                         bool live) {
#pragma unroll
  for (int j = 0; j < NJ; ++j) {
    // (q1:q0) >> sh, sh 0 or 16: two 16-bit values from an even or odd position.
    const uint32_t b0 = static_cast<uint32_t>(((uint64_t(dw[8 * j + 1]) << 32) | dw[8 * j]) >> ln.sh);
    const uint32_t b1 = static_cast<uint32_t>(((uint64_t(dw[8 * j + 5]) << 32) | dw[8 * j + 4]) >> ln.sh);
    const uint32_t b[2] = {live ? b0 : 0u, live ? b1 : 0u};
    uint32_t a[4];
    tc_ldsm_x2(a, reinterpret_cast<const uint32_t*>(xr + ln.a + 16 * j));
    mma16816<T>(acc[j], a, b);
  }
}

// The warp's D (rows 0-7: A's rows 8-15 are zero; d[0], d[1] = D[g][2t, 2t + 1]) into red[64],
// its accumulators added in order; tap (b, d) is red[8 b + d].
template <int NJ>
__device__ __forceinline__ void tcw2_store_d(const float (&acc)[NJ][4], float* red, int lane) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float v = acc[0][i];
#pragma unroll
    for (int j = 1; j < NJ; ++j) v += acc[j][i];
    red[lane * 2 + i] = v;
  }
}
template <int K>
__device__ __forceinline__ float tcw2_tap(const float* red, int i) {
  return red[i / K * 8 + i % K];
}

// ---------------------------------------------------------------------------------------- NCHW
// Dynamic shared memory of tcw2_nc: two buffers of a channel's tile, at least the final sum's
// area (the warps' D and a flag).
__host__ __device__ inline int tcw2_nc_smem_bytes(const Tcw2& L) {
  return std::max(2 * 2 * L.ps, 4 * (kTcw2Warps * 64 + 4));
}

// x: [N, C, H, W], gy: [N, C, Ho, Wo]. Writes gw [C][K K]: directly when L.chunks == 1, else
// through part [C][chunks][K K] (fp32), summed by the channel's last block (counters: C, zeroed).
// Grid: C * chunks blocks of kTcw2Threads (a channel's chunks adjacent); dynamic shared memory
// tcw2_nc_smem_bytes(L). Tile: X rows h0 - ph + r (r < tr + K - 1), columns xc0 + [0, 16 NJ); dy
// rows h0 + [0, tr), columns xc0 - 8 + [0, 16 NJ + 16); zeros off the tensors; columns fastest,
// then row bands, then samples. Each thread stages fixed columns of rows r0 + k rs (the split
// made once), by cp.async of L.vec values, or value by value. Double-buffered: tile i + 1's
// copies fly during tile i's steps. Warp w takes the output rows w + 8 k, all NJ column steps.
template <typename T, int K, int NJ>
__global__ void __launch_bounds__(kTcw2Threads, 4)
tcw2_nc(const T* __restrict__ x, const T* __restrict__ gy, float* __restrict__ part, unsigned* __restrict__ counters,
        T* __restrict__ gw, const Tcw2 L) {
  constexpr int NV = K * K;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* const buf = reinterpret_cast<T*>(smem_raw);
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int64_t co = blockIdx.x / L.chunks;
  const uint32_t chunk = blockIdx.x % L.chunks;
  const uint32_t i0 = chunk * L.chunk, i1 = i0 + L.chunk < L.tiles ? i0 + L.chunk : L.tiles;
  const int64_t in_plane = int64_t(L.H) * L.W, out_plane = int64_t(L.Ho) * L.Wo;
  const int xr = L.tr + K - 1, xvals = xr * kTcw2XRow;
  // This thread's staging: X vector column xq (XQ = 16 NJ / V vectors per row, a power of two),
  // rows xr0 + k xrs; dy vector column dq (DQ = (16 NJ + 16) / V), rows dr0 + k drs (threads past
  // drs DQ stage no dy).
  const int V = L.vec, XQ = 16 * NJ / V, DQ = (16 * NJ + 16) / V;
  const int xq = tid & (XQ - 1), xr0 = tid / XQ, xrs = kTcw2Threads / XQ;
  const int drs = kTcw2Threads / DQ, dq = tid % DQ, dr0 = tid < drs * DQ ? tid / DQ : L.tr;
  const T zero = static_cast<T>(0.f);
  auto put = [&](T* dst, const T* src) {  // one vector: src, or zeros when null
    if (V == 1) {
      *dst = src ? *src : zero;
    } else if (src) {
      cp_async_n(dst, src, 2 * V);
    } else {
      for (int e = 0; e < V; ++e) dst[e] = zero;
    }
  };
  auto stage = [&](uint32_t i, int b) {
    const int xc0 = static_cast<int>(i % L.tw) * 16 * NJ, h0 = static_cast<int>(i / L.tw % L.th) * L.tr;
    const int64_t n = i / L.tw / L.th;
    const T* xc = x + (n * L.C + co) * in_plane;
    const T* gc = gy + (n * L.C + co) * out_plane;
    T* const xs = buf + b * L.ps;
    T* const ds = xs + xvals;
    const int w = xc0 + V * xq, c = xc0 - 8 + V * dq;
    const bool wok = w < L.W, cok = c >= 0 && c < L.Wo;
    for (int r = xr0; r < xr; r += xrs) {
      const int h = h0 - L.ph + r;
      put(xs + r * kTcw2XRow + V * xq, wok && h >= 0 && h < L.H ? xc + h * L.W + w : nullptr);
    }
    for (int r = dr0; r < L.tr; r += drs) {
      const int h = h0 + r;
      put(ds + r * kTcw2DRow + V * dq, cok && h < L.Ho ? gc + h * L.Wo + c : nullptr);
    }
    cp_async_commit();
  };
  const Tcw2Lane ln = tcw2_lane<K>(lane, L.pw);
  const int rounds = (L.tr + kTcw2Warps - 1) / kTcw2Warps;  // the same for every warp

  float acc[NJ][4] = {};
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
    const T* xs = buf + b * L.ps;
    const uint32_t* dw = reinterpret_cast<const uint32_t*>(xs + xvals) + ln.f;
    for (int k = 0; k < rounds; ++k) {
      const int g = warp + kTcw2Warps * k;
      const bool live = g < L.tr;
      const int r = live ? g : 0;
      tcw2_row<T, NJ>(acc, xs + r * kTcw2XRow, dw + r * (kTcw2DRow / 2), ln, live);
    }
    __syncthreads();  // the buffer is restaged two tiles on
  }
  // The warps in order, through the idle buffers.
  float* const red = reinterpret_cast<float*>(smem_raw);
  tcw2_store_d<NJ>(acc, red + warp * 64, lane);
  __syncthreads();
  if (tid < NV) {
    float sum = 0.f;
#pragma unroll
    for (int w = 0; w < kTcw2Warps; ++w) sum += tcw2_tap<K>(red + w * 64, tid);
    if (L.chunks == 1) {
      gw[co * NV + tid] = static_cast<T>(sum);
    } else {
      part[(co * L.chunks + chunk) * NV + tid] = sum;
    }
  }
  if (L.chunks > 1 && tcw_last_block(counters + co, L.chunks, reinterpret_cast<int*>(red + kTcw2Warps * 64)))
    tcw_sum_chunks<T, NV>(part, gw, co, NV, L.chunks);
}

// ------------------------------------------------------------------------------------------ NHWC
// Dynamic shared memory of tcw2_cl: the raw tile (positions as stored, 8 values each: X
// (tr + K - 1) x 16 NJ, then dy tr x (16 NJ + 16)) and the 8 channels' tiles of L.ps values.
template <int K>
__host__ __device__ inline int tcw2_cl_smem_bytes(const Tcw2& L) {  // >= the final sum's area (2 KB)
  return 2 * kTcw2ClCh * ((L.tr + K - 1) * 16 * L.nj + L.tr * (16 * L.nj + 16) + L.ps);
}
template <int K>
__host__ __device__ constexpr int tcw2_cl_smem_max() {  // tr 16, NJ 4, ps padded
  return 2 * kTcw2ClCh *
         ((kTcw2ClRows + K - 1) * 64 + kTcw2ClRows * 80 + (kTcw2ClRows + K - 1) * kTcw2XRow + kTcw2ClRows * kTcw2DRow + 8);
}

// x: [N, H, W, C], gy: [N, Ho, Wo, C] (16-byte aligned, C a multiple of 8). Writes gw [C][K K]:
// directly when L.chunks == 1, else through part [C][chunks][K K] (fp32), summed by the group's
// last block (counters: groups, zeroed). Grid: groups * chunks blocks of kTcw2Threads (groups
// fastest: the blocks in flight read whole 32-byte sectors of the same positions); dynamic shared
// memory tcw2_cl_smem_bytes<K>(L). Block: 8 channels x a chunk of tiles (tcw2_nc's, up to 16 rows).
// Per tile the positions' 16-byte vectors arrive by cp.async (zero-filled off the tensors) in the
// raw area (each thread fixed columns of rows r0 + k rs); after a barrier ldmatrix.trans turns each
// run of 8 positions into one word per channel and position pair, stored into the channels' tiles
// (one 32-bit store per word: 4 wavefronts per 256 values); after a second barrier the next tile's
// copies start into the raw area and warp w runs tcw2_nc's steps on channel w's tile: every
// output row, NJ column steps each.
template <typename T, int K, int NJ>
__global__ void __launch_bounds__(kTcw2Threads, 2)
tcw2_cl(const T* __restrict__ x, const T* __restrict__ gy, float* __restrict__ part, unsigned* __restrict__ counters,
        T* __restrict__ gw, const Tcw2 L) {
  constexpr int NV = K * K;
  constexpr int XQ = 16 * NJ, DQ = 16 * NJ + 16;  // positions per X / dy row of the raw tile
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* const raw = reinterpret_cast<T*>(smem_raw);
  const int xr = L.tr + K - 1, npos = xr * XQ + L.tr * DQ;
  T* const tiles = raw + kTcw2ClCh * npos;  // channel c's tile at c * L.ps
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const uint32_t group = blockIdx.x % L.groups, chunk = blockIdx.x / L.groups;
  const int c0 = static_cast<int>(group) * kTcw2ClCh;
  const uint32_t i0 = chunk * L.chunk, i1 = i0 + L.chunk < L.tiles ? i0 + L.chunk : L.tiles;

  // This thread's positions: X column xq of rows xr0 + k xrs, dy column dq of rows dr0 + k drs.
  constexpr int xrs = kTcw2Threads / XQ, drs = kTcw2Threads / DQ;
  const int xq = tid % XQ, xr0 = tid / XQ, dq = tid % DQ, dr0 = tid < drs * DQ ? tid / DQ : L.tr;
  auto stage = [&](uint32_t i) {
    const int xc0 = static_cast<int>(i % L.tw) * XQ, h0 = static_cast<int>(i / L.tw % L.th) * L.tr;
    const int64_t n = i / L.tw / L.th;
    const T* xn = x + n * L.H * L.W * L.C + c0;
    const T* gn = gy + n * L.Ho * L.Wo * L.C + c0;
    const int w = xc0 + xq, c = xc0 - 8 + dq;
    const bool wok = w < L.W, cok = c >= 0 && c < L.Wo;
    for (int r = xr0; r < xr; r += xrs) {
      const int h = h0 - L.ph + r;
      const bool ok = wok && h >= 0 && h < L.H;
      cp_async16(raw + kTcw2ClCh * (r * XQ + xq), ok ? xn + (int64_t(h) * L.W + w) * L.C : x, ok ? 16 : 0);
    }
    for (int r = dr0; r < L.tr; r += drs) {
      const int h = h0 + r;
      const bool ok = cok && h < L.Ho;
      cp_async16(raw + kTcw2ClCh * (xr * XQ + r * DQ + dq), ok ? gn + (int64_t(h) * L.Wo + c) * L.C : x, ok ? 16 : 0);
    }
    cp_async_commit();
  };
  // Runs of 8 positions (each inside one row: the rows are multiples of 8 positions), 4 per
  // ldmatrix, runs q = 4 (warp + 8 k) + j; every warp makes the same calls (runs past the last:
  // no stores).
  const int runs = npos / 8, rounds = (runs + 4 * kTcw2Warps - 1) / (4 * kTcw2Warps);
  const int xruns = xr * (XQ / 8), g = lane >> 2, t = lane & 3;
  auto transpose = [&]() {
    uint32_t* const dst = reinterpret_cast<uint32_t*>(tiles + g * L.ps) + t;
    for (int k = 0; k < rounds; ++k) {
      const int q0 = 4 * (warp + kTcw2Warps * k), mine = std::min(q0 + (lane >> 3), runs - 1);
      uint32_t a[4];
      tc_ldsm_x4_trans(a, reinterpret_cast<const uint32_t*>(raw + kTcw2ClCh * (8 * mine + (lane & 7))));
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int q = q0 + j;
        if (q >= runs) break;
        int off;  // the run's first position in channel g's tile
        if (q < xruns) {
          off = q / (XQ / 8) * kTcw2XRow + 8 * (q % (XQ / 8));
        } else {
          off = xr * kTcw2XRow + (q - xruns) / (DQ / 8) * kTcw2DRow + 8 * ((q - xruns) % (DQ / 8));
        }
        dst[off >> 1] = a[j];
      }
    }
  };
  const Tcw2Lane ln = tcw2_lane<K>(lane, L.pw);
  const T* const xs = tiles + warp * L.ps;
  const uint32_t* const dw = reinterpret_cast<const uint32_t*>(xs + xr * kTcw2XRow) + ln.f;

  float acc[NJ][4] = {};
  if (i0 < i1) stage(i0);
  for (uint32_t i = i0; i < i1; ++i) {
    cp_async_wait<0>();
    __syncthreads();  // the raw tile has landed; the previous tile's steps are done
    transpose();
    __syncthreads();  // the channels' tiles are complete; the raw area is free
    if (i + 1 < i1) stage(i + 1);
    for (int r = 0; r < L.tr; ++r) tcw2_row<T, NJ>(acc, xs + r * kTcw2XRow, dw + r * (kTcw2DRow / 2), ln, true);
  }
  __syncthreads();  // the tiles are done: the area holds the warps' D
  float* const red = reinterpret_cast<float*>(smem_raw);
  tcw2_store_d<NJ>(acc, red + warp * 64, lane);
  __syncthreads();
  for (int i = tid; i < kTcw2ClCh * NV; i += kTcw2Threads) {
    const float sum = tcw2_tap<K>(red + i / NV * 64, i % NV);
    const int64_t co = c0 + i / NV;
    if (L.chunks == 1) {
      gw[co * NV + i % NV] = static_cast<T>(sum);
    } else {
      part[(co * L.chunks + chunk) * NV + i % NV] = sum;
    }
  }
  if (L.chunks > 1 && tcw_last_block(counters + group, L.chunks, reinterpret_cast<int*>(red + kTcw2Warps * 64)))
    tcw_sum_chunks<T, NV>(part, gw, c0, kTcw2ClCh * NV, L.chunks);
}

}  // namespace convx::cuda
