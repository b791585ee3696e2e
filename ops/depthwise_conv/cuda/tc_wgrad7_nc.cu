// Launcher of the ring-staged tensor-core NCHW 7 x 7 weight-grad (tc_wgrad7_nc.cuh): fp16 / bf16,
// and fp32 as TF32 where the caller found torch.backends.cudnn.allow_tf32 true; rows wider than 32.
// TEMPORARY A/B (session 14, helper wgnc): CONVX_WGNC_AB picks the variant, 0 = main's kernels.
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/tc_wgrad7_nc.cuh"

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
bool run(const T* x, const T* gy, T* gw, const Plan& P, int rows, int64_t target, const at::TensorBase& like,
         cudaStream_t stream) {
  Tcw2 L{};
  if (!tcw7_plan<T>(L, P, target, rows, reinterpret_cast<uintptr_t>(x), reinterpret_cast<uintptr_t>(gy))) return false;
  constexpr int NV = 49;
  at::Tensor buf;
  float* part = nullptr;
  unsigned* counters = nullptr;
  if (L.chunks > 1) {  // partials [C][chunks][taps], then the channels' zeroed counters
    const int64_t nf = P.out_c * L.chunks * NV;
    buf = at::empty({nf + L.groups}, like.options().dtype(at::kFloat));
    part = buf.mutable_data_ptr<float>();
    counters = reinterpret_cast<unsigned*>(part + nf);
    C10_CUDA_CHECK(cudaMemsetAsync(counters, 0, L.groups * sizeof(unsigned), stream));
  }
  // more than 48 KB of dynamic shared memory: allowed once per device, for the largest tile (64 rows)
  static std::array<std::atomic<bool>, C10_COMPILE_TIME_MAX_GPUS> allowed{};
  const c10::DeviceIndex dev = c10::cuda::current_device();
  if (!allowed[dev].load(std::memory_order_relaxed)) {
    constexpr int most = S * int(sizeof(T)) * ((kTcw2Rows + 6) * tcw7_xrow<T>() + kTcw2Rows * kTcw7DRow);
    C10_CUDA_CHECK(cudaFuncSetAttribute(tcw7_nc<T, S>, cudaFuncAttributeMaxDynamicSharedMemorySize, most));
    allowed[dev].store(true, std::memory_order_relaxed);
  }
  tcw7_nc<T, S><<<L.groups * L.chunks, kTcw2Threads, tcw7_smem_bytes<T, S>(L), stream>>>(x, gy, part, counters, gw, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

}  // namespace

template <typename T>
bool launch_tcw7_nc(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;
  } else {
    if (!mma16_supported() || P.k[1] != 7) return false;
    const char* e = std::getenv("CONVX_WGNC_AB");
    const int v = e ? std::atoi(e) : 2;
    switch (v) {
      case 1: return run<T, 2>(x, gy, gw, P, 64, 1056, like, stream);
      case 2: return run<T, 3>(x, gy, gw, P, 64, 1056, like, stream);
      case 3:
        if constexpr (sizeof(T) == 2) return run<T, 4>(x, gy, gw, P, 64, 1056, like, stream);
        return false;
      case 4: return run<T, 3>(x, gy, gw, P, 64, 2112, like, stream);
      case 5: return run<T, 3>(x, gy, gw, P, 32, 1056, like, stream);
      case 6: return run<T, 2>(x, gy, gw, P, 32, 2112, like, stream);
      default: return false;
    }
  }
}

template bool launch_tcw7_nc<float>(const float*, const float*, float*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_tcw7_nc<double>(const double*, const double*, double*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_tcw7_nc<c10::Half>(const c10::Half*, const c10::Half*, c10::Half*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_tcw7_nc<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, c10::BFloat16*, const Plan&, const at::TensorBase&, cudaStream_t);

}  // namespace convx::cuda
