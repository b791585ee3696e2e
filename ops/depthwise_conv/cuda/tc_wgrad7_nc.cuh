// NCHW weight-grad of 7 x 7 filters at stride 1, multiplier 1, on tensor cores, deterministic:
// tcw2_nc's steps (tc_wgrad2d.cuh: per channel, output row h and 16 input columns one m16n8k16
// step, A = the 7 X rows the row meets by ldmatrix.x2, B = the dy row shifted by the column tap)
// behind a ring of S staged tiles with one block barrier per tile, and the same steps for fp32 as
// TF32 on m16n8k8 (8 input columns per step; taken only where torch.backends.cudnn.allow_tf32
// allows it, the caller checks).
//
// Why: tcw2_nc (two buffers, a barrier pair per tile, the next tile's copies issued only when the
// current one has landed) ran ConvNeXt-56 16-bit at 73.7 us against 26 us for reading x and dy
// once at the copy bandwidth; the fp32 weight-grad (walk_wgrad2d, CUDA cores, exact) at 139.7 us
// (H100, bench/results/h100/session14/lead_start_kernels.log).
//
// TF32 step (mma16.cuh's m16n8k8 fragments; g = lane / 4, t = lane % 4): for output row h and input
// columns w0 + k, k < 8,
//     D[m][d] += sum_k X[h + m - ph][w0 + k] * DY[h][w0 + k - d + pw]
// with A = the 7 X rows (ldmatrix.x2 over rows of 8 fp32 values: lanes 0-7 address columns 0-3 of
// row m, lanes 8-15 columns 4-7, giving a[0] = A[g][t], a[2] = A[g][t + 4]; rows 8-15 zero) and B
// read value by value from the staged dy row: b[0] = B[t][g] at staged column f + 8 j, b[1] at
// f + 8 j + 4, f = t - min(g, 6) + pw + 8 (no funnel shifts: one value per register). The staged
// values are rounded to TF32 (cvt.rna) by the thread that copied them, before the block barrier
// that publishes the tile, so each value is rounded once although A reads every X row 7 times.
//
// Tiles, staging and sums as tcw2_nc: tiles of tr output rows (at most L's row cap) x 64 input
// columns of one (sample, channel) plane, X rows h0 - ph + [0, tr + 6) in rows of tcw7_xrow<T>()
// values (an odd number of 16-byte units: ldmatrix's 8 rows on 8 bank groups), dy rows h0 + [0, tr)
// with columns xc0 - 8 + [0, 80); zeros off the tensors (stored directly), so every product lands
// in exactly one step without bounds tests. A block is one channel x a fixed chunk of its tiles; its
// warps' D summed in order, the chunks' partials summed in chunk order by the channel's last block
// (tc_wgrad1d.cuh's tcw_last_block / tcw_sum_chunks): bitwise repeatable, no float atomics.
#pragma once

#include "ops/depthwise_conv/cuda/tc_wgrad2d.cuh"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace convx::cuda {

constexpr int kTcw7Cols = 64;  // input columns per tile (4 16-bit steps, 8 TF32 steps)
constexpr int kTcw7DRow = 80;  // staged dy row: columns xc0 - 8 ... xc0 + 71
constexpr int kTcw7Lead = 8;
template <typename T>
__host__ __device__ constexpr int tcw7_xrow() {  // 9 / 17 16-byte units
  return sizeof(T) == 2 ? 72 : 68;
}
// Blocks per SM the kernel's registers allow (64 registers at 4, 80 at 3; fp32 with 2 stages
// spilled at 64).
template <typename T, int S>
__host__ __device__ constexpr int tcw7_min_blocks() {
  return (sizeof(T) == 2 && S >= 4) || (sizeof(T) == 4 && S == 2) ? 3 : 4;
}

