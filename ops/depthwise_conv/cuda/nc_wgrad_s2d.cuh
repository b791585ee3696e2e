// NCHW 16-bit 3x3 / 5x5 stride-1 weight-grads of small planes with whole planes staged in shared
// memory (session 13, mb16). nc_wgrad_stream loads every value by a 2-byte load straight from
// global memory (a 4 x 4 micro-tile: 52 loads per 144 FMAs). Here a block takes one channel and a
// chunk of samples; per step it copies the x and grad_output planes of SP samples into a ring slot
// (cp.async pieces of 16, 8 or 4 bytes, whichever the row length and the pointers allow; two steps
// ahead in a ring of 3 slots, one barrier a step). An x plane sits at row offset ph and column offset
// kNcS2dXOff in its slot, so that the padding around it is zeros that no copy writes (the ring is
// zeroed once): no bounds tests in the products. Width padding (K - 1) / 2 only (compile-time
// register indices); other paddings keep nc_wgrad_stream. A thread owns a micro-tile of TH rows x R columns
// of one sample's plane and reads its grad_output (R-wide vector reads) and its TH + K - 1 input
// row segments (R + K - 1 values) from the slot; the tap sums stay in registers across the chunk.
// Then the block's sums in a fixed order (wgrad_block_sum: warp butterfly, warps in order) into
// one partial per (channel, chunk) (or the weight-grad itself with one chunk): bitwise repeatable.
// nc_wgrad_s2d_ranges (session 14, mb; the 3x3 path): the same steps and products, the (channel,
// step) units dealt in contiguous ranges to the blocks that run at once (deal_nc_s2d).
#pragma once

#include "ops/depthwise_conv/cuda/cp_async.cuh"
#include "ops/depthwise_conv/cuda/nc_wgrad_stream.cuh"
#include "ops/depthwise_conv/cuda/plan.cuh"
#include "ops/depthwise_conv/cuda/words16.cuh"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace convx::cuda {

constexpr int kNcS2dXOff = 8;       // x column 0 in a slot (16 bytes: aligned copies)
constexpr int kNcS2dSlot = 7424;    // 16-bit values a slot holds at most (14.5 KB)
// Ring slots: 4 (3 steps ahead) measured the same within 2% (H100, session 13, mb16_call2_ab.log:
// MobileNetV2 56x56 fp16 0.0649 vs 0.0651 ms, EfficientNet 28x28 fp16 0.0503 vs 0.0509).
constexpr int kNcS2dRing = 3;
constexpr int kNcS2dPieces = 8;     // copies a thread issues per step at most
constexpr int kNcS2dThreads = 256;

// Micro-tile: 3x3 2 rows x 8 columns (one 16-byte grad_output read a row); 5x5 2 x 4 (8-byte
// reads: 28-wide planes take 7 of them; 25 tap sums + 8 + 2 x 8 values in registers).
template <int K>
struct NcS2dShape {
  static constexpr int TH = 2, R = K == 3 ? 8 : 4;
};

struct NcS2dTile {
  int strips, tiles;   // tiles of a plane (bands x strips, strips fastest)
  int SP;              // samples per step
  int threads;         // tiles * SP rounded up to whole warps
  int XS, XR, GS, GR;  // slot layout: x rows of XS values (XR rows), grad_output GS x GR
  int PB;              // bytes per copy (16, 8 or 4)
  int slot;            // values per ring slot (a multiple of 8)
  int chunk, chunks;   // samples per block, blocks per channel (nc_wgrad_s2d)
  // nc_wgrad_s2d_ranges: a unit = (channel, step), channel-major; block b takes units
  // [b * units / blocks, (b + 1) * units / blocks) and has cmax partial slots
  int steps, units, blocks, cmax;
};

// The block whose unit range holds unit u (ranges [floor(b * U / B), floor((b + 1) * U / B))).
__host__ __device__ inline int nc_s2d_block_of(int64_t u, int64_t U, int64_t B) {
  return static_cast<int>(((u + 1) * B - 1) / U);
}
__host__ __device__ inline int64_t nc_s2d_lo(int64_t b, int64_t U, int64_t B) { return b * U / B; }

