// 16-bit KD x 3 x 3 depthwise forward / stride-1 data-grad on tensor cores, NCDHW, streaming along
// depth (issue #9: X3D's 5 x 3 x 3 bf16 row; session 13). depth3d_nc_mma.
//
// Why: the CUDA-core depth3d_nc_units is issue-bound (~500 instructions, 360 of them FFMA, per
// thread and input plane: ~2 instructions per output and input plane; 50% of the fp32 FMA peak);
// session 10's tensor-core tc_rows_nc used a Toeplitz filter along W (3 of 16 K slots useful) and
// lost to it. Here the GEMM is per channel: M = 16 output positions, K = the 9 (kh, kw) taps of
// one input plane (12 of 16 slots hold a tap or a masked zero), N = 8 accumulator columns, column
// n holding the output depths s = n mod 8 of the walk. Input plane `rel` feeds output s = rel - kd
// with tap kd, so its B puts filter depth kd in column (rel - kd) mod 8 (5 of 8 columns used):
// the 8 rotations are 8 B fragments per parity, in registers, and the depth loop is unrolled by
// 8 planes. After plane rel, column (rel - KD + 1) mod 8 is complete (stored, then unused) and
// column (rel + 1) mod 8 restarts from the bias before its first plane (this also clears what the
// zero B columns of the planes between added: 0 x inf).
//
// A: a lane (g, t) of the warp owns two groups of 8 consecutive outputs (M rows g and g + 8: any
// two groups of its unit's rows) and filter row kh = t (t = 3: zeros). For a group it reads the
// input row's 10 values q[-1 .. 8] once per plane (one 16-byte and two 2-byte shared loads) and
// builds the A fragments of 8 MMAs: tile r computes output r of every group. A 32-bit A register
// holds two 16-bit taps, so both must sit in one aligned word: for an even r they are the words
// (x[r - 2] masked, x[r - 1]) and (x[r], x[r + 1]) (taps (none, 0), (1, 2)); for an odd r (x[r - 1],
// x[r]) and (x[r + 1], x[r + 2] masked) (taps (0, 1), (2, none)): B has one layout per parity.
// Masked halves are zero bits (a zero weight times an inf input would be NaN). Per plane and warp
// (128 outputs): 8 MMAs, 6 shared loads, 14 masks, 2 16-byte stores (by the 8 lanes holding the
// finished column) and the bias restart, against 4 x ~500 instructions on CUDA cores.
//
// Staging (as depth3d_nc_units): a block is one unit of NR output rows of one (sample, channel)
// plane; per input plane it stages the NR + 2 input rows (16-byte cp.async, zero rows outside the
// input) into rows of W + 16 values whose first and last 8 stay zero (the width padding), in a
// ring of 3 planes, one barrier per plane.
// Covers: fp16 / bf16, sm >= 80, one phase, multiplier 1, KD x 3 x 3 at stride 1 with width
// padding 1 and output width = input width, a multiple of 8 (any depth / height padding), 16-byte
// aligned input and output.
#pragma once

