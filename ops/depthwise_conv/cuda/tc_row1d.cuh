// Tensor-core 1-D depthwise rows for fp16 / bf16 (forward and stride-1 data-grad, which is the
// forward with the filter rotated): long filters at stride 1, channel multiplier 1, in NCL
// (tc_row1d) and in the channels-last (N, L, C) layout (tc_row1d_cl).
//
// Why: the CUDA-core kernels (row1d, row_warp, cl_row1d) spend K fp32 FMAs per 16-bit output and
// are instruction-bound for K = 15 / 31 (H100: 38-68% of copy bandwidth). Here a row's outputs
// are cut into blocks of 16; block b needs the input window x[16 b - pad0 + j], j < 16 KS (pad0
// = pad rounded up to a multiple of 8, so windows start on 16-byte boundaries when the row does;
// sh = pad0 - pad in [0, 8)), and
//     y[16 b + i] = sum_j  x[16 b - pad0 + j] * Tw[j][i],     Tw[j][i] = w[j - i - sh] (0 off the filter)
// -- a GEMM per channel with M = blocks, K = 16 KS, N = 16: per 16 consecutive blocks (a tile of
// 256 outputs) KS k-steps x 2 n8 halves of m16n8k16 (mma16.cuh, fp32 sums). The A operand of
// k-step s is the staged window read 16 s values further on (rows of consecutive blocks overlap),
// so one staged copy of 16 (15 + KS) inputs feeds every k-step; B (the Toeplitz slices of the
// filter) is per channel. KS = ceil((15 + K + sh) / 16): 3 for 31 taps ('same'), 2 for 15.
// Products of 16-bit values are exact and sums fp32, as in the CUDA-core kernels (the order of
// the sums differs).
//
// Weights: the layer's own 16-bit filter (no prepared copy): tap t of the correlation is
// w[row * K + wbase + wstep * t] (forward: 0, +1; data-grad: K - 1, -1).
//
// Shared memory (NCL kernel; the channels-last one is described there): a window is stored with
// 4 words of padding after every 8 (one 16-value row of A then spans 12 words; tc_wphys): the A
// fragment of k-step s is read by ldmatrix as rows R = s ... s + 15, and 8 consecutive rows then
// start on 8 different 16-byte bank groups (12 R mod 32 are distinct for any 8 consecutive R),
// whatever s. The output staging buffer pads 4 words after
// every 32 (tc_phys), so the D fragments' stores (rows 0-7 and 8-15) are conflict-free.
#pragma once

#include "ops/depthwise_conv/cuda/cp_async.cuh"
#include "ops/depthwise_conv/cuda/mma16.cuh"
#include "ops/depthwise_conv/cuda/plan.cuh"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace convx::cuda {

struct alignas(16) TcVec {  // 16 bytes: eight 16-bit values
  uint32_t v[4];
};

__host__ __device__ constexpr int tc_phys(int w) { return w + ((w >> 5) << 2); }
__host__ __device__ constexpr int tc_wphys(int w) { return w + ((w >> 3) << 2); }
// Words spanned by a window of w words, rounded up to whole 16-byte vectors.
__host__ __device__ constexpr int tc_wpadded_words(int w) { return (tc_wphys(w - 1) + 1 + 3) / 4 * 4; }
// Words spanned by w padded words, rounded up to whole 16-byte vectors.
__host__ __device__ constexpr int tc_padded_words(int w) { return (tc_phys(w - 1) + 1 + 3) / 4 * 4; }

template <typename T>
__device__ __forceinline__ uint16_t tc_bits(T v) {
  uint16_t b;
  std::memcpy(&b, &v, 2);
  return b;
}

// A channel's filter as a table of 32-bit tap pairs: word kTcGuard + u holds taps u and u + 1
// (zero off the filter), so that each B register is one aligned shared load whatever the parity
// of its first tap. Tw reads pairs from u = -15 - sh (> -kTcGuard) to 16 KS - 2.
constexpr int kTcGuard = 24;
template <int KS>
__host__ __device__ constexpr int tc_pairs() {
  return kTcGuard + 16 * KS;
}

// Word j of a channel's pair table; wrow = &w[row * K + wbase].
template <typename T>
__device__ __forceinline__ uint32_t tc_pair(const T* wrow, int K, int wstep, int j) {
  const int u = j - kTcGuard;
  const uint32_t lo = u >= 0 && u < K ? tc_bits(wrow[wstep * u]) : 0u;
  const uint32_t hi = u + 1 >= 0 && u + 1 < K ? tc_bits(wrow[wstep * (u + 1)]) : 0u;
  return lo | (hi << 16);
}

