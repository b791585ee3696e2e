// Launcher of the staged NCHW fp32 weight-grad (nc_wgrad_cp.cuh): 5x5 at stride 1 with padding 2,
// output rows at least 28 wide of whole 16-byte vectors, sm_80 and newer; the ordered sum of its
// per-unit partials. Tried before walk_wgrad2d.
//
// Measured on the H100 (session 13, bench/results/h100/session13/eff5_call2_ab.log; weight-grad
// alone, ms, nc_wgrad_stream -> walk_wgrad2d -> this): EfficientNet 28x28 (N64 C240) 0.090 -> 0.062
// -> 0.056; 56x56 (N64 C96) 0.132 -> 0.099 -> 0.094. Rows narrower than 28 (not measured here)
// stay on walk_wgrad2d. Units of two groups of samples (a unit's partial is one block sum).
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/nc_wgrad_cp.cuh"
#include "ops/depthwise_conv/cuda/wgrad_sum.cuh"

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <type_traits>

namespace convx::cuda {

template <typename T>
bool launch_nc_wgrad_cp(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  if constexpr (!std::is_same_v<T, float>) {
    return false;
  } else {
    if (!mma16_supported()) return false;  // cp.async: sm_80 and newer
    if (P.k[1] != 5 || P.k[2] != 5 || P.S[1] != 1 || P.S[2] != 1 || P.q[2] < 28) return false;
    constexpr int K = 5, TH = 4;
    NcPlaneCp L{};
    NcWgradCp W{};
    if (!choose_nc_wgrad_cp(L, W, P, K, TH, x, gy, 2)) return false;
    auto kernel = nc_wgrad_cp<K, TH>;
    const int threads = static_cast<int>(std::min<int64_t>(kCpThreads, ceil_div(int64_t(L.pb) * L.items.d, 32) * 32));
    if (L.smem > 48 * 1024) {
      C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(L.smem)));
    }
    int per_sm = 0;
    C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, static_cast<size_t>(L.smem)));
    const int64_t blocks = std::min<int64_t>(W.units, std::max(per_sm, 1) * sm_count());
    const at::Tensor part = at::empty({int64_t(W.units), int64_t(K * K)}, like.options().dtype(at::kFloat));
    kernel<<<static_cast<unsigned>(blocks), threads, static_cast<size_t>(L.smem), stream>>>(
        x, gy, part.mutable_data_ptr<float>(), L, W);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    launch_sum_slots<T>(part.const_data_ptr<float>(), gw, P.out_c, W.chunks, K * K, stream);
    return true;
  }
}

template bool launch_nc_wgrad_cp<float>(const float*, const float*, float*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_nc_wgrad_cp<double>(const double*, const double*, double*, const Plan&, const at::TensorBase&,
                                         cudaStream_t);
template bool launch_nc_wgrad_cp<c10::Half>(const c10::Half*, const c10::Half*, c10::Half*, const Plan&,
                                            const at::TensorBase&, cudaStream_t);
template bool launch_nc_wgrad_cp<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, c10::BFloat16*, const Plan&,
                                                const at::TensorBase&, cudaStream_t);

}  // namespace convx::cuda
