// Weight-grads of KD x 3 x 3 depthwise filters (KD 3 or 5; X3D's k3 and k5x3x3) at stride 1,
// multiplier 1, in fp16 / bf16 on tensor cores, deterministic: NCDHW (tcw3_nc).
//
// Why: the CUDA-core kernels (nc_wgrad_depth3d, cl_wgrad_depth3d) spend 45 fp32 FMAs plus
// conversions per output position and ran the X3D k5x3x3 bf16 weight-grad at ~19% of the FMA
// peak (1.1 ms for 617 MB of x and dy). Here, per channel and output row (t, h) and 16 columns
// starting at w0 (16-aligned in the staged row):
//     D[m][n] += sum_k X[t + a - pd][h + b - ph][w0 + k] * DY[t][h][w0 + k - n + pw]
// with m = 3a + b (the filter's 3 KD rows of 3 taps), n = d (the column tap): one m16n8k16 step
// (mma16.cuh: exact products, fp32 sums) whose D[m][n] (m < 3 KD, n < 3) is gw[a][b][d]'s share
// of the 16 columns: every product x[i] * dy[o] with i = o + d - pw lands in the right tap, and
// those whose x lies in the padding are zero (so summing over the staged x columns covers them
// all). 45 (27) of the step's 128 outputs are used; the operands come from shared memory: A by
// ldmatrix (rows m at the X rows (a, b) of the output row), B (a dy row shifted by n) from two
// aligned words and a funnel shift, so the columns need no alignment of their own.
//
// Tiles: 8 output depths x 8 output rows x 64 input columns of one (sample, channel); staged by
// 16-byte cp.async (zero-filled off the tensor) when rows are whole aligned vectors, else value by
// value; double-buffered so that the next tile's loads fly during this tile's 256 steps. Warp w
// takes the tile's output rows h0 + w at each depth, 4 independent accumulators (one per 16
// columns). Shared layout per buffer: X planes of 10 rows of 72 values (9 16-byte units: odd) and
// a plane stride of 3 row strides mod 8 units, so the 8 rows of each ldmatrix phase (rows (a, b)
// at a plane stride times a plus b row strides, 3a + b = 8 consecutive values) fall on 8
// different bank groups; dy rows of 80 values (column j = dy column xc0 - 8 + j).
//
// Deterministic: a block is one channel x a fixed chunk of its tiles (from the shapes alone); the
// sums are in a fixed order (steps in tile order, the 4 accumulators, the 8 warps, then the
// blocks' partials [channel][chunk][tap] by sum_slots in chunk order).
#pragma once

#include "ops/depthwise_conv/cuda/mma16.cuh"
#include "ops/depthwise_conv/cuda/plan.cuh"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace convx::cuda {

constexpr int kTcw3Threads = 256, kTcw3Warps = 8;
constexpr int kTcw3TB = 8, kTcw3HB = kTcw3Warps;  // output depths, output rows per tile
constexpr int kTcw3WC = 64;                       // input columns per tile: 4 steps of 16
constexpr int kTcw3XRow = 72, kTcw3DRow = 80;     // shared row strides (values)
constexpr int kTcw3XRows = kTcw3HB + 2;           // X rows per staged plane

// The X plane stride (values): 10 rows and the 16-byte units that make it 3 row strides mod 8.
__host__ __device__ constexpr int tcw3_xplane() {
  constexpr int ru = kTcw3XRow / 8;
  return kTcw3XRows * kTcw3XRow + 8 * (((3 - kTcw3XRows) * ru % 8 + 8) % 8);
}
template <int KD>
__host__ __device__ constexpr int tcw3_xvals() {  // per buffer: TB + KD - 1 planes
  return (kTcw3TB + KD - 1) * tcw3_xplane();
}
constexpr int kTcw3DVals = kTcw3TB * kTcw3HB * kTcw3DRow;
template <int KD>
__host__ __device__ constexpr int tcw3_smem_bytes() {  // two buffers of 16-bit values
  return 2 * 2 * (tcw3_xvals<KD>() + kTcw3DVals);
}