// The B fragments of one channel from its pair table.
template <int KS>
__device__ __forceinline__ void tc_b_frags(uint32_t (&bf)[KS][2][2], const uint32_t* pairs, int sh, int lane) {
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int s = 0; s < KS; ++s) {
#pragma unroll
    for (int n = 0; n < 2; ++n) {
#pragma unroll
      for (int h = 0; h < 2; ++h)  // Tw[j][i], j = 16 s + 2 t + 8 h (and j + 1), i = 8 n + g
        bf[s][n][h] = pairs[kTcGuard + 16 * s + 2 * t + 8 * h - 8 * n - g - sh];
    }
  }
}

// This lane's ldmatrix word offsets into a window (tc_wphys layout) for k-steps 0 ... KS - 1.
template <int KS>
__device__ __forceinline__ void tc_a_offsets(int (&aoff)[KS], int lane) {
#pragma unroll
  for (int s = 0; s < KS; ++s) aoff[s] = tc_wphys(8 * (lane % 8 + 8 * (lane / 8 % 2) + s) + 4 * (lane / 16));
}

// One tile: acc[n] (D of n8 half n) += window (at wbuf) * Tw.
template <typename T, int KS>
__device__ __forceinline__ void tc_tile(float (&acc)[2][4], const uint32_t* wbuf, const int (&aoff)[KS],
                                        const uint32_t (&bf)[KS][2][2]) {
#pragma unroll
  for (int s = 0; s < KS; ++s) {
    uint32_t a[4];
    tc_ldsm_x4(a, wbuf + aoff[s]);
    mma16816<T>(acc[0], a, bf[s][0]);
    mma16816<T>(acc[1], a, bf[s][1]);
  }
}

// ----------------------------------------------------------------------------------- NCL
// A warp owns a segment of `tps` consecutive tiles of 256 outputs of one row (sample and
// channel). Tiles start on the output row's 16-byte grid (tile q: row outputs 256 q - omis +
// [0, 256), omis = the row start's offset from the grid), so every output vector is whole and
// aligned except at the row's two ends. Per tile each lane loads a 16-byte vector and a 32-bit
// word of the input row's 16-byte grid (element loads, zero outside the row, where they cross
// the row's ends), together the window; the warp stores it realigned to the window start (one 16-byte store per vector when the window
// starts on the grid, else 32- or 16-bit stores), runs the MMAs, stages the 16-bit outputs (plus
// bias) in shared memory and writes them as 16-byte vectors. The loads of the next two tiles are
// in flight meanwhile (two register sets used in turn, the loop unrolled by two, so no register
// copy waits on a load; with one tile in flight the H100 ran Conformer k31 at 0.036 ms against
// 0.030, bench/results/h100/session9/req2_sweep.log). Warps are independent (__syncwarp only), so
// the launcher may use any number of warps per block (the CPU harness runs one).
//
// Tiles per warp: 8 (H100, req2_sweep.log: k15 causal 0.109 ms at 8, 0.117 at 4, 0.128 at 2;
// Conformer k31 0.030 at 4 and 8).
constexpr int kTcWarps = 8;
constexpr int kTcTilesPerWarp = 8;

struct TcRow {
  uint32_t items, segs;  // items = rows * segs
  int tps, tiles;        // tiles per segment; per row at most (out_w + 7 values of alignment)
  int in_w, out_w;       // row lengths (< 2^30)
  int pad0, sh;          // window of the tile at output o0: o0 - pad0 + [0, 16 (15 + KS)); sh = pad0 - pad
  int K, out_c, wbase, wstep;
};

template <int KS>
__host__ __device__ constexpr int tc_win() {  // window values per tile
  return 16 * (15 + KS);
}
template <int KS>
__host__ __device__ constexpr int tc_warp_words() {  // tap pairs, window, outputs
  return tc_pairs<KS>() + tc_wpadded_words(tc_win<KS>() / 2) + tc_padded_words(128);
}
template <int KS>
__host__ __device__ constexpr int tc_smem_bytes(int warps) {
  return 4 * warps * tc_warp_words<KS>();
}

