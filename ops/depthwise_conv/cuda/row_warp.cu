// Launchers of the warp-segment NCL kernels for short 1-D rows (row_warp.cuh): tried first for the
// forward and stride-1 data-grad of 2-, 3-, 4- and 15-tap rows (else row1d / nc_stream) and for
// the weight-grad of 2-, 3- and 4-tap rows (else nc_wgrad_stream).
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/row1d.cuh"
#include "ops/depthwise_conv/cuda/pdl.cuh"
#include "ops/depthwise_conv/cuda/row_warp.cuh"
#include "ops/depthwise_conv/cuda/wgrad_sum.cuh"

#include <ATen/ops/empty.h>

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <type_traits>

namespace convx::cuda {
namespace {

template <typename T, int K, int U>
bool run(const T* in, const T* w, int wbase, int wstep, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  constexpr int V = 16 / int(sizeof(T));
  RowWarp L{};
  if (!row_warp_items(L, P, V, U)) return false;
  L.wbase = wbase;
  L.wstep = wstep;
  constexpr int warps = kRowWarpThreads / 32;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(ceil_div(L.items, warps), int64_t(1) << 20));
  row_warp<T, K, U, (K <= 4 ? 4 : 3)><<<blocks, kRowWarpThreads, 0, stream>>>(in, w, bias, out, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

template <typename T, int K>
bool run_k(const T* in, const T* w, int wbase, int wstep, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  return run<T, K, row_warp_vectors<K>()>(in, w, wbase, wstep, bias, out, P, stream);
}

template <typename T, int K>
bool run_wgrad(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  constexpr int U = row_warp_vectors<K>();
  RowWarpW L{};
  if (!row_warp_wgrad_items(L, P, 16 / int(sizeof(T)), U)) return false;
  // One chunk per channel: the block's sum is the weight-grad (no partials, no second launch).
  const bool direct = L.chunks == 1;
  const at::Tensor part = direct ? at::Tensor() : at::empty({P.out_c, int64_t(L.chunks), K}, like.options().dtype(at::kFloat));
  // Blocks no wider than the chunk's items (short rows: fewer idle warps).
  const int threads = static_cast<int>(std::min<int64_t>(kRowWarpThreads, 32 * int64_t(L.chunk)));
  // Programmatic launch (pdl.cuh): short_k3 backward 45.5 -> 43.2 us (H100, session 14).
  launch_pdl(pdl_supported(), row_warp_wgrad<T, K, U>, dim3(static_cast<unsigned>(P.out_c * L.chunks)),
             dim3(static_cast<unsigned>(threads)), 0, stream, x, gy, direct ? nullptr : part.mutable_data_ptr<float>(),
             gw, L);
  if (!direct) launch_sum_slots<T>(part.const_data_ptr<float>(), gw, P.out_c, L.chunks, K, stream);
  return true;
}

}  // namespace

template <typename T>
bool launch_row_warp_wgrad(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like,
                           cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;
  } else {
    switch (P.k[2]) {
      case 2: return run_wgrad<T, 2>(x, gy, gw, P, like, stream);
      case 3: return run_wgrad<T, 3>(x, gy, gw, P, like, stream);
      case 4: return run_wgrad<T, 4>(x, gy, gw, P, like, stream);
      default: return false;
    }
  }
}

template <typename T>
bool launch_row_warp(const T* in, const T* w, int wbase, int wstep, const T* bias, T* out, const Plan& P,
                     cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;  // float64 is for correctness only: nc_gather's generic kernel
  } else {
    switch (P.k[2]) {
      case 2: return run_k<T, 2>(in, w, wbase, wstep, bias, out, P, stream);
      case 3: return run_k<T, 3>(in, w, wbase, wstep, bias, out, P, stream);
      case 4: return run_k<T, 4>(in, w, wbase, wstep, bias, out, P, stream);
      case 15: return run_k<T, 15>(in, w, wbase, wstep, bias, out, P, stream);
      default: return false;
    }
  }
}

template bool launch_row_warp<float>(const float*, const float*, int, int, const float*, float*, const Plan&, cudaStream_t);
template bool launch_row_warp<double>(const double*, const double*, int, int, const double*, double*, const Plan&,
                                      cudaStream_t);
template bool launch_row_warp<c10::Half>(const c10::Half*, const c10::Half*, int, int, const c10::Half*, c10::Half*,
                                         const Plan&, cudaStream_t);
template bool launch_row_warp<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, int, int, const c10::BFloat16*,
                                             c10::BFloat16*, const Plan&, cudaStream_t);


template bool launch_row_warp_wgrad<float>(const float*, const float*, float*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_row_warp_wgrad<double>(const double*, const double*, double*, const Plan&, const at::TensorBase&,
                                            cudaStream_t);
template bool launch_row_warp_wgrad<c10::Half>(const c10::Half*, const c10::Half*, c10::Half*, const Plan&,
                                               const at::TensorBase&, cudaStream_t);
template bool launch_row_warp_wgrad<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, c10::BFloat16*, const Plan&,
                                                   const at::TensorBase&, cudaStream_t);

}  // namespace convx::cuda
