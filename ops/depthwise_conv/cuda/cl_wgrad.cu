// Channels-last depthwise weight-grad, one pass over x and grad_output, deterministic.
//
// Work item: a strip of R consecutive outputs along W of one output row. A thread owns VW
// consecutive channels (one vector load) and keeps the sums of every tap of one filter depth
// slice (31x31: of one filter row) in registers. Per item it loads the R grad_output vectors once,
// then streams each input row segment ((R-1)*S + KW vectors) once, applying every input vector to
// all the taps it meets (taps, strip and vector positions are compile-time: static register
// indices, no per-tap index arithmetic or border test beyond the row/column ones).
// A block is CT channel lanes x G groups (threads t: lane t % CT, group t / CT; a warp spans
// consecutive pixels' channels, which are consecutive in memory); the groups walk the block's
// items in an interleaved order. The G groups' sums are added in group order through shared
// memory and written as the block's partial [chunk][channel][tap]; a second kernel adds the chunks
// in order. No atomics: the result depends only on the shapes.
#include "ops/depthwise_conv/cuda/cl_tiled.cuh"
#include "ops/depthwise_conv/cuda/launch.h"

#include <ATen/ops/empty.h>
#include <c10/core/ScalarType.h>
#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <limits>
#include <type_traits>

namespace convx::cuda {
namespace {

constexpr int kWgradThreads = 256;

// Channels per thread: a vector of up to 16 bytes, with at most 64 tap accumulators (32 for the
// wide rows, whose KW + R - 1 input vectors are loaded together). Beyond that, nvcc spills.
template <typename T, int TAPS>
constexpr int wgrad_channels_per_lane() {
  int v = static_cast<int>(16 / sizeof(T));
  while (v > 1 && TAPS * v > (TAPS >= 15 ? 32 : 64)) v /= 2;
  return v;
}
// Outputs per work item: R*VW grad_output values stay in registers, next to the tap sums and
// the strip's input vectors (loaded together); larger strips spill (nvcc -Xptxas -v).
template <int TAPS, int VW>
constexpr int wgrad_strip() {
  return TAPS * VW <= 32 && VW <= 4 && TAPS < 31 ? 8 : (TAPS * VW > 56 ? 2 : 4);
}

struct ClwTile {
  int CT, G;              // channel lanes per block, pixel groups per block
  int strips;             // work items per output row: ceil(OW / R)
  bool i32;               // item and spatial indices fit in 32 bits
  int64_t items, chunk;   // work items in all, per block (blockIdx.y)
};

// KH == 0: tall filters (31x31); one filter row per pass over the items (the inputs are read
// once per filter row, from L2), the row's taps in registers.
template <typename T, int KH, int KW, int S, int VW, int R>
__global__ void __launch_bounds__(kWgradThreads, 2)
cl_wgrad_partial(const T* __restrict__ x, const T* __restrict__ gy, at::opmath_type<T>* __restrict__ part,
                 const Plan P, const ClwTile L) {
  using acc_t = at::opmath_type<T>;
  constexpr int RH = KH > 0 ? KH : 1;  // filter rows per pass
  constexpr int TAPS = RH * KW;
  constexpr int SEG = (R - 1) * S + KW;  // input vectors per strip and filter row
  // Taps reduced per shared-memory round (about 24 KB).
  constexpr int TB0 = 24576 / int(kWgradThreads * VW * sizeof(acc_t));
  constexpr int TB = TB0 < 1 ? 1 : (TB0 > TAPS ? TAPS : TB0);
  __shared__ acc_t red[TB][kWgradThreads * VW];
  const int t = threadIdx.x, lane = t % L.CT, grp = t / L.CT;
  const int kh_n = KH > 0 ? KH : P.k[1];
  const int64_t C = P.out_c;
  const int64_t c0 = (static_cast<int64_t>(blockIdx.x) * L.CT + lane) * VW;
  const bool active = grp < L.G && c0 < C;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * L.chunk;
  const int64_t end = begin + L.chunk < L.items ? begin + L.chunk : L.items;
  const int OW = static_cast<int>(P.q[2]), OH = static_cast<int>(P.q[1]), OD = static_cast<int>(P.q[0]);
  const int IW = static_cast<int>(P.in[2]), IH = static_cast<int>(P.in[1]), ID = static_cast<int>(P.in[0]);
  const int64_t taps = int64_t(P.k[0]) * kh_n * KW;
  for (int kd = 0; kd < P.k[0]; ++kd) {
    for (int kb = 0; kb < kh_n; kb += RH) {
      acc_t acc[TAPS][VW];
#pragma unroll
      for (int i = 0; i < TAPS; ++i) {
#pragma unroll
        for (int v = 0; v < VW; ++v) acc[i][v] = acc_t(0);
      }
      if (active) {
        for (int64_t it = begin + grp; it < end; it += L.G) {
          // item -> (n, od, oh, strip); 32-bit divisions when the host proved they fit
          int ws, oh, od;
          int64_t n;
          if (L.i32) {
            uint32_t u = static_cast<uint32_t>(it);
            ws = static_cast<int>(u % uint32_t(L.strips)), u /= uint32_t(L.strips);
            oh = static_cast<int>(u % uint32_t(OH)), u /= uint32_t(OH);
            od = static_cast<int>(u % uint32_t(OD)), n = u / uint32_t(OD);
          } else {
            int64_t u = it;
            ws = static_cast<int>(u % L.strips), u /= L.strips;
            oh = static_cast<int>(u % OH), u /= OH;
            od = static_cast<int>(u % OD), n = u / OD;
          }
          const int id = od * P.S[0] - P.pad[0][0] + kd;
          if (id < 0 || id >= ID) continue;
          const int ow0 = ws * R;
          const T* gp = gy + (((n * OD + od) * OH + oh) * int64_t(OW) + ow0) * C + c0;
          acc_t g[R][VW];
#pragma unroll
          for (int r = 0; r < R; ++r) {
            if (ow0 + r < OW) {
              const Pack<T, VW> gv = *reinterpret_cast<const Pack<T, VW>*>(gp + int64_t(r) * C);
#pragma unroll
              for (int v = 0; v < VW; ++v) g[r][v] = static_cast<acc_t>(gv.v[v]);
            } else {
#pragma unroll
              for (int v = 0; v < VW; ++v) g[r][v] = acc_t(0);
            }
          }
          const int iw0 = ow0 * S - P.pad[2][0];
          const T* xs = x + (n * ID + id) * int64_t(IH) * IW * C + c0;
#pragma unroll
          for (int kh = 0; kh < RH; ++kh) {
            const int ih = oh * S - P.pad[1][0] + kb + kh;
            if (ih < 0 || ih >= IH) continue;
            const T* xr = xs + (int64_t(ih) * IW + iw0) * C;
#pragma unroll
            for (int j = 0; j < SEG; ++j) {
              const int iw = iw0 + j;
              Pack<T, VW> xv;
              if (iw >= 0 && iw < IW) {
                xv = *reinterpret_cast<const Pack<T, VW>*>(xr + int64_t(j) * C);
              } else {
#pragma unroll
                for (int v = 0; v < VW; ++v) xv.v[v] = T(0);
              }
#pragma unroll
              for (int kw = 0; kw < KW; ++kw) {
                // input column j meets tap kw at strip position (j - kw) / S
                if (j >= kw && (j - kw) % S == 0 && (j - kw) / S < R) {
#pragma unroll
                  for (int v = 0; v < VW; ++v)
                    acc[kh * KW + kw][v] += g[(j - kw) / S][v] * static_cast<acc_t>(xv.v[v]);
                }
              }
            }
          }
        }
      }
      // The groups' sums, added in group order, TB taps per round.
      const int64_t tap0 = (int64_t(kd) * kh_n + kb) * KW;
#pragma unroll
      for (int b = 0; b < TAPS; b += TB) {
#pragma unroll
        for (int i = 0; i < TB; ++i) {
          if (b + i < TAPS) {
#pragma unroll
            for (int v = 0; v < VW; ++v) red[i][t * VW + v] = acc[b + i < TAPS ? b + i : 0][v];
          }
        }
        __syncthreads();
        const int per = L.CT * VW;  // values of one group and tap
        for (int i = t; i < TB * per; i += blockDim.x) {
          const int tb = i / per, e = i % per;
          const int64_t c = static_cast<int64_t>(blockIdx.x) * per + e;
          if (b + tb < TAPS && c < C) {
            acc_t s = acc_t(0);
            for (int w = 0; w < L.G; ++w) s += red[tb][w * per + e];
            part[(static_cast<int64_t>(blockIdx.y) * C + c) * taps + tap0 + b + tb] = s;
          }
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

// The block shape and the split of the items, from the shapes alone. false: a size is too large.
inline bool choose_clw_tile(ClwTile& L, const Plan& P, int VW, int R, int64_t& ctiles, int64_t& chunks) {
  constexpr int64_t kSpatialMax = std::numeric_limits<int>::max() / 8;
  for (int d = 0; d < 3; ++d) {
    if (P.in[d] > kSpatialMax || P.q[d] > kSpatialMax) return false;
  }
  const int64_t lanes = P.out_c / VW;
  const int64_t ctn = ceil_div(lanes, 128);  // channel tiles of at most 128 lanes, balanced
  L.CT = static_cast<int>(ceil_div(lanes, ctn));
  L.G = kWgradThreads / L.CT;
  L.strips = static_cast<int>(ceil_div(P.q[2], R));
  L.items = P.N * P.q[0] * P.q[1] * L.strips;
  L.i32 = L.items <= std::numeric_limits<int32_t>::max();
  ctiles = ctn;
  // About 4 blocks per SM of an H100 in all, each at least 4 items per group.
  chunks = std::clamp<int64_t>(ceil_div(528, ctiles), 1, std::max<int64_t>(1, L.items / (4 * L.G)));
  chunks = std::min<int64_t>(chunks, 65535);
  L.chunk = ceil_div(std::max<int64_t>(L.items, 1), chunks);
  chunks = ceil_div(std::max<int64_t>(L.items, 1), L.chunk);
  return ctiles <= 65535;
}

template <typename T, int KH, int KW, int S>
bool run(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  using acc_t = at::opmath_type<T>;
  constexpr int VW = wgrad_channels_per_lane<T, (KH > 0 ? KH : 1) * KW>();
  constexpr int R = wgrad_strip<(KH > 0 ? KH : 1) * KW, VW>();
  if (P.out_c % VW != 0 || reinterpret_cast<uintptr_t>(x) % (sizeof(T) * VW) != 0 ||
      reinterpret_cast<uintptr_t>(gy) % (sizeof(T) * VW) != 0) {
    return false;
  }
  ClwTile L{};
  int64_t ctiles = 0, chunks = 0;
  if (!choose_clw_tile(L, P, VW, R, ctiles, chunks)) return false;
  const int64_t taps = int64_t(P.k[0]) * P.k[1] * KW, n = P.out_c * taps;
  const at::Tensor part = at::empty({chunks, n}, like.options().dtype(c10::CppTypeToScalarType<acc_t>::value));
  const unsigned threads = static_cast<unsigned>(ceil_div(int64_t(L.CT) * L.G, 32) * 32);
  cl_wgrad_partial<T, KH, KW, S, VW, R><<<dim3(static_cast<unsigned>(ctiles), static_cast<unsigned>(chunks)),
                                          threads, 0, stream>>>(x, gy, part.mutable_data_ptr<acc_t>(), P, L);
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
    if (P.in_div != 1) return false;
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
