// 16-bit KD x 3 x 3 depthwise forward / stride-1 data-grad on CUDA cores, streaming along depth
// with the whole filter in registers and the input staged in shared memory (issue #9: X3D's
// 5 x 3 x 3 bf16 rows; sessions 11 and 12). depth3d_nc_units: NCDHW; depth3d_cl_smem: NDHWC.
//
// Why: the kernels before were issue-bound, not memory-bound. nc_depth3d (4 outputs per thread, 18
// masked scalar loads per input plane, the accumulator window shifted by register moves) issued
// ~478 instructions per 180 FMAs; cl_depth3d (4 channels x 2 outputs) re-reads the 45 prepared
// weight vectors from L1 for every input plane (45 16-byte loads per 360 FMAs); the tensor-core
// tc_rows_nc wastes 4 of 5 MMA slots on the 3-wide Toeplitz. X3D needs 6.9 GMAC: 0.24 ms at the
// H100's fp32 FMA peak.
//
// A thread owns one channel, R = 8 consecutive outputs of one output row and a column of output
// depths. It holds the channel's KD * 9 taps in registers as fp32 (read once from the layer's own
// 16-bit filter, rotated for the data-grad: no preparation launch) and the 8 outputs of the KD
// output planes an input plane feeds. Per input plane it reads each of its 3 input row segments
// (10 values) once, converts them once and adds each into every output plane and tap it meets:
// 360 FMAs per plane. The oldest plane is then complete and stored (it started from the bias).
// The depth loop is unrolled by KD and the plane -> accumulator slot map rotates with it (slot =
// output depth mod KD, compile-time), so the window never moves; products for output depths
// outside the column go to slots that are never stored, so nothing is tested per filter depth.
// A block stages, per input plane, the rows its threads read (16-byte cp.async, zeros outside the
// input) two planes ahead in a ring of 3, one barrier per plane, so the threads read shared
// memory at compile-time offsets instead of waiting on global loads. Depth segments (re-reading
// KD - 1 planes each) only for small batches.
// Measured (H100, session 11, bench/results/h100/session11/x3d5_call*.log): a first version
// loading from global memory per thread was issue- and latency-bound (NDHWC 0.94 ms, 49% of the
// issue slots busy, 4 warps per scheduler); staged: X3D bf16 forward NCDHW 0.77 -> 0.60 ms (A/B
// against tc_rows_nc), NDHWC 0.92 -> 0.52 (against cl_depth3d). Session 12
// (bench/results/h100/session12/x3d_call*.log): NCDHW blocks of whole warps (depth3d_nc_units,
// below) 0.58 -> 0.52 ms; the walk's per-plane SASS cut from 525 / 582 to 497 / 527 instructions
// around the same 360 FFMAs (bias folded into each slot's first product, bf16 widened by bit
// operations, running store pointers, clamped staging offsets): kernels 503 -> 473 us (NCDHW),
// 488 -> 448 us (NDHWC). ncu (call 1): 14-16 warps per SM, issue slots 67-74% busy.
// Covers: fp16 / bf16, one phase, multiplier 1, KD x 3 x 3 at stride 1 with width padding 1 and
// output width = input width, a multiple of R (any depth / height padding), 16-byte aligned input
// (NCDHW: output too; NDHWC: channels a multiple of 8).
#pragma once