// in: [rows][in_w]; out: [rows][out_w]; w: [out_c][K] (the layer's filter); bias: out_c or null.
// 4 blocks per SM (64 registers): at 5 (48 registers, spills) the H100 ran Conformer k31 at 0.032
// ms against 0.029 (session 10, bench/results/h100/session10/meas_ab.log, CONVX_TUNE1D=2).
template <typename T, int KS>
__global__ void __launch_bounds__(32 * kTcWarps, 4)
tc_row1d(const T* __restrict__ in, const T* __restrict__ w, const T* __restrict__ bias, T* __restrict__ out,
         const TcRow L) {
  constexpr int WIN = tc_win<KS>();
  static_assert(WIN + 7 <= 320, "a window fits a vector and a word per lane");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int lane = static_cast<int>(threadIdx.x % 32), wib = static_cast<int>(threadIdx.x / 32);
  const uint32_t item = blockIdx.x * (blockDim.x / 32) + wib;
  if (item >= L.items) return;
  uint32_t* const pairs = reinterpret_cast<uint32_t*>(smem_raw) + wib * tc_warp_words<KS>();
  uint32_t* const wbuf = pairs + tc_pairs<KS>();
  uint32_t* const obuf = wbuf + tc_wpadded_words(WIN / 2);
  const int g = lane / 4, t = lane % 4;

  const uint32_t row = item / L.segs, seg = item % L.segs;
  const int co = static_cast<int>(row % static_cast<uint32_t>(L.out_c));
  const T* const wrow = w + int64_t(co) * L.K + L.wbase;
  const float b0 = bias ? static_cast<float>(bias[co]) : 0.f;
  const T* const src = in + int64_t(row) * L.in_w;
  T* const dst = out + int64_t(row) * L.out_w;
  // Element offsets of the rows from the 16-byte grid.
  const int imis0 = static_cast<int>((reinterpret_cast<uintptr_t>(src) / 2) % 8);
  const int omis0 = static_cast<int>((reinterpret_cast<uintptr_t>(dst) / 2) % 8);

  // Window of tile q: row positions p0 + [0, WIN), p0 = 256 q - omis0 - pad0, read from the
  // input row's grid starting at p0 - mis (mis: p0's offset from the grid): lane l holds grid
  // values 8 l + [0, 8) (a 16-byte vector) and 256 + 2 l + [0, 2) (a word; WIN + 7 <= 320).
  struct Pre {
    TcVec v;
    uint32_t x;
    int mis;
  };
  auto fetch = [&](int q, Pre& pre) {
    const int p0 = 256 * q - omis0 - L.pad0;
    const int mis = ((imis0 + p0) % 8 + 8) % 8;
    pre.mis = mis;
    const int r0 = p0 - mis + 8 * lane, rx = p0 - mis + 256 + 2 * lane;
    if (r0 >= 0 && r0 + 8 <= L.in_w) {
      pre.v = *reinterpret_cast<const TcVec*>(src + r0);
    } else {
      uint16_t h[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) h[e] = r0 + e >= 0 && r0 + e < L.in_w ? tc_bits(src[r0 + e]) : uint16_t(0);
#pragma unroll
      for (int k = 0; k < 4; ++k) pre.v.v[k] = uint32_t(h[2 * k]) | (uint32_t(h[2 * k + 1]) << 16);
    }
    pre.x = 0;
    if (256 + 2 * lane < WIN + mis) {
      if (rx >= 0 && rx + 2 <= L.in_w) {
        pre.x = *reinterpret_cast<const uint32_t*>(src + rx);
      } else {
        const uint32_t lo = rx >= 0 && rx < L.in_w ? tc_bits(src[rx]) : 0u;
        const uint32_t hi = rx + 1 >= 0 && rx + 1 < L.in_w ? tc_bits(src[rx + 1]) : 0u;
        pre.x = lo | (hi << 16);
      }
    }
  };

  const int q0 = static_cast<int>(seg) * L.tps;
  const int q1 = std::min(q0 + L.tps, (L.out_w + omis0 + 255) / 256);
  if (q0 >= q1) return;  // the host's tile count allows for 7 values of alignment; this row needs fewer
  // The first two tiles' loads go out before the tap table is built from the filter: the warp's
  // first windows and its filter arrive in one memory latency, not two (H100, session 12,
  // bench/results/h100/session12/oned_call1_ab.log: Conformer k31 bf16 forward and data-grad
  // 31.7 -> 29.1 us per call).
  Pre pa, pb;
  fetch(q0, pa);
  if (q0 + 1 < q1) fetch(q0 + 1, pb);
  for (int j = lane; j < tc_pairs<KS>(); j += 32) pairs[j] = tc_pair(wrow, L.K, L.wstep, j);
  __syncwarp();
  uint32_t bf[KS][2][2];
  tc_b_frags<KS>(bf, pairs, L.sh, lane);
  int aoff[KS];
  tc_a_offsets<KS>(aoff, lane);
  // One grid word (grid word index gw, window word gw - mis / 2) into the window buffer.
  auto put_word = [&](int gw, uint32_t word, int mis) {
    if (mis % 2 == 0) {
      const int wd = gw - mis / 2;
      if (wd >= 0 && wd < WIN / 2) wbuf[tc_wphys(wd)] = word;
    } else {
      uint16_t* const hb = reinterpret_cast<uint16_t*>(wbuf);
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int p = 2 * gw + e - mis;
        if (p >= 0 && p < WIN) hb[2 * tc_wphys(p / 2) + p % 2] = static_cast<uint16_t>(word >> (16 * e));
      }
    }
  };
  // One tile: stage its window (pre), refill pre with tile q + 2, MMAs, outputs.
  auto step = [&](int q, Pre& pre) {
    const int mis = pre.mis;
    __syncwarp();  // the previous tile's reads of wbuf and obuf are done
    if (mis == 0) {
      *reinterpret_cast<TcVec*>(wbuf + tc_wphys(4 * lane)) = pre.v;
    } else {
#pragma unroll
      for (int k = 0; k < 4; ++k) put_word(4 * lane + k, pre.v.v[k], mis);
    }
    put_word(128 + lane, pre.x, mis);
    __syncwarp();
    if (q + 2 < q1) fetch(q + 2, pre);

    float acc[2][4] = {};
    tc_tile<T, KS>(acc, wbuf, aoff, bf);
#pragma unroll
    for (int n = 0; n < 2; ++n) {
#pragma unroll
      for (int hh = 0; hh < 2; ++hh)
        obuf[tc_phys(8 * (g + 8 * hh) + 4 * n + t)] =
            pack16x2<T>(static_cast<T>(acc[n][2 * hh] + b0), static_cast<T>(acc[n][2 * hh + 1] + b0));
    }
    __syncwarp();
    const int o = 256 * q - omis0 + 8 * lane;  // row position of the lane's output vector
    if (o >= 0 && o + 8 <= L.out_w) {
      *reinterpret_cast<TcVec*>(dst + o) = *reinterpret_cast<const TcVec*>(obuf + tc_phys(4 * lane));
    } else if (o + 8 > 0 && o < L.out_w) {
      const uint16_t* const hb = reinterpret_cast<const uint16_t*>(obuf);
      for (int e = 0; e < 8; ++e) {
        if (o + e >= 0 && o + e < L.out_w) {
          const uint16_t b = hb[2 * tc_phys(4 * lane + e / 2) + e % 2];
          std::memcpy(dst + o + e, &b, 2);
        }
      }
    }
  };

  for (int q = q0; q < q1; q += 2) {
    step(q, pa);
    if (q + 1 < q1) step(q + 1, pb);
  }
}

