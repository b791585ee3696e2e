// Launchers of the tensor-core weight-grads of 15- and 31-tap 1-D rows in fp16 / bf16
// (tc_wgrad1d.cuh): tried first for those rows in both layouts (NCL before row1d_wgrad, (N, L, C)
// before cl_wgrad_partial), on sm_80 and newer.
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/tc_wgrad1d.cuh"

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

// The partials [C][chunks][K] (fp32) and after them `counters` zeroed unsigned counts (the
// kernels' last-block sums), when there are several chunks; nothing otherwise (the kernel writes gw).
struct TcwWork {
  at::Tensor buf;
  float* part = nullptr;
  unsigned* counters = nullptr;
};
TcwWork tcw_work(int64_t C, int64_t chunks, int K, int64_t counters, const at::TensorBase& like, cudaStream_t stream) {
  TcwWork w;
  if (chunks == 1) return w;
  const int64_t nf = C * chunks * K;
  w.buf = at::empty({nf + counters}, like.options().dtype(at::kFloat));
  w.part = w.buf.mutable_data_ptr<float>();
  w.counters = reinterpret_cast<unsigned*>(w.part + nf);
  C10_CUDA_CHECK(cudaMemsetAsync(w.counters, 0, counters * sizeof(unsigned), stream));
  return w;
}

template <typename T, int K>
bool run_rows(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  TcwRows L{};
  if (!tcw_rows_items(L, P, kTcwRowsWave)) return false;
  const TcwWork w = tcw_work(P.out_c, L.chunks, K, P.out_c, like, stream);
  tcw_rows<T, K><<<static_cast<unsigned>(P.out_c * L.chunks), kTcwThreads, tcw_smem_bytes<K>(), stream>>>(
      x, gy, w.part, w.counters, gw, P, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

template <typename T, int K>
bool run_cl(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  TcwCl L{};
  if (reinterpret_cast<uintptr_t>(x) % 16 != 0 || reinterpret_cast<uintptr_t>(gy) % 16 != 0) return false;
  if (!tcw_cl_items(L, P, kTcwClWave)) return false;
  // more than 48 KB of dynamic shared memory: allowed once per device
  static std::array<std::atomic<bool>, C10_COMPILE_TIME_MAX_GPUS> allowed{};
  const c10::DeviceIndex dev = c10::cuda::current_device();
  if (!allowed[dev].load(std::memory_order_relaxed)) {
    C10_CUDA_CHECK(cudaFuncSetAttribute(tcw_cl<T, K>, cudaFuncAttributeMaxDynamicSharedMemorySize, tcw_cl_smem_bytes<K>()));
    allowed[dev].store(true, std::memory_order_relaxed);
  }
  const TcwWork w = tcw_work(P.out_c, L.chunks, K, L.groups, like, stream);
  tcw_cl<T, K><<<L.groups * L.chunks, kTcwThreads, tcw_cl_smem_bytes<K>(), stream>>>(x, gy, w.part, w.counters, gw, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

}  // namespace

template <typename T>
bool launch_tc_wgrad1d(const T* x, const T* gy, T* gw, const Plan& P, bool channels_last, const at::TensorBase& like,
                       cudaStream_t stream) {
  if constexpr (!std::is_same_v<T, c10::Half> && !std::is_same_v<T, c10::BFloat16>) {
    return false;  // tensor cores would change fp32's precision (TF32)
  } else {
    if (!mma16_supported()) return false;
    const int k = P.k[2];
    if (channels_last) {
      // 15 taps: cl_wgrad_partial's two-channel tile measured faster (k15_causal bf16 0.119 ms
      // against 0.157 here).
      if (k == 31) return run_cl<T, 31>(x, gy, gw, P, like, stream);
    } else {
      if (k == 15) return run_rows<T, 15>(x, gy, gw, P, like, stream);
      if (k == 31) return run_rows<T, 31>(x, gy, gw, P, like, stream);
    }
    return false;
  }
}

template bool launch_tc_wgrad1d<float>(const float*, const float*, float*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_tc_wgrad1d<double>(const double*, const double*, double*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_tc_wgrad1d<c10::Half>(const c10::Half*, const c10::Half*, c10::Half*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_tc_wgrad1d<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, c10::BFloat16*, const Plan&, bool, const at::TensorBase&, cudaStream_t);

}  // namespace convx::cuda
