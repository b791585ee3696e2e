// Launcher of the channels-last 1-D row kernel (cl_row1d.cuh) and its specialisations: 2, 3, 4,
// 15 and 31 taps at stride 1 in fp32 / fp16 / bf16.
#include "ops/depthwise_conv/cuda/cl_row1d.cuh"
#include "ops/depthwise_conv/cuda/launch.h"

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdint>
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
  auto kernel = rotated ? cl_row1d<T, K, Tile::V, Tile::R, Tile::MINB, true, Tile::FLAT>
                        : cl_row1d<T, K, Tile::V, Tile::R, Tile::MINB, false, Tile::FLAT>;
  if constexpr (Tile::FLAT) {
    kernel<<<static_cast<unsigned>(ceil_div(int64_t(L.items), kClRowThreads)), kClRowThreads, 0, stream>>>(in, w, bias, out, L);
  } else {
    kernel<<<L.blocks, cl_row1d_threads(L), 0, stream>>>(in, w, bias, out, L);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

}  // namespace

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



}  // namespace convx::cuda