// ------------------------------------------------------------------------- channels-last
// A block (kTcClWarps warps) owns 32 channels x a run of L.tps consecutive tiles of 256
// positions of one row (sample). Per tile, the window (16 (15 + KS) positions x 32 channels)
// arrives by cp.async (16-byte copies that hold no registers) into a raw [position][32 channels]
// area while the previous tile is computed; the threads then transpose it, one word per channel
// holding two positions, into per-channel rows (an odd number of words apart: the 8 channels of a
// vector hit different banks), and the raw area takes the next tile's copies. Each warp runs the
// MMAs of 8 channels in turn, packs each channel's 16-bit outputs, and byte-permutes them into
// 16-byte vectors of 8 channels per position, which it stores (over the rows, after a block
// barrier) into a [position][32 channels] tile whose 16-byte chunks are XOR-swizzled by position;
// the block then writes the tile as 16-byte vectors along the channels. The tap tables are built
// once per block. Channels must be a multiple of 8 (vectors), the tensors 16-byte aligned; channel
// groups past C compute on zeros and are not stored.
//
// Measured on the H100 (session 10, bench/results/h100/session10/conf1d_call1.log): the earlier
// kernel, one tile per block with its window loaded through registers (at most 32 bytes per
// thread in flight) and its phases (tap tables, loads, MMAs, stores) one after the other, ran
// Conformer k31 bf16 at 38.7 us (56% of copy bandwidth); this one at 36.0 (2 tiles per block; 1:
// 43.7, 4: 35.7) and k15 causal at 111.8 against 113.4 (4 tiles: 115.6).
// B: a 16-bit tap table per channel, each B register from two 16-bit loads (measured faster than
// the NCL kernel's pair tables with one tile per block: Conformer 0.039 against 0.050 ms, session
// 9, req*_bench_ab.log; a block builds 32 channels' tables).
// Session 13 (H100, bench/results/h100/session13/conf_call1_ab.log, Conformer k31 bf16 per call,
// alternating with main's kernel in one process): the LDSM variant at 2 tiles per block 36.5 ->
// 36.4 / 36.7 -> 36.5 us forward, 36.4 -> 35.9 / 36.5 -> 35.8 data-grad; at 4 tiles per block (one
// block per row and channel group on these 4-tile rows: 512 blocks, all resident) 36.5 -> 34.0 /
// 36.3 -> 33.8 forward, 36.0 -> 33.8 / 36.2 -> 33.8 data-grad (1 tile: 45.8, slower); the same bits.
// So 3 k-steps take LDSM, and rows of at most 4 tiles one block per row; 2 and 4 k-steps (k15
// causal, not measured in session 13; 4 tiles per block ran it slower in session 10) keep the
// shared-memory transpose and runs of 2 tiles.
constexpr int kTcClTilesPerBlock = 2, kTcClTilesPerRowBlock = 4;

