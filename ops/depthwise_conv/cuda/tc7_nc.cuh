// Tensor-core K x K (K = 7 or 5) depthwise forward and stride-1 data-grad (the forward with the
// filter rotated) for NCHW planes of ConvNeXt's 56 x 56 and 14 x 14 stages (7 x 7, padding 3) and
// EfficientNet's 28 x 28 (5 x 5, padding 2, 16-bit; session 14), output as large as the input,
// multiplier 1: fp16 / bf16 on m16n8k16 (products exact, fp32 sums) and fp32 as TF32 on m16n8k8
// (only where torch.backends.cudnn.allow_tf32 allows it; the caller checks).
//
// Why not tc_rows_nc.cuh: its 7 x 7 measured 0.099 ms on ConvNeXt 56 x 56 against nc_plane's 0.083
// (session 11), far from the copy bandwidth's 0.026, though its MMAs are few: per 16-row step a
// block barrier, a staging loop of divisions and bounds tests per vector, a full ldmatrix.x4 per
// MMA (each input value read from shared memory twice per filter row), 4-byte global stores
// scattered over 8 rows, and 77% of its MMA slots real outputs. Here:
//   - a block of 4 warps owns whole planes after another in channel-major order (so the B
//     fragments -- the filter's Toeplitz slices -- stay in registers, rebuilt only when a warp's
//     plane moves to the next channel); WPP warps per plane, warp w computing output rows
//     16 (w % WPP) .. + 15 of the step's plane w / WPP (WPP 4: heights 49-64, a plane per step;
//     WPP 2: heights 17-32, two planes per step; WPP 1: heights up to 16, four planes per step);
//   - planes are staged by cp.async in copies as wide as the rows allow (16, 8 or 4 bytes; each
//     input byte read once, no halo re-reads), a ring of tc7_stages steps so that the next
//     planes load while this one computes: one block barrier per step;
//   - along a row a warp walks its N-blocks of 8 outputs: the K window of block b (16 inputs) is
//     the 8-column halves b and b + 1, so each half is loaded once per filter row (ldmatrix.x4 =
//     two halves for 16-bit, one half for fp32) and feeds two MMAs;
//   - two or four warps per plane: the accumulators (started at the bias) go through a per-warp
//     shared tile to the warp's output rows, which are one contiguous span of the plane: one bulk
//     copy (TMA, sm_90) per warp and step where the span is whole 16-byte units, else 4-byte
//     stores by every lane; a warp per plane (14-wide rows, 4-byte copies) stores its fragments
//     directly (tc7_tile).
//
// Toeplitz form (as tc_rows_nc.cuh): for filter row kh and N-block b, D[m][n] += sum_j
// X[h0 + m + kh - P][wb + j] * w[kh][j - n - 4 + P], j < 16 (P = K / 2, the padding: the output
// columns do not depend on K), where the window starts at staged column
// 8b = input column 8b - LEAD and the block's outputs at 8b - LEAD + 4: LEAD = 8 for 16-bit (so
// that staged rows stay 16-byte aligned for cp.async; outputs 8b - 4 .. 8b + 3: 8 blocks for 56
// outputs), 4 for fp32 (outputs 8b .. 8b + 7: 7 blocks for 56). Staged row pitch: an odd number of
// 16-byte units, so ldmatrix's 8 rows fall in 8 different bank groups.
//
// Measured (H100, session 13, docs/performance.md "Session 13: tc7n" and "Session 13: tc7f"):
// ConvNeXt 56 x 56 16-bit 0.038 ms (67% of the copy bandwidth), TF32 0.067 (77%); per warp and
// plane ~650 instructions of which ~180 are the MMAs and their ldmatrix: staging and the output
// copies are most of the rest. Session 14 (tcnc_call1_ab.log, docs/performance.md "Session 14:
// tcnc"): the bulk copy of the tile, 16-bit 56 x 56 0.0386 -> 0.0364 ms, TF32 0.0678 -> 0.0653;
// 16-bit 5 x 5 on EfficientNet's 28 x 28 0.029 against nc_plane_cp's 0.045 (TF32 0.048: lost).
#pragma once

#include "ops/depthwise_conv/cuda/cp_async.cuh"
#include "ops/depthwise_conv/cuda/mma16.cuh"
#include "ops/depthwise_conv/cuda/nc_stream.cuh"
#include "ops/depthwise_conv/cuda/plan.cuh"