// Stride 1, multiplier 1, 2-D 7 x 7, padding 0 ... 6, N > 0, rows wider than 32 (tiles of 64
// columns), a plane below 2^31 values; tiles of at most `rows` output rows; about `target` blocks
// (the chunks from the shapes alone). xa / ga: the addresses of x and dy (the staging vector).
template <typename T>
inline bool tcw7_plan(Tcw2& L, const Plan& P, int64_t target, int rows, uintptr_t xa, uintptr_t ga) {
  if (P.phases != 1 || P.S[0] != 1 || P.S[1] != 1 || P.S[2] != 1 || P.in_div != 1 || P.J != 1) return false;
  if (P.k[0] != 1 || P.in[0] != 1 || P.out[0] != 1 || P.pad[0][0] != 0) return false;
  constexpr int K = 7;
  if (P.k[1] != K || P.k[2] != K || P.N <= 0 || P.out_c <= 0 || P.in[2] <= 32) return false;
  for (int d = 1; d < 3; ++d) {
    if (P.pad[d][0] < 0 || P.pad[d][0] > K - 1 || P.out[d] <= 0) return false;
  }
  constexpr int64_t lim = int64_t(1) << 31;
  if (P.in[1] * P.in[2] >= lim || P.out[1] * P.out[2] >= lim || P.out_c >= lim) return false;
  const int64_t th = ceil_div(P.out[1], rows), tr = ceil_div(P.out[1], th);
  const int64_t tw = ceil_div(P.in[2], kTcw7Cols);
  const int64_t tiles = P.N * th * tw;
  if (tiles >= lim) return false;
  int64_t chunks = std::clamp<int64_t>(ceil_div(target, P.out_c), 1, tiles);
  const int64_t chunk = ceil_div(tiles, chunks);
  chunks = ceil_div(tiles, chunk);
  if (P.out_c * chunks >= lim) return false;
  L.H = static_cast<int>(P.in[1]), L.W = static_cast<int>(P.in[2]);
  L.Ho = static_cast<int>(P.out[1]), L.Wo = static_cast<int>(P.out[2]);
  L.ph = P.pad[1][0], L.pw = P.pad[2][0];
  L.tr = static_cast<int>(tr), L.nj = 4;
  L.th = static_cast<uint32_t>(th), L.tw = static_cast<uint32_t>(tw);
  L.tiles = static_cast<uint32_t>(tiles);
  L.chunk = static_cast<uint32_t>(chunk);
  L.chunks = static_cast<uint32_t>(chunks);
  L.groups = static_cast<uint32_t>(P.out_c);
  L.C = static_cast<int>(P.out_c);
  L.ps = static_cast<int>((tr + K - 1) * tcw7_xrow<T>() + tr * kTcw7DRow);
  // The widest vector (16 bytes at most) dividing both row lengths and both addresses: every row of
  // every plane starts on a vector boundary (the tiles' columns and the lead are multiples of 8).
  L.vec = 1;
  for (int v = 16 / int(sizeof(T)); v > 1; v /= 2) {
    const uintptr_t bytes = uintptr_t(v) * sizeof(T);
    if (L.W % v == 0 && L.Wo % v == 0 && xa % bytes == 0 && ga % bytes == 0) {
      L.vec = v;
      break;
    }
  }
  return true;
}

// Dynamic shared memory: S tiles, at least the final sum's area (the warps' D and a flag).
template <typename T, int S>
__host__ __device__ inline int tcw7_smem_bytes(const Tcw2& L) {
  return std::max(S * int(sizeof(T)) * L.ps, 4 * (kTcw2Warps * 64 + 4));
}

// This lane's operands (values from the output row's first staged X row / its dy row): 16-bit as
// tcw2_nc (dy as words and a shift); TF32: ldmatrix row m = min(lane % 8, 6), columns 4 (lane / 8)
// + [0, 4), and dy value f = t - min(g, 6) + pw + 8.
template <typename T>
__device__ __forceinline__ Tcw2Lane tcw7_lane(int lane, int pw) {
  if constexpr (sizeof(T) == 2) {
    return tcw2_lane<7>(lane, pw);
  } else {
    const int m = std::min(lane & 7, 6), d = std::min(lane >> 2, 6);
    return {m * tcw7_xrow<T>() + (lane & 8) / 2, (lane & 3) - d + pw + kTcw7Lead, 0};
  }
}

