// Launcher of the pipelined whole-plane NCHW kernel (nc_plane.cuh) for output planes larger than
// 14 x 14 (smaller ones: nc_small_planes.cu): square filters 2-7 at stride 1 and 3, 5, 7 at
// stride 2 (nc_stream's set), fp32 / fp16 / bf16, the layer's own filter (forward as stored,
// data-grad rotated).
//
// Measured on the H100 (session 11, bench/results/h100/session11/nc2d_call2_ab.log; ms, forward,
// before -> after; the stride-1 data-grad the same within 2%):
//   MobileNetV2 56x56 3x3: fp32 0.099 (nc_stream) -> 0.085, fp16 / bf16 0.095 (first nc_plane
//   design) -> 0.060;
//   EfficientNet 28x28 5x5: fp32 0.064 -> 0.047, fp16 / bf16 0.063 -> 0.051;
//   ConvNeXt 56x56 7x7: fp32 0.115 (nc_stream) -> 0.090, fp16 / bf16 0.099 (tc_rows_nc) -> 0.083.
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/nc_plane.cuh"
#include "ops/depthwise_conv/cuda/nc_small_planes.cuh"

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <type_traits>

namespace convx::cuda {
namespace {

template <typename T, int KH, int KW, int S>
bool run(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  // Two output rows per thread share KH - 1 staged rows' loads (one row per thread: MobileNetV2
  // 56x56 bf16 0.072 against 0.060 ms, EfficientNet fp32 0.056 against 0.047); one for 5x5 and
  // 7x7 at stride 2, which spill at two (ptxas, sm_90).
  constexpr int TH = KH >= 5 && S == 2 ? 1 : 2;
  NcPlane L{};
  if (!choose_nc_plane(L, P, KH, KW, S, TH, sizeof(T), flip)) return false;
  // Small planes: nc_small_planes measured faster (its header).
  if (int64_t(L.oh) * L.ow <= kSmallPlaneMaxOutputs) return false;
  auto kernel = nc_plane<T, KH, KW, S, kPlaneStrip, TH>;
  // A block walks groups blockIdx.x, + gridDim.x, ...: as many blocks as run at once, except for
  // fp32 7x7, where a block per group measured 5% faster (ConvNeXt 56x56: 0.090 against 0.095 ms;
  // MobileNetV2 fp32 0.086 against 0.085, bf16 0.063 against 0.060).
  int64_t blocks = L.groups;
  if (!(KH == 7 && std::is_same_v<T, float>)) {
    int per_sm = 0;
    C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kPlaneThreads, static_cast<size_t>(L.smem)));
    blocks = std::min<int64_t>(blocks, std::max(per_sm, 1) * sm_count());
  }
  kernel<<<static_cast<unsigned>(blocks), kPlaneThreads, static_cast<size_t>(L.smem), stream>>>(in, w, bias, out, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

}  // namespace

template <typename T>
bool launch_nc_plane(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;  // float64 is for correctness only: nc_gather's generic kernel
  } else {
    const int kh = P.k[1], kw = P.k[2], s = P.S[1] == P.S[2] ? P.S[1] : 0;
#define CONVX_CASE(KH, KW, S) \
  if (kh == KH && kw == KW && s == S) return run<T, KH, KW, S>(in, w, flip, bias, out, P, stream);
    CONVX_CASE(2, 2, 1)
    CONVX_CASE(3, 3, 1)
    CONVX_CASE(4, 4, 1)
    CONVX_CASE(5, 5, 1)
    CONVX_CASE(7, 7, 1)
    CONVX_CASE(3, 3, 2)
    CONVX_CASE(5, 5, 2)
    CONVX_CASE(7, 7, 2)
#undef CONVX_CASE
    return false;
  }
}

template bool launch_nc_plane<float>(const float*, const float*, bool, const float*, float*, const Plan&, cudaStream_t);
template bool launch_nc_plane<double>(const double*, const double*, bool, const double*, double*, const Plan&, cudaStream_t);
template bool launch_nc_plane<c10::Half>(const c10::Half*, const c10::Half*, bool, const c10::Half*, c10::Half*, const Plan&,
                                         cudaStream_t);
template bool launch_nc_plane<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, bool, const c10::BFloat16*,
                                             c10::BFloat16*, const Plan&, cudaStream_t);

}  // namespace convx::cuda
