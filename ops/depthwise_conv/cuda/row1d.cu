// Launchers of the shared-memory NCL kernels for long 1-D rows (row1d.cuh): tried before
// nc_stream for the forward and stride-1 data-grad of 31-tap rows and before nc_wgrad_stream for
// the weight-grad of 15- and 31-tap rows. Measured on the H100 against those kernels
// (bench/results/h100/session5/ab_knobs.log): Conformer k31 bf16 forward 0.109 -> 0.056 ms, fp32
// 0.168 -> 0.108 (81% of the copy bandwidth), backward 0.198 -> 0.114 and 0.407 -> 0.222; the
// k15 causal bf16 backward 0.399 -> 0.260, but its forward 0.402 -> 0.522, so 15-tap forwards stay
// on nc_stream (16 outputs per thread there against 16 staged per lane here).
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/row1d.cuh"
#include "ops/depthwise_conv/cuda/wgrad_sum.cuh"

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAMacros.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <type_traits>

namespace convx::cuda {
namespace {

// Warps of one full wave of this specialisation on the current device (SMs x resident blocks x
// 8), asked of the driver once per device (0: not asked yet; two threads asking at once store
// the same value). The grid-stride loop's prefetch needs every warp to stay resident.
template <typename T, int K, int R>
int64_t wave_warps() {
  static std::array<std::atomic<int>, C10_COMPILE_TIME_MAX_GPUS> cache{};
  const c10::DeviceIndex dev = c10::cuda::current_device();
  int n = cache[dev].load(std::memory_order_relaxed);
  if (n == 0) {
    int blocks = 0;
    C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, row1d<T, K, R>, kRowThreads,
                                                                 row_smem_bytes<K, R>()));
    n = std::max(1, static_cast<int>(sm_count()) * blocks);
    cache[dev].store(n, std::memory_order_relaxed);
  }
  return int64_t(n) * kRowWarps;
}

template <typename T, int K>
bool run(const T* in, const float* w, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  constexpr int R = row_outputs<K>();
  Row1d L{};
  if (!row1d_items(L, P, R)) return false;
  const int64_t warps = std::min<int64_t>(L.items, wave_warps<T, K, R>());
  const unsigned blocks = static_cast<unsigned>(ceil_div(warps, kRowWarps));
  row1d<T, K, R><<<blocks, kRowThreads, row_smem_bytes<K, R>(), stream>>>(in, w, bias, out, P, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

template <typename T, int K>
bool run_wgrad(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  constexpr int R = row_wgrad_outputs<K>();
  Row1dW L{};
  if (!row1d_wgrad_items(L, P, R)) return false;
  const at::Tensor part = at::empty({P.out_c, int64_t(L.chunks), K}, like.options().dtype(at::kFloat));
  row1d_wgrad<T, K, R><<<static_cast<unsigned>(P.out_c * L.chunks), kRowThreads, row_wgrad_smem_bytes<K, R>(), stream>>>(
      x, gy, part.mutable_data_ptr<float>(), P, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  launch_sum_slots<T>(part.const_data_ptr<float>(), gw, P.out_c, L.chunks, K, stream);
  return true;
}

}  // namespace

template <typename T>
bool launch_row1d_wgrad(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like,
                        cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;
  } else {
    if (P.k[2] == 15) return run_wgrad<T, 15>(x, gy, gw, P, like, stream);
    if (P.k[2] == 31) return run_wgrad<T, 31>(x, gy, gw, P, like, stream);
    return false;
  }
}

template <typename T>
bool launch_row1d(const T* in, const at::opmath_type<T>* w, const T* bias, T* out, const Plan& P,
                  cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;  // float64 is for correctness only: nc_gather's generic kernel
  } else {
    if (P.k[2] == 31) return run<T, 31>(in, w, bias, out, P, stream);
    return false;
  }
}

template bool launch_row1d<float>(const float*, const float*, const float*, float*, const Plan&, cudaStream_t);
template bool launch_row1d<double>(const double*, const double*, const double*, double*, const Plan&, cudaStream_t);
template bool launch_row1d<c10::Half>(const c10::Half*, const float*, const c10::Half*, c10::Half*, const Plan&, cudaStream_t);
template bool launch_row1d<c10::BFloat16>(const c10::BFloat16*, const float*, const c10::BFloat16*, c10::BFloat16*, const Plan&, cudaStream_t);

template bool launch_row1d_wgrad<float>(const float*, const float*, float*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_row1d_wgrad<double>(const double*, const double*, double*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_row1d_wgrad<c10::Half>(const c10::Half*, const c10::Half*, c10::Half*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_row1d_wgrad<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, c10::BFloat16*, const Plan&, const at::TensorBase&, cudaStream_t);

}  // namespace convx::cuda