// Guard of the per-channel 16-bit tap table: Tw reads taps -15 - sh ... 16 KS - 1.
template <int KS>
__host__ __device__ constexpr int tc_taps_halves() {
  return kTcGuard + 16 * KS;
}

// The B fragments of one channel from its tap table ft (taps at ft[kTcGuard + t], zeros around).
template <int KS>
__device__ __forceinline__ void tc_b_frags16(uint32_t (&bf)[KS][2][2], const uint16_t* ft, int sh, int lane) {
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int s = 0; s < KS; ++s) {
#pragma unroll
    for (int n = 0; n < 2; ++n) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int tap = 16 * s + 2 * t + 8 * h - 8 * n - g - sh;  // Tw[j][i], j = 16 s + 2 t + 8 h, i = 8 n + g
        bf[s][n][h] = uint32_t(ft[kTcGuard + tap]) | (uint32_t(ft[kTcGuard + tap + 1]) << 16);
      }
    }
  }
}

// One tile, A by 32-bit loads from a window padded as tc_phys: acc[n] (D of n8 half n) += window * Tw.
template <typename T, int KS>
__device__ __forceinline__ void tc_tile_lds(float (&acc)[2][4], const uint32_t* wbuf, const uint32_t (&bf)[KS][2][2],
                                            int lane) {
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int s = 0; s < KS; ++s) {
    const uint32_t a[4] = {wbuf[tc_phys(8 * (g + s) + t)], wbuf[tc_phys(8 * (g + 8 + s) + t)],
                           wbuf[tc_phys(8 * (g + s) + t + 4)], wbuf[tc_phys(8 * (g + 8 + s) + t + 4)]};
    mma16816<T>(acc[0], a, bf[s][0]);
    mma16816<T>(acc[1], a, bf[s][1]);
  }
}

constexpr int kTcClWarps = 4;
constexpr int kTcClThreads = 32 * kTcClWarps;

struct TcRowCl {
  uint32_t blocks, cgroups, tiles;  // blocks = rows * segs * cgroups; tiles per row
  uint32_t segs, tps;               // runs of at most tps tiles per row
  int in_len, out_len, C;
  int pad0, sh;
  int K, wbase, wstep;
};

template <int KS>
__host__ __device__ constexpr int tc_cl_row_words() {  // words per channel row of the window: odd
  return tc_padded_words(tc_win<KS>() / 2) | 1;
}
// Raw window: 16-byte chunk ch (channels 8 ch ...) of position p at chunk 8 (p / 2) + (4 ((p ^ p /
// 2) & 1) | ch): the two positions of a pair sit in opposite 64-byte halves of a 128-byte line and
// consecutive pairs swap halves, so the copies (a quarter-warp: 2 positions x 4 chunks) and the
// transposing reads (2 pairs x 4 chunks) are conflict-free.
__host__ __device__ constexpr int tc_cl_raw_chunk(int p, int ch) { return 8 * (p >> 1) + ((((p ^ (p >> 1)) & 1) << 2) | ch); }
// LDSM (the kernel's variant for 3 k-steps): the threads transpose by ldmatrix.trans and read the
// A fragments by ldmatrix. Channel rows of WIN / 2 words, unpadded, stride 4 mod 8 words (a
// transposing store, 8 channels x 4 consecutive words, is conflict-free), 16-byte unit u of a row
// at u ^ ((u >> 3) & 1) (an A matrix's 8 rows, units 2 R + h for consecutive R, on 8 bank groups);
// raw window chunk ch of position p at 4 p + (ch ^ ((p >> 1) & 3)) (a transposing matrix, 8
// consecutive positions of one chunk, on 8 bank groups).
template <int KS>
__host__ __device__ constexpr int tc_cl_ldsm_row_words() {
  return tc_win<KS>() / 2 % 8 == 4 ? tc_win<KS>() / 2 : tc_win<KS>() / 2 + 4;
}
__host__ __device__ constexpr int tc_cl_ldsm_word(int w) { return w ^ (((w >> 5) & 1) << 2); }
__host__ __device__ constexpr int tc_cl_ldsm_raw_chunk(int p, int ch) { return 4 * p + (ch ^ ((p >> 1) & 3)); }
template <int KS, bool LDSM>
__host__ __device__ constexpr int tc_cl_smem_bytes() {  // 32 tap tables, max(rows, output tile), raw window
  constexpr int win = 32 * (LDSM ? tc_cl_ldsm_row_words<KS>() : tc_cl_row_words<KS>()), outw = 256 * 16;
  return 4 * (16 * tc_taps_halves<KS>() + (win > outw ? win : outw)) + 64 * tc_win<KS>();
}