#include "ops/depthwise_conv/cuda/cl_tiled.cuh"
#include "ops/depthwise_conv/cuda/cp_async.cuh"
#include "ops/depthwise_conv/cuda/depth3d_regs.cuh"
#include "ops/depthwise_conv/cuda/mma16.cuh"
#include "ops/depthwise_conv/cuda/plan.cuh"

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace convx::cuda {

constexpr int kD3mMaxWarps = 8;
constexpr int kD3mZero = 24;  // a zero run the lanes without a row read (t = 3, idle groups)

struct D3mBlocks {
  uint32_t blocks, ublocks;  // blocks in all, per depth segment
  int nr, rtiles, strips, warps, dl;
};

inline size_t d3m_smem_bytes(int W, int nr, size_t esz) {
  return (size_t(kD3rRing) * (nr + 2) * (W + 16) + kD3mZero) * esz;
}

// false when the plan is not one depth3d_nc_mma covers or its blocks exceed 32 bits;
// target_blocks: depth segments only below it. Rows per unit: of 1 .. (up to 8 warps of 16
// groups), the count with the most used M rows per row issued, the most rows on ties.
inline bool depth3d_nc_mma_blocks(D3mBlocks& L, const Plan& P, int KD, int64_t target_blocks) {
  if (!depth3d_regs_takes(P, KD)) return false;
  const int S = static_cast<int>(P.q[2] / kD3rR);
  if (S > 16 * kD3mMaxWarps) return false;
  double best = -1;
  for (int nr = 1; nr * S <= 16 * kD3mMaxWarps; ++nr) {
    if (d3m_smem_bytes(S * kD3rR, nr, 2) > 48 * 1024) break;  // the default limit
    const int warps = static_cast<int>(ceil_div(nr * S, 16));
    const int64_t rtiles = ceil_div(P.q[1], nr);
    const double eff = double(P.q[1] * S) / double(rtiles * warps * 16);
    if (eff >= best - 1e-9) {
      best = eff;
      L.nr = nr;
      L.warps = warps;
      L.rtiles = static_cast<int>(rtiles);
    }
    if (nr >= P.q[1]) break;
  }
  if (best < 0) return false;
  L.strips = S;
  const int64_t per_seg = P.N * P.out_c * L.rtiles;
  int64_t segs = 1, dl = 1;
  depth_segments(P.q[0], KD, per_seg, target_blocks, segs, dl);
  if (per_seg * segs >= (int64_t(1) << 31)) return false;
  L.blocks = static_cast<uint32_t>(per_seg * segs);
  L.ublocks = static_cast<uint32_t>(per_seg);
  L.dl = static_cast<int>(dl);
  return true;
}

// Two floats as one 32-bit word of 16-bit values, lo in the low half.
template <typename T>
__device__ __forceinline__ uint32_t d3m_pack(float lo, float hi) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<T, c10::BFloat16>) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    uint32_t u;
    memcpy(&u, &h, 4);
    return u;
  } else {
    const __half2 h = __floats2half2_rn(lo, hi);
    uint32_t u;
    memcpy(&u, &h, 4);
    return u;
  }
#else
  return pack16x2<T>(static_cast<T>(lo), static_cast<T>(hi));
#endif
}

// B: for parity p (of the output within its group) and rotation u (plane rel mod 8), lane
// (g, tq) holds column g, slots 2tq, 2tq + 1 (word tq: filter row tq's first word) and 2tq + 8,
// 2tq + 9 (its second word); filter depth kd = (u - g) mod 8 when < KD, else zeros. wc: the
// channel's KD * 9 taps (rotated when flip).
// cp_async16 into shared memory at byte offset `off` from `base`, whose shared-window address
// is sbase (d3m_shared_addr): the generic -> shared conversion once per thread, not per copy
// (it cost ~8 instructions per 16-byte copy).
__device__ __forceinline__ uint32_t d3m_shared_addr(const void* base) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint32_t>(__cvta_generic_to_shared(base));
#else
  (void)base;
  return 0;
#endif
}
__device__ __forceinline__ void d3m_cp16(void* base, uint32_t sbase, uint32_t off, const void* src, int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  (void)base;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(sbase + off), "l"(src), "r"(bytes) : "memory");
#else
  (void)sbase;
  cp_async16(static_cast<unsigned char*>(base) + off, src, bytes);  // traps below sm_80
#endif
}

template <typename T, int KD>
__device__ __forceinline__ void d3m_filter(uint32_t (&bw)[2][8][2], const T* wc, bool flip, int g, int tq) {
  constexpr int NT = KD * 9;
  const T z = T(0.f);
#pragma unroll
  for (int u = 0; u < 8; ++u) {
    const int kd = (u - g + 8) % 8;
    T k0 = z, k1 = z, k2 = z;
    if (kd < KD && tq < 3) {
      const int i = (kd * 3 + tq) * 3;
      k0 = wc[flip ? NT - 1 - i : i];
      k1 = wc[flip ? NT - 2 - i : i + 1];
      k2 = wc[flip ? NT - 3 - i : i + 2];
    }
    bw[0][u][0] = pack16x2<T>(z, k0), bw[0][u][1] = pack16x2<T>(k1, k2);
    bw[1][u][0] = pack16x2<T>(k0, k1), bw[1][u][1] = pack16x2<T>(k2, z);
  }
}

