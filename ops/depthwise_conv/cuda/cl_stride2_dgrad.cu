// Launcher of the channels-last stride-2 data-grad kernel writing both column phases of an
// output row (cl_stride2_dgrad.cuh): 2 x 2 sub-filters with pads (1, 0) (k4 s2 p1, k3 s2 p1).
#include "ops/depthwise_conv/cuda/cl_stride2_dgrad.cuh"
#include "ops/depthwise_conv/cuda/launch.h"

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdlib>
#include <type_traits>

namespace convx::cuda {
namespace {

template <typename T, int V, int R, int TH, int MINB>
bool run(const T* in, const at::opmath_type<T>* w, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  const ClS2Tile L = choose_cl_s2_tile(P, V, R, TH);
  if (L.blocks <= 0 || L.blocks >= (int64_t(1) << 31)) return false;
  cl_stride2_dgrad<T, V, R, TH, MINB>
      <<<static_cast<unsigned>(L.blocks), cl_s2_threads(L), 0, stream>>>(in, w, bias, out, P, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

}  // namespace

template <typename T>
bool launch_cl_stride2_dgrad(const T* in, const at::opmath_type<T>* w, const T* bias, T* out, const Plan& P,
                             cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;  // float64 is for correctness only: the generic kernel
  } else {
    if (!cl_s2_covers(P) || P.out_c % 4 != 0) return false;
    // TEMPORARY A/B knob (session 12, clk): 0 = off (cl_gather), else the tile; unset: the default.
    const char* e = std::getenv("CONVX_CLK_S2F");
    switch (e ? std::atoi(e) : 100) {
      case 0: return false;
      case 1: return run<T, 4, 2, 2, 2>(in, w, bias, out, P, stream);
      case 2: return run<T, 4, 4, 2, 2>(in, w, bias, out, P, stream);
      case 3: return run<T, 4, 2, 4, 2>(in, w, bias, out, P, stream);
      case 5: return run<T, 4, 4, 1, 2>(in, w, bias, out, P, stream);
      case 7: return run<T, 4, 4, 4, 2>(in, w, bias, out, P, stream);
      case 8: return run<T, 4, 8, 1, 2>(in, w, bias, out, P, stream);
      default:
        if constexpr (sizeof(T) == 2) return run<T, 4, 4, 2, 2>(in, w, bias, out, P, stream);
        else return run<T, 4, 4, 1, 2>(in, w, bias, out, P, stream);
    }
  }
}

template bool launch_cl_stride2_dgrad<float>(const float*, const float*, const float*, float*, const Plan&, cudaStream_t);
template bool launch_cl_stride2_dgrad<double>(const double*, const double*, const double*, double*, const Plan&,
                                              cudaStream_t);
template bool launch_cl_stride2_dgrad<c10::Half>(const c10::Half*, const float*, const c10::Half*, c10::Half*,
                                                 const Plan&, cudaStream_t);
template bool launch_cl_stride2_dgrad<c10::BFloat16>(const c10::BFloat16*, const float*, const c10::BFloat16*,
                                                     c10::BFloat16*, const Plan&, cudaStream_t);

}  // namespace convx::cuda
