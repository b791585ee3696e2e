// Launcher of the whole-plane NCHW kernel (nc_plane.cuh) for small planes: square filters 2-7 at
// stride 1 and 3, 5, 7 at stride 2 (nc_stream's set), fp32 / fp16 / bf16.
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/nc_plane.cuh"

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Exception.h>
#include <c10/util/Half.h>
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace convx::cuda {
namespace {

// CONVX_NC_SMALL, a temporary knob (read once per process) for the A/B measurement of this
// kernel on the GPU: unset or 1: output planes up to kPlaneSmallOutputs elements; 0: never (the
// streaming kernels as before); 2: every plane whose block fits in shared memory (to time it on
// 14x14-56x56 planes before widening the default).
int small_choice() {
  static const int choice = [] {
    const char* e = std::getenv("CONVX_NC_SMALL");
    if (!e || !*e || std::strcmp(e, "1") == 0) return 1;
    if (std::strcmp(e, "0") == 0) return 0;
    if (std::strcmp(e, "2") == 0) return 2;
    TORCH_CHECK(false, "convx: CONVX_NC_SMALL must be 0, 1, 2 or unset, got '", e, "'");
  }();
  return choice;
}

template <typename T, int KH, int KW, int S>
bool run(const T* in, const at::opmath_type<T>* w, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  NcPlane L{};
  if (!choose_nc_plane(L, P, KH, KW, S, sizeof(T))) return false;
  const int choice = small_choice();
  if (choice == 0 || (choice == 1 && int64_t(L.oh) * L.ow > kPlaneSmallOutputs)) return false;
  const unsigned blocks = static_cast<unsigned>(ceil_div(L.planes, L.pb));
  nc_plane<T, KH, KW, S, kPlaneStrip><<<blocks, kPlaneThreads, static_cast<size_t>(L.smem), stream>>>(in, w, bias, out, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

}  // namespace

template <typename T>
bool launch_nc_plane(const T* in, const at::opmath_type<T>* w, const T* bias, T* out, const Plan& P,
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

template bool launch_nc_plane<float>(const float*, const float*, const float*, float*, const Plan&, cudaStream_t);
template bool launch_nc_plane<double>(const double*, const double*, const double*, double*, const Plan&, cudaStream_t);
template bool launch_nc_plane<c10::Half>(const c10::Half*, const float*, const c10::Half*, c10::Half*, const Plan&, cudaStream_t);
template bool launch_nc_plane<c10::BFloat16>(const c10::BFloat16*, const float*, const c10::BFloat16*, c10::BFloat16*, const Plan&, cudaStream_t);

}  // namespace convx::cuda
