// The dense data-grad (= transposed convolution) whose result has at most 4 channels per group
// (an RGB decoder head: 64 -> 3 channels), as a direct gather: the kernel and its tile plan.
// Included by few_channel_gather.cu (the launcher) and by the CPU harness
// (cpp_tests/cuda_on_cpu/few_channel_harness.cpp), which runs it through shim.h.
//
// Names are the transposed convolution's: x = grad_output [N, G*Cig, Hi, Wi] (its input), w =
// weight [G*Cig, Cog, kh, kw], y = grad_input [N, G*Cog, Ho, Wo] (its result), with
// y[n, co, oy, ox] = sum over ci and taps (ty, tx) with oy + ph - ty*dh = iy*sh (same in x) of
// x[n, ci, iy, ix] * w[ci, co, ty, tx].
//
// Why a kernel of its own: cuDNN runs this shape (batch 128, 64 -> 3 channels, 14² -> 32², k5 s2)
// at ~15x its bandwidth floor. Each result pixel is a sum over Cig channels x the few taps of its
// stride phase, and with 3 result channels a GEMM has nothing to tile along N. Here a block owns
// an output tile of one (sample, group): it stages the tile's input window (all taps' rows and
// columns, zero-padded at the borders, channels innermost, in float32) and the whole filter in
// shared memory, and each warp takes one stride phase, so that every lane of a warp has the same
// taps: weights are broadcast reads, the inner loop has no bounds checks or phase tests, and a
// thread keeps R pixels x Cog channels of sums in registers. Channels innermost let one 16-byte
// shared load feed 4 channels of a pixel: per 4 channels a thread issues R + Cog loads for
// 4 * R * Cog FMAs. Every operand is read through its strides (NCHW, channels-last or any view).
// H100, that shape in fp32 NCHW: 0.024 ms against cuDNN's 0.041 (docs/performance.md, "Session 9").
#pragma once

#include "ops/common/args.h"

#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cstdint>

