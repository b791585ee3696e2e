// Launchers of the NC(D)HW weight-grads (streaming, nc_wgrad_stream.cuh; 31-row filters: the
// shared-tile kernel of nc_tiled.cuh) and the ordered sum of their per-block partials.
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/nc_tiled.cuh"
#include "ops/depthwise_conv/cuda/nc_wgrad_s2d.cuh"
#include "ops/depthwise_conv/cuda/nc_wgrad_stream.cuh"
#include "ops/depthwise_conv/cuda/wgrad_sum.cuh"

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <type_traits>

namespace convx::cuda {
namespace {

// 16-bit K x K planes staged in shared memory (nc_wgrad_s2d.cuh). 3x3: nc_wgrad_s2d_ranges, the
// (channel, step) units dealt to as many blocks as run at once (H100, session 14,
// mb_call1_ab.log, weight-grad alone, MobileNetV2 56x56 C 144 fp16 / bf16: 0.0650 / 0.0650 ms;
// backward rows bench/results/h100/bench.log 0.118 / 0.124 -> mb_call1_bench.log 0.115 / 0.115).
// 5x5 keeps nc_wgrad_s2d, a block per (channel, chunk): EfficientNet 28x28 C 240 measured slower
// on the ranges kernel (backward fp16 / bf16 0.094 / 0.101 -> 0.106 / 0.110 ms, both of its
// grids). One chunk per channel (5x5) or whole channels a block (3x3) write gw; else partials and
// a sum launch.
template <typename T, int K>
bool run_s2d(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  NcS2dTile L{};
  if (!mma16_supported() ||  // cp.async: sm_80 and newer
      !choose_nc_s2d<K>(L, P, reinterpret_cast<uintptr_t>(x), reinterpret_cast<uintptr_t>(gy), sm_count()))
    return false;
  const size_t smem = size_t(kNcS2dRing) * L.slot * sizeof(T);
  const auto prepare = [&](auto kernel) {
    if (smem > 48 * 1024)
      C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  };
  if constexpr (K == 3) {
    int per_sm = 0;
    prepare(nc_wgrad_s2d_ranges<T, K>);
    C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, nc_wgrad_s2d_ranges<T, K>, L.threads, smem));
    deal_nc_s2d(L, P.out_c, int64_t(std::max(per_sm, 1)) * sm_count());
    if (nc_s2d_whole_channels(L, P.out_c)) {
      prepare(nc_wgrad_s2d_ranges<T, K, T>);
      nc_wgrad_s2d_ranges<T, K, T><<<L.blocks, L.threads, smem, stream>>>(x, gy, gw, P, L);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      return true;
    }
    const at::Tensor part = at::empty({int64_t(L.blocks), int64_t(L.cmax), K * K}, like.options().dtype(at::kFloat));
    nc_wgrad_s2d_ranges<T, K><<<L.blocks, L.threads, smem, stream>>>(x, gy, part.mutable_data_ptr<float>(), P, L);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    const int64_t n = P.out_c * K * K;
    nc_s2d_sum<T><<<static_cast<unsigned>(ceil_div(n, 256)), 256, 0, stream>>>(part.const_data_ptr<float>(), gw,
                                                                              P.out_c, L, K * K);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return true;
  } else {
    const auto blocks = static_cast<unsigned>(P.out_c * L.chunks);
    const auto go = [&](auto kernel, auto* out) {
      prepare(kernel);
      kernel<<<blocks, L.threads, smem, stream>>>(x, gy, out, P, L);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    };
    if (L.chunks == 1) {
      go(nc_wgrad_s2d<T, K, T>, gw);
      return true;
    }
    const at::Tensor part = at::empty({P.out_c, int64_t(L.chunks), K * K}, like.options().dtype(at::kFloat));
    go(nc_wgrad_s2d<T, K>, part.mutable_data_ptr<float>());
    launch_sum_slots<T>(part.const_data_ptr<float>(), gw, P.out_c, L.chunks, K * K, stream);
    return true;
  }
}

