// Launcher of the column-walking forward / stride-1 data-grad of 7 x 7 filters (walk2d.cuh),
// tried first for NCHW and NHWC.
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/walk2d.cuh"

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace convx::cuda {
namespace {

// NCHW rows read (and written) in 4-value vectors: the plan allows it and both tensors are aligned.
template <typename T>
bool walk_vec(const Walk2d& L, const void* a, const void* b) {
  const char* ab = std::getenv("CONVX_WALK_NCVEC");  // temporary A/B knob: "off" = value by value
  if (ab && std::strcmp(ab, "off") == 0) return false;
  constexpr uintptr_t m = 4 * sizeof(T) - 1;
  return L.vec && (reinterpret_cast<uintptr_t>(a) & m) == 0 && (reinterpret_cast<uintptr_t>(b) & m) == 0;
}

template <typename T, int K, bool CL>
bool run(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  Walk2d L{};
  // Two waves of 4 blocks per SM: blocks of whole rounds even out across the SMs.
  const char* thk = std::getenv("CONVX_WALK_TH");  // temporary A/B knob: rows per band
  if (!walk2d_plan(L, P, K, CL, 8 * sm_count(), thk ? std::atoi(thk) : 16)) return false;
  const char* vk = std::getenv("CONVX_WALK_V");  // temporary A/B knob: "0" = the unrolled static ring
  const bool v1 = !(vk && std::strcmp(vk, "0") == 0);
  const unsigned blocks = static_cast<unsigned>(int64_t(L.groups) * L.chunks);
  if (walk_vec<T>(L, in, out)) {
    if (v1) walk_conv2d<T, K, false, true, 1><<<blocks, kWalkThreads, 0, stream>>>(in, w, flip, bias, out, L);
    else walk_conv2d<T, K, false, true, 0><<<blocks, kWalkThreads, 0, stream>>>(in, w, flip, bias, out, L);
  } else {
    if (v1) walk_conv2d<T, K, CL, false, 1><<<blocks, kWalkThreads, 0, stream>>>(in, w, flip, bias, out, L);
    else walk_conv2d<T, K, CL, false, 0><<<blocks, kWalkThreads, 0, stream>>>(in, w, flip, bias, out, L);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

}  // namespace

template <typename T>
bool launch_walk_conv2d(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, bool channels_last,
                        cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;
  } else {
    const char* ab = std::getenv("CONVX_WALK_CONV");  // temporary A/B knob: "off" = main's kernels
    if (ab && std::strcmp(ab, "off") == 0) return false;
    if (P.k[1] != 7) return false;
    const char* route = std::getenv("CONVX_WALK_ROUTE");  // temporary A/B knob: "all" = take the calls
    if (!(route && std::strcmp(route, "all") == 0)) return false;
    return channels_last ? run<T, 7, true>(in, w, flip, bias, out, P, stream)
                         : run<T, 7, false>(in, w, flip, bias, out, P, stream);
  }
}

template bool launch_walk_conv2d<float>(const float*, const float*, bool, const float*, float*, const Plan&, bool, cudaStream_t);
template bool launch_walk_conv2d<double>(const double*, const double*, bool, const double*, double*, const Plan&, bool, cudaStream_t);
template bool launch_walk_conv2d<c10::Half>(const c10::Half*, const c10::Half*, bool, const c10::Half*, c10::Half*, const Plan&, bool, cudaStream_t);
template bool launch_walk_conv2d<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, bool, const c10::BFloat16*, c10::BFloat16*, const Plan&, bool, cudaStream_t);

}  // namespace convx::cuda