#include "ops/depthwise_conv/cuda/cl_tiled.cuh"
#include "ops/depthwise_conv/cuda/cp_async.cuh"
#include "ops/depthwise_conv/cuda/plan.cuh"

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace convx::cuda {

constexpr int kD3rThreads = 256;
constexpr int kD3rR = 8;     // outputs per thread along W
constexpr int kD3rRing = 3;  // input planes staged at a time

// Whether the plan is one the kernels cover (see the header; alignment and channels aside).
inline bool depth3d_regs_takes(const Plan& P, int KD) {
  if (P.phases != 1 || P.J != 1 || P.in_div != 1 || P.k[0] != KD || P.k[1] != 3 || P.k[2] != 3) return false;
  if (P.S[0] != 1 || P.S[1] != 1 || P.S[2] != 1 || P.pad[2][0] != 1 || P.q[2] != P.in[2] || P.q[2] % kD3rR != 0)
    return false;
  if (P.N * P.out_c * P.q[0] * P.q[1] <= 0) return false;
  // depths, rows and in-plane offsets are ints
  return P.in[0] + P.q[0] + KD < (int64_t(1) << 30) && P.in[1] + P.q[1] + 3 < (int64_t(1) << 30) &&
         P.in[1] * P.in[2] * P.out_c < (int64_t(1) << 31) && P.out[1] * P.out[2] * P.out_c < (int64_t(1) << 31);
}

// x[0 .. R + 1] = the 16-bit values q[-1 .. R] as fp32, q 16-byte aligned: one 16-byte load and
// two 2-byte loads, each 32-bit word widened by bit operations (bf16: a shift and a mask), not
// through c10's conversions (for bf16 a byte permute and a shift per odd value).
template <typename T, int R>
__device__ __forceinline__ void widen_row(const T* q, float (&x)[R + 2]) {
#ifdef __CUDA_ARCH__
  static_assert(R == 8, "one 16-byte load");
  const uint4 v = *reinterpret_cast<const uint4*>(q);
  const unsigned u[4] = {v.x, v.y, v.z, v.w};
  const unsigned short e0 = *reinterpret_cast<const unsigned short*>(q - 1);
  const unsigned short e1 = *reinterpret_cast<const unsigned short*>(q + R);
  if constexpr (std::is_same_v<T, c10::BFloat16>) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      x[1 + 2 * k] = __uint_as_float(u[k] << 16);
      x[2 + 2 * k] = __uint_as_float(u[k] & 0xffff0000u);
    }
    x[0] = __uint_as_float(unsigned(e0) << 16);
    x[R + 1] = __uint_as_float(unsigned(e1) << 16);
  } else {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      __half2 h;
      memcpy(&h, &u[k], 4);
      const float2 f = __half22float2(h);
      x[1 + 2 * k] = f.x, x[2 + 2 * k] = f.y;
    }
    x[0] = __half2float(__ushort_as_half(e0));
    x[R + 1] = __half2float(__ushort_as_half(e1));
  }
#else
  for (int e = -1; e <= R; ++e) x[e + 1] = static_cast<float>(q[e]);
#endif
}

// The depth walk both kernels share (see the header): input planes start .. stop - 1 (those
// outside 0 .. ID - 1 are neither staged nor read). stage(id, b) issues the block's copies of
// plane id into ring buffer b (0 .. 2); row(b, kh, x) reads the thread's 10 inputs of its input
// row kh from buffer b; store(od, a) writes the finished output depth od (when it is the
// thread's), called once per step with od = start + pd - KD + 1, + 1, ... (the kernels keep a
// running output pointer). Plane id is in buffer (id - start) % 3; after the barrier, plane id + 2
// goes into the buffer every thread finished reading one step before. Step u of each group of KD
// planes: tap kd feeds output depth id + pd - kd, held in slot (u - kd) mod KD; the plane finished
// at step u (kd = KD - 1) is slot (u + 1) mod KD, which step u + 1 restarts from the bias with its
// first product (kh = kd = kw = 0: no separate reset, 8 moves a plane fewer), or sets to the bias
// when its plane is outside the input. Whole groups (an exit inside cost register moves): planes
// past `stop` feed no stored output.
template <int KD, typename Stage, typename Row, typename Store>
__device__ __forceinline__ void d3r_walk(const float (&wv)[KD * 9], float b0, int start, int stop, int ID, int pd,
                                         Stage stage, Row row, Store store) {
  constexpr int R = kD3rR, NB = kD3rRing;
  float acc[KD][R];
#pragma unroll
  for (int j = 0; j < KD; ++j) {
#pragma unroll
    for (int r = 0; r < R; ++r) acc[j][r] = b0;
  }
  stage(start, 0);
  cp_async_commit();
  stage(start + 1, 1);
  cp_async_commit();
  int rd = 0;
  for (int id0 = start; id0 < stop; id0 += KD) {
#pragma unroll
    for (int u = 0; u < KD; ++u) {
      const int id = id0 + u;
      cp_async_wait<1>();
      __syncthreads();
      if (id + 2 < stop) stage(id + 2, rd == 0 ? NB - 1 : rd - 1);
      cp_async_commit();
      if (id < stop && id >= 0 && id < ID) {
#pragma unroll
        for (int kh = 0; kh < 3; ++kh) {
          float x[R + 2];
          row(rd, kh, x);
#pragma unroll
          for (int kd = 0; kd < KD; ++kd) {
            float(&a)[R] = acc[(u - kd + KD) % KD];
#pragma unroll
            for (int kw = 0; kw < 3; ++kw) {
              const float wt = wv[(kd * 3 + kh) * 3 + kw];
#pragma unroll
              for (int r = 0; r < R; ++r) {
                if (kh == 0 && kd == 0 && kw == 0) {
                  a[r] = b0 + wt * x[r + kw];  // slot u's first product restarts it from the bias
                } else {
                  a[r] += wt * x[r + kw];
                }
              }
            }
          }
        }
      } else {
#pragma unroll
        for (int r = 0; r < R; ++r) acc[u][r] = b0;  // a plane outside the input restarts slot u
      }
      store(id + pd - (KD - 1), acc[(u + 1) % KD]);
      rd = rd == NB - 1 ? 0 : rd + 1;
    }
  }
}