template <typename T, int KH, int KW, int S>
bool run_stream(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  using acc_t = at::opmath_type<T>;
  if constexpr (sizeof(T) == 2 && S == 1 && (KH == 3 || KH == 5) && KW == KH) {
    // Planes staged in shared memory (nc_wgrad_s2d) on outputs at least 28 wide, measured on one row
    // of each filter (session 13, mb16_call2_ab.log, weight-grad alone, ms fp16 / bf16 [nc_wgrad_stream
    // + sum_slots]: MobileNetV2 56x56 C 144 0.0649 / 0.0657 [0.0860 / 0.0900], EfficientNet 28x28
    // C 240 0.0503 / 0.0560 [0.0785 / 0.0784]); smaller planes (MobileNetV2 7x7's one chunk per
    // channel below) were not measured on it.
    if (P.q[2] >= 28 && run_s2d<T, KH>(x, gy, gw, P, like, stream)) return true;
  }
  NcWgradTile L{};
  if (!choose_nc_wgrad(L, P, wgrad_cols<KH>(), wgrad_rows<KH>(), S, KH, KW)) return false;
  const int64_t taps = int64_t(P.k[0]) * KH * KW;
  if constexpr (sizeof(T) == 2 && S == 1 && (KH == 3 || KH == 5) && KW == KH) {
    // 16-bit 3x3 / 5x5: one chunk per channel (MobileNetV2's 7x7 planes at C 960) writes gw
    // itself: no partials, no sum_slots launch (H100, session 12, wg16_call2_ab.log: MobileNetV2
    // 7x7 weight-grad 0.0256 -> 0.0233 ms fp16, 0.0257 -> 0.0235 bf16, the same bits).
    if (L.chunks == 1) {
      nc_wgrad_stream<T, KH, KW, S, T><<<static_cast<unsigned>(std::min<int64_t>(P.out_c, int64_t(1) << 30)),
                                         L.threads, 0, stream>>>(x, gy, gw, P, L);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      return true;
    }
  }
  const at::Tensor part = at::empty({P.out_c, int64_t(L.chunks), taps},
                                    like.options().dtype(c10::CppTypeToScalarType<acc_t>::value));
  const int64_t blocks = P.out_c * L.chunks;
  nc_wgrad_stream<T, KH, KW, S><<<static_cast<unsigned>(std::min<int64_t>(blocks, int64_t(1) << 30)), L.threads, 0,
                                  stream>>>(x, gy, part.mutable_data_ptr<acc_t>(), P, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  launch_sum_slots<T>(part.const_data_ptr<acc_t>(), gw, P.out_c, L.chunks, taps, stream);
  return true;
}

// The shared-tile kernel (nc_tiled.cuh) for tall filters whose rows are known at run time.
template <typename T, int KH, int KW, int S, int R>
bool run(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like,
         cudaStream_t stream) {
  using acc_t = at::opmath_type<T>;
  constexpr int NV = KW;  // the tap sums of one filter row
  NcTile L{};
  const int kh = P.k[1];
  const int64_t fixed = (kTileThreads / 32) * NV * int64_t(sizeof(acc_t));
  if (!choose_nc_tile(L, P, R, kh, KW, S, S, P.out_c, sizeof(acc_t), fixed, int64_t(kh) * KW * sizeof(acc_t))) {
    return false;
  }
  // A fixed split of each channel's (sample, depth) planes, from the shapes alone: enough
  // blocks to fill the GPU a few times over.
  const int64_t npl = P.N * P.q[0], base = L.groups * L.tilesH * L.tilesW;
  int64_t chunks = std::clamp<int64_t>(ceil_div(2048, base), 1, npl);
  const int64_t chunk = ceil_div(npl, chunks);
  chunks = ceil_div(npl, chunk);
  const int64_t slots = L.tilesH * L.tilesW * chunks, taps = int64_t(P.k[0]) * kh * KW;
  const at::Tensor part = at::empty({P.out_c, slots, taps},
                        like.options().dtype(c10::CppTypeToScalarType<acc_t>::value));
  const int64_t blocks = base * chunks;
  const size_t smem = size_t(fixed) + size_t(L.TZ) * (size_t(L.rows) * L.cols + size_t(kh) * KW) * sizeof(acc_t);
  nc_wgrad<T, KH, KW, S, R><<<static_cast<unsigned>(std::min<int64_t>(blocks, int64_t(1) << 30)),
                              L.TX * L.TY * L.TZ, smem, stream>>>(x, gy, part.mutable_data_ptr<acc_t>(), P, L,
                                                                  chunk, chunks);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  launch_sum_slots<T>(part.const_data_ptr<acc_t>(), gw, P.out_c, slots, taps, stream);
  return true;
}

}  // namespace

template <typename T>
bool launch_nc_wgrad(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like,
                     cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;  // float64 is for correctness only: the generic kernel
  } else {
    if (launch_row_warp_wgrad<T>(x, gy, gw, P, like, stream)) return true;  // 1-D k2-4
    if (launch_row1d_wgrad<T>(x, gy, gw, P, like, stream)) return true;  // 1-D k15 / k31
    const int kh = P.k[1], kw = P.k[2], s = P.S[1] == P.S[2] ? P.S[1] : 0;
    // false (32-bit bounds not met): the generic kernel of depthwise_conv.cu.
#define CONVX_CASE(KH, KW, S) \
  if (kh == KH && kw == KW && s == S) return run_stream<T, KH, KW, S>(x, gy, gw, P, like, stream);
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
    if (kw == 31 && s == 1) return run<T, 0, 31, 1, 8>(x, gy, gw, P, like, stream);
    return false;
  }
}

template bool launch_nc_wgrad<float>(const float*, const float*, float*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_nc_wgrad<double>(const double*, const double*, double*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_nc_wgrad<c10::Half>(const c10::Half*, const c10::Half*, c10::Half*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_nc_wgrad<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, c10::BFloat16*, const Plan&, const at::TensorBase&, cudaStream_t);

}  // namespace convx::cuda