struct Tcw3 {
  int T, H, W, To, Ho, Wo, pd, ph, pw;  // input and output sizes, padding
  uint32_t tt, th, tw;                  // tiles along depth, rows, columns
  uint32_t tiles, chunk, chunks;        // tiles per channel, per block; blocks per channel
  int vec;                              // rows staged by 16-byte vectors
};

// Stride 1, multiplier 1, KD x 3 x 3 with KD 3 or 5, padding 0 ... k - 1 per dim, N > 0, a
// (sample, channel) volume below 2^31 values, tile counts within 32 bits. `target` blocks in all
// (the chunks from the shapes alone); `vec`: x and dy 16-byte aligned.
inline bool tcw3_plan(Tcw3& L, const Plan& P, int64_t target, bool aligned) {
  if (P.phases != 1 || P.S[0] != 1 || P.S[1] != 1 || P.S[2] != 1 || P.in_div != 1 || P.J != 1) return false;
  if ((P.k[0] != 3 && P.k[0] != 5) || P.k[1] != 3 || P.k[2] != 3 || P.N <= 0 || P.out_c <= 0) return false;
  for (int d = 0; d < 3; ++d) {
    if (P.pad[d][0] < 0 || P.pad[d][0] > P.k[d] - 1 || P.out[d] <= 0) return false;
  }
  constexpr int64_t lim = int64_t(1) << 31;
  if (P.in[0] * P.in[1] * P.in[2] >= lim || P.out[0] * P.out[1] * P.out[2] >= lim) return false;
  const int64_t tt = ceil_div(P.out[0], kTcw3TB), th = ceil_div(P.out[1], kTcw3HB), tw = ceil_div(P.in[2], kTcw3WC);
  const int64_t tiles = P.N * tt * th * tw;
  if (tiles >= lim) return false;
  int64_t chunks = std::clamp<int64_t>(ceil_div(target, P.out_c), 1, tiles);
  const int64_t chunk = ceil_div(tiles, chunks);
  chunks = ceil_div(tiles, chunk);
  if (P.out_c * chunks >= lim) return false;
  L.T = static_cast<int>(P.in[0]), L.H = static_cast<int>(P.in[1]), L.W = static_cast<int>(P.in[2]);
  L.To = static_cast<int>(P.out[0]), L.Ho = static_cast<int>(P.out[1]), L.Wo = static_cast<int>(P.out[2]);
  L.pd = P.pad[0][0], L.ph = P.pad[1][0], L.pw = P.pad[2][0];
  L.tt = static_cast<uint32_t>(tt), L.th = static_cast<uint32_t>(th), L.tw = static_cast<uint32_t>(tw);
  L.tiles = static_cast<uint32_t>(tiles);
  L.chunk = static_cast<uint32_t>(chunk);
  L.chunks = static_cast<uint32_t>(chunks);
  L.vec = aligned && L.W % 8 == 0 && L.Wo % 8 == 0;
  return true;
}

// 16 bytes global -> shared, asynchronously (cp.async; zeros when !ok). The CPU harness copies.
template <typename T>
__device__ __forceinline__ void tcw3_cp16(T* dst, const T* src, bool ok) {
#if defined(__CUDACC__)
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(ok ? 16 : 0) : "memory");
#else
  __trap();  // launchers take the tensor-core kernels on sm_80 and newer only
#endif
#else
  if (ok) {
    std::memcpy(dst, src, 16);
  } else {
    std::memset(dst, 0, 16);
  }
#endif
}
// Ends the group of this thread's copies; waits until at most N groups are in flight.
__device__ __forceinline__ void tcw3_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void tcw3_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// (q1:q0) >> sh, sh 0 or 16: two 16-bit values from any even or odd position.
__device__ __forceinline__ uint32_t tcw3_pair(uint32_t q0, uint32_t q1, int sh) {
  return static_cast<uint32_t>(((uint64_t(q1) << 32) | q0) >> sh);
}