// ---- NDHWC ----
// A block of 256 threads is 32 channels x 8 output rows of one 8-output strip: per input plane it
// stages the 10 x 10 positions x 32 channels its rows and strip read (a thread's 3 x 10 inputs are
// then compile-time offsets from one address; a warp's read is one 64-byte run). In the
// per-thread global-load version each scalar load spent two integer instructions on its address
// (a run-time column stride).
constexpr int kD3sRows = 8;                         // output rows per block
constexpr int kD3sLanes = 32;                       // channels per block
constexpr int kD3sPos = (kD3sRows + 2) * (kD3rR + 2);  // staged positions per plane
constexpr int kD3sPlane = kD3sPos * kD3sLanes;      // staged values per plane

struct D3sBlocks {
  uint32_t blocks, chunks, strips, rtiles, segs;
  int dl;
};

// false when the plan is not one depth3d_cl_smem covers (depth3d_regs_takes, channels a multiple
// of 8) or its blocks exceed 32 bits; target_blocks: depth segments only below it.
inline bool depth3d_cl_smem_blocks(D3sBlocks& L, const Plan& P, int KD, int64_t target_blocks) {
  if (!depth3d_regs_takes(P, KD) || P.out_c % 8 != 0) return false;
  const int64_t chunks = ceil_div(P.out_c, kD3sLanes), strips = P.q[2] / kD3rR, rtiles = ceil_div(P.q[1], kD3sRows);
  const int64_t per_seg = P.N * chunks * strips * rtiles;
  int64_t segs = 1, dl = 1;
  depth_segments(P.q[0], KD, per_seg, target_blocks, segs, dl);
  if (per_seg * segs >= (int64_t(1) << 31)) return false;
  L.blocks = static_cast<uint32_t>(per_seg * segs);
  L.chunks = static_cast<uint32_t>(chunks);
  L.strips = static_cast<uint32_t>(strips);
  L.rtiles = static_cast<uint32_t>(rtiles);
  L.segs = static_cast<uint32_t>(segs);
  L.dl = static_cast<int>(dl);
  return true;
}