// The layout from the shapes and pointers; false: not a plane this kernel takes.
template <int K>
inline bool choose_nc_s2d(NcS2dTile& L, const Plan& P, uintptr_t xa, uintptr_t ga, int64_t sms) {
  using S = NcS2dShape<K>;
  const int64_t IH = P.in[1], IW = P.in[2], OH = P.q[1], OW = P.q[2];
  if (P.k[0] != 1 || P.in[0] != 1 || P.q[0] != 1 || P.in_div != 1 || P.N <= 0 || P.pad[1][0] > K - 1 ||
      P.pad[2][0] != (K - 1) / 2 || OH <= 0 || OW <= 0)
    return false;
  const int64_t strips = ceil_div(OW, S::R), bands = ceil_div(OH, S::TH), tiles = strips * bands;
  if (tiles > kNcS2dThreads) return false;
  int PB = 16;
  while (PB > 4 && ((IW * 2) % PB || (OW * 2) % PB || xa % PB || ga % PB)) PB /= 2;
  if ((IW * 2) % PB || (OW * 2) % PB || xa % PB || ga % PB) return false;
  // x: rows -ph .. of the tiles' reach, columns from kNcS2dXOff - pw; whole 16-byte rows
  const int64_t XR = bands * S::TH + K - 1;
  const int64_t XS = ceil_div(kNcS2dXOff - P.pad[2][0] + strips * S::R + K - 1, 8) * 8;
  const int64_t GS = ceil_div(strips * S::R, 8) * 8, GR = bands * S::TH;
  if (IH + P.pad[1][0] > XR || kNcS2dXOff + IW > XS) return false;
  const int64_t plane = XR * XS + GR * GS;
  if (plane > kNcS2dSlot) return false;
  int64_t SP = std::min<int64_t>({kNcS2dThreads / tiles, kNcS2dSlot / plane, P.N});
  // copies per thread per step
  const auto pieces = [&](int64_t sp) {
    const int64_t per = (IH * IW + OH * OW) * 2 / PB * sp, thr = ceil_div(tiles * sp, 32) * 32;
    return ceil_div(per, thr);
  };
  while (SP > 1 && pieces(SP) > kNcS2dPieces) --SP;
  if (pieces(SP) > kNcS2dPieces) return false;
  L.strips = static_cast<int>(strips);
  L.tiles = static_cast<int>(tiles);
  L.SP = static_cast<int>(SP);
  L.threads = static_cast<int>(ceil_div(tiles * SP, 32) * 32);
  L.XS = static_cast<int>(XS), L.XR = static_cast<int>(XR), L.GS = static_cast<int>(GS), L.GR = static_cast<int>(GR);
  L.PB = PB;
  L.slot = static_cast<int>(ceil_div(SP * plane, 8) * 8);
  // Blocks per channel: the fewest with the least steps on the busiest of `sms` SMs (blocks dealt
  // evenly, each block 2 steps more for filling its ring), a block at least 2 steps; one chunk writes the
  // weight-grad itself.
  const int64_t steps = ceil_div(P.N, SP);
  L.steps = static_cast<int>(steps);
  L.units = static_cast<int>(P.out_c * steps);  // < 2^31: checked below
  int64_t best = -1, chunks = 1;
  for (int64_t c = 1; c <= std::min<int64_t>(8, std::max<int64_t>(1, steps / 2)); ++c) {
    const int64_t cost = ceil_div(P.out_c * c, sms) * (ceil_div(steps, c) + 2);
    if (best < 0 || cost < best) best = cost, chunks = c;
  }
  L.chunk = static_cast<int>(ceil_div(steps, chunks) * SP);
  L.chunks = static_cast<int>(ceil_div(P.N, L.chunk));
  return P.N * P.out_c < (int64_t(1) << 31) && P.out_c * L.chunks < (int64_t(1) << 31);
}

