// Launcher of the channels-last 1-D row kernel (cl_row1d.cuh) and its specialisations: 2, 3, 4,
// 15 and 31 taps at stride 1 in fp32 / fp16 / bf16.
#include "ops/depthwise_conv/cuda/cl_row1d.cuh"
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/wgrad_sum.cuh"

#include <ATen/ops/empty.h>

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdint>
#include <cstdlib>
#include <type_traits>

namespace convx::cuda {
namespace {

template <typename T, int K>
bool run(const T* in, const T* w, int wbase, int wstep, const T* bias, T* out, int64_t rows, const Plan& P,
         cudaStream_t stream) {
  using Tile = ClRowTile<T, K>;
  ClRow1d L{};
  // The filter as stored or rotated, read as V-element vectors.
  const bool as_stored = wbase == 0 && wstep == 1, rotated = wbase == K - 1 && wstep == -1;
  if ((!as_stored && !rotated) || reinterpret_cast<uintptr_t>(w) % (sizeof(T) * Tile::V) != 0) return false;
  if (!cl_row1d_tile(L, rows, P.in[2], P.out[2], P.pad[2][0], P.out_c, Tile::V, Tile::R)) return false;
  auto kernel = rotated ? cl_row1d<T, K, Tile::V, Tile::R, Tile::MINB, true> : cl_row1d<T, K, Tile::V, Tile::R, Tile::MINB, false>;
  kernel<<<L.blocks, cl_row1d_threads(L), 0, stream>>>(in, w, bias, out, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

template <typename T, int K>
bool run_wgrad(const T* x, const T* gy, T* gw, int64_t rows, const Plan& P, const at::TensorBase& like,
               cudaStream_t stream) {
  constexpr int V = 16 / static_cast<int>(sizeof(T)), R = 8;
  ClRow1dW L{};
  if (reinterpret_cast<uintptr_t>(x) % 16 != 0 || reinterpret_cast<uintptr_t>(gy) % 16 != 0) return false;
  const char* knob = std::getenv("CONVX_CLW_WAVE");  // TEMPORARY: blocks of the weight-grad's wave
  const int64_t wave = knob ? std::atoll(knob) : kClRowWgradWave;
  if (!cl_row1d_wgrad_tile(L, rows, P.in[2], P.out[2], P.pad[2][0], P.out_c, V, R, wave)) return false;
  // One chunk: the blocks write the weight-grad (no partials, no second launch).
  const bool direct = L.chunks == 1;
  const at::Tensor part = direct ? at::Tensor() : at::empty({P.out_c, int64_t(L.chunks), K}, like.options().dtype(at::kFloat));
  const unsigned threads = static_cast<unsigned>(ceil_div(int64_t(L.CB) * L.PS, 32) * 32);
  cl_row1d_wgrad<T, K, V, R><<<L.cchunks * L.chunks, threads, 0, stream>>>(
      x, gy, direct ? nullptr : part.mutable_data_ptr<float>(), gw, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  if (!direct) launch_sum_slots<T>(part.const_data_ptr<float>(), gw, P.out_c, L.chunks, K, stream);
  return true;
}

}  // namespace

template <typename T>
bool launch_cl_row1d_wgrad(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like,
                           cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;  // float64 is for correctness only: the generic kernel
  } else {
    int64_t rows = 0;
    if (ab_old() || !cl_row1d_plan(P, rows)) return false;  // TEMPORARY A/B: cl_wgrad before session 10
    switch (P.k[2]) {
      case 2: return run_wgrad<T, 2>(x, gy, gw, rows, P, like, stream);
      case 3: return run_wgrad<T, 3>(x, gy, gw, rows, P, like, stream);
      case 4: return run_wgrad<T, 4>(x, gy, gw, rows, P, like, stream);
      default: return false;
    }
  }
}

template <typename T>
bool launch_cl_row1d(const T* in, const T* w, int wbase, int wstep, const T* bias, T* out, const Plan& P,
                     cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;  // float64 is for correctness only: the generic kernel
  } else {
    int64_t rows = 0;
    if (!cl_row1d_plan(P, rows)) return false;
    switch (P.k[2]) {
      case 2: return run<T, 2>(in, w, wbase, wstep, bias, out, rows, P, stream);
      case 3: return run<T, 3>(in, w, wbase, wstep, bias, out, rows, P, stream);
      case 4: return run<T, 4>(in, w, wbase, wstep, bias, out, rows, P, stream);
      case 15: return run<T, 15>(in, w, wbase, wstep, bias, out, rows, P, stream);
      case 31: return run<T, 31>(in, w, wbase, wstep, bias, out, rows, P, stream);
      default: return false;
    }
  }
}

template bool launch_cl_row1d<float>(const float*, const float*, int, int, const float*, float*, const Plan&, cudaStream_t);
template bool launch_cl_row1d<double>(const double*, const double*, int, int, const double*, double*, const Plan&,
                                      cudaStream_t);
template bool launch_cl_row1d<c10::Half>(const c10::Half*, const c10::Half*, int, int, const c10::Half*, c10::Half*,
                                         const Plan&, cudaStream_t);
template bool launch_cl_row1d<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, int, int, const c10::BFloat16*,
                                             c10::BFloat16*, const Plan&, cudaStream_t);


template bool launch_cl_row1d_wgrad<float>(const float*, const float*, float*, const Plan&, const at::TensorBase&, cudaStream_t);
template bool launch_cl_row1d_wgrad<double>(const double*, const double*, double*, const Plan&, const at::TensorBase&,
                                            cudaStream_t);
template bool launch_cl_row1d_wgrad<c10::Half>(const c10::Half*, const c10::Half*, c10::Half*, const Plan&,
                                               const at::TensorBase&, cudaStream_t);
template bool launch_cl_row1d_wgrad<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, c10::BFloat16*, const Plan&,
                                                   const at::TensorBase&, cudaStream_t);

}  // namespace convx::cuda