template <typename T, int KD>
__global__ void __launch_bounds__(kD3rThreads, 2)
depth3d_cl_smem(const T* __restrict__ in, const T* __restrict__ w, bool flip, const T* __restrict__ bias,
                T* __restrict__ out, const Plan P, const D3sBlocks L) {
  constexpr int R = kD3rR, NT = KD * 9;
  static_assert(kD3rThreads == kD3sLanes * kD3sRows, "a thread per channel and row");
  __shared__ __align__(16) T ring[kD3rRing][kD3sPlane];
  uint32_t b = blockIdx.x;
  const uint32_t chunk = b % L.chunks;
  b /= L.chunks;
  const uint32_t strip = b % L.strips;
  b /= L.strips;
  const uint32_t rtile = b % L.rtiles;
  b /= L.rtiles;
  const int seg = static_cast<int>(b % L.segs);
  const int64_t n = b / L.segs;
  const int t = threadIdx.x, lane = t % kD3sLanes, rr = t / kD3sLanes;

  const int C = static_cast<int>(P.out_c);
  const int ID = static_cast<int>(P.in[0]), IH = static_cast<int>(P.in[1]), IW = static_cast<int>(P.in[2]);
  const int QD = static_cast<int>(P.q[0]), pd = P.pad[0][0];
  const int OH = static_cast<int>(P.out[1]), OW = static_cast<int>(P.out[2]);
  const int c0 = static_cast<int>(chunk) * kD3sLanes, c = c0 + lane;
  const int qx0 = static_cast<int>(strip) * R, oy0 = static_cast<int>(rtile) * kD3sRows;
  const int iy0 = oy0 - P.pad[1][0], ix0 = qx0 - 1;
  const bool writes = c < C && oy0 + rr < OH;

  float wv[NT];
  {
    const T* wc = w + int64_t(c < C ? c : 0) * NT;
#pragma unroll
    for (int i = 0; i < NT; ++i) wv[i] = static_cast<float>(wc[flip ? NT - 1 - i : i]);
  }
  const float b0 = bias && c < C ? static_cast<float>(bias[c]) : 0.f;

  const int qd0 = seg * L.dl, qd1 = qd0 + L.dl < QD ? qd0 + L.dl : QD;
  const int start = qd0 - pd, stop = qd1 - pd + KD - 1;  // input planes walked
  const int64_t ips = int64_t(IH) * IW * C;
  const T* src = in + (n * ID + start) * ips;  // input plane `start` (maybe outside: only pointed at)

  // The thread's share of a plane's staging: 16-byte pieces i = t, t + 256 of the
  // kD3sPos x (32 / 8) pieces (position-major), as in-plane offsets (-1: zeros).
  constexpr int PIECES = kD3sPos * (kD3sLanes / 8), PER = (PIECES + kD3rThreads - 1) / kD3rThreads;
  int goff[PER];
  unsigned data = 0;  // bit k: piece k lies inside the tensor (else zeros; goff[k] 0)
#pragma unroll
  for (int k = 0; k < PER; ++k) {
    const int i = t + k * kD3rThreads;
    const int pos = i / (kD3sLanes / 8), q = i % (kD3sLanes / 8);
    const int y = iy0 + pos / (R + 2), x = ix0 + pos % (R + 2), ch = c0 + q * 8;
    const bool ok = i < PIECES && y >= 0 && y < IH && x >= 0 && x < IW && ch < C;
    goff[k] = ok ? (y * IW + x) * C + ch : 0;
    data |= unsigned(ok) << k;
  }
  // The ring's shared address taken once, each piece's source (at plane `start`) and size held:
  // less address arithmetic per copy (SASS 527 -> ~520 instructions per plane), X3D's NDHWC
  // forward 451 -> 442 us (session 13, bench/results/h100/session13/x3d_call2_bench.log; the same
  // change measured no faster in depth3d_nc_units and cl_wgrad_d3s, which keep cp_async16).
  const uint32_t sring = shared_addr(ring);
  const T* gp[PER];
  int bytes[PER];
#pragma unroll
  for (int k = 0; k < PER; ++k) {
    gp[k] = src + goff[k];
    bytes[k] = (data >> k & 1u) * 16;
  }
  auto stage = [&](int id, int bi) {
    if (id < 0 || id >= ID) return;  // never read: its plane is skipped
    const int64_t o = int64_t(id - start) * ips;
#pragma unroll
    for (int k = 0; k < PER; ++k) {
      const int i = t + k * kD3rThreads;
      if (i < PIECES) cp_async16_at(ring, sring, uint32_t(bi * kD3sPlane + i * 8) * sizeof(T), gp[k] + o, bytes[k]);
    }
  };
  // the thread's inputs in a staged plane: rows rr .. rr + 2, columns 0 .. R + 1, its channel
  const int mine = rr * (R + 2) * kD3sLanes + lane;
  auto row = [&](int bi, int kh, float (&x)[R + 2]) {
#pragma unroll
    for (int col = 0; col < R + 2; ++col) x[col] = static_cast<float>(ring[bi][mine + (kh * (R + 2) + col) * kD3sLanes]);
  };
  // Output (sample n, depth 0, row oy0 + rr, column qx0, channel c); one plane / column apart.
  const int64_t ops = int64_t(OH) * OW * C;
  T* dst = out + n * P.out[0] * ops + (int64_t(oy0 + rr) * OW + qx0) * C + c;
  // d3r_walk stores output depths start + pd - KD + 1, + 1, ... in turn: a running pointer
  T* run = dst + int64_t(start + pd - (KD - 1)) * ops;
  auto store = [&](int od, const float (&a)[R]) {
    if (writes && od >= qd0 && od < qd1) {
      T* o = run;
#pragma unroll
      for (int r = 0; r < R; ++r, o += C) *o = static_cast<T>(a[r]);  // one 64-bit add per value
    }
    run += ops;
  };
  d3r_walk<KD>(wv, b0, start, stop, ID, pd, stage, row, store);
}