// One input plane's 8 MMAs (tile r: output r of every group): p[h] = the lane's staged input row
// (16-byte aligned, q[-1 .. 8] readable; zeros for t = 3 and idle groups), be / bo = the B
// fragments of even / odd outputs for this plane's rotation.
template <typename T>
__device__ __forceinline__ void d3m_plane(const T* p0, const T* p1, const uint32_t (&be)[2], const uint32_t (&bo)[2],
                                          float (&acc)[8][4]) {
  // words of the lane's two input rows: v[k] = q[2k, 2k + 1], e0 = q[-1] (high half), e1 = q[8]
  uint32_t v[2][4], e0[2], e1[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const T* p = h ? p1 : p0;
    const uint4 q4 = *reinterpret_cast<const uint4*>(p);
    v[h][0] = q4.x, v[h][1] = q4.y, v[h][2] = q4.z, v[h][3] = q4.w;
    uint16_t a, b;
    memcpy(&a, p - 1, 2);
    memcpy(&b, p + kD3rR, 2);
    e0[h] = uint32_t(a) << 16;
    e1[h] = b;
  }
#pragma unroll
  for (int r = 0; r < 8; ++r) {
    const int m = r / 2;
    uint32_t a[4];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (r % 2 == 0) {
        a[h] = m == 0 ? e0[h] : (v[h][m - 1] & 0xffff0000u);
        a[2 + h] = v[h][m];
      } else {
        a[h] = v[h][m];
        a[2 + h] = m == 3 ? e1[h] : (v[h][m + 1] & 0xffffu);
      }
    }
    mma16816<T>(acc[r], a, r % 2 ? bo : be);
  }
}

// The 8 outputs of accumulator element e (D row g or g + 8, column 2t or 2t + 1) as 16-bit values.
template <typename T>
__device__ __forceinline__ uint4 d3m_column(const float (&acc)[8][4], int e) {
  uint4 o;
  o.x = d3m_pack<T>(acc[0][e], acc[1][e]);
  o.y = d3m_pack<T>(acc[2][e], acc[3][e]);
  o.z = d3m_pack<T>(acc[4][e], acc[5][e]);
  o.w = d3m_pack<T>(acc[6][e], acc[7][e]);
  return o;
}