#include <cstdint>
#include <cstring>
#include <type_traits>
#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace convx::cuda {

constexpr int kTc7Warps = 4;
// Staged rows per plane for WPP warps (M-tiles of 16 output rows) per plane: K / 2 of padding
// above, K / 2 below.
__host__ __device__ constexpr int tc7_rows(int wpp, int k) { return 16 * wpp + 2 * (k / 2); }
template <typename T>
__host__ __device__ constexpr int tc7_lead() { return sizeof(T) == 2 ? 8 : 4; }
// Steps in the ring (one computing, the rest loading) and blocks per SM: 16-bit 56 x 56 3 at 6
// (80 registers), fp32 2 at 4 (its planes are twice as large; 128 registers); a warp per plane
// (wpp 1, 16-bit only) 2 at 8 (64 registers: ConvNeXt 14 x 14 0.0300 / 0.0286 ms forward /
// data-grad against 0.0306 / 0.0296 with 3 at 6; on 56 x 56 2 at 8 spilled and lost, 0.048 against
// 0.039; H100, bench/results/h100/session13/tc7n_call2_ab.log).
template <typename T>
__host__ __device__ constexpr int tc7_stages(int wpp) { return wpp == 1 || sizeof(T) == 4 ? 2 : 3; }
// 5 x 5 on two warps per plane (EfficientNet's 28 x 28, 16-bit): 3 stages at 8 blocks (64
// registers, no spill; 8 blocks give 7-8 steps of 2 planes per block there).
template <typename T, int K, int WPP>
__host__ __device__ constexpr int tc7_min_blocks() {
  return K == 5 || WPP == 1 ? 8 : sizeof(T) == 2 ? 6 : 4;
}
// N-blocks of 8 outputs for a row of w outputs.
template <typename T>
__host__ __device__ constexpr int tc7_blocks(int w) { return (w + tc7_lead<T>() - 4 + 7) / 8; }
// Staged row pitch (elements): the NB + 1 halves of 8 values, rounded to an odd number of 16-byte units.
template <typename T>
__host__ __device__ constexpr int tc7_pitch(int nb) {
  constexpr int V = 16 / int(sizeof(T));
  const int units = (8 * (nb + 1) + V - 1) / V;
  return V * (units | 1);
}
// Outputs through a per-warp shared tile (16-byte stores of whole rows) with four warps per plane;
// a warp per plane stores its fragments (4 bytes of two rows' outputs per lane) directly: on
// ConvNeXt 14 x 14 16-bit 0.0255 / 0.0243 ms forward / data-grad against 0.0276 / 0.0261 through
// the tile, while on 56 x 56 the direct stores lost (16-bit 0.061 against 0.038, fp32 the same
// 0.066; H100, bench/results/h100/session13/tc7f_call1_ab.log).
__host__ __device__ constexpr bool tc7_tile(int wpp) { return wpp != 1; }
// A slot holds the kTc7Warps / wpp planes of a step; then (tc7_tile) a 16-row output tile per warp.
template <typename T>
__host__ __device__ constexpr int64_t tc7_smem_bytes(int k, int nb, int wpp, int w) {
  return int64_t(sizeof(T)) * (int64_t(tc7_stages<T>(wpp)) * (kTc7Warps / wpp) * tc7_rows(wpp, k) * tc7_pitch<T>(nb) +
                               (tc7_tile(wpp) ? int64_t(kTc7Warps) * 16 * w : 0));
}

struct Tc7Nc {
  uint32_t planes;   // N * C
  int C, H, W;       // channels, plane height and width (read and written)
  int pitch;         // staged row pitch (elements)
  int flip;          // data-grad: the filter rotated 180 degrees
  FastDiv n_div;     // samples: plane q of the channel-major order is channel q / N, sample q % N
  FastDiv upr_div;   // copy units per row
};

// Two fp32 values rounded to a 16-bit pair (lo in the low half) by one conversion instruction.
template <typename T>
__device__ __forceinline__ uint32_t tc7_pack(float lo, float hi) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, c10::Half>) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
#else
  return pack16x2<T>(static_cast<T>(lo), static_cast<T>(hi));
#endif
}

// U (16 or 4) bytes from src to dst, both aligned to it.
template <int U>
__device__ __forceinline__ void tc7_copy(void* dst, const void* src) {
  if constexpr (U == 16) *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
  else *reinterpret_cast<uint32_t*>(dst) = *reinterpret_cast<const uint32_t*>(src);
}