namespace convx::cuda {

namespace few_channel {

constexpr int R = 4;           // result pixels per thread (same row and phase, Q apart)
constexpr int kMaxCog = 4;     // result channels per group this kernel serves
constexpr int kMaxChunk = 64;  // input channels staged per pass, at most
constexpr int kWarps = 8;      // warps per block (fewer where the image has fewer phase rows)
constexpr int U = 4;           // staging items in flight per thread

// i / d for 0 <= i < 2^20 and d >= 1 without an integer division: a float estimate, corrected.
struct Div {
  int32_t d = 1;
  float inv = 1.f;
  void set(int32_t v) { d = v, inv = 1.f / static_cast<float>(v); }
  __host__ __device__ int32_t div(int32_t i) const {
    int32_t q = static_cast<int32_t>(static_cast<float>(i) * inv);
    if (q * d > i) --q;
    else if ((q + 1) * d <= i) ++q;
    return q;
  }
};

struct Params {
  int32_t N, G, Cig, Cog;
  int32_t Hi, Wi, Ho, Wo;
  int32_t kh, kw, sh, sw, ph, pw, dh, dw;
  int64_t xs[4], ws[4], ys[4];  // strides (elements): x (n, c, h, w), w (ci, co, h, w), y
  bool x_vec;                   // x's channels load 4 at a time (unit channel stride, aligned)
  // The plan (plan() below).
  int32_t Q;            // threads along a phase row; a thread's pixels are Q phase columns apart
  int32_t PH;           // phase rows per tile
  int32_t wpp;          // warps per phase
  int32_t tiles_y, tiles_x;
  int32_t rows, cols, pitch;  // staged input window (pitch: its row length in pixels)
  int32_t chunk, C4, CiP4;    // channels per pass, their float4s, float4s per staged pixel
  int32_t threads;
  Div div_cols, div_c4, div_npix, div_taps, div_kw;  // of the staging loops
  int64_t smem;
  int64_t blocks;
};

__host__ __device__ inline int32_t floor_div(int32_t a, int32_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// The staged input rows of one tile dimension: input indices from floor((o0 + p - (k-1)d) / s) to
// floor((o0 + T - 1 + p) / s) for a tile of T outputs starting at o0, a multiple of s (the same
// count for every tile).
inline int32_t window(int32_t T, int32_t k, int32_t s, int32_t p, int32_t d) {
  return floor_div(T - 1 + p, s) - floor_div(p - (k - 1) * d, s) + 1;
}

// Chooses the tile for a device of `sms` SMs with `smem_optin` bytes of shared memory per block;
// false when the tile does not fit even at 4 channels per pass, or the call has more than 16
// stride phases.
inline bool plan(Params& p, int32_t sms, int64_t smem_optin) {
  const int32_t phases = p.sh * p.sw;
  if (phases > 16 || p.Cog < 1 || p.Cog > kMaxCog) return false;
  const int32_t phase_cols = (p.Wo + p.sw - 1) / p.sw;
  // Up to 8 threads along a phase row (32 result columns at stride 1): wider tiles would be
  // fewer rows tall, and the taps' extra input rows would be staged again by the tile below.
  p.Q = 1;
  while (p.Q < 8 && p.Q * R < phase_cols) p.Q *= 2;
  p.wpp = std::max(1, kWarps / phases);
  // No more tile rows than the result has phase rows (small images: fewer, fuller warps).
  const int32_t phase_rows = (p.Ho + p.sh - 1) / p.sh;
  while (p.wpp > 1 && 32 * (p.wpp / 2) / p.Q >= phase_rows) p.wpp /= 2;
  p.PH = 32 * p.wpp / p.Q;
  p.threads = phases * 32 * p.wpp;
  const int32_t TH = p.PH * p.sh, TW = p.Q * R * p.sw;
  p.tiles_y = (p.Ho + TH - 1) / TH;
  p.tiles_x = (p.Wo + TW - 1) / TW;
  p.rows = window(TH, p.kh, p.sh, p.ph, p.dh);
  p.cols = window(TW, p.kw, p.sw, p.pw, p.dw);
  // A quarter warp's 16-byte loads hit 8 distinct bank groups: pixels Q apart along a row are
  // CiP4 (odd) float4s apart; with Q < 8 a quarter warp spans 8 / Q rows, so the row pitch is Q
  // mod 8.
  p.pitch = p.cols;
  if (p.Q < 8) p.pitch += ((p.Q - p.cols) % 8 + 8) % 8;
  const int64_t taps = int64_t(p.kh) * p.kw;
  p.blocks = int64_t(p.N) * p.G * p.tiles_y * p.tiles_x;
  // Channels per pass. Each pass restages the window and waits at two barriers, and a block's
  // staging and its sums overlap only with other blocks': where the blocks fit one wave at one
  // per SM, the window may take all of the SM (one pass where it fits); beyond, at most half,
  // so that two blocks share an SM. Measured on the H100 (session 9,
  // bench/results/h100/session9/few_channel_ab.log): the autoencoder head (128 blocks), one
  // pass of 64 channels in 117 KB against two of 32 in 61 KB: 0.024 against 0.037 ms (fp32
  // NCHW); the input-grad of an RGB stem on 224² (1792 blocks): two blocks per SM at 96 KB
  // against one at 128 KB: 0.46 against 0.80 ms. Passes are balanced (64 = 2 x 32, not 60 + 4).
  const int64_t max_smem = p.blocks <= sms ? smem_optin : smem_optin / 2 - 1024;
  const auto bytes = [&](int32_t c4) {
    return (int64_t(p.rows) * p.pitch * (c4 | 1) + taps * p.Cog * c4) * 16;
  };
  int32_t c4 = std::min((p.Cig + 3) / 4, kMaxChunk / 4);
  while (c4 > 0 && bytes(c4) > max_smem) --c4;
  if (c4 == 0) return false;
  const int32_t cig4 = (p.Cig + 3) / 4, passes = (cig4 + c4 - 1) / c4;
  p.C4 = (cig4 + passes - 1) / passes;
  p.chunk = 4 * p.C4;
  p.CiP4 = p.C4 | 1;
  p.smem = bytes(p.C4);
  p.div_cols.set(p.cols);
  p.div_c4.set(p.C4);
  p.div_npix.set(p.rows * p.cols);
  p.div_taps.set(int32_t(taps));
  p.div_kw.set(p.kw);
  return true;
}

// The launcher's parameters for a rank-2 call (dtypes checked by the caller) on a device of `sms`
// SMs and `smem_optin` bytes of shared memory per block; false where the kernel does not take
// the call.
inline bool prepare(Params& p, const ConvArgs& a, const at::Tensor& grad_output,
                    const at::Tensor& weight, const at::Tensor& grad_input, int32_t sms,
                    int64_t smem_optin) {
  if (a.rank != 2 || weight.size(1) > kMaxCog) return false;
  // 32-bit pixel and tile arithmetic in the kernel; offsets into the tensors are 64-bit.
  constexpr int64_t kMaxSide = int64_t(1) << 24;
  for (int64_t d = 2; d < 4; ++d) {
    if (grad_output.size(d) >= kMaxSide || grad_input.size(d) >= kMaxSide) return false;
  }
  for (int64_t i = 0; i < 2; ++i) {
    if (a.stride[i] > 64 || a.padding[i] >= kMaxSide || a.dilation[i] > 64 || weight.size(2 + i) > 64)
      return false;
  }
  if (grad_output.size(1) >= kMaxSide) return false;
  p.N = static_cast<int32_t>(grad_output.size(0));
  p.G = static_cast<int32_t>(a.groups);
  p.Cig = static_cast<int32_t>(grad_output.size(1) / a.groups);
  p.Cog = static_cast<int32_t>(weight.size(1));
  p.Hi = static_cast<int32_t>(grad_output.size(2));
  p.Wi = static_cast<int32_t>(grad_output.size(3));
  p.Ho = static_cast<int32_t>(grad_input.size(2));
  p.Wo = static_cast<int32_t>(grad_input.size(3));
  p.kh = static_cast<int32_t>(weight.size(2));
  p.kw = static_cast<int32_t>(weight.size(3));
  p.sh = static_cast<int32_t>(a.stride[0]);
  p.sw = static_cast<int32_t>(a.stride[1]);
  p.ph = static_cast<int32_t>(a.padding[0]);
  p.pw = static_cast<int32_t>(a.padding[1]);
  p.dh = static_cast<int32_t>(a.dilation[0]);
  p.dw = static_cast<int32_t>(a.dilation[1]);
  for (int i = 0; i < 4; ++i) {
    p.xs[i] = grad_output.stride(i);
    p.ws[i] = weight.stride(i);
    p.ys[i] = grad_input.stride(i);
  }
  if (!plan(p, sms, smem_optin) || p.blocks >= (int64_t(1) << 31)) return false;
  const auto aligned = [](const at::Tensor& t) {
    return reinterpret_cast<uintptr_t>(t.const_data_ptr()) % (4 * t.element_size()) == 0;
  };
  p.x_vec = p.xs[1] == 1 && p.Cig % 4 == 0 && p.xs[0] % 4 == 0 && p.xs[2] % 4 == 0 &&
            p.xs[3] % 4 == 0 && aligned(grad_output);
  return true;
}

template <typename T>
__device__ __forceinline__ float to_f(T v) { return static_cast<float>(v); }

// 4 consecutive channels of x from q (stride cs), as floats; `vec`: one aligned vector load.
template <typename T>
__device__ __forceinline__ float4 load4(const T* q, int64_t cs, bool vec) {
  if (vec) {
    if constexpr (sizeof(T) == 4) {
      return *reinterpret_cast<const float4*>(q);
    } else {
      struct alignas(8) V { T v[4]; };
      const V u = *reinterpret_cast<const V*>(q);
      return float4{to_f(u.v[0]), to_f(u.v[1]), to_f(u.v[2]), to_f(u.v[3])};
    }
  }
  return float4{to_f(q[0]), to_f(q[cs]), to_f(q[2 * cs]), to_f(q[3 * cs])};
}

template <typename T, int COG>
__global__ void __launch_bounds__(512, 1) gather(const T* __restrict__ x, const T* __restrict__ w,
                                              const T* __restrict__ bias, T* __restrict__ y,
                                              const Params p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  float4* xsm = reinterpret_cast<float4*>(smem_raw);     // [rows][pitch][CiP4]
  float4* wsm = xsm + int64_t(p.rows) * p.pitch * p.CiP4;  // [C4][kh][kw][COG]
  const int tid = threadIdx.x, nthreads = blockDim.x;

  // The block's tile: (n, g, tile row, tile column).
  int64_t b = blockIdx.x;
  const int tx_ = static_cast<int>(b % p.tiles_x);
  b /= p.tiles_x;
  const int ty_ = static_cast<int>(b % p.tiles_y);
  b /= p.tiles_y;
  const int g = static_cast<int>(b % p.G);
  const int64_t n = b / p.G;
  const int oy0 = ty_ * p.PH * p.sh, ox0 = tx_ * p.Q * R * p.sw;
  const int lo_y = floor_div(oy0 + p.ph - (p.kh - 1) * p.dh, p.sh);
  const int lo_x = floor_div(ox0 + p.pw - (p.kw - 1) * p.dw, p.sw);

  // The thread's pixels: phase (fy, fx) of its warp, phase row jj, phase columns q + Q * r.
  // Warp w serves phase w % P in even rounds of P warps and P - 1 - w % P in odd ones (its tile
  // rows: the round): the phases' tap counts differ (k5 s2: 9, 6, 6, 4), and warps w and w + 4
  // share a scheduler, so with 2 warps per phase each scheduler gets a heavy and a light one.
  const int phases = p.sh * p.sw, warp = tid / 32, round = warp / phases;
  const int phase = round % 2 == 0 ? warp % phases : phases - 1 - warp % phases;
  const int tp = round * 32 + tid % 32;
  const int fy = phase / p.sw, fx = phase - fy * p.sw;
  const int jj = tp / p.Q, q = tp - jj * p.Q;

  const T* xn = x + n * p.xs[0] + int64_t(g) * p.Cig * p.xs[1];
  const T* wg = w + int64_t(g) * p.Cig * p.ws[0];
  const int npix = p.rows * p.cols, taps = p.kh * p.kw;
  // Channel-fast staging (unit channel stride): consecutive threads read consecutive 4-channel
  // groups of a pixel; else pixel-fast: consecutive threads read consecutive pixels of a row.
  const bool channel_fast = p.xs[1] == 1;

  float acc[R][COG];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int co = 0; co < COG; ++co) acc[r][co] = 0.f;

  for (int c0 = 0; c0 < p.Cig; c0 += p.chunk) {
    const int C4 = p.C4;
    if (c0 > 0) __syncthreads();  // the previous pass's reads are done
    // Input window [rows][cols][C4] float4s, zero outside the input and beyond the group's
    // channels. Item i is (pixel, 4 channels): channel-fast where the channel stride is 1
    // (consecutive threads read consecutive channels of a pixel), else pixel-fast (consecutive
    // pixels of a row). Each thread loads U items before storing them, so that U items' loads
    // are in flight at once.
    const int x_items = npix * C4;
    for (int i0 = tid; i0 < x_items; i0 += U * nthreads) {
      float4 v[U];
      int dst[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int i = i0 + u * nthreads;
        int pix, c4;
        if (channel_fast) {
          pix = p.div_c4.div(i);
          c4 = i - pix * C4;
        } else {
          c4 = p.div_npix.div(i);
          pix = i - c4 * npix;
        }
        const int r = p.div_cols.div(pix), c = pix - r * p.cols;
        dst[u] = (r * p.pitch + c) * p.CiP4 + c4;
        const int iy = lo_y + r, ix = lo_x + c, ci = c0 + 4 * c4;
        v[u] = float4{0.f, 0.f, 0.f, 0.f};
        if (i < x_items && iy >= 0 && iy < p.Hi && ix >= 0 && ix < p.Wi && ci < p.Cig) {
          const T* src = xn + ci * p.xs[1] + iy * p.xs[2] + ix * p.xs[3];
          if (ci + 4 <= p.Cig) {
            v[u] = load4(src, p.xs[1], p.x_vec);
          } else {  // the group's last, partial 4
            v[u].x = to_f(src[0]);
            if (ci + 1 < p.Cig) v[u].y = to_f(src[p.xs[1]]);
            if (ci + 2 < p.Cig) v[u].z = to_f(src[2 * p.xs[1]]);
          }
        }
      }
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (i0 + u * nthreads < x_items) xsm[dst[u]] = v[u];
    }
    // The filter's chunk, [C4][taps][COG] float4s of 4 input channels; item i is (c4, co, tap),
    // tap fastest (consecutive threads read consecutive taps of a contiguous filter).
    const int w_items = taps * COG * C4;
    for (int i0 = tid; i0 < w_items; i0 += U * nthreads) {
      float4 v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int i = i0 + u * nthreads;
        const int rest = p.div_taps.div(i), tap = i - rest * taps;
        const int c4 = rest / COG, co = rest - c4 * COG;
        const int ty = p.div_kw.div(tap), tx = tap - ty * p.kw;
        const int ci = c0 + 4 * c4;
        const T* src = wg + ci * p.ws[0] + co * p.ws[1] + ty * p.ws[2] + tx * p.ws[3];
        float e[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) e[k] = i < w_items && ci + k < p.Cig ? to_f(src[k * p.ws[0]]) : 0.f;
        v[u] = float4{e[0], e[1], e[2], e[3]};
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int i = i0 + u * nthreads;
        if (i < w_items) {
          const int rest = p.div_taps.div(i), tap = i - rest * taps;
          const int c4 = rest / COG, co = rest - c4 * COG;
          wsm[(c4 * taps + tap) * COG + co] = v[u];
        }
      }
    }
    __syncthreads();

    // The phase's taps: ty with (fy + ph - ty*dh) divisible by sh read input row
    // (oy0 + fy + ph - ty*dh) / sh + jj (exact: oy0 is a multiple of sh).
    for (int ty = 0; ty < p.kh; ++ty) {
      const int ny = fy + p.ph - ty * p.dh;
      if (ny % p.sh != 0) continue;
      const int srow = (oy0 + ny) / p.sh - lo_y + jj;
      for (int tx = 0; tx < p.kw; ++tx) {
        const int nx = fx + p.pw - tx * p.dw;
        if (nx % p.sw != 0) continue;
        const int scol = (ox0 + nx) / p.sw - lo_x + q;
        const float4* xp = xsm + (srow * p.pitch + scol) * p.CiP4;
        const float4* wp = wsm + (ty * p.kw + tx) * COG;
#pragma unroll 4
        for (int c4 = 0; c4 < C4; ++c4) {
          float4 wv[COG];
#pragma unroll
          for (int co = 0; co < COG; ++co) wv[co] = wp[c4 * taps * COG + co];
#pragma unroll
          for (int r = 0; r < R; ++r) {
            const float4 xv = xp[r * p.Q * p.CiP4 + c4];
#pragma unroll
            for (int co = 0; co < COG; ++co) {
              float s = acc[r][co];
              s = fmaf(xv.x, wv[co].x, s);
              s = fmaf(xv.y, wv[co].y, s);
              s = fmaf(xv.z, wv[co].z, s);
              s = fmaf(xv.w, wv[co].w, s);
              acc[r][co] = s;
            }
          }
        }
      }
    }
  }

  // Pixels beyond the result (the last tiles' overhang) were computed from staged zeros and
  // are not stored.
  const int oy = oy0 + fy + p.sh * jj;
  if (oy >= p.Ho) return;
  float bv[COG];
#pragma unroll
  for (int co = 0; co < COG; ++co) bv[co] = bias ? to_f(bias[g * COG + co]) : 0.f;
  T* yrow = y + n * p.ys[0] + int64_t(g) * COG * p.ys[1] + oy * p.ys[2];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int ox = ox0 + fx + p.sw * (q + p.Q * r);
    if (ox >= p.Wo) continue;
#pragma unroll
    for (int co = 0; co < COG; ++co) yrow[co * p.ys[1] + ox * p.ys[3]] = static_cast<T>(acc[r][co] + bv[co]);
  }
}

}  // namespace few_channel

}  // namespace convx::cuda
