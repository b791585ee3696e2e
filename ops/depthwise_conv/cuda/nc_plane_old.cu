// Launcher of the whole-plane NCHW kernel (nc_plane_old.cuh) for planes that fit a block: square filters 2-7 at
// stride 1 and 3, 5, 7 at stride 2 (nc_stream's set), fp32 / fp16 / bf16.
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/nc_plane_old.cuh"

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <cuda_runtime_api.h>

#include <type_traits>

namespace convx::cuda {
namespace {

template <typename T, int KH, int KW, int S>
bool run(const T* in, const at::opmath_type<T>* w, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  NcPlaneOld L{};
  if (!choose_nc_plane_old(L, P, KH, KW, S, sizeof(T))) return false;
  // Measured on the H100 (bench/results/h100/session5/ab_knobs.log): faster than nc_stream on
  // every 16-bit plane that fits (MobileNetV2 56x56 fp16 0.116 -> 0.095 ms, EfficientNet 28x28
  // 0.112 -> 0.064, ConvNeXt 14x14 0.078 -> 0.037, 7x7 0.054 -> 0.019) and on fp32 planes up to
  // 28x28 (0.084 -> 0.068, 0.071 -> 0.040, 0.043 -> 0.019), but 7% slower on fp32 56x56, where
  // nc_stream's register tile already reaches 75% of the copy bandwidth.
  if (std::is_same_v<T, float> && int64_t(L.oh) * L.ow > kOldPlaneFloatMaxOutputs) return false;
  const unsigned blocks = static_cast<unsigned>(ceil_div(L.planes, L.pb));
  nc_plane_old<T, KH, KW, S, kOldPlaneStrip><<<blocks, kOldPlaneThreads, static_cast<size_t>(L.smem), stream>>>(in, w, bias, out, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

}  // namespace

template <typename T>
bool launch_nc_plane_old(const T* in, const at::opmath_type<T>* w, const T* bias, T* out, const Plan& P,
                     cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;  // float64 is for correctness only: nc_gather's generic kernel
  } else {
    const int kh = P.k[1], kw = P.k[2], s = P.S[1] == P.S[2] ? P.S[1] : 0;
#define CONVX_CASE(KH, KW, S) \
  if (kh == KH && kw == KW && s == S) return run<T, KH, KW, S>(in, w, bias, out, P, stream);
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

template bool launch_nc_plane_old<float>(const float*, const float*, const float*, float*, const Plan&, cudaStream_t);
template bool launch_nc_plane_old<double>(const double*, const double*, const double*, double*, const Plan&, cudaStream_t);
template bool launch_nc_plane_old<c10::Half>(const c10::Half*, const float*, const c10::Half*, c10::Half*, const Plan&, cudaStream_t);
template bool launch_nc_plane_old<c10::BFloat16>(const c10::BFloat16*, const float*, const c10::BFloat16*, c10::BFloat16*, const Plan&, cudaStream_t);

}  // namespace convx::cuda
