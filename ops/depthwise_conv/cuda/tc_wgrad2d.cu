// Launcher of the tensor-core weight-grad of K x K filters (K 3, 5, 7) at stride 1 in fp16 / bf16,
// NCHW (tc_wgrad2d.cuh), tried in front of nc_wgrad_stream on sm_80 and newer.
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/tc_wgrad2d.cuh"

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <type_traits>

namespace convx::cuda {
namespace {

// Blocks of the split (a constant: the chunks, and so the bits, depend on the shapes only).
int64_t tcw2_target() {
  const char* e = std::getenv("CONVX_TCW2_TARGET");  // temporary A/B knob
  return e ? std::atoll(e) : 2048;
}

template <typename T, int K>
bool run(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  Tcw2 L{};
  if (!tcw2_plan(L, P, tcw2_target(), reinterpret_cast<uintptr_t>(x), reinterpret_cast<uintptr_t>(gy))) return false;
  constexpr int NV = K * K;
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
  tcw2_nc<T, K><<<static_cast<unsigned>(P.out_c * L.chunks), kTcw2Threads, tcw2_smem_bytes<K>(), stream>>>(
      x, gy, part, counters, gw, L, P.out_c);
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
    if (channels_last || !mma16_supported()) return false;
    if (const char* e = std::getenv("CONVX_TCW2"); e && e[0] == '0') return false;  // temporary A/B knob
    if (P.k[1] != P.k[2]) return false;
    if (P.k[1] == 3) return run<T, 3>(x, gy, gw, P, like, stream);
    if (P.k[1] == 5) return run<T, 5>(x, gy, gw, P, like, stream);
    if (P.k[1] == 7) return run<T, 7>(x, gy, gw, P, like, stream);
    return false;
  }
}

template bool launch_tc_wgrad2d<float>(const float*, const float*, float*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_tc_wgrad2d<double>(const double*, const double*, double*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_tc_wgrad2d<c10::Half>(const c10::Half*, const c10::Half*, c10::Half*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_tc_wgrad2d<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, c10::BFloat16*, const Plan&, bool, const at::TensorBase&, cudaStream_t);

}  // namespace convx::cuda