// One lane's bulk copy (TMA, sm_90) of `bytes` (a multiple of 16, both addresses 16-byte aligned)
// from shared to global memory, in its own bulk group; tc7_bulk_read_wait: this lane's groups have
// read their shared source. Host (CPU harness): a plain copy. The kernel calls them on sm_90 and
// newer only (BULK).
__device__ __forceinline__ void tc7_bulk_store(void* gdst, const void* ssrc, int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const uint32_t s = static_cast<uint32_t>(__cvta_generic_to_shared(ssrc));
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(gdst), "r"(s), "r"(bytes)
               : "memory");
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
#elif defined(__CUDA_ARCH__)
  __trap();
#else
  std::memcpy(gdst, ssrc, static_cast<size_t>(bytes));
#endif
}
__device__ __forceinline__ void tc7_bulk_read_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
#endif
}
// This thread's shared-memory writes made visible to the bulk copies (the async proxy).
__device__ __forceinline__ void tc7_fence_async() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// in, out: [N][C][H][W], in aligned to U bytes, rows a multiple of it, out (with the tile) to UO
// bytes, the planes and the warps' 16-row spans a multiple of it; w: the layer's filter [C][K][K]
// in T; bias per channel or null. Block b takes planes [b P / grid, (b + 1) P / grid) of
// the channel-major order, kTc7Warps / WPP planes per step: warp w computes M-tile w % WPP of the
// step's plane w / WPP (WPP = 4: heights 49-64, one plane per step; WPP = 2: heights 17-32, two
// planes per step; WPP = 1: heights up to 16, four planes per step, a warp each). U: bytes per
// input copy, 16 where the rows and the input's alignment allow it, else 8 (16-bit 28-wide rows)
// or 4; UO: the output tile's copies (16: one bulk copy per warp and step on sm_90); compile-time
// widths because a run-time one (and the fp32 rounding a 4-byte word at a time, 4-way bank
// conflicts) cost the TF32 56 x 56 forward 15%
// (0.078 against 0.067 ms, bench/results/h100/session13/tc7f_call1_ab.log).
template <typename T, int K, int NB, int WPP, int U, int UO>
__global__ void __launch_bounds__(32 * kTc7Warps, tc7_min_blocks<T, K, WPP>())
tc7_nc(const T* __restrict__ in, const T* __restrict__ w, const T* __restrict__ bias, T* __restrict__ out,
       const Tc7Nc L) {
  using Bits = std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>;
  constexpr int LEAD = tc7_lead<T>(), ST = tc7_stages<T>(WPP), THREADS = 32 * kTc7Warps;
  constexpr int PPS = kTc7Warps / WPP, SR = tc7_rows(WPP, K), V = 16 / sizeof(T), PAD = K / 2;
  constexpr bool k16 = sizeof(T) == 2, TILE = tc7_tile(WPP);
  // The output tile leaves by bulk copies (sm_90) where its copies are 16 bytes.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  constexpr bool BULK = false;
#else
  constexpr bool BULK = TILE && UO == 16;
#endif
  static_assert(K == 5 || K == 7, "the Toeplitz slices hold 8 outputs of up to 8 taps in 16 inputs");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Bits* const ring = reinterpret_cast<Bits*>(smem_raw);  // [ST][PPS][SR][pitch]
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32, g = lane / 4, t = lane % 4;
  const int H = L.H, W = L.W, pitch = L.pitch, plane_elems = SR * pitch, slot_elems = PPS * plane_elems;
  // elements per input / output copy
  constexpr int UE = U / static_cast<int>(sizeof(T)), UOE = UO / static_cast<int>(sizeof(T));
  T* const ostage = reinterpret_cast<T*>(smem_raw + sizeof(T) * ST * slot_elems) + warp * 16 * W;

  const uint32_t q0 = static_cast<uint32_t>(uint64_t(blockIdx.x) * L.planes / gridDim.x);
  const uint32_t q1 = static_cast<uint32_t>(uint64_t(blockIdx.x + 1) * L.planes / gridDim.x);
  const int steps = (static_cast<int>(q1 - q0) + PPS - 1) / PPS;
  auto plane_of = [&](uint32_t q) {  // memory index n * C + c of channel-major plane q
    const uint32_t c = L.n_div.div(q), n = q - c * L.n_div.d;
    return int64_t(n) * L.C + c;
  };
  const int64_t hw = int64_t(H) * W;
  const int nunits = H * static_cast<int>(L.upr_div.d);  // copies per plane

  // The halo (padding rows and columns) is zero once; the copies below never write it.
  {
    uint4* const z = reinterpret_cast<uint4*>(ring);
    const int n16 = ST * slot_elems * static_cast<int>(sizeof(Bits)) / 16;
    for (int i = tid; i < n16; i += THREADS) z[i] = make_uint4(0u, 0u, 0u, 0u);
  }
  __syncthreads();

  // Step k's planes: copy u of input row r -> staged row r + PAD, column LEAD + u UE of the plane's
  // place in slot k % ST. (for_own: the same copies this thread issued, for the fp32 rounding.)
  // Copy i = tid + m THREADS is row r, unit u: (r, u) advance by (dr, du) per m.
  const int upr = static_cast<int>(L.upr_div.d);
  uint32_t rt = static_cast<uint32_t>(tid), rd = THREADS;
  const int ut = static_cast<int>(L.upr_div.split(rt)), du = static_cast<int>(L.upr_div.split(rd));
  const int dr = static_cast<int>(rd);
  auto for_own = [&](int k, auto&& f) {
#pragma unroll 1
    for (int j = 0; j < PPS; ++j) {
      const uint32_t q = q0 + static_cast<uint32_t>(k * PPS + j);
      if (q >= q1) break;
      const T* const src = in + plane_of(q) * hw;
      Bits* const dst = ring + (k % ST) * slot_elems + j * plane_elems + PAD * pitch + LEAD;
      int r = static_cast<int>(rt), u = ut;
      for (int i = tid; i < nunits; i += THREADS) {
        f(dst + r * pitch + u * UE, src + int64_t(i) * UE);
        u += du, r += dr;
        if (u >= upr) u -= upr, ++r;
      }
    }
  };
  auto stage = [&](int k) { for_own(k, [&](Bits* d, const T* s) { cp_async_n(d, s, U); }); };
  // fp32: this thread's copies of step k rounded to TF32 in place (complete after its wait),
  // before the barrier publishes them: the tensor core would drop the low mantissa bits instead.
  auto round_own = [&](int k) {
    for_own(k, [&](Bits* d, const T*) {
      if constexpr (U == 16) {  // one 16-byte access each way: 4-byte ones collide in the banks
        uint4* const p = reinterpret_cast<uint4*>(d);
        const uint4 x = *p;
        *p = make_uint4(tf32_round(x.x), tf32_round(x.y), tf32_round(x.z), tf32_round(x.w));
      } else {
        *d = tf32_round(*d);
      }
    });
  };

  for (int k = 0; k < ST - 1; ++k) {
    if (k < steps) stage(k);
    cp_async_commit();
  }

  // B fragments of this warp's channel: 16-bit b[kh] = {Tw[2t, 2t+1][g], Tw[2t+8, 2t+9][g]};
  // fp32 b[kh][s] = {Tw[8s+t][g], Tw[8s+t+4][g]}; Tw[j][n] = w[kh][j - n - 4 + PAD] (0 off the filter).
  constexpr int NBF = k16 ? K : 2 * K, SH = 4 - PAD;
  uint32_t bfr[NBF][2] = {};
  float b0 = 0.f;
  int64_t cur_c = -1;
  auto tap = [&](int64_t c, int kh, int kw) -> Bits {
    if (kw < 0 || kw >= K) return Bits(0);
    const T v = w[c * (K * K) + (L.flip ? K * K - 1 - (kh * K + kw) : kh * K + kw)];
    Bits b;
    std::memcpy(&b, &v, sizeof(T));
    if constexpr (!k16) b = tf32_round(b);
    return b;
  };

  // This lane's ldmatrix row offset in a slot: its plane, output row 16 (warp % WPP) + lane % 8 +
  // 8 (lane / 8 % 2), 16 bytes further for lanes 16-31 (the second matrix column).
  const int pl = warp / WPP, r0 = 16 * (warp % WPP);
  const int aoff = pl * plane_elems + (r0 + lane % 8 + 8 * (lane / 8 % 2)) * pitch + V * (lane / 16);
  const int rows = H - r0 < 16 ? (H - r0 > 0 ? H - r0 : 0) : 16;  // output rows this warp stores

  for (int s = 0; s < steps; ++s) {
    cp_async_wait<ST - 2>();
    if constexpr (!k16) round_own(s);
    __syncthreads();  // step s is in; every warp is done with step s - 1, whose slot is refilled next
    if (s + ST - 1 < steps) stage(s + ST - 1);
    cp_async_commit();

    // Every warp runs the MMAs (block-uniform for the CPU harness); one past the block's last
    // plane stores nothing.
    const uint32_t q = q0 + static_cast<uint32_t>(s * PPS + pl);
    const bool valid = q < q1;
    const int64_t c = L.n_div.div(q);
    if (valid && c != cur_c) {
      cur_c = c;
#pragma unroll
      for (int kh = 0; kh < K; ++kh) {
        if constexpr (k16) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int j = 2 * t + 8 * h + 1 - SH;
            bfr[kh][h] = uint32_t(tap(c, kh, j - g - 1)) | (uint32_t(tap(c, kh, j - g)) << 16);
          }
        } else {
#pragma unroll
          for (int ks = 0; ks < 2; ++ks) {
#pragma unroll
            for (int h = 0; h < 2; ++h) bfr[2 * kh + ks][h] = tap(c, kh, 8 * ks + t + 4 * h - g - SH);
          }
        }
      }
      b0 = bias ? static_cast<float>(bias[c]) : 0.f;
    }

    const Bits* const slot = ring + (s % ST) * slot_elems + aoff;
    float acc[NB][4];