// Swizzled word of (position p, 8-channel chunk c) in the output tile: 16 words per position.
__host__ __device__ constexpr int tc_cl_out_word(int p, int c) { return 16 * p + 4 * (c ^ ((p >> 1) & 3)); }

// in: [rows][in_len][C]; out: [rows][out_len][C]; w: [C][K]; bias: C or null.
template <typename T, int KS, bool LDSM>
__global__ void __launch_bounds__(kTcClThreads)
tc_row1d_cl(const T* __restrict__ in, const T* __restrict__ w, const T* __restrict__ bias, T* __restrict__ out,
            const TcRowCl L) {
  constexpr int WIN = tc_win<KS>(), RW = LDSM ? tc_cl_ldsm_row_words<KS>() : tc_cl_row_words<KS>();
  constexpr int FT = tc_taps_halves<KS>();
  extern __shared__ __align__(16) unsigned char smem_raw[];
  uint16_t* const ft = reinterpret_cast<uint16_t*>(smem_raw);  // [32][FT]
  uint32_t* const buf = reinterpret_cast<uint32_t*>(smem_raw) + 16 * FT;
  constexpr int win_words = 32 * RW, out_words = 256 * 16;
  TcVec* const raw = reinterpret_cast<TcVec*>(buf + (win_words > out_words ? win_words : out_words));
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  uint32_t b = blockIdx.x;
  const uint32_t cg = b % L.cgroups;
  b /= L.cgroups;
  const uint32_t seg = b % L.segs, row = b / L.segs;
  const int c0 = static_cast<int>(cg) * 32;
  const uint32_t q0 = seg * L.tps, q1 = q0 + L.tps < L.tiles ? q0 + L.tps : L.tiles;
  const T* const src = in + int64_t(row) * L.in_len * L.C;

  auto issue = [&](uint32_t q) {  // tile q's window: chunk v = (position v / 4, channels c0 + 8 (v % 4))
    const int p0 = static_cast<int>(q) * 256 - L.pad0;
    for (int v = tid; v < WIN * 4; v += kTcClThreads) {
      const int p = v / 4, ch = v % 4, c = c0 + 8 * ch, pos = p0 + p;
      const bool ok = c < L.C && pos >= 0 && pos < L.in_len;
      cp_async16(raw + (LDSM ? tc_cl_ldsm_raw_chunk(p, ch) : tc_cl_raw_chunk(p, ch)),
                 ok ? src + int64_t(pos) * L.C + c : in, ok ? 16 : 0);
    }
    cp_async_commit();
  };
  issue(q0);
  for (int e = tid; e < 32 * FT; e += kTcClThreads) {  // while the first window is in flight
    const int c = c0 + e / FT, tap = e % FT - kTcGuard;
    ft[e] = c < L.C && tap >= 0 && tap < L.K ? tc_bits(w[int64_t(c) * L.K + L.wbase + L.wstep * tap]) : uint16_t(0);
  }
  T* const dst = out + int64_t(row) * L.out_len * L.C;
  for (uint32_t q = q0; q < q1; ++q) {
    cp_async_wait<0>();
    __syncthreads();  // the window is in raw; the previous tile's reads of buf are done
    if constexpr (LDSM) {
      // Positions 8 G + [0, 8) per ldmatrix.trans: matrix j = chunk j; lane (g, t) receives channel
      // 8 j + g's values at positions 8 G + 2 t, + 1, i.e. word 4 G + t of that channel's row. A
      // block-uniform round count (the CPU harness's ldmatrix is a block-wide exchange): the last
      // round's idle warps load and drop.
      const int g = lane / 4, t = lane % 4;
#pragma unroll 1
      for (int G0 = 0; G0 < WIN / 8; G0 += kTcClWarps) {
        const int G = G0 + warp < WIN / 8 ? G0 + warp : WIN / 8 - 1;
        uint32_t a[4];
        tc_ldsm_x4_trans(a, reinterpret_cast<const uint32_t*>(raw + tc_cl_ldsm_raw_chunk(8 * G + lane % 8, lane / 8)));
        if (G0 + warp < WIN / 8) {
#pragma unroll
          for (int j = 0; j < 4; ++j) buf[(8 * j + g) * RW + tc_cl_ldsm_word(4 * G + t)] = a[j];
        }
      }
    }
    // Unit u = (position pair pp = u / 4, chunk ch = u % 4): channel 8 ch + e's word holds its
    // values at positions 2 pp, 2 pp + 1.
    for (int u = tid; !LDSM && u < (WIN / 2) * 4; u += kTcClThreads) {
      const int ch = u % 4, pp = u / 4;
      const TcVec x0 = raw[tc_cl_raw_chunk(2 * pp, ch)], x1 = raw[tc_cl_raw_chunk(2 * pp + 1, ch)];
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        const uint32_t lo = x0.v[e / 2], hi = x1.v[e / 2];
#if defined(__CUDA_ARCH__)
        const uint32_t word = __byte_perm(lo, hi, e % 2 ? 0x7632u : 0x5410u);
#else
        const uint32_t word = e % 2 ? (lo >> 16) | (hi & 0xffff0000u) : (lo & 0xffffu) | (hi << 16);
#endif
        buf[(8 * ch + e) * RW + tc_phys(pp)] = word;
      }
    }
    __syncthreads();  // raw is free, the rows are complete
    if (q + 1 < q1) issue(q + 1);

    // Warp `warp`: channels 8 warp + [0, 8). res[e][n][hh]: channel e's outputs at positions
    // 16 (g + 8 hh) + 8 n + 2 t, + 1 (a packed pair).
    uint32_t res[8][2][2];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const int cl = 8 * warp + e;
      uint32_t bf[KS][2][2];
      tc_b_frags16<KS>(bf, ft + cl * FT, L.sh, lane);
      float acc[2][4] = {};
      if constexpr (LDSM) {
#pragma unroll
        for (int s = 0; s < KS; ++s) {  // A: rows R = s + [0, 16) (blocks), words 8 R + 4 (lane / 16) + [0, 4)
          uint32_t a[4];
          tc_ldsm_x4(a, buf + cl * RW + tc_cl_ldsm_word(8 * (s + lane % 8 + 8 * (lane / 8 % 2)) + 4 * (lane / 16)));
          mma16816<T>(acc[0], a, bf[s][0]);
          mma16816<T>(acc[1], a, bf[s][1]);
        }
      } else {
        tc_tile_lds<T, KS>(acc, buf + cl * RW, bf, lane);
      }
      const float b0 = bias && c0 + cl < L.C ? static_cast<float>(bias[c0 + cl]) : 0.f;
#pragma unroll
      for (int n = 0; n < 2; ++n) {
#pragma unroll
        for (int hh = 0; hh < 2; ++hh)
          res[e][n][hh] = pack16x2<T>(static_cast<T>(acc[n][2 * hh] + b0), static_cast<T>(acc[n][2 * hh + 1] + b0));
      }
    }
    __syncthreads();  // every warp's window reads are done: the tile reuses the rows
    {
      const int g = lane / 4, t = lane % 4;
#pragma unroll
      for (int n = 0; n < 2; ++n) {
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          const int p = 16 * (g + 8 * hh) + 8 * n + 2 * t;
#pragma unroll
          for (int k = 0; k < 2; ++k) {  // position p + k: the low (k = 0) or high halves of the 8 channels
            TcVec v;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
              const uint32_t lo = res[2 * j][n][hh], hi = res[2 * j + 1][n][hh];
#if defined(__CUDA_ARCH__)
              v.v[j] = __byte_perm(lo, hi, k ? 0x7632u : 0x5410u);
#else
              v.v[j] = k ? (lo >> 16) | (hi & 0xffff0000u) : (lo & 0xffffu) | (hi << 16);
#endif
            }
            *reinterpret_cast<TcVec*>(buf + tc_cl_out_word(p + k, warp)) = v;
          }
        }
      }
    }
    __syncthreads();
    const int o0 = static_cast<int>(q) * 256;
    for (int u = tid; u < 256 * 4; u += kTcClThreads) {
      const int ch = u % 4, p = u / 4, c = c0 + 8 * ch;
      if (c < L.C && o0 + p < L.out_len)
        *reinterpret_cast<TcVec*>(dst + int64_t(o0 + p) * L.C + c) =
            *reinterpret_cast<const TcVec*>(buf + tc_cl_out_word(p, ch));
    }
  }
}

