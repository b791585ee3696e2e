// Depthwise convolution on CUDA: entry points, and the generic kernels for what the tiled fast
// paths (plan.cuh, nc_plane_cp.cuh, nc_plane.cuh, nc_small_planes.cuh, nc_stream.cuh, nc_tiled.cuh, cl_tiled.cuh, cl_wgrad.cu, nc_wgrad_stream.cuh)
// do not cover: dilation > 1, strides > 4 in the data-grad, channels-last with a channel
// multiplier or unaligned channels, filters without a specialisation in channels-last and in the
// weight-grad, and float64 outside NC(D)HW.
//
// Generic kernels: forward and data-grad share one "direct gather" kernel per layout. Each output element of the
// launch reads the other tensor at position  (o*sn + base + k*step) / sd  along every spatial dim:
//   forward:   sn = stride, sd = 1,      base = -padding, step = +dilation;
//   data-grad: sn = 1,      sd = stride, base = +padding, step = -dilation (a gather: the taps
//              whose source position is integral and in range; no atomics). With stride 1 this
//              is the forward with the filter rotated (no divisibility checks).
// Channels: written channel co reads channel (co / in_div) * in_mul + j for j < J with weight row
// co * in_mul + j (forward: in_div = m, in_mul = J = 1; data-grad: in_div = 1, in_mul = J = m).
//
//  - NC(D)HW: each thread computes kTileW consecutive outputs along W (register micro-tile); when
//    the whole tile and filter span is inside the row, the inner loop has no bounds checks.
//  - channels-last: each thread computes V consecutive channels (16 bytes: 4 fp32, 8 fp16/bf16,
//    2 fp64) of one pixel, with vector loads/stores when m == 1 and everything is aligned.
//
// The weight-grad is deterministic without atomics: the reduction range (batch x output pixels)
// is cut into a fixed number of chunks that depends only on the shapes; one block per
// (channel tile, chunk) writes its partial sums to a workspace [chunks, C_out, K], reduced
// within the block by a fixed tree; a second kernel sums the chunks in order.
//
// Arithmetic in the opmath type (float for half/bfloat16, double for double). All indices are
// int64_t; every kernel is a grid-stride loop.
#include "ops/depthwise_conv/depthwise_conv.h"
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/conv/conv.h"
#include "ops/conv/cuda/dense_paths.h"

#include <ATen/Context.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <type_traits>

namespace convx::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kTileW = 4;         // NC outputs per thread along W
constexpr int kTapsPerPass = 8;   // weight-grad taps accumulated per pass

unsigned blocks_for(int64_t n, int threads = kThreads) {
  // Grid-stride loops cover the rest; 2^20 blocks is far more than any GPU holds at once.
  return static_cast<unsigned>(std::clamp<int64_t>((n + threads - 1) / threads, 1, int64_t(1) << 20));
}

#define CONVX_GRID_STRIDE(i, n)                                                         \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

template <typename T>
constexpr int vec_width() {
  return sizeof(T) >= 8 ? 2 : (sizeof(T) == 4 ? 4 : 8);
}

template <typename T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

// ---------------------------------------------------------------- direct (forward, data-grad)
struct Direct {
  int64_t N, out_c, in_c;  // channels of the tensor written / read
  int64_t out[3], in[3], k[3];
  int64_t sn[3], sd[3], base[3], step[3];
  int64_t in_div, in_mul, J, wrows;
};

// Source position along dim d for output position o and tap kk; false when outside or (DIV)
// not integral.
template <bool DIV>
__device__ __forceinline__ bool source(const Direct& P, int d, int64_t o, int64_t kk, int64_t& i) {
  int64_t raw = o * P.sn[d] + P.base[d] + kk * P.step[d];
  if (raw < 0) return false;
  if (DIV) {
    if (raw % P.sd[d] != 0) return false;
    raw /= P.sd[d];
  }
  i = raw;
  return raw < P.in[d];
}

template <typename T, bool DIV>
__global__ void __launch_bounds__(kThreads)
direct_nc(const T* __restrict__ in, const T* __restrict__ w, const T* __restrict__ bias,
          T* __restrict__ out, const Direct P) {
  using acc_t = at::opmath_type<T>;
  const int64_t OD = P.out[0], OH = P.out[1], OW = P.out[2];
  const int64_t tiles = (OW + kTileW - 1) / kTileW;
  const int64_t total = P.N * P.out_c * OD * OH * tiles;
  const int64_t K = P.k[0] * P.k[1] * P.k[2], plane = P.in[0] * P.in[1] * P.in[2];
  const int64_t span = (P.k[2] - 1) * P.step[2];
  CONVX_GRID_STRIDE(idx, total) {
    int64_t r = idx;
    const int64_t ow0 = (r % tiles) * kTileW;
    r /= tiles;
    const int64_t oh = r % OH;
    r /= OH;
    const int64_t od = r % OD;
    r /= OD;
    const int64_t co = r % P.out_c, n = r / P.out_c;

    acc_t acc[kTileW];
    const acc_t b0 = bias ? static_cast<acc_t>(bias[co]) : acc_t(0);
#pragma unroll
    for (int t = 0; t < kTileW; ++t) acc[t] = b0;

    const int64_t first = ow0 * P.sn[2] + P.base[2];
    const bool interior = !DIV && ow0 + kTileW <= OW && first + (span < 0 ? span : 0) >= 0 &&
                          first + (kTileW - 1) * P.sn[2] + (span > 0 ? span : 0) < P.in[2];
    for (int64_t j = 0; j < P.J; ++j) {
      const T* inc = in + (n * P.in_c + (co / P.in_div) * P.in_mul + j) * plane;
      const T* wr = w + (co * P.in_mul + j) * K;
      for (int64_t kd = 0; kd < P.k[0]; ++kd) {
        int64_t id;
        if (!source<DIV>(P, 0, od, kd, id)) continue;
        for (int64_t kh = 0; kh < P.k[1]; ++kh) {
          int64_t ih;
          if (!source<DIV>(P, 1, oh, kh, ih)) continue;
          const T* row = inc + (id * P.in[1] + ih) * P.in[2];
          const T* wk = wr + (kd * P.k[1] + kh) * P.k[2];
          if (interior) {
            const T* p = row + first;
            for (int64_t kw = 0; kw < P.k[2]; ++kw, p += P.step[2]) {
              const acc_t wv = static_cast<acc_t>(wk[kw]);
#pragma unroll
              for (int t = 0; t < kTileW; ++t) acc[t] += wv * static_cast<acc_t>(p[t * P.sn[2]]);
            }
          } else {
            for (int64_t kw = 0; kw < P.k[2]; ++kw) {
              const acc_t wv = static_cast<acc_t>(wk[kw]);
#pragma unroll
              for (int t = 0; t < kTileW; ++t) {
                int64_t iw;
                if (ow0 + t < OW && source<DIV>(P, 2, ow0 + t, kw, iw)) {
                  acc[t] += wv * static_cast<acc_t>(row[iw]);
                }
              }
            }
          }
        }
      }
    }
    T* o = out + (((n * P.out_c + co) * OD + od) * OH + oh) * OW + ow0;
#pragma unroll
    for (int t = 0; t < kTileW; ++t) {
      if (ow0 + t < OW) o[t] = static_cast<T>(acc[t]);
    }
  }
}