// ---- NCDHW ----
inline int d3n_pitch(int W) { return W + 16; }

// A block is U units of NR output rows x all S = W / 8 strips of one (sample, channel) plane each
// (U = 256 / (NR S); X3D's 56-wide rows: 4 units of 8 rows = 224 threads, 7 whole warps),
// consecutive units (row tiles of a channel, then channels, then samples) in consecutive blocks.
// Per input plane a unit stages its NR + 2 input rows of its channel (16-byte cp.async pieces,
// zero rows outside the input) into rows of W + 16 values whose first and last 8 stay zero (the
// width padding), in a ring of 3 planes, one barrier per plane; a thread reads its 10 inputs of a
// row as one 16-byte and two 2-byte shared loads, with no edge tests. (Session 11's
// depth3d_nc_smem, a block of one channel x S strips x up to 256 / S rows, ran X3D as 7 strips x
// 28 rows = 196 threads: 7 warps, the last with 4 of 32 lanes working, 14 warps per SM; 0.58 ms
// against 0.52 here, bench/results/h100/session12/x3d_call1_test.log.)
struct D3uBlocks {
  uint32_t blocks, ublocks;  // blocks in all, per depth segment
  int64_t units;             // units per depth segment: N * C * row tiles
  int U, nr, rtiles, strips, dl;
};

inline size_t d3u_smem_bytes(int W, int U, int nr, size_t esz) {
  return size_t(kD3rRing) * U * (nr + 2) * d3n_pitch(W) * esz;
}

// false when the plan is not one depth3d_nc_units covers (depth3d_regs_takes, rows of at most 128
// strips) or its blocks exceed 32 bits; target_blocks: depth segments only below it. Rows per
// unit: of 2 .. 256 / S (within 48 KB of shared memory), the count with the most working lanes
// per lane issued (whole warps, row tiles filled), the most rows on ties (fewer halo rows).
inline bool depth3d_nc_units_blocks(D3uBlocks& L, const Plan& P, int KD, int64_t target_blocks) {
  if (!depth3d_regs_takes(P, KD) || P.q[2] / kD3rR > kD3rThreads / 2) return false;
  const int strips = static_cast<int>(P.q[2] / kD3rR);
  double best = -1;
  for (int nr = 2; nr <= kD3rThreads / strips; ++nr) {
    const int U = kD3rThreads / (nr * strips);
    if (d3u_smem_bytes(strips * kD3rR, U, nr, 2) > 48 * 1024) continue;  // the default limit
    const int64_t rtiles = ceil_div(P.q[1], nr), units = P.N * P.out_c * rtiles;
    const int64_t lanes = ceil_div(units, U) * (ceil_div(U * nr * strips, 32) * 32);
    const double eff = double(P.N * P.out_c * P.q[1] * strips) / double(lanes);
    if (eff >= best - 1e-9) {
      best = eff;
      L.U = U;
      L.nr = nr;
      L.rtiles = static_cast<int>(rtiles);
      L.units = units;
    }
    if (nr >= P.q[1]) break;  // more rows than the plane has: only more idle lanes
  }
  if (best < 0) return false;
  L.strips = strips;
  const int64_t per_seg = ceil_div(L.units, L.U);
  int64_t segs = 1, dl = 1;
  depth_segments(P.q[0], KD, per_seg, target_blocks, segs, dl);
  if (per_seg * segs >= (int64_t(1) << 31)) return false;
  L.blocks = static_cast<uint32_t>(per_seg * segs);
  L.ublocks = static_cast<uint32_t>(per_seg);
  L.dl = static_cast<int>(dl);
  return true;
}