// The plan checks and grids (the launchers, tc_row1d.cu, and the CPU harness use them).

// Taps per k-step count: KS = ceil((15 + K + sh) / 16), pad0 = pad rounded up to a multiple of 8.
inline void tc_window(int K, int pad, int& pad0, int& sh, int& KS) {
  pad0 = static_cast<int>(ceil_div(int64_t(pad) + (int64_t(1) << 30), 8) * 8 - (int64_t(1) << 30));
  sh = pad0 - pad;
  KS = static_cast<int>(ceil_div(15 + K + sh, 16));
}

// Channels-last tiles per block: 3 k-steps on rows of at most 4 tiles take a whole row per block
// (measured faster, kTcClTilesPerBlock's comment), everything else main's runs of 2.
inline int tc_cl_tiles_per_block(int K, int pad, int64_t out_len) {
  int pad0 = 0, sh = 0, KS = 0;
  tc_window(K, pad, pad0, sh, KS);
  return KS == 3 && ceil_div(out_len, 256) <= kTcClTilesPerRowBlock ? kTcClTilesPerRowBlock : kTcClTilesPerBlock;
}

// NCL: 1-D rows, one phase at stride 1, multiplier 1; tps_target tiles per warp at most.
inline bool tc_row1d_items(TcRow& L, const Plan& P, int K, int wbase, int wstep, int tps_target, int& KS) {
  if (P.phases != 1 || P.S[2] != 1 || P.J != 1 || P.in_div != 1 || P.k[0] != 1 || P.k[1] != 1) return false;
  if (P.in[0] != 1 || P.in[1] != 1 || P.out[0] != 1 || P.out[1] != 1) return false;
  if (P.in[2] >= (int64_t(1) << 30) || P.out[2] >= (int64_t(1) << 30) || P.out[2] <= 0) return false;
  if (P.pad[2][0] <= -(1 << 20) || P.pad[2][0] >= (1 << 20)) return false;
  tc_window(K, P.pad[2][0], L.pad0, L.sh, KS);
  const int64_t tiles = ceil_div(P.out[2] + 7, 256);  // the row's outputs start up to 7 past the grid
  const int64_t segs = ceil_div(tiles, tps_target);
  const int64_t items = P.N * P.out_c * segs;
  if (items <= 0 || items >= (int64_t(1) << 31)) return false;
  L.items = static_cast<uint32_t>(items);
  L.segs = static_cast<uint32_t>(segs);
  L.tps = static_cast<int>(ceil_div(tiles, segs));
  L.tiles = static_cast<int>(tiles);
  L.in_w = static_cast<int>(P.in[2]);
  L.out_w = static_cast<int>(P.out[2]);
  L.K = K, L.out_c = static_cast<int>(P.out_c), L.wbase = wbase, L.wstep = wstep;
  return true;
}

