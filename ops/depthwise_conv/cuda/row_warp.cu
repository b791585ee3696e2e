// Launcher of the warp-segment NCL kernel for short 1-D rows (row_warp.cuh): tried first for the
// forward and stride-1 data-grad of 2-, 3-, 4- and 15-tap rows; declines (to row1d / nc_stream)
// otherwise.
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/row_warp.cuh"

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <type_traits>

namespace convx::cuda {
namespace {

// TEMPORARY A/B knob (removed after the H100 run): CONVX_ROW_WARP=0 declines (the previous
// kernels), 2 = one vector per lane for k <= 4.
int row_warp_mode() {
  static const int mode = [] {
    const char* e = std::getenv("CONVX_ROW_WARP");
    return e ? std::atoi(e) : 1;
  }();
  return mode;
}

template <typename T, int K, int U>
bool run(const T* in, const float* w, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  constexpr int V = 16 / int(sizeof(T));
  RowWarp L{};
  if (!row_warp_items(L, P, V, U)) return false;
  constexpr int warps = kRowWarpThreads / 32;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(ceil_div(L.items, warps), int64_t(1) << 20));
  row_warp<T, K, U, (K <= 4 ? 4 : 3)><<<blocks, kRowWarpThreads, 0, stream>>>(in, w, bias, out, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

template <typename T, int K>
bool run_k(const T* in, const float* w, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  if constexpr (K <= 4) {
    if (row_warp_mode() == 2) return run<T, K, 1>(in, w, bias, out, P, stream);
  }
  return run<T, K, row_warp_vectors<K>()>(in, w, bias, out, P, stream);
}

}  // namespace

template <typename T>
bool launch_row_warp(const T* in, const at::opmath_type<T>* w, const T* bias, T* out, const Plan& P,
                     cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;  // float64 is for correctness only: nc_gather's generic kernel
  } else {
    if (row_warp_mode() == 0) return false;
    switch (P.k[2]) {
      case 2: return run_k<T, 2>(in, w, bias, out, P, stream);
      case 3: return run_k<T, 3>(in, w, bias, out, P, stream);
      case 4: return run_k<T, 4>(in, w, bias, out, P, stream);
      case 15: return run_k<T, 15>(in, w, bias, out, P, stream);
      default: return false;
    }
  }
}

template bool launch_row_warp<float>(const float*, const float*, const float*, float*, const Plan&, cudaStream_t);
template bool launch_row_warp<double>(const double*, const double*, const double*, double*, const Plan&, cudaStream_t);
template bool launch_row_warp<c10::Half>(const c10::Half*, const float*, const c10::Half*, c10::Half*, const Plan&,
                                         cudaStream_t);
template bool launch_row_warp<c10::BFloat16>(const c10::BFloat16*, const float*, const c10::BFloat16*, c10::BFloat16*,
                                             const Plan&, cudaStream_t);

}  // namespace convx::cuda
