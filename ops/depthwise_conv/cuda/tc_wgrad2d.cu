// Launcher of the tensor-core weight-grads of K x K filters (K 3, 5, 7) at stride 1 in fp16 / bf16
// (tc_wgrad2d.cuh), tried in front of nc_wgrad_stream (NCHW) and cl_wgrad_partial (NHWC) on sm_80
// and newer.
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/tc_wgrad2d.cuh"

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAMacros.h>
#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <type_traits>

namespace convx::cuda {
namespace {

// Blocks of the split (a constant: the chunks, and so the bits, depend on the shapes only).
int64_t tcw2_target(bool cl) {
  const char* e = std::getenv(cl ? "CONVX_TCW2_CL_TARGET" : "CONVX_TCW2_TARGET");  // temporary A/B knobs
  return e ? std::atoll(e) : cl ? 1024 : 640;
}

template <typename T, int K, bool CL>
bool run(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  Tcw2 L{};
  const char* rows = std::getenv("CONVX_TCW2_ROWS");  // temporary A/B knob
  if (!tcw2_plan(L, P, CL, tcw2_target(CL), reinterpret_cast<uintptr_t>(x), reinterpret_cast<uintptr_t>(gy),
                 rows ? std::atoi(rows) : kTcw2Rows)) {
    return false;
  }
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
  auto go = [&](auto nj) {
    constexpr int NJ = decltype(nj)::value;
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
  };
  if (L.nj == 1) {
    go(std::integral_constant<int, 1>{});
  } else if (L.nj == 2) {
    go(std::integral_constant<int, 2>{});
  } else {
    go(std::integral_constant<int, 4>{});
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

}  // namespace

template <typename T>
bool launch_tc_wgrad2d(const T* x, const T* gy, T* gw, const Plan& P, bool channels_last, const at::TensorBase& like,
                       cudaStream_t stream) {
  if constexpr (!std::is_same_v<T, c10::Half> && !std::is_same_v<T, c10::BFloat16>) {
    return false;  // tensor cores would change fp32's precision (TF32)
  } else {
    if (!mma16_supported()) return false;
    if (const char* e = std::getenv("CONVX_TCW2"); e && e[0] == '0') return false;  // temporary A/B knob
    if (const char* e = std::getenv("CONVX_TCW2_CL"); channels_last && e && e[0] == '0') return false;  // A/B knob
    if (P.k[1] != P.k[2]) return false;
#define CONVX_CASE(K) \
  if (P.k[1] == K) return channels_last ? run<T, K, true>(x, gy, gw, P, like, stream) : run<T, K, false>(x, gy, gw, P, like, stream);
    CONVX_CASE(3)
    CONVX_CASE(5)
    CONVX_CASE(7)
#undef CONVX_CASE
    return false;
  }
}

template bool launch_tc_wgrad2d<float>(const float*, const float*, float*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_tc_wgrad2d<double>(const double*, const double*, double*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_tc_wgrad2d<c10::Half>(const c10::Half*, const c10::Half*, c10::Half*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_tc_wgrad2d<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, c10::BFloat16*, const Plan&, bool, const at::TensorBase&, cudaStream_t);

}  // namespace convx::cuda