// One (sample, channel) tile into shared buffers xs / ds: X planes t0 - pd + p (p < TB + KD - 1),
// rows h0 - ph + r (r < 10), columns xc0 + [0, 64); dy depths t0 + [0, 8), rows h0 + [0, 8),
// columns xc0 - 8 + [0, 80); zeros off the tensors.
template <typename T, int KD>
__device__ __forceinline__ void tcw3_stage(T* xs, T* ds, const T* xc, const T* gc, const Tcw3& L, int t0, int h0,
                                           int xc0) {
  constexpr int XP = kTcw3TB + KD - 1;
  const int tid = static_cast<int>(threadIdx.x);
  if (L.vec) {
    constexpr int NX = XP * kTcw3XRows * (kTcw3WC / 8), ND = kTcw3TB * kTcw3HB * (kTcw3DRow / 8);
    for (int v = tid; v < NX + ND; v += kTcw3Threads) {
      if (v < NX) {
        const int q = v % 8, r = v / 8 % kTcw3XRows, p = v / (8 * kTcw3XRows);
        const int t = t0 - L.pd + p, h = h0 - L.ph + r, w = xc0 + 8 * q;
        const bool ok = t >= 0 && t < L.T && h >= 0 && h < L.H && w < L.W;
        tcw3_cp16(xs + p * tcw3_xplane() + r * kTcw3XRow + 8 * q, ok ? xc + (t * L.H + h) * L.W + w : xc, ok);
      } else {
        const int u = v - NX, q = u % 10, row = u / 10;
        const int t = t0 + row / kTcw3HB, h = h0 + row % kTcw3HB, o = xc0 - 8 + 8 * q;
        const bool ok = t < L.To && h < L.Ho && o >= 0 && o < L.Wo;
        tcw3_cp16(ds + row * kTcw3DRow + 8 * q, ok ? gc + (t * L.Ho + h) * L.Wo + o : gc, ok);
      }
    }
  } else {
    constexpr int NX = XP * kTcw3XRows * kTcw3WC, ND = kTcw3TB * kTcw3HB * kTcw3DRow;
    const T zero = static_cast<T>(0.f);
    for (int v = tid; v < NX + ND; v += kTcw3Threads) {
      if (v < NX) {
        const int c = v % kTcw3WC, r = v / kTcw3WC % kTcw3XRows, p = v / (kTcw3WC * kTcw3XRows);
        const int t = t0 - L.pd + p, h = h0 - L.ph + r, w = xc0 + c;
        const bool ok = t >= 0 && t < L.T && h >= 0 && h < L.H && w < L.W;
        xs[p * tcw3_xplane() + r * kTcw3XRow + c] = ok ? xc[(t * L.H + h) * L.W + w] : zero;
      } else {
        const int u = v - NX, c = u % kTcw3DRow, row = u / kTcw3DRow;
        const int t = t0 + row / kTcw3HB, h = h0 + row % kTcw3HB, o = xc0 - 8 + c;
        const bool ok = t < L.To && h < L.Ho && o >= 0 && o < L.Wo;
        ds[row * kTcw3DRow + c] = ok ? gc[(t * L.Ho + h) * L.Wo + o] : zero;
      }
    }
  }
}