template <typename T, int KD>
__global__ void __launch_bounds__(32 * kD3mMaxWarps, 2)
depth3d_nc_mma(const T* __restrict__ in, const T* __restrict__ w, bool flip, const T* __restrict__ bias,
               T* __restrict__ out, const Plan P, const D3mBlocks L) {
  constexpr int R = kD3rR, NT = KD * 9, NB = kD3rRing;
  static_assert(KD <= 7, "the finished and the restarted column differ");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* const ring = reinterpret_cast<T*>(smem_raw);
  const int seg = static_cast<int>(blockIdx.x / L.ublocks);
  const int64_t unit = blockIdx.x % L.ublocks;  // (sample * C + channel) * rtiles + row tile
  const int64_t nc = unit / L.rtiles;
  const int oy0 = static_cast<int>(unit % L.rtiles) * L.nr;
  const int64_t c = nc % P.out_c;
  const int S = L.strips, NR = L.nr, threads = L.warps * 32;
  const int t = threadIdx.x, lane = t % 32, g = lane / 4, tq = lane % 4, warp = t / 32;

  const int ID = static_cast<int>(P.in[0]), IH = static_cast<int>(P.in[1]), W = static_cast<int>(P.in[2]);
  const int QD = static_cast<int>(P.q[0]), OH = static_cast<int>(P.out[1]);
  const int pitch = W + 16, rows = NR + 2, plane_vals = rows * pitch;
  T* const zero = ring + NB * plane_vals;  // kD3mZero zeros
  const int64_t ips = int64_t(IH) * W, ops = int64_t(OH) * W;
  const int qd0 = seg * L.dl, qd1 = qd0 + L.dl < QD ? qd0 + L.dl : QD;
  const int start = qd0 - P.pad[0][0], nplanes = qd1 - qd0 + KD - 1;

  uint32_t bw[2][8][2];
  d3m_filter<T, KD>(bw, w + c * NT, flip, g, tq);
  const float b0 = bias ? static_cast<float>(bias[c]) : 0.f;

  // zero the width padding of every staged row and the zero run
  for (int i = t; i < NB * rows * 2; i += threads) {
    Pack<T, 8> z;
#pragma unroll
    for (int e = 0; e < 8; ++e) z.v[e] = T(0.f);
    *reinterpret_cast<Pack<T, 8>*>(ring + (i / 2) * pitch + (i % 2 ? W + 8 : 0)) = z;
  }
  for (int i = t; i < kD3mZero; i += threads) zero[i] = T(0.f);

  // The thread's 16-byte staging pieces of a plane (rows x S, row-major; at most 2 per thread):
  // shared byte offsets in ring buffer 0 (-1: none), sources at input plane `start` and sizes
  // (0: a zero row; the source is then `in`, not read).
  constexpr int PER = 2;
  const uint32_t sring = d3m_shared_addr(ring);
  int soff[PER], sbytes[PER];
  const T* gsrc[PER];
#pragma unroll
  for (int q = 0; q < PER; ++q) {
    const int i = t + q * threads, row = i / S, ch = i % S;
    const int y = oy0 - P.pad[1][0] + row;
    const bool inside = i < rows * S && y >= 0 && y < IH;
    soff[q] = i < rows * S ? (row * pitch + 8 + ch * 8) * int(sizeof(T)) : -1;
    sbytes[q] = inside ? 16 : 0;
    gsrc[q] = inside ? in + (nc * ID + start) * ips + int64_t(y) * W + ch * 8 : in;
  }
  const uint32_t buf_bytes = uint32_t(plane_vals) * sizeof(T);
  auto stage = [&](int rel, int bi) {  // input plane start + rel into ring buffer bi
    const int id = start + rel;
    if (id < 0 || id >= ID) return;
    const int64_t o = int64_t(rel) * ips;
#pragma unroll
    for (int q = 0; q < PER; ++q) {
      if (soff[q] >= 0)
        d3m_cp16(ring, sring, bi * buf_bytes + soff[q], sbytes[q] ? gsrc[q] + o : in, sbytes[q]);
    }
  };

  // The lane's two groups (M rows g and g + 8): its staged input rows of filter row tq (the zero
  // run for tq = 3 and groups past the unit)
  // (rp[h] + buffer * rstep[h]: the row in ring buffer `buffer`), outputs at the output depth
  // plane rel = 0 finishes (qd0 - KD + 1; running pointers) and whether they are stored.
  const T* rp[2];
  int rstep[2];
  T* run[2];
  bool wr[2];
  T* const dst = out + nc * P.out[0] * ops + int64_t(qd0 - (KD - 1)) * ops;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int q = warp * 16 + g + 8 * h, row = q / S, s = q % S;
    const bool real = q < NR * S, reads = real && tq < 3;
    rp[h] = reads ? ring + (row + tq) * pitch + 8 + s * R : zero + 8;
    rstep[h] = reads ? plane_vals : 0;
    run[h] = dst + (real ? (oy0 + row) * W + s * R : 0);
    wr[h] = real && oy0 + row < OH;
  }

  float acc[8][4];