// nc_wgrad_s2d_ranges' grid for `resident` blocks running at once (session 14, mb). nc_wgrad_s2d
// gives each (channel, chunk of samples) its own block: MobileNetV2 56x56 C 144 made 576 blocks of
// 16 steps for 264 resident (113 registers: 2 per SM), a third wave 18% full. Here the (channel,
// step) units are dealt in equal contiguous ranges to at most `resident` blocks (91 / 94 registers:
// 3 per SM), each staging on across channel boundaries (its ring filled once) and writing one
// partial per channel it meets (summed by nc_s2d_sum). Where some divisor of C blocks is as fast
// (whole channels a block), the blocks write the weight-grad themselves: no partials, no sum
// launch (a sum launch counted as one step).
inline void deal_nc_s2d(NcS2dTile& L, int64_t C, int64_t resident) {
  const int64_t U = L.units, B1 = std::clamp<int64_t>(resident, 1, U);
  const int64_t cost1 = ceil_div(U, B1) + 1;
  int64_t B2 = 1;
  for (int64_t d = std::min(C, std::max<int64_t>(resident, 1)); d >= 1; --d) {
    if (C % d == 0) {
      B2 = d;
      break;
    }
  }
  const int64_t B = (C / B2) * L.steps <= cost1 ? B2 : B1;
  L.blocks = static_cast<int>(B);
  L.cmax = 1;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t c0 = nc_s2d_lo(b, U, B) / L.steps, c1 = (nc_s2d_lo(b + 1, U, B) - 1) / L.steps;
    L.cmax = std::max<int>(L.cmax, static_cast<int>(c1 - c0 + 1));
  }
}

// True when every channel lies in one block's range (the blocks write the weight-grad).
inline bool nc_s2d_whole_channels(const NcS2dTile& L, int64_t C) { return C % L.blocks == 0; }

// The VW 16-bit values at p (shared memory, 2 * VW-byte aligned: one vector read) as floats.
template <typename T, int VW>
__device__ __forceinline__ void nc_s2d_cvt(const T* p, float (&out)[VW]) {
  static_assert(sizeof(T) == 2 && (VW == 4 || VW == 8), "16-bit storage, 8- or 16-byte reads");
#ifdef __CUDA_ARCH__
  using W = std::conditional_t<VW == 8, uint4, uint2>;
  const W w = *reinterpret_cast<const W*>(p);
  unsigned u[VW / 2];
  memcpy(u, &w, 2 * VW);
  words_to_acc<T, VW>(u, out);
#else
  for (int k = 0; k < VW; ++k) out[k] = static_cast<float>(p[k]);
#endif
}

// The thread's copies of a step (i = t + k * nth): piece i of the SP x planes' rows, then of the
// grad_output planes'; src: offset from the sample's plane (smp: sample of the step, x planes
// first, -1: none), dst: in the slot.
__device__ __forceinline__ void nc_s2d_pieces(const NcS2dTile& L, int IH, int IW, int OH, int OW, int ph, int t,
                                              int nth, int (&src)[kNcS2dPieces], int (&dst)[kNcS2dPieces],
                                              int (&smp)[kNcS2dPieces]) {
  const int XPL = L.XR * L.XS, GPL = L.GR * L.GS, XTOT = L.SP * XPL;
  const int xrow = IW * 2 / L.PB, grow_ = OW * 2 / L.PB, xp = IH * xrow, gp = OH * grow_;
  const int npieces = L.SP * (xp + gp), pe = L.PB / 2;  // values per piece
#pragma unroll
  for (int k = 0; k < kNcS2dPieces; ++k) {
    const int i = t + k * nth;
    src[k] = 0, dst[k] = 0, smp[k] = -1;
    if (i < npieces) {
      if (i < L.SP * xp) {
        const int ss = i / xp, r = i % xp, row = r / xrow, col = (r % xrow) * pe;
        smp[k] = ss, src[k] = row * IW + col;
        dst[k] = ss * XPL + (row + ph) * L.XS + kNcS2dXOff + col;
      } else {
        const int j = i - L.SP * xp, ss = j / gp, r = j % gp, row = r / grow_, col = (r % grow_) * pe;
        smp[k] = L.SP + ss, src[k] = row * OW + col;
        dst[k] = XTOT + ss * GPL + row * L.GS + col;
      }
    }
  }
}