#pragma unroll
    for (int b = 0; b < NB; ++b) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[b][e] = b0;  // the bias
    }
#pragma unroll
    for (int kh = 0; kh < K; ++kh) {
      const uint32_t* const rowp = reinterpret_cast<const uint32_t*>(slot + kh * pitch);
      if constexpr (k16) {
        // half[i] = the 16 x 8 A block of columns 8i .. 8i + 7 (rows 0-7, rows 8-15).
        uint32_t half[NB + 1][2];
#pragma unroll
        for (int i = 0; i + 1 <= NB; i += 2) {
          uint32_t a[4];
          tc_ldsm_x4(a, rowp + 4 * i);  // 8 16-bit values = 4 words per half
          half[i][0] = a[0], half[i][1] = a[1], half[i + 1][0] = a[2], half[i + 1][1] = a[3];
        }
        if constexpr (NB % 2 == 0) {
          uint32_t a[4];
          tc_ldsm_x2(a, rowp + 4 * NB);  // lanes 0-15: rows 0-15 of the last half
          half[NB][0] = a[0], half[NB][1] = a[2];
        }
#pragma unroll
        for (int b = 0; b < NB; ++b) {
          const uint32_t av[4] = {half[b][0], half[b][1], half[b + 1][0], half[b + 1][1]};
          mma16816<T>(acc[b], av, bfr[kh]);
        }
      } else {
        uint32_t prev[4];
        tc_ldsm_x4(prev, rowp);
#pragma unroll
        for (int b = 0; b < NB; ++b) {
          uint32_t next[4];
          tc_ldsm_x4(next, rowp + 8 * (b + 1));  // 8 fp32 values per half
          mma1688_tf32(acc[b], prev, bfr[2 * kh]);
          mma1688_tf32(acc[b], next, bfr[2 * kh + 1]);
#pragma unroll
          for (int e = 0; e < 4; ++e) prev[e] = next[e];
        }
      }
    }

    // Outputs 8b + 4 - LEAD + 2t, + 1 of rows g, g + 8 into the warp's tile, then the tile's rows
    // (contiguous in the plane) in copies of UO bytes; without the tile straight to the output
    // (4-byte aligned: U >= 4, W even). Only the first and last N-blocks reach outside the row
    // (8 NB <= W + LEAD + 3); W is even, so o + 1 < W with o.
    const bool st0 = g < (valid ? rows : 0), st1 = g + 8 < (valid ? rows : 0);
    if constexpr (BULK) {  // the previous step's bulk copy has read the tile
      if (lane == 0) tc7_bulk_read_wait();
      __syncwarp();
    }
    T* const orow = TILE ? ostage + g * W : out + (valid ? plane_of(q) : 0) * hw + int64_t(r0 + g) * W;