__device__ __forceinline__ uint32_t tcw7_bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}

// The TF32 steps of one output row: xr = its first X row, dr = its dy row; steps j < js (the
// tile's columns inside the row: block-uniform), acc[j] per step. A dead row adds zeros.
__device__ __forceinline__ void tcw7_row_tf32(float (&acc)[8][4], const float* xr, const float* dr,
                                              const Tcw2Lane& ln, bool live, int js) {
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    if (j < js) {
      const uint32_t b[2] = {live ? tcw7_bits(dr[ln.f + 8 * j]) : 0u, live ? tcw7_bits(dr[ln.f + 8 * j + 4]) : 0u};
      uint32_t a[4];
      tc_ldsm_x2(a, reinterpret_cast<const uint32_t*>(xr + ln.a + 8 * j));
      mma1688_tf32(acc[j], a, b);
    }
  }
}

// x: [N, C, H, W], gy: [N, C, Ho, Wo]. Writes gw [C][49]: directly when L.chunks == 1, else through
// part [C][chunks][49] (fp32), summed by the channel's last block (counters: C, zeroed). Grid:
// C * chunks blocks of kTcw2Threads (a channel's chunks adjacent); dynamic shared memory
// tcw7_smem_bytes<T, S>(L). Ring: tiles i0 ... i0 + S - 2 in flight at the start; at tile i, after
// its copies landed (and, TF32, were rounded) and the barrier, tile i + S - 1's copies go to the
// buffer tile i - 1 used, and warp w runs the output rows w + 8 k of tile i.
template <typename T, int S>
__global__ void __launch_bounds__(kTcw2Threads, tcw7_min_blocks<T, S>())
tcw7_nc(const T* __restrict__ x, const T* __restrict__ gy, float* __restrict__ part, unsigned* __restrict__ counters,
        T* __restrict__ gw, const Tcw2 L) {
  constexpr int K = 7, NV = K * K, XR = tcw7_xrow<T>();
  constexpr bool k16 = sizeof(T) == 2;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* const buf = reinterpret_cast<T*>(smem_raw);
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int64_t co = blockIdx.x / L.chunks;
  const uint32_t chunk = blockIdx.x % L.chunks;
  const uint32_t i0 = chunk * L.chunk, i1 = i0 + L.chunk < L.tiles ? i0 + L.chunk : L.tiles;
  const int64_t in_plane = int64_t(L.H) * L.W, out_plane = int64_t(L.Ho) * L.Wo;
  const int xr = L.tr + K - 1, xvals = xr * XR;
  // This thread's staging: X vector column xq of rows xr0 + k xrs (XQ a power of two), dy vector
  // column dq of rows dr0 + k drs (threads past drs DQ stage no dy).
  const int V = L.vec, XQ = kTcw7Cols / V, DQ = kTcw7DRow / V;
  const int xq = tid & (XQ - 1), xr0 = tid / XQ, xrs = kTcw2Threads / XQ;
  const int drs = kTcw2Threads / DQ, dq = tid % DQ, dr0 = tid < drs * DQ ? tid / DQ : L.tr;
  const T zero = static_cast<T>(0.f);
  auto put = [&](T* dst, const T* src) {  // one vector: src, or zeros when null
    if (V == 1) {
      *dst = src ? *src : zero;
    } else if (src) {
      cp_async_n(dst, src, int(sizeof(T)) * V);
    } else {
      for (int e = 0; e < V; ++e) dst[e] = zero;
    }
  };
  auto stage = [&](uint32_t i, int b) {
    const int xc0 = static_cast<int>(i % L.tw) * kTcw7Cols, h0 = static_cast<int>(i / L.tw % L.th) * L.tr;
    const int64_t n = i / L.tw / L.th;
    const T* xc = x + (n * L.C + co) * in_plane;
    const T* gc = gy + (n * L.C + co) * out_plane;
    T* const xs = buf + b * L.ps;
    T* const ds = xs + xvals;
    const int w = xc0 + V * xq, c = xc0 - kTcw7Lead + V * dq;
    const bool wok = w < L.W, cok = c >= 0 && c < L.Wo;
    for (int r = xr0; r < xr; r += xrs) {
      const int h = h0 - L.ph + r;
      put(xs + r * XR + V * xq, wok && h >= 0 && h < L.H ? xc + h * L.W + w : nullptr);
    }
    for (int r = dr0; r < L.tr; r += drs) {
      const int h = h0 + r;
      put(ds + r * kTcw7DRow + V * dq, cok && h < L.Ho ? gc + h * L.Wo + c : nullptr);
    }
    cp_async_commit();
  };
  // TF32: this thread's own vectors of buffer b, rounded in place once they have landed.
  auto round_own = [&](int b) {
    if constexpr (!k16) {
      auto rnd = [&](T* p) {
        for (int e = 0; e < V; ++e) {
          const uint32_t r = tf32_round(tcw7_bits(p[e]));
          std::memcpy(p + e, &r, 4);
        }
      };
      T* const xs = buf + b * L.ps;
      for (int r = xr0; r < xr; r += xrs) rnd(xs + r * XR + V * xq);
      for (int r = dr0; r < L.tr; r += drs) rnd(xs + xvals + r * kTcw7DRow + V * dq);
    }
  };
  const Tcw2Lane ln = tcw7_lane<T>(lane, L.pw);
  const int rounds = (L.tr + kTcw2Warps - 1) / kTcw2Warps;  // the same for every warp
  constexpr int NA = k16 ? 4 : 8;                           // steps (accumulators) per row

  float acc[NA][4] = {};
#pragma unroll
  for (int s = 0; s < S - 1; ++s) {
    if (i0 + s < i1) {
      stage(i0 + s, s);
    } else {
      cp_async_commit();  // an empty group: the waits count S - 1 groups ahead
    }
  }
  for (uint32_t i = i0; i < i1; ++i) {
    const int b = static_cast<int>((i - i0) % S);
    cp_async_wait<S - 2>();  // this thread's copies of tile i have landed
    round_own(b);
    __syncthreads();  // everyone's copies of tile i are visible; tile i - 1's buffer is free
    const uint32_t nx = i + S - 1;
    if (nx < i1) {
      stage(nx, static_cast<int>((nx - i0) % S));
    } else {
      cp_async_commit();
    }
    const T* xs = buf + b * L.ps;
    if constexpr (k16) {
      const uint32_t* dw = reinterpret_cast<const uint32_t*>(xs + xvals) + ln.f;
      for (int k = 0; k < rounds; ++k) {
        const int g = warp + kTcw2Warps * k;
        const bool live = g < L.tr;
        const int r = live ? g : 0;
        tcw2_row<T, 4>(acc, xs + r * XR, dw + r * (kTcw7DRow / 2), ln, live);
      }
    } else {
      // steps whose 8 columns start inside the row (the rest would add zeros)
      const int js = std::min(8, (L.W - static_cast<int>(i % L.tw) * kTcw7Cols + 7) / 8);
      for (int k = 0; k < rounds; ++k) {
        const int g = warp + kTcw2Warps * k;
        const bool live = g < L.tr;
        const int r = live ? g : 0;
        tcw7_row_tf32(acc, xs + r * XR, xs + xvals + r * kTcw7DRow, ln, live, js);
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // every warp is done with the tiles: the area holds the warps' D
  float* const red = reinterpret_cast<float*>(smem_raw);
  tcw2_store_d<NA>(acc, red + warp * 64, lane);
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

}  // namespace convx::cuda