// One step's products of a thread's micro-tile (slot s; xo / go: its first x / grad_output value,
// XS / GS: the slot's row pitches) added into the tap sums v.
template <typename T, int K>
__device__ __forceinline__ void nc_s2d_products(const T* s, int xo, int go, int XS, int GS, float (&v)[K * K]) {
  using S = NcS2dShape<K>;
  constexpr int TH = S::TH, R = S::R, NX = R + K - 1, PW = (K - 1) / 2;
  float g[TH][R];
#pragma unroll
  for (int h = 0; h < TH; ++h) nc_s2d_cvt<T, R>(s + go + h * GS, g[h]);
#pragma unroll
  for (int j = 0; j < TH + K - 1; ++j) {
    // columns strip * R - PW + c of input row band * TH - ph + j: c = PW .. PW + R - 1 one
    // aligned read, the PW on either side single values
    const T* const xr = s + xo + j * XS;
    float xv[NX], mid[R];
    nc_s2d_cvt<T, R>(xr + PW, mid);
#pragma unroll
    for (int c = 0; c < NX; ++c) xv[c] = c >= PW && c < PW + R ? mid[c - PW] : static_cast<float>(xr[c]);
#pragma unroll
    for (int h = 0; h < TH; ++h) {
      const int kh = j - h;
      if (kh >= 0 && kh < K) {
#pragma unroll
        for (int kw = 0; kw < K; ++kw) {
#pragma unroll
          for (int r = 0; r < R; ++r) v[kh * K + kw] += g[h][r] * xv[r + kw];
        }
      }
    }
  }
}

// Issues a thread's copies (its pieces src / dst / smp from nc_s2d_pieces) of one step into slot s:
// channel co's x and grad_output planes (xpl / gpl values each, C channels) of samples
// nb + (0 .. SP - 1), those below n_end. The caller commits the group.
template <typename T>
__device__ __forceinline__ void nc_s2d_stage(T* s, const T* x, const T* gy, const NcS2dTile& L, int C, int64_t xpl,
                                             int64_t gpl, const int (&src)[kNcS2dPieces],
                                             const int (&dst)[kNcS2dPieces], const int (&smp)[kNcS2dPieces], int co,
                                             int nb, int n_end) {
#pragma unroll
  for (int k = 0; k < kNcS2dPieces; ++k) {
    if (smp[k] >= 0) {
      const bool isx = smp[k] < L.SP;
      const int n = nb + (isx ? smp[k] : smp[k] - L.SP);
      if (n < n_end) {
        const T* g = isx ? x + (int64_t(n) * C + co) * xpl + src[k] : gy + (int64_t(n) * C + co) * gpl + src[k];
        if (L.PB == 16) {
          cp_async16(s + dst[k], g, 16);
        } else {
          cp_async_n(s + dst[k], g, L.PB);
        }
      }
    }
  }
}

