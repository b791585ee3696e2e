// Launcher of the small-plane NCHW kernel (nc_small_planes.cuh) for output planes up to 14 x 14:
// square filters 2-7 at stride 1 and 3, 5, 7 at stride 2 (nc_stream's set), fp32 / fp16 / bf16, the
// layer's own filter (forward as stored, data-grad rotated).
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/nc_small_planes.cuh"

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <cuda_runtime_api.h>

#include <type_traits>

namespace convx::cuda {
namespace {

template <typename T, int KH, int KW, int S>
bool run(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  NcSmallPlanes L{};
  if (!choose_nc_small_planes(L, P, KH, KW, S, sizeof(T), flip)) return false;
  // Measured on the H100 (bench/results/h100/session5/ab_knobs.log): faster than nc_stream on
  // every plane it took (ConvNeXt 14x14 fp16 0.078 -> 0.037 ms, MobileNetV2 7x7 0.054 -> 0.019);
  // from 28 x 28 nc_plane.cuh is faster (session 11, nc2d_call2_ab.log: EfficientNet 28x28 fp32
  // 0.064 -> 0.047, fp16 0.063 -> 0.051), and takes those planes first.
  if (int64_t(L.oh) * L.ow > kSmallPlaneMaxOutputs) return false;
  const unsigned blocks = static_cast<unsigned>(ceil_div(L.planes, L.pb));
  nc_small_planes<T, KH, KW, S, kSmallPlaneStrip><<<blocks, kSmallPlaneThreads, static_cast<size_t>(L.smem), stream>>>(in, w, bias, out, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

}  // namespace

template <typename T>
bool launch_nc_small_planes(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P,
                            cudaStream_t stream) {
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

template bool launch_nc_small_planes<float>(const float*, const float*, bool, const float*, float*, const Plan&,
                                            cudaStream_t);
template bool launch_nc_small_planes<double>(const double*, const double*, bool, const double*, double*, const Plan&,
                                             cudaStream_t);
template bool launch_nc_small_planes<c10::Half>(const c10::Half*, const c10::Half*, bool, const c10::Half*, c10::Half*,
                                                const Plan&, cudaStream_t);
template bool launch_nc_small_planes<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, bool,
                                                    const c10::BFloat16*, c10::BFloat16*, const Plan&, cudaStream_t);

}  // namespace convx::cuda
