// Launcher of the tensor-core weight-grads of 7 x 7 filters at stride 1 in fp16 / bf16
// (tc_wgrad2d.cuh), tried in front of nc_wgrad_stream (NCHW) and cl_wgrad_partial (NHWC) on sm_80
// and newer, for the shapes where they measured faster (H100, session 11, weight-grad alone,
// bench/results/h100/session11/wg2d_call2_ab.log, ms, before -> after with the targets below):
//   NCHW, rows wider than 32 (NJ 4): ConvNeXt-56 0.240 -> 0.075 (fp16 and bf16);
//   NHWC, rows at least 14 wide: ConvNeXt-56 (NJ 4) 0.152 -> 0.107, ConvNeXt-14 (NJ 1) 0.055 ->
//   0.039 (28-wide rows, NJ 2, not measured; 7 x 7 planes not taken: MobileNetV2's 3 x 3 on them
//   measured 0.023 -> 0.046, the tiles too small for their fixed costs).
// Left to the CUDA-core kernels: NCHW ConvNeXt-14 (0.075 -> 0.087), 5 x 5 (EfficientNet 28 x 28:
// NCHW 0.079 -> 0.094; NHWC 0.075 -> 0.071, within the spread of repeated runs of that kernel,
// 0.071-0.096) and 3 x 3 (tc_wgrad2d.cuh).
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/tc_wgrad2d.cuh"

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAMacros.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <type_traits>

namespace convx::cuda {
namespace {

// Blocks of the split (constants: the chunks, and so the bits, depend on the shapes only); the
// best of 640 / 1056 / 2112 (NCHW) and 528 / 1024 / 2048 (NHWC) in wg2d_call2_ab.log. ConvNeXt-56:
// NCHW 96 channels x 64 tiles in 11 chunks of 6 (2 waves of 4 blocks per SM); NHWC 12 channel
// groups x 256 tiles in 43 chunks of 6 (2 waves of 2).
constexpr int64_t kTcw2NcTarget = 1056, kTcw2ClTarget = 528;

// The (K, NJ, layout) the launcher takes: measured faster than the CUDA-core kernels (above).
template <int K, int NJ, bool CL>
constexpr bool tcw2_routed() {
  return K == 7 && (CL || NJ == 4);
}

template <typename T, int K, int NJ, bool CL>
bool run(const T* x, const T* gy, T* gw, const Tcw2& L, const Plan& P, const at::TensorBase& like,
         cudaStream_t stream) {
  constexpr int NV = K * K;
  at::Tensor buf;
  float* part = nullptr;
  unsigned* counters = nullptr;
  if (L.chunks > 1) {  // partials [C][chunks][taps], then the channels' (groups') zeroed counters
    const int64_t nf = P.out_c * L.chunks * NV;
    buf = at::empty({nf + L.groups}, like.options().dtype(at::kFloat));
    part = buf.mutable_data_ptr<float>();
    counters = reinterpret_cast<unsigned*>(part + nf);
    C10_CUDA_CHECK(cudaMemsetAsync(counters, 0, L.groups * sizeof(unsigned), stream));
  }
  const unsigned blocks = L.groups * L.chunks;
  if constexpr (CL) {
    // more than 48 KB of dynamic shared memory: allowed once per device
    static std::array<std::atomic<bool>, C10_COMPILE_TIME_MAX_GPUS> allowed{};
    const c10::DeviceIndex dev = c10::cuda::current_device();
    if (!allowed[dev].load(std::memory_order_relaxed)) {
      C10_CUDA_CHECK(cudaFuncSetAttribute(tcw2_cl<T, K, NJ>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          tcw2_cl_smem_max<K>()));
      allowed[dev].store(true, std::memory_order_relaxed);
    }
    tcw2_cl<T, K, NJ><<<blocks, kTcw2Threads, tcw2_cl_smem_bytes<K>(L), stream>>>(x, gy, part, counters, gw, L);
  } else {
    tcw2_nc<T, K, NJ><<<blocks, kTcw2Threads, tcw2_nc_smem_bytes(L), stream>>>(x, gy, part, counters, gw, L);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

// The plan's NJ, if routed (only the routed kernels are instantiated).
template <typename T, int K, bool CL>
bool run_k(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  Tcw2 L{};
  if (!tcw2_plan(L, P, CL, CL ? kTcw2ClTarget : kTcw2NcTarget, reinterpret_cast<uintptr_t>(x),
                 reinterpret_cast<uintptr_t>(gy))) {
    return false;
  }
  if (CL && L.W < 14) return false;
  if constexpr (tcw2_routed<K, 1, CL>()) {
    if (L.nj == 1) return run<T, K, 1, CL>(x, gy, gw, L, P, like, stream);
  }
  if constexpr (tcw2_routed<K, 2, CL>()) {
    if (L.nj == 2) return run<T, K, 2, CL>(x, gy, gw, L, P, like, stream);
  }
  if constexpr (tcw2_routed<K, 4, CL>()) {
    if (L.nj == 4) return run<T, K, 4, CL>(x, gy, gw, L, P, like, stream);
  }
  return false;
}

}  // namespace

template <typename T>
bool launch_tc_wgrad2d(const T* x, const T* gy, T* gw, const Plan& P, bool channels_last, const at::TensorBase& like,
                       cudaStream_t stream) {
  if constexpr (!std::is_same_v<T, c10::Half> && !std::is_same_v<T, c10::BFloat16>) {
    return false;  // tensor cores would change fp32's precision (TF32)
  } else {
    if (!mma16_supported() || P.k[1] != 7) return false;
    return channels_last ? run_k<T, 7, true>(x, gy, gw, P, like, stream) : run_k<T, 7, false>(x, gy, gw, P, like, stream);
  }
}

template bool launch_tc_wgrad2d<float>(const float*, const float*, float*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_tc_wgrad2d<double>(const double*, const double*, double*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_tc_wgrad2d<c10::Half>(const c10::Half*, const c10::Half*, c10::Half*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_tc_wgrad2d<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, c10::BFloat16*, const Plan&, bool, const at::TensorBase&, cudaStream_t);

}  // namespace convx::cuda
