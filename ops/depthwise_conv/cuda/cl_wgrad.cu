// Channels-last depthwise weight-grad, one pass over x and grad_output, deterministic.
//
// A block is 32 channel lanes (one warp: VW consecutive channels per lane, so a warp reads one
// contiguous run of 32*VW channels of a pixel) x 8 pixel lanes (the block's warps). Each thread
// walks its share of a fixed chunk of output pixels and keeps the sums of every tap of one filter
// depth slice (31x31: of one filter row) in registers (taps known at compile time: no per-tap
// index arithmetic beyond the border test). The 8 warps' sums are then added in warp order through shared memory and written
// as the block's partial [chunk][channel][tap]; a second kernel adds the chunks in order. No
// atomics: the result depends only on the shapes.
#include "ops/depthwise_conv/cuda/cl_tiled.cuh"
#include "ops/depthwise_conv/cuda/launch.h"

#include <ATen/ops/empty.h>
#include <c10/core/ScalarType.h>
#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <type_traits>

namespace convx::cuda {
namespace {

constexpr int kLanes = 32, kWarps = 8;

// Channels per lane: as many as the registers for taps x channels allow.
template <typename T, int TAPS>
constexpr int wgrad_channels_per_lane() {
  return TAPS <= 8 ? (sizeof(T) == 2 ? 8 : 4) : (TAPS <= 16 ? 4 : 2);
}

// KH == 0: tall filters (31x31); one filter row per pass over the pixels (the pixels are read
// once per row, from L2), the row's taps in registers.
template <typename T, int KH, int KW, int S, int VW>
__global__ void __launch_bounds__(kLanes * kWarps)
cl_wgrad_partial(const T* __restrict__ x, const T* __restrict__ gy,
                 at::opmath_type<T>* __restrict__ part, const Plan P, int64_t pixels, int64_t chunk) {
  using acc_t = at::opmath_type<T>;
  constexpr int RH = KH > 0 ? KH : 1;  // filter rows per pass
  constexpr int TAPS = RH * KW;
  __shared__ acc_t red[kWarps][kLanes * VW];
  const int lane = threadIdx.x % kLanes, warp = threadIdx.x / kLanes;
  const int kh_n = KH > 0 ? KH : P.k[1];
  const int64_t C = P.out_c;
  const int64_t c0 = (static_cast<int64_t>(blockIdx.x) * kLanes + lane) * VW;
  const bool ch_ok = c0 < C;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * chunk;
  const int64_t end = begin + chunk < pixels ? begin + chunk : pixels;
  const int64_t OW = P.q[2], OH = P.q[1], OD = P.q[0];
  const int64_t taps = int64_t(P.k[0]) * kh_n * KW;
  for (int kd = 0; kd < P.k[0]; ++kd) {
    for (int kb = 0; kb < kh_n; kb += RH) {
      acc_t acc[TAPS][VW];
#pragma unroll
      for (int t = 0; t < TAPS; ++t) {
#pragma unroll
        for (int v = 0; v < VW; ++v) acc[t][v] = acc_t(0);
      }
      if (ch_ok) {
        for (int64_t p = begin + warp; p < end; p += kWarps) {
          const int64_t ow = p % OW, r = p / OW, oh = r % OH, r2 = r / OH, od = r2 % OD, n = r2 / OD;
          const int64_t id = od * P.S[0] - P.pad[0][0] + kd;
          if (id < 0 || id >= P.in[0]) continue;
          const Pack<T, VW> g = *reinterpret_cast<const Pack<T, VW>*>(gy + p * C + c0);
          acc_t gf[VW];
#pragma unroll
          for (int v = 0; v < VW; ++v) gf[v] = static_cast<acc_t>(g.v[v]);
          const int64_t ih0 = oh * S - P.pad[1][0] + kb, iw0 = ow * S - P.pad[2][0];
          const T* xs = x + (n * P.in[0] + id) * P.in[1] * P.in[2] * C + c0;
#pragma unroll
          for (int kh = 0; kh < RH; ++kh) {
            const int64_t ih = ih0 + kh;
            if (ih < 0 || ih >= P.in[1]) continue;
#pragma unroll
            for (int kw = 0; kw < KW; ++kw) {
              const int64_t iw = iw0 + kw;
              if (iw < 0 || iw >= P.in[2]) continue;
              const Pack<T, VW> xv = *reinterpret_cast<const Pack<T, VW>*>(xs + (ih * P.in[2] + iw) * C);
#pragma unroll
              for (int v = 0; v < VW; ++v) acc[kh * KW + kw][v] += gf[v] * static_cast<acc_t>(xv.v[v]);
            }
          }
        }
      }
      // The warps' sums, added in warp order, tap by tap.
#pragma unroll
      for (int t = 0; t < TAPS; ++t) {
#pragma unroll
        for (int v = 0; v < VW; ++v) red[warp][lane * VW + v] = acc[t][v];
        __syncthreads();
        for (int i = threadIdx.x; i < kLanes * VW; i += kLanes * kWarps) {
          const int64_t c = static_cast<int64_t>(blockIdx.x) * kLanes * VW + i;
          acc_t s = acc_t(0);
          for (int w = 0; w < kWarps; ++w) s += red[w][i];
          if (c < C) part[(static_cast<int64_t>(blockIdx.y) * C + c) * taps + (int64_t(kd) * kh_n + kb) * KW + t] = s;
        }
        __syncthreads();
      }
    }
  }
}

// gw[i] = sum over chunks, in order, of part[chunk][i].
template <typename T>
__global__ void sum_chunks(const at::opmath_type<T>* __restrict__ part, T* __restrict__ gw, int64_t chunks, int64_t n) {
  using acc_t = at::opmath_type<T>;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    acc_t s = acc_t(0);
    for (int64_t c = 0; c < chunks; ++c) s += part[c * n + i];
    gw[i] = static_cast<T>(s);
  }
}

template <typename T, int KH, int KW, int S>
bool run(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  using acc_t = at::opmath_type<T>;
  constexpr int VW = wgrad_channels_per_lane<T, (KH > 0 ? KH : 1) * KW>();
  if (P.out_c % VW != 0 || reinterpret_cast<uintptr_t>(x) % (sizeof(T) * VW) != 0 ||
      reinterpret_cast<uintptr_t>(gy) % (sizeof(T) * VW) != 0) {
    return false;
  }
  const int64_t pixels = P.N * P.q[0] * P.q[1] * P.q[2];
  const int64_t ctiles = ceil_div(P.out_c, int64_t(kLanes) * VW);
  // A fixed split of the pixels, from the shapes alone: about 1024 blocks, >= 64 pixels each.
  int64_t chunks = std::clamp<int64_t>(ceil_div(1024, ctiles), 1, std::max<int64_t>(1, pixels / 64));
  chunks = std::min<int64_t>(chunks, 65535);
  const int64_t chunk = ceil_div(pixels, chunks);
  chunks = ceil_div(pixels, chunk);
  const int64_t taps = int64_t(P.k[0]) * P.k[1] * KW, n = P.out_c * taps;
  const at::Tensor part = at::empty({chunks, n}, like.options().dtype(c10::CppTypeToScalarType<acc_t>::value));
  cl_wgrad_partial<T, KH, KW, S, VW><<<dim3(static_cast<unsigned>(ctiles), static_cast<unsigned>(chunks)),
                                       kLanes * kWarps, 0, stream>>>(x, gy, part.mutable_data_ptr<acc_t>(), P,
                                                                     pixels, chunk);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  sum_chunks<T><<<static_cast<unsigned>(std::clamp<int64_t>(ceil_div(n, 256), 1, 1 << 20)), 256, 0, stream>>>(
      part.const_data_ptr<acc_t>(), gw, chunks, n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

}  // namespace

template <typename T>
bool launch_cl_wgrad(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like,
                     cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;  // float64 is for correctness only: the generic kernel
  } else {
    if (P.in_div != 1 || ceil_div(P.out_c, 32) > 65535) return false;
    const int kh = P.k[1], kw = P.k[2], s = P.S[1] == P.S[2] ? P.S[1] : 0;
#define CONVX_CASE(KH, KW, S) \
  if (kh == KH && kw == KW && s == S) return run<T, KH, KW, S>(x, gy, gw, P, like, stream);
    CONVX_CASE(1, 2, 1)
    CONVX_CASE(1, 3, 1)
    CONVX_CASE(1, 4, 1)
    CONVX_CASE(1, 15, 1)
    CONVX_CASE(1, 31, 1)
    CONVX_CASE(3, 3, 1)
    CONVX_CASE(5, 5, 1)
    CONVX_CASE(7, 7, 1)
    CONVX_CASE(3, 3, 2)
    CONVX_CASE(5, 5, 2)
    CONVX_CASE(7, 7, 2)
#undef CONVX_CASE
    if (kw == 31 && s == 1) return run<T, 0, 31, 1>(x, gy, gw, P, like, stream);
    return false;
  }
}

template bool launch_cl_wgrad<float>(const float*, const float*, float*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_cl_wgrad<double>(const double*, const double*, double*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_cl_wgrad<c10::Half>(const c10::Half*, const c10::Half*, c10::Half*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_cl_wgrad<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, c10::BFloat16*, const Plan&, const at::TensorBase&, cudaStream_t);

}  // namespace convx::cuda