#pragma unroll
  for (int r = 0; r < 8; ++r) {
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[r][e] = b0;
  }
  stage(0, 0);
  cp_async_commit();
  stage(1, 1);
  cp_async_commit();
  int rd = 0;
  for (int rel0 = 0; rel0 < nplanes; rel0 += 8) {
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int rel = rel0 + u, id = start + rel;
      cp_async_wait<1>();
      __syncthreads();
      if (rel + 2 < nplanes) stage(rel + 2, rd == 0 ? NB - 1 : rd - 1);
      cp_async_commit();
      if (rel < nplanes && id >= 0 && id < ID) {  // block-uniform
        d3m_plane<T>(rp[0] + rd * rstep[0], rp[1] + rd * rstep[1], bw[0][u], bw[1][u], acc);
      }
      // column (rel - KD + 1) mod 8 is finished: output depth qd0 + rel - KD + 1
      const int J = (u - (KD - 1) + 8) % 8;  // compile-time once unrolled
      const int od = qd0 + rel - (KD - 1);
      if (tq == J / 2 && od >= qd0 && od < qd1) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          if (wr[h]) *reinterpret_cast<uint4*>(run[h]) = d3m_column<T>(acc, 2 * h + J % 2);
        }
      }
      run[0] += ops, run[1] += ops;
      // column (rel + 1) mod 8 starts with the next plane
      const int Z = (u + 1) % 8;
      if (tq == Z / 2) {
#pragma unroll
        for (int r = 0; r < 8; ++r) acc[r][Z % 2] = acc[r][2 + Z % 2] = b0;
      }
      rd = rd == NB - 1 ? 0 : rd + 1;
    }
  }
}

// ---- NDHWC: depth3d_cl_mma ----
// A block is 8 channels (one 16-byte piece of a position) x one unit of NR output rows, one warp
// of 16 groups per channel (NR * S <= 16). The same MMAs on the same channel-major staged rows:
// a thread loads 16-byte pieces (8 channels of one position) of input plane id + 2 into
// registers while plane id is computed and writes them as 8 2-byte values into the 8 channels'
// rows after the next barrier (two buffers); a finished column goes to a channel-major output
// stage by one 16-byte shared store and is written out after the next barrier as 16-byte pieces
// of 8 channels (one scattered 2-byte global store per value otherwise).
constexpr int kD3cChannels = 8;
// values per channel of an input buffer / of the output stage: compile-time, so that a thread's
// 8 channels are immediate offsets from one address
constexpr int kD3cIn = 544, kD3cOut = 128;

struct D3cBlocks {
  uint32_t blocks, chunks, rtiles, segs;
  int nr, strips, dl;
};

inline size_t d3c_smem_bytes(size_t esz) { return (size_t(2) * kD3cChannels * (kD3cIn + kD3cOut) + kD3mZero) * esz; }

// false when the plan is not one depth3d_cl_mma covers (also: channels a multiple of 8, rows of
// at most 16 groups whose input rows (NR + 2 of them) are at most one 16-byte piece per thread
// and fit kD3cIn: widths up to 80) or its blocks exceed 32 bits. Rows per unit: the most used M rows per row
// issued, the most rows on ties.
inline bool depth3d_cl_mma_blocks(D3cBlocks& L, const Plan& P, int KD, int64_t target_blocks) {
  if (!depth3d_regs_takes(P, KD) || P.out_c % kD3cChannels != 0) return false;
  const int S = static_cast<int>(P.q[2] / kD3rR);
  if (S > 16) return false;
  double best = -1;  // stays when not even one row's input pieces fit one per thread
  for (int nr = 1; nr * S <= 16 && (nr + 2) * S * kD3rR <= 32 * kD3cChannels && (nr + 2) * (S * kD3rR + 16) <= kD3cIn;
       ++nr) {
    const int64_t rtiles = ceil_div(P.q[1], nr);
    const double eff = double(P.q[1] * S) / double(rtiles * 16);
    if (eff >= best - 1e-9) {
      best = eff;
      L.nr = nr;
      L.rtiles = static_cast<uint32_t>(rtiles);
    }
    if (nr >= P.q[1]) break;
  }
  if (best < 0) return false;
  L.strips = S;
  L.chunks = static_cast<uint32_t>(P.out_c / kD3cChannels);
  const int64_t per_seg = P.N * L.chunks * L.rtiles;
  int64_t segs = 1, dl = 1;
  depth_segments(P.q[0], KD, per_seg, target_blocks, segs, dl);
  if (per_seg * segs >= (int64_t(1) << 31)) return false;
  L.blocks = static_cast<uint32_t>(per_seg * segs);
  L.segs = static_cast<uint32_t>(segs);
  L.dl = static_cast<int>(dl);
  return true;
}