// Dynamic shared memory: kNcS2dRing slots of L.slot values.
template <typename T, int K, typename O = float>
__global__ void __launch_bounds__(kNcS2dThreads, 2)
nc_wgrad_s2d(const T* __restrict__ x, const T* __restrict__ gy, O* __restrict__ part, const Plan P,
             const NcS2dTile L) {
  using S = NcS2dShape<K>;
  constexpr int TH = S::TH, R = S::R, NV = K * K, PW = (K - 1) / 2;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* const ring = reinterpret_cast<T*>(smem_raw);
  __shared__ float red[(kNcS2dThreads / 32) * NV];
  const int t = threadIdx.x, nth = blockDim.x;
  const int IH = static_cast<int>(P.in[1]), IW = static_cast<int>(P.in[2]);
  const int OH = static_cast<int>(P.q[1]), OW = static_cast<int>(P.q[2]);
  const int ph = P.pad[1][0], C = static_cast<int>(P.out_c);
  const int64_t xpl = int64_t(IH) * IW, gpl = int64_t(OH) * OW;
  const int XPL = L.XR * L.XS, GPL = L.GR * L.GS, XTOT = L.SP * XPL;
  const int N = static_cast<int>(P.N);
  // The ring's padding stays zero: the copies write the planes' interiors only.
  for (int i = t; i < kNcS2dRing * L.slot / 8; i += nth) reinterpret_cast<uint4*>(ring)[i] = uint4{0, 0, 0, 0};
  __syncthreads();
  int src[kNcS2dPieces], dst[kNcS2dPieces], smp[kNcS2dPieces];
  nc_s2d_pieces(L, IH, IW, OH, OW, ph, t, nth, src, dst, smp);
  // The thread's micro-tile: sample ss of the step, band / strip; its reads in the slot.
  const int ss = t / L.tiles, tile = t - ss * L.tiles;
  const bool active = t < L.tiles * L.SP;
  const int band = tile / L.strips, strip = tile - band * L.strips;
  const int xo = ss * XPL + band * TH * L.XS + kNcS2dXOff - PW + strip * R;
  const int go = XTOT + ss * GPL + band * TH * L.GS + strip * R;

  const int64_t blocks = P.out_c * L.chunks;
  for (int64_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    const int co = static_cast<int>(b / L.chunks), ck = static_cast<int>(b % L.chunks);
    const int n0 = ck * L.chunk, n1 = n0 + L.chunk < N ? n0 + L.chunk : N;
    const int steps = (n1 - n0 + L.SP - 1) / L.SP;
    int sstep = 0, sbuf = 0;
    // Copies step sstep's planes (samples n0 + sstep * SP + ss) into slot sbuf; commits a group.
    const auto stage_next = [&]() {
      if (sstep < steps)
        nc_s2d_stage(ring + sbuf * L.slot, x, gy, L, C, xpl, gpl, src, dst, smp, co, n0 + sstep * L.SP, n1);
      ++sstep;
      cp_async_commit();
      sbuf = sbuf == kNcS2dRing - 1 ? 0 : sbuf + 1;
    };
    float v[NV];
#pragma unroll
    for (int i = 0; i < NV; ++i) v[i] = 0.f;
    stage_next();
    stage_next();
    int rd = 0;
    for (int st = 0; st < steps; ++st) {
      cp_async_wait<kNcS2dRing - 2>();
      __syncthreads();
      stage_next();
      const T* const s = ring + rd * L.slot;
      rd = rd == kNcS2dRing - 1 ? 0 : rd + 1;
      if (!active || n0 + st * L.SP + ss >= n1) continue;
      nc_s2d_products<T, K>(s, xo, go, L.XS, L.GS, v);
    }
    cp_async_wait<0>();
    __syncthreads();  // the ring is reused by the block's next (channel, chunk)
    wgrad_block_sum<NV>(v, red, part + (int64_t(co) * L.chunks + ck) * NV);
  }
}

