// Launcher of the register-blocked channels-last tile (cl_tile2d.cuh): 5 x 5 and 7 x 7 at stride 1,
// forward and stride-1 data-grad, fp32 / fp16 / bf16.
#include "ops/depthwise_conv/cuda/cl_tile2d.cuh"
#include "ops/depthwise_conv/cuda/launch.h"

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdio>
#include <cstdlib>
#include <type_traits>

namespace convx::cuda {
namespace {

template <typename T, int K>
bool run(const T* in, const T* w, const T* bias, T* out, const ClTile2d& L, cudaStream_t stream) {
  auto kernel = cl_tile2d<T, K>;
  const int64_t smem = cl_tile2d_smem_bytes<T, K>(L);
  int optin = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, c10::cuda::current_device()));
  if (smem > optin) return false;
  C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  kernel<<<static_cast<unsigned>(L.blocks), L.threads, smem, stream>>>(in, w, bias, out, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

}  // namespace

template <typename T>
bool launch_cl_tile2d(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;
  } else {
    const int k = P.k[1];
    if ((k != 5 && k != 7) || !mma16_supported()) return false;
    // A/B knob (temporary): CONVX_CLT unset = default, "off" = decline, "CG,SY" = that tile.
    int CG = k == 7 ? 4 : 8, SY = 7;
    if (const char* e = std::getenv("CONVX_CLT")) {
      if (e[0] == 'o') return false;
      if (std::sscanf(e, "%d,%d", &CG, &SY) != 2) return false;
    }
    ClTile2d L{};
    if (!cl_tile2d_plan(L, P, flip, k, CG, SY, sizeof(T))) return false;
    return k == 7 ? run<T, 7>(in, w, bias, out, L, stream) : run<T, 5>(in, w, bias, out, L, stream);
  }
}

template bool launch_cl_tile2d<float>(const float*, const float*, bool, const float*, float*, const Plan&, cudaStream_t);
template bool launch_cl_tile2d<double>(const double*, const double*, bool, const double*, double*, const Plan&,
                                       cudaStream_t);
template bool launch_cl_tile2d<c10::Half>(const c10::Half*, const c10::Half*, bool, const c10::Half*, c10::Half*,
                                          const Plan&, cudaStream_t);
template bool launch_cl_tile2d<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, bool, const c10::BFloat16*,
                                              c10::BFloat16*, const Plan&, cudaStream_t);

}  // namespace convx::cuda