// wt: the weight transposed to [K, wrows] in the opmath type, so a warp's channels read
// consecutive weights.
template <typename T, bool DIV, bool VEC>
__global__ void __launch_bounds__(kThreads)
direct_cl(const T* __restrict__ in, const at::opmath_type<T>* __restrict__ wt,
          const T* __restrict__ bias, T* __restrict__ out, const Direct P) {
  using acc_t = at::opmath_type<T>;
  constexpr int V = vec_width<T>();
  const int64_t OD = P.out[0], OH = P.out[1], OW = P.out[2];
  const int64_t CG = (P.out_c + V - 1) / V;
  const int64_t total = P.N * OD * OH * OW * CG;
  CONVX_GRID_STRIDE(idx, total) {
    const int64_t co0 = (idx % CG) * V, pix = idx / CG;
    int64_t r = pix;
    const int64_t ow = r % OW;
    r /= OW;
    const int64_t oh = r % OH;
    r /= OH;
    const int64_t od = r % OD, n = r / OD;

    acc_t acc[V];
#pragma unroll
    for (int v = 0; v < V; ++v) {
      acc[v] = (bias && (VEC || co0 + v < P.out_c)) ? static_cast<acc_t>(bias[co0 + v]) : acc_t(0);
    }
    for (int64_t kd = 0; kd < P.k[0]; ++kd) {
      int64_t id;
      if (!source<DIV>(P, 0, od, kd, id)) continue;
      for (int64_t kh = 0; kh < P.k[1]; ++kh) {
        int64_t ih;
        if (!source<DIV>(P, 1, oh, kh, ih)) continue;
        for (int64_t kw = 0; kw < P.k[2]; ++kw) {
          int64_t iw;
          if (!source<DIV>(P, 2, ow, kw, iw)) continue;
          const T* px = in + (((n * P.in[0] + id) * P.in[1] + ih) * P.in[2] + iw) * P.in_c;
          const acc_t* wk = wt + ((kd * P.k[1] + kh) * P.k[2] + kw) * P.wrows;
          if (VEC) {
            const Vec<T, V> xv = *reinterpret_cast<const Vec<T, V>*>(px + co0);
#pragma unroll
            for (int v = 0; v < V; ++v) acc[v] += wk[co0 + v] * static_cast<acc_t>(xv.v[v]);
          } else {
#pragma unroll
            for (int v = 0; v < V; ++v) {
              const int64_t co = co0 + v;
              if (co >= P.out_c) break;
              for (int64_t j = 0; j < P.J; ++j) {
                acc[v] += wk[co * P.in_mul + j] *
                          static_cast<acc_t>(px[(co / P.in_div) * P.in_mul + j]);
              }
            }
          }
        }
      }
    }
    T* o = out + pix * P.out_c + co0;
    if (VEC) {
      Vec<T, V> ov;
#pragma unroll
      for (int v = 0; v < V; ++v) ov.v[v] = static_cast<T>(acc[v]);
      *reinterpret_cast<Vec<T, V>*>(o) = ov;
    } else {
#pragma unroll
      for (int v = 0; v < V; ++v) {
        if (co0 + v < P.out_c) o[v] = static_cast<T>(acc[v]);
      }
    }
  }
}

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// in / out are dense in the layout `cl`; weight is [wrows, 1, *k]; bias has out_c entries.
template <typename T>
void launch_direct(const Tensor& in, const Tensor& weight, const std::optional<Tensor>& bias,
                   const Tensor& out, const Direct& P, bool cl, bool div) {
  using acc_t = at::opmath_type<T>;
  auto stream = c10::cuda::getCurrentCUDAStream();
  Tensor b;
  if (bias.has_value() && bias->defined()) b = bias->to(out.scalar_type()).contiguous();
  const T* bp = b.defined() ? b.const_data_ptr<T>() : nullptr;
  const T* ip = in.const_data_ptr<T>();
  T* op = out.mutable_data_ptr<T>();
  if (!cl) {
    const Tensor w = weight.contiguous();
    const int64_t total = P.N * P.out_c * P.out[0] * P.out[1] * ((P.out[2] + kTileW - 1) / kTileW);
    const unsigned grid = blocks_for(total);
    if (div) {
      direct_nc<T, true><<<grid, kThreads, 0, stream>>>(ip, w.const_data_ptr<T>(), bp, op, P);
    } else {
      direct_nc<T, false><<<grid, kThreads, 0, stream>>>(ip, w.const_data_ptr<T>(), bp, op, P);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return;
  }
  constexpr int V = vec_width<T>();
  const Tensor wt = weight.reshape({P.wrows, -1}).to(c10::CppTypeToScalarType<acc_t>::value).t().contiguous();
  const int64_t total = P.N * P.out[0] * P.out[1] * P.out[2] * ((P.out_c + V - 1) / V);
  const unsigned grid = blocks_for(total);
  const bool vec = P.J == 1 && P.in_div == 1 && P.in_mul == 1 && P.out_c % V == 0 &&
                   aligned(ip, sizeof(T) * V) && aligned(op, sizeof(T) * V) &&
                   (bp == nullptr || aligned(bp, sizeof(T) * V));
  const acc_t* wp = wt.const_data_ptr<acc_t>();
  if (vec && !div) {
    direct_cl<T, false, true><<<grid, kThreads, 0, stream>>>(ip, wp, bp, op, P);
  } else if (vec) {
    direct_cl<T, true, true><<<grid, kThreads, 0, stream>>>(ip, wp, bp, op, P);
  } else if (!div) {
    direct_cl<T, false, false><<<grid, kThreads, 0, stream>>>(ip, wp, bp, op, P);
  } else {
    direct_cl<T, true, false><<<grid, kThreads, 0, stream>>>(ip, wp, bp, op, P);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// ---------------------------------------------------------------- weight grad
struct WGrad {
  int64_t C, Cout, m;
  int64_t in[3], out[3], k[3], stride[3], pad[3], dil[3];
  int64_t xsN, xsC, xsP, gsN, gsC, gsP;  // strides of (sample, channel, flat pixel)
  int64_t pixels, chunk;                 // pixels = N * output pixels; chunk per grid.y block
  int CT, PT;                            // channel lanes x pixel lanes = blockDim.x
};

template <typename T>
__global__ void __launch_bounds__(kThreads)
weight_grad_partial(const T* __restrict__ x, const T* __restrict__ gy,
                    at::opmath_type<T>* __restrict__ part, const WGrad P) {
  using acc_t = at::opmath_type<T>;
  __shared__ acc_t sm[kTapsPerPass * kThreads];
  const int tid = threadIdx.x, ct = tid % P.CT, lane = tid / P.CT;
  const int64_t oc = static_cast<int64_t>(blockIdx.x) * P.CT + ct, c = oc / P.m;
  const int64_t K = P.k[0] * P.k[1] * P.k[2];
  const int64_t OL = P.out[0] * P.out[1] * P.out[2];
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * P.chunk;
  const int64_t end = begin + P.chunk < P.pixels ? begin + P.chunk : P.pixels;
  for (int64_t k0 = 0; k0 < K; k0 += kTapsPerPass) {
    // Offsets (input = output * stride + off) of this pass's taps.
    int64_t off[kTapsPerPass][3];
    acc_t acc[kTapsPerPass];
#pragma unroll
    for (int t = 0; t < kTapsPerPass; ++t) {
      const int64_t k = k0 + t < K ? k0 + t : K - 1;
      off[t][0] = k / (P.k[1] * P.k[2]) * P.dil[0] - P.pad[0];
      off[t][1] = (k / P.k[2]) % P.k[1] * P.dil[1] - P.pad[1];
      off[t][2] = k % P.k[2] * P.dil[2] - P.pad[2];
      acc[t] = acc_t(0);
    }
    if (oc < P.Cout) {
      for (int64_t p = begin + lane; p < end; p += P.PT) {
        const int64_t n = p / OL, o = p % OL;
        const int64_t ow = o % P.out[2], oh = (o / P.out[2]) % P.out[1], od = o / (P.out[2] * P.out[1]);
        const acc_t g = static_cast<acc_t>(gy[n * P.gsN + oc * P.gsC + o * P.gsP]);
        const T* xc = x + n * P.xsN + c * P.xsC;
#pragma unroll
        for (int t = 0; t < kTapsPerPass; ++t) {
          const int64_t id = od * P.stride[0] + off[t][0], ih = oh * P.stride[1] + off[t][1],
                        iw = ow * P.stride[2] + off[t][2];
          if (k0 + t < K && id >= 0 && id < P.in[0] && ih >= 0 && ih < P.in[1] && iw >= 0 &&
              iw < P.in[2]) {
            acc[t] += g * static_cast<acc_t>(xc[((id * P.in[1] + ih) * P.in[2] + iw) * P.xsP]);
          }
        }
      }
    }
    // Fixed-order tree over the pixel lanes.
#pragma unroll
    for (int t = 0; t < kTapsPerPass; ++t) sm[t * kThreads + tid] = acc[t];
    __syncthreads();
    for (int s = P.PT / 2; s > 0; s /= 2) {
      if (lane < s) {
#pragma unroll
        for (int t = 0; t < kTapsPerPass; ++t) sm[t * kThreads + tid] += sm[t * kThreads + tid + s * P.CT];
      }
      __syncthreads();
    }
    if (lane == 0 && oc < P.Cout) {
      for (int t = 0; t < kTapsPerPass && k0 + t < K; ++t) {
        part[(blockIdx.y * P.Cout + oc) * K + k0 + t] = sm[t * kThreads + tid];
      }
    }
    __syncthreads();
  }
}

template <typename T>
__global__ void weight_grad_sum(const at::opmath_type<T>* __restrict__ part, T* __restrict__ gw,
                                int64_t chunks, int64_t n) {
  using acc_t = at::opmath_type<T>;
  CONVX_GRID_STRIDE(i, n) {
    acc_t s = 0;
    for (int64_t c = 0; c < chunks; ++c) s += part[c * n + i];
    gw[i] = static_cast<T>(s);
  }
}

void fill3(int64_t (&dst)[3], const std::array<int64_t, 3>& src, int64_t sign = 1) {
  for (int i = 0; i < 3; ++i) dst[i] = sign * src[i];
}

// ---------------------------------------------------------------- tiled fast paths
bool fits_int(const std::array<int64_t, 3>& v) {
  return std::all_of(v.begin(), v.end(), [](int64_t x) { return x >= -(1 << 28) && x <= (1 << 28); });
}

bool unit_dilation(const Geometry& g) {
  return g.dilation[0] == 1 && g.dilation[1] == 1 && g.dilation[2] == 1 && fits_int(g.padding) &&
         fits_int(g.stride) && fits_int(g.kernel);
}

// How the prepared weights' tap t of phase p reads the filter along each dim:
// k = base[p] + t * step (zero outside [0, K)).
struct Prep {
  int64_t wrows, K[3], T[3];
  int base[3][kMaxPhases], step[3], os[3];
  int64_t phases;
  bool cl;  // [phase][tap][row] instead of [phase][row][tap]
};

// D: the opmath type, or T itself for the 16-bit channels-last fast path (launch_cl_gather16).
template <typename T, typename D = at::opmath_type<T>>
__global__ void prepare_weights(const T* __restrict__ w, D* __restrict__ dst, const Prep Q) {
  const int64_t taps = Q.T[0] * Q.T[1] * Q.T[2];
  CONVX_GRID_STRIDE(i, Q.phases * Q.wrows * taps) {
    const int64_t tap = i % taps, row = (i / taps) % Q.wrows, ph = i / (taps * Q.wrows);
    const int64_t t[3] = {tap / (Q.T[1] * Q.T[2]), (tap / Q.T[2]) % Q.T[1], tap % Q.T[2]};
    const int64_t p[3] = {ph / (Q.os[1] * Q.os[2]), (ph / Q.os[2]) % Q.os[1], ph % Q.os[2]};
    bool ok = true;
    int64_t src = row;
    for (int d = 0; d < 3; ++d) {
      const int64_t k = Q.base[d][p[d]] + t[d] * Q.step[d];
      ok = ok && k >= 0 && k < Q.K[d];
      src = src * Q.K[d] + k;
    }
    dst[Q.cl ? (ph * taps + tap) * Q.wrows + row : i] = ok ? static_cast<D>(w[src]) : D(0);
  }
}

// The forward as a plan: one phase.
void forward_plan(const Geometry& g, Plan& P, Prep& Q) {
  P.N = g.batch;
  P.out_c = g.out_channels;
  P.in_c = g.in_channels;
  P.in_div = g.out_channels / g.in_channels;
  P.J = 1;
  P.wrows = g.out_channels;
  P.phases = 1;
  Q.phases = 1;
  for (int d = 0; d < 3; ++d) {
    P.in[d] = g.input[d];
    P.out[d] = P.q[d] = P.qn[d][0] = g.output[d];
    P.k[d] = static_cast<int>(g.kernel[d]);
    P.S[d] = static_cast<int>(g.stride[d]);
    P.os[d] = 1;
    P.pad[d][0] = static_cast<int>(g.padding[d]);
    P.r[d][0] = 0;
    Q.K[d] = Q.T[d] = g.kernel[d];
    Q.base[d][0] = 0;
    Q.step[d] = 1;
    Q.os[d] = 1;
  }
}

// The data-grad as a plan: per dim, stride s phases r < s with the sub-filter of the taps
// k = k0 + s*t, k0 = (r + padding) % s, flipped (plan.cuh). false when a stride exceeds
// kMaxPhases.
bool data_grad_plan(const Geometry& g, Plan& P, Prep& Q) {
  const int64_t m = g.out_channels / g.in_channels;
  P.N = g.batch;
  P.out_c = g.in_channels;
  P.in_c = g.out_channels;
  P.in_div = 1;
  P.J = m;
  P.wrows = g.out_channels;
  P.phases = 1;
  for (int d = 0; d < 3; ++d) {
    const int64_t s = g.stride[d], K = g.kernel[d], p = g.padding[d], I = g.input[d];
    if (s > kMaxPhases) return false;
    const int64_t T = ceil_div(K, s);
    P.in[d] = g.output[d];
    P.out[d] = I;
    P.k[d] = static_cast<int>(T);
    P.S[d] = 1;
    P.os[d] = static_cast<int>(s);
    P.q[d] = ceil_div(I, s);
    Q.K[d] = K;
    Q.T[d] = T;
    Q.step[d] = static_cast<int>(-s);
    Q.os[d] = static_cast<int>(s);
    for (int64_t r = 0; r < s; ++r) {
      const int64_t k0 = (r + p) % s, c = (r + p - k0) / s;
      P.pad[d][r] = static_cast<int>(T - 1 - c);
      P.r[d][r] = static_cast<int>(r);
      P.qn[d][r] = r < I ? ceil_div(I - r, s) : 0;
      Q.base[d][r] = static_cast<int>((T - 1) * s + k0);
    }
    P.phases *= static_cast<int>(s);
  }
  Q.phases = P.phases;
  return true;
}

bool cl_vector_ok(const Plan& P, int V, const void* in, const void* out, const Tensor& bias, size_t esz) {
  return P.in_div == 1 && P.J == 1 && P.out_c % V == 0 && aligned(in, esz * V) && aligned(out, esz * V) &&
         (!bias.defined() || aligned(bias.const_data_ptr(), esz * V));
}

// Runs the tiled kernel of the layout for plan P; false when it does not cover the problem.
template <typename T>
bool launch_tiled(const Tensor& in, const Tensor& weight, const Tensor& bias, const Tensor& out,
                  Plan& P, Prep& Q, bool cl) {
  using acc_t = at::opmath_type<T>;
  const T* ip = in.const_data_ptr<T>();
  T* op = out.mutable_data_ptr<T>();
  if (cl && !cl_vector_ok(P, vec_width<T>(), ip, op, bias, sizeof(T))) return false;
  if (cl && std::is_same_v<T, double>) return false;
  auto stream = c10::cuda::getCurrentCUDAStream();
  const Tensor w = weight.contiguous();
  Q.wrows = P.wrows;
  Q.cl = cl;
  P.wphase = P.wrows * Q.T[0] * Q.T[1] * Q.T[2];
  const T* bp = bias.defined() ? bias.const_data_ptr<T>() : nullptr;
  // 2-D / 3-D filters at stride 1 on tensor cores (tc_rows_nc), from the layer's own filter: the
  // forward (taps as stored) and the stride-1 data-grad (every dim rotated).
  bool tc_fwd = Q.phases == 1, tc_rot = Q.phases == 1;
  for (int d = 0; d < 3; ++d) {
    tc_fwd = tc_fwd && Q.T[d] == Q.K[d] && Q.base[d][0] == 0 && Q.step[d] == 1;
    tc_rot = tc_rot && Q.T[d] == Q.K[d] && Q.base[d][0] == Q.K[d] - 1 && Q.step[d] == -1;
  }
  if constexpr (std::is_same_v<T, float>) {
    // fp32 31 x 26-33 (planes >= 56 x 56) as TF32 where torch.backends.cudnn.allow_tf32 allows it
    // (the flag convx's dense cuDNN path honours; docs/ops.md, "Precision of float32 on CUDA"),
    // NCHW and channels-last (read in place: a 4-byte copy per staged value; RepLKNet NHWC 0.85 ms
    // against the exact cl_gather's 1.11, H100, bench/results/h100/session12/clk_call2_ab.log).
    if ((tc_fwd || tc_rot) && tc_rows_nc_f32_takes(P) && tf32_allowed_for_conv() &&
        launch_tc_rows_nc<T>(ip, w.const_data_ptr<T>(), !tc_fwd, bp, op, P, cl, stream))
      return true;
  }
  // Channels-last 5 x 5 / 7 x 7, the register-blocked tile (cl_tile2d.cu says where it won).
  if (cl && (tc_fwd || tc_rot) && launch_cl_tile2d<T>(ip, w.const_data_ptr<T>(), !tc_fwd, bp, op, P, stream))
    return true;
  // Channels-last 16-bit 7 x 7 on tensor cores (tc_cl2d.cu says where it won): before the column
  // walk and cl_ring.
  if constexpr (sizeof(T) == 2) {
    if (cl && (tc_fwd || tc_rot) && launch_tc_cl2d<T>(ip, w.const_data_ptr<T>(), !tc_fwd, bp, op, P, stream))
      return true;
  }
  // Channels-last 7 x 7 on outputs 14-27 wide: the column walk (walk_conv2d.cu says where it won).
  if ((tc_fwd || tc_rot) && launch_walk_conv2d<T>(ip, w.const_data_ptr<T>(), !tc_fwd, bp, op, P, cl, stream))
    return true;
  // ConvNeXt's NCHW 7 x 7 on 49-64-high planes on tensor cores (tc7_nc.cu); fp32 as TF32 only where
  // torch.backends.cudnn.allow_tf32 allows it. 16-bit also ConvNeXt's 14 x 14 and (session 14)
  // EfficientNet's 5 x 5 on 17-32-high planes (28 x 28: 0.029 against nc_plane_cp's 0.045 ms).
  if constexpr (!std::is_same_v<T, double>) {
    if (!cl && (tc_fwd || tc_rot) && (sizeof(T) == 2 || tf32_allowed_for_conv()) &&
        launch_tc7_nc<T>(ip, w.const_data_ptr<T>(), !tc_fwd, bp, op, P, stream))
      return true;
  }
  // NCHW output planes above 14 x 14 up to what a block's prefetch holds (nc_plane.cu), before the
  // tensor cores: faster than tc_rows_nc's 7 x 7 on 56 x 56 planes (0.083 against 0.099 ms, session 11).
  // 16-bit 3x3 planes on 16-byte rows first (nc_plane_cp: MobileNetV2 56x56 0.050 against 0.060 ms,
  // stride 2 0.077 against nc_stream_vec's 0.134; session 12), and 5 x 5 outputs up to 28 wide in
  // every dtype (EfficientNet fp32 0.045 against nc_plane's 0.047, session 13); planes up to 14 x 14
  // (nc_small_planes) from the layer's own filter too.
  if (!cl && (tc_fwd || tc_rot) &&
      (launch_nc_plane_cp<T>(ip, w.const_data_ptr<T>(), !tc_fwd, bp, op, P, stream) ||
       launch_nc_plane<T>(ip, w.const_data_ptr<T>(), !tc_fwd, bp, op, P, stream) ||
       launch_nc_small_planes<T>(ip, w.const_data_ptr<T>(), !tc_fwd, bp, op, P, stream)))
    return true;
  if constexpr (sizeof(T) == 2) {
    // Long 1-D rows on tensor cores read the layer's own 16-bit filter: no preparation launch.
    if (Q.phases == 1 && Q.T[2] == Q.K[2] &&
        launch_tc_row1d<T>(ip, w.const_data_ptr<T>(), Q.base[2][0], Q.step[2], bp, op, P, cl, stream))
      return true;
    // 3-D 5x3x3 (NC* and channels-last) on CUDA cores (depth3d_regs), then 2-D / 3-D NC*
    // filters at stride 1 on tensor cores, both from the layer's own filter.
    if ((tc_fwd || tc_rot) && launch_depth3d_regs<T>(ip, w.const_data_ptr<T>(), !tc_fwd, bp, op, P, cl, stream))
      return true;
    if (!cl && (tc_fwd || tc_rot) && launch_tc_rows_nc<T>(ip, w.const_data_ptr<T>(), !tc_fwd, bp, op, P, false, stream))
      return true;
  }
  // The short 1-D rows' kernels (row_warp, cl_row1d) read the layer's own filter too (cl_row1d
  // reads 16-byte vectors, so a misaligned filter is copied first): 2.5 us of a 20 us call on short_k3 (H100, session 10).
  if (Q.phases == 1 && Q.T[2] == Q.K[2]) {
    const Tensor wa = !cl || aligned(w.const_data_ptr(), 16) ? w : w.clone();
    const T* wo = wa.const_data_ptr<T>();
    if (cl ? launch_cl_row1d<T>(ip, wo, Q.base[2][0], Q.step[2], bp, op, P, stream)
           : launch_row_warp<T>(ip, wo, Q.base[2][0], Q.step[2], bp, op, P, stream))
      return true;
  }
  // Channels-last 2-D square filters at one phase (the forward, the stride-1 data-grad) from the
  // layer's own filter through the shared-memory ring.
  if (cl && Q.phases == 1) {
    bool fwd = true, rot = true;
    for (int d = 0; d < 3; ++d) {
      fwd = fwd && Q.T[d] == Q.K[d] && Q.base[d][0] == 0 && Q.step[d] == 1;
      rot = rot && Q.T[d] == Q.K[d] && Q.base[d][0] == Q.K[d] - 1 && Q.step[d] == -1;
    }
    if ((fwd || rot) && launch_cl_ring<T>(ip, w.const_data_ptr<T>(), !fwd, bp, op, P, stream)) return true;
  }
  if constexpr (sizeof(T) == 2) {
    if (cl && cl_fast_takes(P)) {  // 16-bit weights: the weight tensor's own values
      const Tensor wp = at::empty({Q.phases * P.wphase}, out.options());
      prepare_weights<T, T><<<blocks_for(wp.numel()), kThreads, 0, stream>>>(w.const_data_ptr<T>(), wp.mutable_data_ptr<T>(), Q);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      return launch_cl_gather16<T>(ip, wp.const_data_ptr<T>(), bp, op, P, stream);
    }
  }
  // The NC* forward in float32 / float64 reads the filter exactly as stored ([row][tap], one
  // phase, no flip): no preparation launch (on 7x7 planes it was a fifth of the call, H100 profile).
  const acc_t* wq = nullptr;
  Tensor wp;
  if constexpr (std::is_same_v<T, acc_t>) {
    bool as_stored = !cl && Q.phases == 1 && aligned(w.const_data_ptr(), 16);
    for (int d = 0; d < 3; ++d) as_stored = as_stored && Q.base[d][0] == 0 && Q.step[d] == 1 && Q.T[d] == Q.K[d];
    if (as_stored) wq = w.const_data_ptr<T>();
  }
  if (wq == nullptr) {
    wp = at::empty({Q.phases * P.wphase}, out.options().dtype(c10::CppTypeToScalarType<acc_t>::value));
    prepare_weights<T><<<blocks_for(wp.numel()), kThreads, 0, stream>>>(w.const_data_ptr<T>(), wp.mutable_data_ptr<acc_t>(), Q);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    wq = wp.const_data_ptr<acc_t>();
  }
  if (cl)
    return launch_cl_stride2_dgrad<T>(ip, wq, bp, op, P, stream) || launch_cl_depth3d<T>(ip, wq, bp, op, P, stream) ||
           launch_cl_gather<T>(ip, wq, bp, op, P, stream);
  return launch_row1d<T>(ip, wq, bp, op, P, stream) || launch_nc_depth3d<T>(ip, wq, bp, op, P, stream) ||
         launch_nc_stride2_dgrad<T>(ip, wq, bp, op, P, stream) ||
         launch_nc_stream<T>(ip, wq, bp, op, P, stream) ||
         launch_nc_gather<T>(ip, wq, bp, op, P, stream);
}

Tensor bias_as(const std::optional<Tensor>& bias, const Tensor& out) {
  if (!bias.has_value() || !bias->defined()) return Tensor();
  Tensor b = bias->to(out.scalar_type()).contiguous();
  // The channels-last kernels read the bias as 16-byte vectors.
  if (!aligned(b.const_data_ptr(), 16)) b = b.clone();
  return b;
}

// The channels-last depthwise calls that convx's own cuDNN path (ops/conv/cuda/cudnn_conv.cpp,
// what aten runs for them) serves faster than every kernel of this family, measured on the H100
// in session 11 (bench/results/h100/session11/cl2d_call2_ab.log, ms, best own kernel -> cuDNN):
//  - the forward of 3x3 filters at stride 2 in fp32 / fp16 (MobileNetV2 112x112 -> 56x56 on 96
//    channels: fp32 cl_gather 0.148 -> 0.129, fp16 cl_ring 0.078 -> 0.073; bf16 stays on
//    cl_ring, 0.079 against 0.082);
//  - the forward of 3x3 filters at stride 1 on planes at most 7 wide (MobileNetV2 7x7 on 960
//    channels: fp32 cl_ring 0.0141 -> 0.0135, fp16 / bf16 cl_gather16 0.0137 / 0.0141 -> 0.0099 /
//    0.0106; their data-grads stay ours: 0.0141 / 0.0137 / 0.0141 against 0.0154 / 0.0162 / 0.0161);
//  - the forward and the stride-1 data-grad of 5x5 filters in fp16 (EfficientNet 28x28 on 240
//    channels: cl_ring 0.052 -> 0.041 both; bf16 stays on cl_ring, 0.054 against 0.056, fp32 on
//    cl_gather, 0.069 against 0.090).
// 2-D, multiplier 1, unit dilation; not with torch.backends.cudnn.enabled = False (as the dense
// path). The weight-grad always stays ours (deterministic).
#ifdef CONVX_WITH_CUDNN
bool cl_cudnn_serves(const Geometry& g, at::ScalarType t, bool dgrad) {
  const int64_t k = g.kernel[1], s = g.stride[1];
  if (!at::globalContext().userEnabledCuDNN() || g.kernel[0] != 1 || g.input[0] != 1 ||
      g.in_channels != g.out_channels || g.kernel[2] != k || g.stride[2] != s || !unit_dilation(g))
    return false;
  if (k == 3 && s == 2) return !dgrad && (t == at::kFloat || t == at::kHalf);
  if (k == 3 && s == 1) return !dgrad && g.output[2] <= 7;
  return k == 5 && s == 1 && t == at::kHalf;
}
#endif

}  // namespace

void depthwise_forward(const ConvArgs& a, const Tensor& input, const Tensor& weight,
                       const std::optional<Tensor>& bias, const Tensor& output) {
  c10::cuda::CUDAGuard guard(input.device());
  const Geometry g = geometry(a, input, weight, output);
  if (output.numel() == 0) return;
  const bool cl = is_channels_last(output);
#ifdef CONVX_WITH_CUDNN
  if (cl && cl_cudnn_serves(g, input.scalar_type(), false) && cudnn_forward(a, input, weight, bias, output)) return;
#endif
  const auto x = to_layout(input, cl);
  with_output_as(output, output.scalar_type(), cl, [&](const Tensor& y) {
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "convx_depthwise_fwd_cuda", [&] {
      if (unit_dilation(g)) {
        Plan P{};
        Prep Q{};
        forward_plan(g, P, Q);
        if (launch_tiled<scalar_t>(x, weight, bias_as(bias, y), y, P, Q, cl)) return;
      }
      Direct P{};
      P.N = g.batch;
      P.out_c = g.out_channels;
      P.in_c = g.in_channels;
      fill3(P.out, g.output);
      fill3(P.in, g.input);
      fill3(P.k, g.kernel);
      fill3(P.sn, g.stride);
      fill3(P.sd, {1, 1, 1});
      fill3(P.base, g.padding, -1);
      fill3(P.step, g.dilation);
      P.in_div = g.out_channels / g.in_channels;
      P.in_mul = 1;
      P.J = 1;
      P.wrows = g.out_channels;
      launch_direct<scalar_t>(x, weight, bias, y, P, cl, false);
    });
  });
}

void depthwise_data_grad(const ConvArgs& a, const Tensor& grad_output, const Tensor& weight,
                         const std::optional<Tensor>& bias, const Tensor& grad_input) {
  c10::cuda::CUDAGuard guard(grad_output.device());
  const Geometry g = geometry(a, grad_input, weight, grad_output);
  if (grad_input.numel() == 0) return;
  // A channel multiplier m makes every data-grad output a sum over m channels, which the
  // depthwise kernels do one product at a time. Measured on the H100 (session 8,
  // bench/results/h100/session8/multiplier.log, conv_transpose with groups 1 and one output
  // channel): k4 s2 2-D beat aten's dense path up to m = 16 and lost from m = 32 (0.22 vs 0.07 ms
  // at m = 256); strides above 4 leave only the generic kernel, which lost at every m >= 2 (1-D
  // k16 s8, a vocoder's output head: 0.10 vs 0.03 ms at m = 2, 11.8 vs 0.14 ms at m = 256). There
  // the dense path (cuDNN, im2col without it) serves.
  const int64_t mult = g.out_channels / g.in_channels;
  const bool wide_stride = g.stride[0] > 4 || g.stride[1] > 4 || g.stride[2] > 4;
  if (mult > 16 || (mult > 1 && wide_stride)) {
    dense_data_grad(a, grad_output, weight, bias, grad_input);
    return;
  }
  const bool cl = is_channels_last(grad_input);
#ifdef CONVX_WITH_CUDNN
  if (cl && cl_cudnn_serves(g, grad_output.scalar_type(), true) &&
      cudnn_data_grad(a, grad_output, weight, bias, grad_input))
    return;
#endif
  const auto gy = to_layout(grad_output, cl);
  with_output_as(grad_input, grad_input.scalar_type(), cl, [&](const Tensor& gx) {
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, gy.scalar_type(), "convx_depthwise_dgrad_cuda", [&] {
      if (unit_dilation(g)) {
        Plan P{};
        Prep Q{};
        if (data_grad_plan(g, P, Q) && launch_tiled<scalar_t>(gy, weight, bias_as(bias, gx), gx, P, Q, cl)) return;
      }
      const int64_t m = g.out_channels / g.in_channels;
      Direct P{};
      P.N = g.batch;
      P.out_c = g.in_channels;
      P.in_c = g.out_channels;
      fill3(P.out, g.input);
      fill3(P.in, g.output);
      fill3(P.k, g.kernel);
      fill3(P.sn, {1, 1, 1});
      fill3(P.sd, g.stride);
      fill3(P.base, g.padding);
      fill3(P.step, g.dilation, -1);
      P.in_div = 1;
      P.in_mul = m;
      P.J = m;
      P.wrows = g.out_channels;
      const bool div = g.stride[0] != 1 || g.stride[1] != 1 || g.stride[2] != 1;
      launch_direct<scalar_t>(gy, weight, bias, gx, P, cl, div);
    });
  });
}

