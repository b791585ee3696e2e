// Launcher of the row-reduction tensor-core NCHW 7 x 7 weight-grad (tc_wgrad7_rows.cuh), fp16 /
// bf16, rows wider than 32, sm_80 and newer.
// TEMPORARY A/B (session 14, helper wgnc): CONVX_WGNC_AB picks the variant, 0 = main's tcw2_nc.
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/tc_wgrad7_rows.cuh"

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAMacros.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <type_traits>

namespace convx::cuda {
namespace {

template <typename T, int S>
bool run(const T* x, const T* gy, T* gw, const Plan& P, int64_t target, const at::TensorBase& like,
         cudaStream_t stream) {
  Tcw7r L{};
  if (!tcw7r_plan(L, P, target, reinterpret_cast<uintptr_t>(x), reinterpret_cast<uintptr_t>(gy))) return false;
  constexpr int NV = 49;
  at::Tensor buf;
  float* part = nullptr;
  unsigned* counters = nullptr;
  if (L.chunks > 1) {  // partials [C][chunks][taps], then the channels' zeroed counters
    const int64_t nf = P.out_c * L.chunks * NV;
    buf = at::empty({nf + P.out_c}, like.options().dtype(at::kFloat));
    part = buf.mutable_data_ptr<float>();
    counters = reinterpret_cast<unsigned*>(part + nf);
    C10_CUDA_CHECK(cudaMemsetAsync(counters, 0, P.out_c * sizeof(unsigned), stream));
  }
  // more than 48 KB of dynamic shared memory: allowed once per device, for the largest tile
  static std::array<std::atomic<bool>, C10_COMPILE_TIME_MAX_GPUS> allowed{};
  const c10::DeviceIndex dev = c10::cuda::current_device();
  if (!allowed[dev].load(std::memory_order_relaxed)) {
    C10_CUDA_CHECK(cudaFuncSetAttribute(tcw7r_nc<T, S>, cudaFuncAttributeMaxDynamicSharedMemorySize, tcw7r_smem_max<S>()));
    allowed[dev].store(true, std::memory_order_relaxed);
  }
  tcw7r_nc<T, S><<<static_cast<unsigned>(P.out_c * L.chunks), kTcw7rThreads, tcw7r_smem_bytes<S>(L), stream>>>(
      x, gy, part, counters, gw, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

}  // namespace

template <typename T>
bool launch_tcw7r_nc(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  if constexpr (!std::is_same_v<T, c10::Half> && !std::is_same_v<T, c10::BFloat16>) {
    return false;
  } else {
    if (!mma16_supported() || P.k[1] != 7) return false;
    const char* e = std::getenv("CONVX_WGNC_AB");
    const int v = e ? std::atoi(e) : 1;
    switch (v) {
      case 1: return run<T, 2>(x, gy, gw, P, 1056, like, stream);
      case 2: return run<T, 3>(x, gy, gw, P, 1056, like, stream);
      case 3: return run<T, 2>(x, gy, gw, P, 2112, like, stream);
      case 4: return run<T, 2>(x, gy, gw, P, 528, like, stream);
      default: return false;
    }
  }
}

template bool launch_tcw7r_nc<float>(const float*, const float*, float*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_tcw7r_nc<double>(const double*, const double*, double*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_tcw7r_nc<c10::Half>(const c10::Half*, const c10::Half*, c10::Half*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_tcw7r_nc<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, c10::BFloat16*, const Plan&, const at::TensorBase&, cudaStream_t);

}  // namespace convx::cuda