template <typename T, int KD>
__global__ void __launch_bounds__(kD3rThreads, 2)
depth3d_nc_units(const T* __restrict__ in, const T* __restrict__ w, bool flip, const T* __restrict__ bias,
                 T* __restrict__ out, const Plan P, const D3uBlocks L) {
  constexpr int R = kD3rR, NT = KD * 9, NB = kD3rRing;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* const ring = reinterpret_cast<T*>(smem_raw);
  const int seg = static_cast<int>(blockIdx.x / L.ublocks);
  const int64_t u0 = int64_t(blockIdx.x % L.ublocks) * L.U;  // the block's first unit
  const int S = L.strips, U = L.U, NR = L.nr, threads = U * NR * S;
  const int t = threadIdx.x, k = t / (NR * S), strip = t % S, rr = t / S % NR;

  const int ID = static_cast<int>(P.in[0]), IH = static_cast<int>(P.in[1]), W = static_cast<int>(P.in[2]);
  const int QD = static_cast<int>(P.q[0]), pd = P.pad[0][0];
  const int OH = static_cast<int>(P.out[1]);
  const int pitch = W + 16, rows = NR + 2, unit_vals = rows * pitch, plane_vals = U * unit_vals;
  const int64_t ips = int64_t(IH) * W, ops = int64_t(OH) * W;
  const int qd0 = seg * L.dl, qd1 = qd0 + L.dl < QD ? qd0 + L.dl : QD;
  const int start = qd0 - pd, stop = qd1 - pd + KD - 1;

  // unit v -> its (sample * C + channel) plane index and first output row; v past the end: -1
  const auto unit = [&](int64_t v, int& oy0) -> int64_t {
    if (v >= L.units) return -1;
    oy0 = static_cast<int>(v % L.rtiles) * NR;
    return v / L.rtiles;
  };
  int oy0 = 0;
  const int64_t nc = unit(u0 + k, oy0);  // the thread's own unit
  const bool writes = nc >= 0 && oy0 + rr < OH;
  const int64_t c = nc >= 0 ? nc % P.out_c : 0;

  float wv[NT];
  {
    const T* wc = w + c * NT;
#pragma unroll
    for (int i = 0; i < NT; ++i) wv[i] = static_cast<float>(wc[flip ? NT - 1 - i : i]);
  }
  const float b0 = bias ? static_cast<float>(bias[c]) : 0.f;

  for (int i = t; i < NB * U * rows * 2; i += threads) {
    const int row = i / 2;
    Pack<T, 8> z;
#pragma unroll
    for (int e = 0; e < 8; ++e) z.v[e] = T(0.f);
    *reinterpret_cast<Pack<T, 8>*>(ring + row * pitch + (i % 2 ? W + 8 : 0)) = z;
  }
  // The thread's 16-byte pieces of a plane (U units x rows x S, row-major): shared offsets (-1:
  // none) and sources at input plane `start` (null: zeros).
  constexpr int PER = 2;  // U * rows * S = U * S * (NR + 2) <= 2 * threads (NR >= 2)
  int soff[PER];
  const T* gsrc[PER];
#pragma unroll
  for (int q = 0; q < PER; ++q) {
    const int i = t + q * threads, uk = i / (rows * S), row = i / S % rows, ch = i % S;
    int uy0 = 0;
    const int64_t unc = i < U * rows * S ? unit(u0 + uk, uy0) : -1;
    const int y = uy0 - P.pad[1][0] + row;
    soff[q] = i < U * rows * S ? uk * unit_vals + row * pitch + 8 + ch * 8 : -1;
    gsrc[q] = unc >= 0 && y >= 0 && y < IH ? in + (unc * ID + start) * ips + y * W + ch * 8 : nullptr;
  }
  auto stage = [&](int id, int bi) {
    if (id < 0 || id >= ID) return;
    const int64_t o = int64_t(id - start) * ips;
#pragma unroll
    for (int q = 0; q < PER; ++q) {
      if (soff[q] >= 0)
        cp_async16(ring + bi * plane_vals + soff[q], gsrc[q] ? gsrc[q] + o : in, gsrc[q] ? 16 : 0);
    }
  };
  const int mine = k * unit_vals + rr * pitch + 8 + strip * R;
  auto row = [&](int bi, int kh, float (&x)[R + 2]) {
    widen_row<T, R>(ring + bi * plane_vals + mine + kh * pitch, x);
  };
  T* dst = out + (nc >= 0 ? nc : 0) * P.out[0] * ops + int64_t(oy0 + rr) * W + strip * R;
  // d3r_walk stores output depths start + pd - KD + 1, + 1, ... in turn: a running pointer
  T* run = dst + int64_t(start + pd - (KD - 1)) * ops;
  auto store = [&](int od, const float (&a)[R]) {
    if (writes && od >= qd0 && od < qd1) {
      Pack<T, R> v;
#pragma unroll
      for (int r = 0; r < R; ++r) v.v[r] = static_cast<T>(a[r]);
      *reinterpret_cast<Pack<T, R>*>(run) = v;
    }
    run += ops;
  };
  d3r_walk<KD>(wv, b0, start, stop, ID, pd, stage, row, store);
}

}  // namespace convx::cuda