// nc_wgrad_s2d with the (channel, step) units dealt in ranges (deal_nc_s2d; session 14, mb): the
// staging cursor runs ahead over the block's range across channel boundaries; at a channel's last
// unit in the range the block's sums (fixed order) go to the weight-grad (whole channels a block)
// or to its partial slot co - (its first channel), summed by nc_s2d_sum. Dynamic shared memory as
// nc_wgrad_s2d's.
template <typename T, int K, typename O = float>
__global__ void __launch_bounds__(kNcS2dThreads, 2)
nc_wgrad_s2d_ranges(const T* __restrict__ x, const T* __restrict__ gy, O* __restrict__ part, const Plan P,
                    const NcS2dTile L) {
  using S = NcS2dShape<K>;
  constexpr int TH = S::TH, R = S::R, NV = K * K, PW = (K - 1) / 2;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* const ring = reinterpret_cast<T*>(smem_raw);
  __shared__ float red[(kNcS2dThreads / 32) * NV];
  const int t = threadIdx.x, nth = blockDim.x;
  const int IH = static_cast<int>(P.in[1]), IW = static_cast<int>(P.in[2]);
  const int OH = static_cast<int>(P.q[1]), OW = static_cast<int>(P.q[2]);
  const int ph = P.pad[1][0], C = static_cast<int>(P.out_c);
  const int64_t xpl = int64_t(IH) * IW, gpl = int64_t(OH) * OW;
  const int XPL = L.XR * L.XS, GPL = L.GR * L.GS, XTOT = L.SP * XPL;
  const int N = static_cast<int>(P.N);
  // The ring's padding stays zero: the copies write the planes' interiors only.
  for (int i = t; i < kNcS2dRing * L.slot / 8; i += nth) reinterpret_cast<uint4*>(ring)[i] = uint4{0, 0, 0, 0};
  __syncthreads();
  int src[kNcS2dPieces], dst[kNcS2dPieces], smp[kNcS2dPieces];
  nc_s2d_pieces(L, IH, IW, OH, OW, ph, t, nth, src, dst, smp);
  const int ss = t / L.tiles, tile = t - ss * L.tiles;
  const bool active = t < L.tiles * L.SP;
  const int band = tile / L.strips, strip = tile - band * L.strips;
  const int xo = ss * XPL + band * TH * L.XS + kNcS2dXOff - PW + strip * R;
  const int go = XTOT + ss * GPL + band * TH * L.GS + strip * R;

  // The block's units [lo, hi) (unit u: channel u / steps, samples (u % steps) * SP + ss).
  const int lo = static_cast<int>(nc_s2d_lo(blockIdx.x, L.units, L.blocks));
  const int hi = static_cast<int>(nc_s2d_lo(blockIdx.x + 1, L.units, L.blocks));
  const int cfirst = lo / L.steps;
  int su = lo, sbuf = 0;
  // Copies unit su's planes into slot sbuf; commits a group (maybe empty).
  const auto stage_next = [&]() {
    if (su < hi) {
      const int co = su / L.steps;
      nc_s2d_stage(ring + sbuf * L.slot, x, gy, L, C, xpl, gpl, src, dst, smp, co, (su - co * L.steps) * L.SP, N);
    }
    ++su;
    cp_async_commit();
    sbuf = sbuf == kNcS2dRing - 1 ? 0 : sbuf + 1;
  };
  float v[NV];
#pragma unroll
  for (int i = 0; i < NV; ++i) v[i] = 0.f;
  stage_next();
  stage_next();
  int rd = 0;
  for (int u = lo; u < hi; ++u) {
    cp_async_wait<kNcS2dRing - 2>();
    __syncthreads();
    stage_next();
    const T* const s = ring + rd * L.slot;
    rd = rd == kNcS2dRing - 1 ? 0 : rd + 1;
    const int co = u / L.steps, st = u - co * L.steps;
    if (active && st * L.SP + ss < N) nc_s2d_products<T, K>(s, xo, go, L.XS, L.GS, v);
    if (st == L.steps - 1 || u == hi - 1) {  // block-uniform
      O* const out = std::is_same_v<O, float> ? part + (int64_t(blockIdx.x) * L.cmax + (co - cfirst)) * NV
                                              : part + int64_t(co) * NV;
      wgrad_block_sum<NV>(v, red, out);
#pragma unroll
      for (int i = 0; i < NV; ++i) v[i] = 0.f;
    }
  }
  cp_async_wait<0>();
}

// gw[co][tap] = the partials of channel co's blocks (part [blocks][cmax][NV]), in block order.
template <typename T>
__global__ void nc_s2d_sum(const float* __restrict__ part, T* __restrict__ gw, int64_t C, const NcS2dTile L, int NV) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= C * NV) return;
  const int64_t co = i / NV, tap = i % NV, U = L.units, B = L.blocks;
  const int b0 = nc_s2d_block_of(co * L.steps, U, B), b1 = nc_s2d_block_of(co * L.steps + L.steps - 1, U, B);
  float s = 0.f;
  for (int b = b0; b <= b1; ++b) {
    const int64_t cf = nc_s2d_lo(b, U, B) / L.steps;
    s += part[(int64_t(b) * L.cmax + (co - cf)) * NV + tap];
  }
  gw[i] = static_cast<T>(s);
}

}  // namespace convx::cuda
