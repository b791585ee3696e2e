// Launcher of the tensor-core channels-last 2-D kernel (tc_cl2d.cuh): 7 x 7 (ConvNeXt) forward and
// stride-1 data-grad in fp16 / bf16, and in fp32 as TF32 (the caller asks only where
// torch.backends.cudnn.allow_tf32 allows it).
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/tc_cl2d.cuh"

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdlib>
#include <type_traits>

namespace convx::cuda {

template <typename T>
bool launch_tc_cl2d(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;
  } else {
    if (P.k[1] != 7 || !mma16_supported()) return false;
    // A/B knobs (temporary): raw bricks in flight, blocks wanted per SM, launch bounds' blocks per SM.
    int stages = 2, per_sm = 8;
    if (const char* s = std::getenv("CONVX_TC7C_S")) stages = std::atoi(s);
    if (const char* s = std::getenv("CONVX_TC7C_T")) per_sm = std::atoi(s);
    TcCl2d L{};
    if (!tc_cl2d_plan<T, 7>(L, P, flip, stages, per_sm * sm_count())) return false;
    const int64_t smem = tc_cl2d_smem_bytes<T, 7>(L);
    int optin = 0;
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, c10::cuda::current_device()));
    if (smem > optin) return false;
    auto kernel = tc_cl2d<T, 7>;
    if (const char* s = std::getenv("CONVX_TC7C_B"); s && std::atoi(s) == 3) kernel = tc_cl2d<T, 7, 3>;
    C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    kernel<<<L.blocks, 32 * L.nw, smem, stream>>>(in, w, bias, out, L);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return true;
  }
}

template bool launch_tc_cl2d<float>(const float*, const float*, bool, const float*, float*, const Plan&, cudaStream_t);
template bool launch_tc_cl2d<double>(const double*, const double*, bool, const double*, double*, const Plan&,
                                     cudaStream_t);
template bool launch_tc_cl2d<c10::Half>(const c10::Half*, const c10::Half*, bool, const c10::Half*, c10::Half*,
                                        const Plan&, cudaStream_t);
template bool launch_tc_cl2d<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, bool, const c10::BFloat16*,
                                            c10::BFloat16*, const Plan&, cudaStream_t);

}  // namespace convx::cuda