#pragma unroll
    for (int b = 0; b < NB; ++b) {
      const int o = 8 * b + 4 - LEAD + 2 * t;
      if ((b == 0 || b == NB - 1) && (o < 0 || o >= W)) continue;
      T* const p = orow + o;
      if constexpr (k16) {
        if (st0) *reinterpret_cast<uint32_t*>(p) = tc7_pack<T>(acc[b][0], acc[b][1]);
        if (st1) *reinterpret_cast<uint32_t*>(p + 8 * W) = tc7_pack<T>(acc[b][2], acc[b][3]);
      } else {
        if (st0) *reinterpret_cast<float2*>(p) = make_float2(acc[b][0], acc[b][1]);
        if (st1) *reinterpret_cast<float2*>(p + 8 * W) = make_float2(acc[b][2], acc[b][3]);
      }
    }
    if constexpr (!TILE) continue;
    if constexpr (BULK) {
      tc7_fence_async();
      __syncwarp();
      if (lane == 0 && valid && rows > 0)
        tc7_bulk_store(out + plane_of(q) * hw + int64_t(r0) * W, ostage, rows * W * int(sizeof(T)));
      continue;
    }
    __syncwarp();
    if (valid) {
      T* const dst = out + plane_of(q) * hw + int64_t(r0) * W;
      const int n = rows * W / UOE;
      for (int i = lane; i < n; i += 32) tc7_copy<UO>(dst + i * UOE, ostage + i * UOE);
    }
    // The tile is rewritten only after the next step's block barrier.
  }
  cp_async_wait<0>();  // no copy outlives the block (the last groups are empty)
  if constexpr (BULK) {
    if (lane == 0) tc7_bulk_read_wait();  // nor a bulk copy's read of the tile
  }
}