// x: [N, C, T, H, W], gy: [N, C, To, Ho, Wo]. Writes gw [C][9 KD] when L.chunks == 1, else part
// [C][chunks][9 KD] (fp32). Grid: C * chunks blocks of kTcw3Threads; dynamic shared memory
// tcw3_smem_bytes<KD>().
template <typename T, int KD>
__global__ void __launch_bounds__(kTcw3Threads, 3)
tcw3_nc(const T* __restrict__ x, const T* __restrict__ gy, float* __restrict__ part, T* __restrict__ gw,
        const int64_t C, const Tcw3 L) {
  constexpr int XV = tcw3_xvals<KD>(), XPS = tcw3_xplane(), NV = 9 * KD;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* const buf = reinterpret_cast<T*>(smem_raw);
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  const int64_t co = blockIdx.x / L.chunks;
  const uint32_t chunk = blockIdx.x % L.chunks;
  const uint32_t i0 = chunk * L.chunk, i1 = i0 + L.chunk < L.tiles ? i0 + L.chunk : L.tiles;

  // Tile i: sample, depth tile, row tile, column tile (columns fastest: the next tile's halo rows
  // are this one's).
  auto stage = [&](uint32_t i, int b) {
    const uint32_t wc = i % L.tw, hb = i / L.tw % L.th, tb = i / L.tw / L.th % L.tt, n = i / L.tw / L.th / L.tt;
    const T* xc = x + (int64_t(n) * C + co) * (int64_t(L.T) * L.H * L.W);
    const T* gc = gy + (int64_t(n) * C + co) * (int64_t(L.To) * L.Ho * L.Wo);
    T* xs = buf + b * (XV + kTcw3DVals);
    tcw3_stage<T, KD>(xs, xs + XV, xc, gc, L, static_cast<int>(tb) * kTcw3TB, static_cast<int>(hb) * kTcw3HB,
                      static_cast<int>(wc) * kTcw3WC);
    tcw3_commit();
  };

  // This lane's A row (m = lane % 8 + 8 (lane / 8 % 2), rows past 3 KD repeat the last) and
  // column half; its B column n = min(g, 2) (columns 3-7 are not used) as word f of the dy row
  // and a shift.
  const int m = std::min((lane & 7) + (lane & 8), 3 * KD - 1);
  const int aoff = (m / 3) * XPS + (m % 3) * kTcw3XRow + (lane & 16 ? 8 : 0);
  const int e = 2 * (lane & 3) - std::min(lane >> 2, 2) + L.pw + 8, f = e >> 1, sh = (e & 1) * 16;

  float acc[4][4];
#pragma unroll
  for (int j = 0; j < 4; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
  if (i0 < i1) stage(i0, 0);
  for (uint32_t i = i0; i < i1; ++i) {
    const int b = static_cast<int>(i - i0) & 1;
    if (i + 1 < i1) {
      stage(i + 1, b ^ 1);
      tcw3_wait<1>();
    } else {
      tcw3_wait<0>();
    }
    __syncthreads();
    const T* xs = buf + b * (XV + kTcw3DVals);
    const T* ds = xs + XV;
#pragma unroll 2
    for (int td = 0; td < kTcw3TB; ++td) {
      const T* xr = xs + td * XPS + warp * kTcw3XRow + aoff;
      const uint32_t* dw = reinterpret_cast<const uint32_t*>(ds + (td * kTcw3HB + warp) * kTcw3DRow) + f;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        uint32_t a[4];
        tc_ldsm_x4(a, reinterpret_cast<const uint32_t*>(xr + 16 * j));
        const uint32_t bb[2] = {tcw3_pair(dw[8 * j], dw[8 * j + 1], sh), tcw3_pair(dw[8 * j + 4], dw[8 * j + 5], sh)};
        mma16816<T>(acc[j], a, bb);
      }
    }
    __syncthreads();  // the buffer is restaged two tiles on
  }

  // The accumulators in order, the warps in order (through the idle buffers).
  float* const red = reinterpret_cast<float*>(smem_raw);
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    red[warp * 128 + (g + (r >= 2 ? 8 : 0)) * 8 + 2 * t + (r & 1)] = ((acc[0][r] + acc[1][r]) + acc[2][r]) + acc[3][r];
  }
  __syncthreads();
  if (threadIdx.x < NV) {
    const int mm = threadIdx.x / 3, n = threadIdx.x % 3;
    float s = 0.f;
#pragma unroll
    for (int w = 0; w < kTcw3Warps; ++w) s += red[w * 128 + mm * 8 + n];
    if (L.chunks == 1) {
      gw[co * NV + threadIdx.x] = static_cast<T>(s);
    } else {
      part[(co * L.chunks + chunk) * NV + threadIdx.x] = s;
    }
  }
}

}  // namespace convx::cuda
