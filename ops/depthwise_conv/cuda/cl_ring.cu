// Launcher of the channels-last ring kernel (cl_ring.cuh) and its specialisations: 3x3 at
// stride 1 and 2 and 5x5 at stride 1, fp32 / fp16 / bf16.
#include "ops/depthwise_conv/cuda/cl_ring.cuh"
#include "ops/depthwise_conv/cuda/launch.h"

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdint>
#include <type_traits>

namespace convx::cuda {
namespace {

template <typename T, int K, int S>
bool run(const T* in, const T* w, const T* bias, T* out, ClRing L, cudaStream_t stream) {
  if (!ring_tile(L, K, K, S, sizeof(T))) return false;
  auto kernel = cl_ring<T, K, K, S>;
  const int64_t smem = ring_smem_bytes(L, K, K, sizeof(T));
  // The tile is sized for the H100's shared memory; a GPU with less per block declines it.
  if (!allow_dynamic_smem(reinterpret_cast<const void*>(kernel), smem)) return false;
  int per_sm = 0;
  C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, L.threads, smem));
  if (per_sm < 1 || !ring_bands(L, int64_t(per_sm) * sm_count())) return false;
  kernel<<<static_cast<unsigned>(L.blocks), L.threads, smem, stream>>>(in, w, bias, out, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

}  // namespace

template <typename T>
bool launch_cl_ring(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;  // float64 is for correctness only: the generic kernel
  } else {
    // Where it serves, by the H100 A/B run of session 11 (bench/results/h100/session11/
    // cl2d_call2_ab.log, forward / stride-1 data-grad, ms, cl_gather -> cl_ring):
    //  - fp32: 3x3 at stride 1 (MobileNetV2 56x56 0.101 -> 0.091, 7x7 planes 0.0164 -> 0.0141),
    //    one step of copies in flight (D 0; D 1: 0.101). Slower, so declined: 3x3 stride 2
    //    (0.148 -> 0.154), 5x5 (0.069 -> 0.071), 7x7 (ConvNeXt 56x56 0.138 -> 0.148, 14x14
    //    0.045 -> 0.056).
    //  - fp16 / bf16: outputs at least 28 wide (MobileNetV2 56x56 0.069 -> 0.050, stride 2
    //    0.089 -> 0.078, EfficientNet 5x5 28x28 0.062 -> 0.052, ConvNeXt 56x56 0.129 -> 0.110),
    //    two steps in flight (D 1; D 0 equal or up to 5% slower). Narrower planes decline: the
    //    block is a few strips of many channels and its halo columns cost more than the
    //    staging saves (MobileNetV2 7x7 planes 0.0137 -> 0.0149, ConvNeXt 14x14 0.043 -> 0.064).
    //    7x7 since session 13: tc_cl2d (tensor cores), which takes every 16-bit 7x7 call this one
    //    would (ConvNeXt 56x56 0.109 -> 0.082, bench/results/h100/session13/tc7c_call2_ab.log).
    const int k = P.k[1], s = P.S[1];
    if (sizeof(T) == 4 ? !(k == 3 && s == 1) : P.out[2] < 28) return false;
    if (!mma16_supported()) return false;  // cp.async: sm_80 and newer
    ClRing L{};
    if (!ring_plan(L, P, flip, sizeof(T) == 4 ? 0 : 1, sizeof(T))) return false;
    if (k == 3 && s == 1) return run<T, 3, 1>(in, w, bias, out, L, stream);
    if constexpr (sizeof(T) == 2) {
      if (k == 3 && s == 2) return run<T, 3, 2>(in, w, bias, out, L, stream);
      if (k == 5 && s == 1) return run<T, 5, 1>(in, w, bias, out, L, stream);
    }
    return false;
  }
}

template bool launch_cl_ring<float>(const float*, const float*, bool, const float*, float*, const Plan&, cudaStream_t);
template bool launch_cl_ring<double>(const double*, const double*, bool, const double*, double*, const Plan&,
                                     cudaStream_t);
template bool launch_cl_ring<c10::Half>(const c10::Half*, const c10::Half*, bool, const c10::Half*, c10::Half*,
                                        const Plan&, cudaStream_t);
template bool launch_cl_ring<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, bool, const c10::BFloat16*,
                                            c10::BFloat16*, const Plan&, cudaStream_t);

}  // namespace convx::cuda
