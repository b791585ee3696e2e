// Launcher of the shared-memory NC(D)HW phased-correlation kernel (forward and data-grad): 31x31
// filters, and, generic, everything nc_stream.cu does not take (other filters and strides,
// float64, more than 2^31 streaming work items). 1-D rows and filters up to 7 wide are
// specialised in nc_stream.cu only.
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/nc_tiled.cuh"

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <type_traits>

namespace convx::cuda {
namespace {

template <typename T, int KH, int KW, int S, int R>
bool run(const T* in, const at::opmath_type<T>* w, const T* bias, T* out, const Plan& P,
         cudaStream_t stream) {
  using acc_t = at::opmath_type<T>;
  NcTile L{};
  const int64_t planes = P.N * P.out_c * P.q[0];
  if (!choose_nc_tile(L, P, R, P.k[1], P.k[2], P.S[1], P.S[2], planes, sizeof(acc_t))) return false;
  L.blocks = L.groups * L.tilesH * L.tilesW * P.phases;
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(L.blocks, int64_t(1) << 30));
  const size_t smem = size_t(L.TZ) * L.rows * L.cols * sizeof(acc_t);
  nc_gather<T, KH, KW, S, R><<<grid, L.TX * L.TY * L.TZ, smem, stream>>>(in, w, bias, out, P, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

}  // namespace

template <typename T>
bool launch_nc_gather(const T* in, const at::opmath_type<T>* w, const T* bias, T* out,
                      const Plan& P, cudaStream_t stream) {
  const int kw = P.k[2], s = P.S[1] == P.S[2] ? P.S[1] : 0;
  // float64 is for correctness only: the generic tiled kernel.
  if constexpr (!std::is_same_v<T, double>) {
    if (kw == 31 && s == 1) return run<T, 0, 31, 1, 8>(in, w, bias, out, P, stream);
  }
  return run<T, 0, 0, 0, 4>(in, w, bias, out, P, stream);
}

template bool launch_nc_gather<float>(const float*, const float*, const float*, float*, const Plan&, cudaStream_t);
template bool launch_nc_gather<double>(const double*, const double*, const double*, double*, const Plan&, cudaStream_t);
template bool launch_nc_gather<c10::Half>(const c10::Half*, const float*, const c10::Half*, c10::Half*, const Plan&, cudaStream_t);
template bool launch_nc_gather<c10::BFloat16>(const c10::BFloat16*, const float*, const c10::BFloat16*, c10::BFloat16*, const Plan&, cudaStream_t);

}  // namespace convx::cuda