// Channels-last: one phase at stride 1, multiplier 1, a 1 x K filter (rows: every sample and
// leading position), channels a multiple of 8; runs of at most tps_target tiles per block.
inline bool tc_row1d_cl_blocks(TcRowCl& L, const Plan& P, int K, int wbase, int wstep, int tps_target, int& KS) {
  if (P.phases != 1 || P.in_div != 1 || P.J != 1 || P.out_c != P.in_c || P.S[2] != 1 || P.out_c % 8 != 0) return false;
  for (int d = 0; d < 2; ++d) {
    if (P.k[d] != 1 || P.S[d] != 1 || P.pad[d][0] != 0 || P.in[d] != P.out[d]) return false;
  }
  if (P.in[2] >= (int64_t(1) << 30) || P.out[2] >= (int64_t(1) << 30) || P.out[2] <= 0 || P.out_c >= (1 << 24)) return false;
  if (P.pad[2][0] <= -(1 << 20) || P.pad[2][0] >= (1 << 20)) return false;
  tc_window(K, P.pad[2][0], L.pad0, L.sh, KS);
  const int64_t rows = P.N * P.in[0] * P.in[1], tiles = ceil_div(P.out[2], 256), cgroups = ceil_div(P.out_c, 32);
  const int64_t segs = ceil_div(tiles, std::max(tps_target, 1));
  const int64_t blocks = rows * segs * cgroups;
  if (blocks <= 0 || blocks >= (int64_t(1) << 31)) return false;
  L.blocks = static_cast<uint32_t>(blocks);
  L.cgroups = static_cast<uint32_t>(cgroups);
  L.tiles = static_cast<uint32_t>(tiles);
  L.segs = static_cast<uint32_t>(segs);
  L.tps = static_cast<uint32_t>(ceil_div(tiles, segs));
  L.in_len = static_cast<int>(P.in[2]);
  L.out_len = static_cast<int>(P.out[2]);
  L.C = static_cast<int>(P.out_c);
  L.K = K, L.wbase = wbase, L.wstep = wstep;
  return true;
}

}  // namespace convx::cuda