// Fills L for plan P (the forward or, flip, the stride-1 data-grad: both a one-phase correlation
// with a k x k filter at stride 1) when this kernel covers it with nb N-blocks and wpp warps per
// plane: multiplier 1, padding k / 2, output planes as large as the input's, heights in
// (16 (wpp - 1), 16 wpp], widths whose N-block count is nb (even for 16-bit: pairs of outputs),
// rows and the input aligned to copies of `unit` (16, 8 or 4) bytes, the output to `ounit`: the
// tile's copies (wpp > 1; the planes and 16-row spans a multiple of it) or the direct stores of
// two outputs (wpp 1: 2 sizeof(T)). false otherwise.
template <typename T>
bool tc7_nc_plan(Tc7Nc& L, const Plan& P, bool flip, const void* in, const void* out, int k, int nb, int wpp,
                 int unit, int ounit) {
  if (P.phases != 1 || P.J != 1 || P.in_div != 1 || P.in_c != P.out_c || P.in[0] != 1 || P.k[0] != 1 ||
      P.k[1] != k || P.k[2] != k || P.S[1] != 1 || P.S[2] != 1 || P.pad[1][0] != k / 2 || P.pad[2][0] != k / 2)
    return false;
  const int64_t H = P.in[1], W = P.in[2], planes = P.N * P.out_c;
  if (P.out[0] != 1 || P.out[1] != H || P.out[2] != W) return false;
  if (H <= 16 * (wpp - 1) || H > 16 * wpp || W % 2 != 0 || W > 1024 || tc7_blocks<T>(static_cast<int>(W)) != nb)
    return false;
  if (planes <= 0 || planes >= (int64_t(1) << 31) || P.N <= 0 || P.N >= (int64_t(1) << 31)) return false;
  const int64_t row = W * int64_t(sizeof(T));
  if (row % unit != 0 || reinterpret_cast<uintptr_t>(in) % unit != 0) return false;
  const bool out_ok = tc7_tile(wpp) ? (16 * row) % ounit == 0 && (H * row) % ounit == 0 : ounit == 2 * int(sizeof(T));
  if (!out_ok || reinterpret_cast<uintptr_t>(out) % ounit != 0) return false;
  L.planes = static_cast<uint32_t>(planes);
  L.C = static_cast<int>(P.out_c);
  L.H = static_cast<int>(H), L.W = static_cast<int>(W);
  L.pitch = tc7_pitch<T>(nb);
  L.flip = flip ? 1 : 0;
  L.n_div = fast_div(static_cast<uint32_t>(P.N));
  L.upr_div = fast_div(static_cast<uint32_t>(W * int64_t(sizeof(T)) / unit));
  return true;
}

}  // namespace convx::cuda