void depthwise_weight_grad(const ConvArgs& a, const Tensor& input, const Tensor& grad_output,
                           const Tensor& grad_weight) {
  c10::cuda::CUDAGuard guard(input.device());
  const Geometry g = geometry(a, input, grad_weight, grad_output);
  // The activations' layout decides the loop order; the weight is tiny.
  const bool cl = is_channels_last(input) || is_channels_last(grad_output);
  const auto x = to_layout(input, cl);
  const auto gy = to_layout(grad_output, cl);
  const int64_t C = g.in_channels, Cout = g.out_channels, K = g.kernel_numel();
  const int64_t IL = g.input_numel(), OL = g.output_numel();
  auto stream = c10::cuda::getCurrentCUDAStream();
  const bool direct = grad_weight.is_contiguous();
  if (unit_dilation(g)) {
    bool done = false;
    Tensor gw = direct ? grad_weight : at::empty({Cout, K}, grad_weight.options());
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "convx_depthwise_wgrad_cuda", [&] {
      Plan P{};
      Prep Q{};
      forward_plan(g, P, Q);
      auto launch = cl ? launch_cl_wgrad<scalar_t> : launch_nc_wgrad<scalar_t>;
      const scalar_t* xp = x.const_data_ptr<scalar_t>();
      const scalar_t* gp = gy.const_data_ptr<scalar_t>();
      scalar_t* wp = gw.mutable_data_ptr<scalar_t>();
      auto launch3d = cl ? launch_cl_wgrad_depth3d<scalar_t> : launch_nc_wgrad_depth3d<scalar_t>;
      done = launch_tc_wgrad1d<scalar_t>(xp, gp, wp, P, cl, x, stream) ||
             (cl && launch_cl_wgrad_d3r<scalar_t>(xp, gp, wp, P, x, stream)) ||
             launch_tc_wgrad3d<scalar_t>(xp, gp, wp, P, cl, x, stream) ||
             (!cl && launch_nc_wgrad_cp<scalar_t>(xp, gp, wp, P, x, stream)) ||
             launch_cl_band_wgrad2d<scalar_t>(xp, gp, wp, P, cl, x, stream) ||
             launch_walk_wgrad2d<scalar_t>(xp, gp, wp, P, cl, x, stream) ||
             launch_tc_wgrad2d<scalar_t>(xp, gp, wp, P, cl, x, stream) || launch3d(xp, gp, wp, P, x, stream) ||
             launch(xp, gp, wp, P, x, stream);
    });
    if (done) {
      if (!direct) grad_weight.copy_(gw.view(grad_weight.sizes()));
      return;
    }
  }
  WGrad P{};
  P.C = C;
  P.Cout = Cout;
  P.m = Cout / C;
  fill3(P.in, g.input);
  fill3(P.out, g.output);
  fill3(P.k, g.kernel);
  fill3(P.stride, g.stride);
  fill3(P.pad, g.padding);
  fill3(P.dil, g.dilation);
  if (cl) {
    P.xsN = IL * C, P.xsC = 1, P.xsP = C;
    P.gsN = OL * Cout, P.gsC = 1, P.gsP = Cout;
    P.CT = 32;  // a warp reads 32 consecutive channels of one pixel
  } else {
    P.xsN = C * IL, P.xsC = IL, P.xsP = 1;
    P.gsN = Cout * OL, P.gsC = OL, P.gsP = 1;
    P.CT = 1;  // the block walks one channel's pixels
  }
  P.PT = kThreads / P.CT;
  P.pixels = g.batch * OL;
  // A fixed partition of the reduction, from the shapes alone: about 1024 blocks in all, at
  // least 16 pixels per lane.
  const int64_t tiles = (Cout + P.CT - 1) / P.CT;
  const int64_t max_chunks = std::max<int64_t>(1, P.pixels / (int64_t(P.PT) * 16));
  int64_t chunks = std::clamp<int64_t>((1024 + tiles - 1) / tiles, 1, std::min<int64_t>(max_chunks, 65535));
  P.chunk = (P.pixels + chunks - 1) / chunks;
  chunks = (P.pixels + P.chunk - 1) / P.chunk;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "convx_depthwise_wgrad_cuda", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    auto part = at::empty({chunks, Cout, K}, x.options().dtype(c10::CppTypeToScalarType<acc_t>::value));
    weight_grad_partial<scalar_t><<<dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(chunks)), kThreads, 0, stream>>>(
        x.const_data_ptr<scalar_t>(), gy.const_data_ptr<scalar_t>(), part.mutable_data_ptr<acc_t>(), P);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    Tensor gw = direct ? grad_weight : at::empty({Cout, K}, grad_weight.options());
    weight_grad_sum<scalar_t><<<blocks_for(Cout * K), kThreads, 0, stream>>>(
        part.const_data_ptr<acc_t>(), gw.mutable_data_ptr<scalar_t>(), chunks, Cout * K);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    if (!direct) grad_weight.copy_(gw.view(grad_weight.sizes()));
  });
}

}  // namespace convx::cuda
