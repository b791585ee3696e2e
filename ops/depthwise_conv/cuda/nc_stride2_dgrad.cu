// Launcher of the NCHW stride-2 data-grad kernel writing whole output rows (nc_stride2_dgrad.cuh):
// the 2 x 2 sub-filters with pads (1, 0) (k4 s2 p1, k3 s2 p1 with output_padding 1) and the 1 x 1
// ones with pads (0, 0) (k2 s2 p0), fp32 / fp16 / bf16.
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/nc_stride2_dgrad.cuh"

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <cuda_runtime_api.h>

#include <type_traits>

namespace convx::cuda {
namespace {

template <typename T, int TAPS, int P0, int P1, int R, int TH>
bool run(const T* in, const at::opmath_type<T>* w, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  NcS2 L{};
  if (!nc_stride2_items(L, P, TAPS, P0, P1, R, TH, in, out, sizeof(T))) return false;
  nc_stride2_dgrad<T, TAPS, P0, P1, R, TH>
      <<<static_cast<unsigned>(ceil_div(L.items, kS2Threads)), kS2Threads, 0, stream>>>(in, w, bias, out, P, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

}  // namespace

template <typename T>
bool launch_nc_stride2_dgrad(const T* in, const at::opmath_type<T>* w, const T* bias, T* out, const Plan& P,
                             cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;  // float64 is for correctness only: nc_gather's generic kernel
  } else {
    if (P.phases != 4 || P.k[1] != P.k[2]) return false;
    const int taps = P.k[1], p0 = P.pad[1][0], p1 = P.pad[1][1];
    constexpr int R = s2_strip<T>(), TH = kS2Band;
    if (taps == 2 && p0 == 1 && p1 == 0) return run<T, 2, 1, 0, R, TH>(in, w, bias, out, P, stream);
    if (taps == 1 && p0 == 0 && p1 == 0) return run<T, 1, 0, 0, R, TH>(in, w, bias, out, P, stream);
    return false;
  }
}

template bool launch_nc_stride2_dgrad<float>(const float*, const float*, const float*, float*, const Plan&, cudaStream_t);
template bool launch_nc_stride2_dgrad<double>(const double*, const double*, const double*, double*, const Plan&, cudaStream_t);
template bool launch_nc_stride2_dgrad<c10::Half>(const c10::Half*, const float*, const c10::Half*, c10::Half*, const Plan&,
                                                 cudaStream_t);
template bool launch_nc_stride2_dgrad<c10::BFloat16>(const c10::BFloat16*, const float*, const c10::BFloat16*,
                                                     c10::BFloat16*, const Plan&, cudaStream_t);

}  // namespace convx::cuda
