// Launchers of the tensor-core weight-grads of 15- and 31-tap 1-D rows in fp16 / bf16
// (tc_wgrad1d.cuh): tried first for those rows in both layouts (NCL before row1d_wgrad, (N, L, C)
// before cl_wgrad_partial), on sm_80 and newer.
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/tc_wgrad1d.cuh"
#include "ops/depthwise_conv/cuda/wgrad_sum.cuh"

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <type_traits>

namespace convx::cuda {
namespace {

// Blocks of the split (a constant: the chunks, and so the bits, depend on the shapes only); 2048
// and 4096 measured the same on the Conformer rows and slower on k15 (NCL 0.100 -> 0.113 ms).
constexpr int64_t kTcwTarget = 1024;

// The sum over the chunks when there are several (one chunk: the kernel wrote gw).
template <typename T>
void sum_chunks_if_any(const at::Tensor& part, T* gw, int64_t C, int64_t chunks, int K, cudaStream_t stream) {
  if (chunks == 1) return;
  launch_sum_slots<T>(part.const_data_ptr<float>(), gw, C, chunks, K, stream);
}

template <typename T, int K>
bool run_rows(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  TcwRows L{};
  if (!tcw_rows_items(L, P, kTcwTarget)) return false;
  const at::Tensor part = at::empty({L.chunks > 1 ? P.out_c * L.chunks * K : 0}, like.options().dtype(at::kFloat));
  tcw_rows<T, K><<<static_cast<unsigned>(P.out_c * L.chunks), kTcwThreads, tcw_smem_bytes<K>(), stream>>>(
      x, gy, part.mutable_data_ptr<float>(), gw, P, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  sum_chunks_if_any<T>(part, gw, P.out_c, L.chunks, K, stream);
  return true;
}

template <typename T, int K>
bool run_cl(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  TcwCl L{};
  if (reinterpret_cast<uintptr_t>(x) % 16 != 0 || reinterpret_cast<uintptr_t>(gy) % 16 != 0) return false;
  if (!tcw_cl_items(L, P, kTcwTarget)) return false;
  const at::Tensor part = at::empty({L.chunks > 1 ? P.out_c * L.chunks * K : 0}, like.options().dtype(at::kFloat));
  tcw_cl<T, K><<<L.groups * L.chunks, kTcwThreads, tcw_cl_smem_bytes<K>(), stream>>>(
      x, gy, part.mutable_data_ptr<float>(), gw, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  sum_chunks_if_any<T>(part, gw, P.out_c, L.chunks, K, stream);
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