template <typename T, int KD>
__global__ void __launch_bounds__(32 * kD3cChannels, 2)
depth3d_cl_mma(const T* __restrict__ in, const T* __restrict__ w, bool flip, const T* __restrict__ bias,
               T* __restrict__ out, const Plan P, const D3cBlocks L) {
  constexpr int R = kD3rR, NT = KD * 9, CB = kD3cChannels, THREADS = 32 * CB;
  static_assert(KD <= 7, "the finished and the restarted column differ");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* const ring = reinterpret_cast<T*>(smem_raw);
  uint32_t b = blockIdx.x;
  const uint32_t chunk = b % L.chunks;
  b /= L.chunks;
  const int oy0 = static_cast<int>(b % L.rtiles) * L.nr;
  b /= L.rtiles;
  const int seg = static_cast<int>(b % L.segs);
  const int64_t n = b / L.segs;
  const int S = L.strips, NR = L.nr;
  const int t = threadIdx.x, lane = t % 32, g = lane / 4, tq = lane % 4, warp = t / 32;

  const int C = static_cast<int>(P.out_c), c0 = static_cast<int>(chunk) * CB;
  const int ID = static_cast<int>(P.in[0]), IH = static_cast<int>(P.in[1]), W = static_cast<int>(P.in[2]);
  const int QD = static_cast<int>(P.q[0]), OH = static_cast<int>(P.out[1]);
  constexpr int IN = kD3cIn, OUT = kD3cOut;
  const int pitch = W + 16, rows = NR + 2;
  T* const ostage = ring + 2 * CB * IN;  // [2][CB][OUT]: NR x W outputs of each channel
  T* const zero = ostage + 2 * CB * OUT;  // kD3mZero zeros
  const int64_t ips = int64_t(IH) * W * C, ops = int64_t(OH) * W * C;
  const int qd0 = seg * L.dl, qd1 = qd0 + L.dl < QD ? qd0 + L.dl : QD;
  const int start = qd0 - P.pad[0][0], nplanes = qd1 - qd0 + KD - 1;

  uint32_t bw[2][8][2];
  d3m_filter<T, KD>(bw, w + int64_t(c0 + warp) * NT, flip, g, tq);
  const float b0 = bias ? static_cast<float>(bias[c0 + warp]) : 0.f;

  for (int i = t; i < 2 * CB * rows * 2; i += THREADS) {
    Pack<T, 8> z;
#pragma unroll
    for (int e = 0; e < 8; ++e) z.v[e] = T(0.f);
    const int row = i / 2 % rows, bk = i / 2 / rows;  // bk: buffer * CB + channel
    *reinterpret_cast<Pack<T, 8>*>(ring + bk * IN + row * pitch + (i % 2 ? W + 8 : 0)) = z;
  }
  for (int i = t; i < kD3mZero; i += THREADS) zero[i] = T(0.f);

  // The thread's input piece (a position of the rows x W staged ones):
  // staged offsets (-1: none) and sources at input plane `start` (null: zeros).
  constexpr int PER = 1;  // rows * W <= THREADS (depth3d_cl_mma_blocks; two pieces spilled registers)
  int soff[PER];
  const T* gsrc[PER];
#pragma unroll
  for (int q = 0; q < PER; ++q) {
    const int i = t + q * THREADS, row = i / W, x = i % W, y = oy0 - P.pad[1][0] + row;
    soff[q] = i < rows * W ? row * pitch + 8 + x : -1;
    gsrc[q] = i < rows * W && y >= 0 && y < IH ? in + (n * ID + start) * ips + (int64_t(y) * W + x) * C + c0 : nullptr;
  }
  uint4 pre[PER];  // plane id + 1's pieces, loaded while plane id is computed
  auto load = [&](int id) {
#pragma unroll
    for (int q = 0; q < PER; ++q) {
      pre[q] = make_uint4(0, 0, 0, 0);
      if (gsrc[q] && id >= 0 && id < ID) pre[q] = *reinterpret_cast<const uint4*>(gsrc[q] + int64_t(id - start) * ips);
    }
  };
  auto put = [&](int bi) {
#pragma unroll
    for (int q = 0; q < PER; ++q) {
      if (soff[q] < 0) continue;
      const unsigned u[4] = {pre[q].x, pre[q].y, pre[q].z, pre[q].w};
      uint16_t* d = reinterpret_cast<uint16_t*>(ring + bi * CB * IN + soff[q]);
#pragma unroll
      for (int k = 0; k < CB; ++k) d[k * IN] = static_cast<uint16_t>(k % 2 ? u[k / 2] >> 16 : u[k / 2]);
    }
  };

  // The lane's two groups (M rows g and g + 8) of channel c0 + warp: staged-row offsets of filter
  // row tq (-1: the zero run), output-stage offsets, whether stored.
  int roff[2], ooff[2];
  bool wr[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int q = g + 8 * h, row = q / S, s = q % S;
    const bool real = q < NR * S;
    roff[h] = real && tq < 3 ? warp * IN + (row + tq) * pitch + 8 + s * R : -1;
    ooff[h] = warp * OUT + row * W + s * R;
    wr[h] = real;
  }
  // The thread's output pieces (positions of the NR x W outputs; at most 1 per thread): stage
  // offset and destination at output depth 0 (null: none).
  const int oi = t < NR * W ? t : 0, orow = oi / W;
  T* const odst = t < NR * W && oy0 + orow < OH ? out + n * P.out[0] * ops + (int64_t(oy0 + orow) * W + oi % W) * C + c0
                                                : nullptr;
  auto flush = [&](int bi, int od) {
    if (!odst) return;
    const uint16_t* sp = reinterpret_cast<const uint16_t*>(ostage + bi * CB * OUT + oi);
    uint32_t u[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) u[k] = uint32_t(sp[2 * k * OUT]) | uint32_t(sp[(2 * k + 1) * OUT]) << 16;
    *reinterpret_cast<uint4*>(odst + int64_t(od) * ops) = make_uint4(u[0], u[1], u[2], u[3]);
  };

  float acc[8][4];
#pragma unroll
  for (int r = 0; r < 8; ++r) {
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[r][e] = b0;
  }
  load(start);
  put(0);
  load(start + 1);
  for (int rel0 = 0; rel0 < nplanes; rel0 += 8) {
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int rel = rel0 + u, id = start + rel, od = qd0 + rel - (KD - 1);
      __syncthreads();
      // the previous plane's finished outputs, then plane id + 1's staging
      if (od - 1 >= qd0 && od - 1 < qd1) flush((u + 1) % 2, od - 1);
      if (rel + 1 < nplanes) {
        put((u + 1) % 2);
        load(id + 2);
      }
      if (rel < nplanes && id >= 0 && id < ID) {  // block-uniform
        const T* base = ring + (u % 2) * CB * IN;
        d3m_plane<T>(roff[0] >= 0 ? base + roff[0] : zero + 8, roff[1] >= 0 ? base + roff[1] : zero + 8, bw[0][u],
                     bw[1][u], acc);
      }
      // column (rel - KD + 1) mod 8 is finished: output depth od, staged for the next step
      const int J = (u - (KD - 1) + 8) % 8;  // compile-time once unrolled
      if (tq == J / 2 && od >= qd0 && od < qd1) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          if (wr[h]) *reinterpret_cast<uint4*>(ostage + (u % 2) * CB * OUT + ooff[h]) = d3m_column<T>(acc, 2 * h + J % 2);
        }
      }
      // column (rel + 1) mod 8 starts with the next plane
      const int Z = (u + 1) % 8;
      if (tq == Z / 2) {
#pragma unroll
        for (int r = 0; r < 8; ++r) acc[r][Z % 2] = acc[r][2 + Z % 2] = b0;
      }
    }
  }
  // the last plane's outputs (nplanes is past the last group's planes: rel0 ends a multiple of 8)
  __syncthreads();
  {
    const int rel = (nplanes + 7) / 8 * 8 - 1, od = qd0 + rel - (KD - 1);
    if (od >= qd0 && od < qd1) flush(rel % 2, od);
  }
}

}  // namespace convx::cuda
