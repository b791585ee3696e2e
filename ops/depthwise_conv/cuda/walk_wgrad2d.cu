// Launcher of the column-walking weight-grad of 7 x 7 filters at stride 1 (walk2d.cuh),
// tried in front of the tensor-core tc_wgrad2d and the CUDA-core nc_wgrad_stream /
// cl_wgrad_partial.
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/walk2d.cuh"
#include "ops/depthwise_conv/cuda/wgrad_sum.cuh"

#include <ATen/ops/empty.h>
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
bool run(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  using acc_t = at::opmath_type<T>;
  Walk2d L{};
  // Two waves of 4 blocks per SM: blocks of whole rounds even out across the SMs.
  const char* thk = std::getenv("CONVX_WALK_TH");  // temporary A/B knob: rows per band
  if (!walk2d_plan(L, P, K, CL, 8 * sm_count(), thk ? std::atoi(thk) : 16)) return false;
  const char* vk = std::getenv("CONVX_WALK_V");  // temporary A/B knob: "0" = the unrolled static ring
  const bool v1 = !(vk && std::strcmp(vk, "0") == 0);
  const int64_t taps = K * K;
  const at::Tensor part = at::empty({P.in_c, int64_t(L.chunks), taps},
                                    like.options().dtype(c10::CppTypeToScalarType<acc_t>::value));
  const unsigned blocks = static_cast<unsigned>(int64_t(L.groups) * L.chunks);
  acc_t* pp = part.mutable_data_ptr<acc_t>();
  if (walk_vec<T>(L, x, gy)) {
    if (v1) walk_wgrad2d<T, K, false, true, 1><<<blocks, kWalkThreads, 0, stream>>>(x, gy, pp, L);
    else walk_wgrad2d<T, K, false, true, 0><<<blocks, kWalkThreads, 0, stream>>>(x, gy, pp, L);
  } else {
    if (v1) walk_wgrad2d<T, K, CL, false, 1><<<blocks, kWalkThreads, 0, stream>>>(x, gy, pp, L);
    else walk_wgrad2d<T, K, CL, false, 0><<<blocks, kWalkThreads, 0, stream>>>(x, gy, pp, L);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  launch_sum_slots<T>(part.const_data_ptr<acc_t>(), gw, P.in_c, L.chunks, taps, stream);
  return true;
}

}  // namespace

template <typename T>
bool launch_walk_wgrad2d(const T* x, const T* gy, T* gw, const Plan& P, bool channels_last, const at::TensorBase& like,
                         cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;
  } else {
    const char* ab = std::getenv("CONVX_WALK_WGRAD");  // temporary A/B knob: "off" = main's kernels
    if (ab && std::strcmp(ab, "off") == 0) return false;
    if (P.k[1] != 7) return false;
    // temporary A/B knob: "all" = every 7 x 7 (else 16-bit goes to tc_wgrad2d where it takes the call)
    const char* route = std::getenv("CONVX_WALK_ROUTE");
    if (!(route && std::strcmp(route, "all") == 0) && sizeof(T) == 2 && (channels_last || P.q[2] > 32)) return false;
    return channels_last ? run<T, 7, true>(x, gy, gw, P, like, stream) : run<T, 7, false>(x, gy, gw, P, like, stream);
  }
}

template bool launch_walk_wgrad2d<float>(const float*, const float*, float*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_walk_wgrad2d<double>(const double*, const double*, double*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_walk_wgrad2d<c10::Half>(const c10::Half*, const c10::Half*, c10::Half*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_walk_wgrad2d<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, c10::BFloat16*, const Plan&, bool, const at::TensorBase&, cudaStream_t);

}  // namespace convx::cuda
