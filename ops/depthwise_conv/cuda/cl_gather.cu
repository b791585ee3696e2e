// Launchers of the channels-last phased-correlation kernel (forward and data-grad) and its
// compile-time specialisations: launch_cl_gather (fp32 weights; every dtype) and
// launch_cl_gather16 (the 16-bit fast path: 16-bit weights, 16-byte vectors, 3x3 at stride 1).
#include "ops/depthwise_conv/cuda/cl_tiled.cuh"
#include "ops/depthwise_conv/cuda/launch.h"

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <type_traits>

namespace convx::cuda {
namespace {

// V channels per thread, R outputs (cl_outputs), weights of type WT.
template <typename T, typename WT, int KH, int KW, int S, int V, int R = cl_outputs<KH, KW, V, S>()>
bool run(const T* in, const WT* w, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  const ClTile L = choose_cl_tile(P, V, R);
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(L.blocks, int64_t(1) << 30));
  cl_gather<T, WT, KH, KW, S, V, R, cl_min_blocks<KW, R, V>()>
      <<<grid, cl_block_threads(L), 0, stream>>>(in, w, bias, out, P, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

}  // namespace

bool cl_fast_takes(const Plan& P) {
  return cl16_specialised(P) && P.in_c <= kClMaxChannels && P.wrows <= kClMaxChannels;
}

template <typename T>
bool launch_cl_gather(const T* in, const at::opmath_type<T>* w, const T* bias, T* out,
                      const Plan& P, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;  // float64 is for correctness only: the generic kernel
  } else {
    if (P.in_c > kClMaxChannels || P.wrows > kClMaxChannels) return false;
    const int kh = P.k[1], kw = P.k[2], s = P.S[1] == P.S[2] ? P.S[1] : 0;
#define CONVX_CASE(KH, KW, S) \
  if (kh == KH && kw == KW && s == S) return run<T, at::opmath_type<T>, KH, KW, S, kClVec>(in, w, bias, out, P, stream);
    CONVX_CASE(1, 2, 1)
    CONVX_CASE(1, 3, 1)
    CONVX_CASE(1, 4, 1)
    CONVX_CASE(1, 15, 1)
    CONVX_CASE(1, 31, 1)
    CONVX_CASE(2, 2, 1)
    CONVX_CASE(3, 3, 1)
    CONVX_CASE(4, 4, 1)
    CONVX_CASE(5, 5, 1)
    CONVX_CASE(7, 7, 1)
    CONVX_CASE(3, 3, 2)
    CONVX_CASE(5, 5, 2)
    CONVX_CASE(7, 7, 2)
#undef CONVX_CASE
    if (kw == 31 && s == 1) return run<T, at::opmath_type<T>, 0, 31, 1, kClVec>(in, w, bias, out, P, stream);
    return false;
  }
}

template <typename T>
bool launch_cl_gather16(const T* in, const T* w, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  if (!cl_fast_takes(P)) return false;
  return run<T, T, 3, 3, 1, kClVec16>(in, w, bias, out, P, stream);
}

template bool launch_cl_gather<float>(const float*, const float*, const float*, float*, const Plan&, cudaStream_t);
template bool launch_cl_gather<double>(const double*, const double*, const double*, double*, const Plan&, cudaStream_t);
template bool launch_cl_gather<c10::Half>(const c10::Half*, const float*, const c10::Half*, c10::Half*, const Plan&, cudaStream_t);
template bool launch_cl_gather<c10::BFloat16>(const c10::BFloat16*, const float*, const c10::BFloat16*, c10::BFloat16*, const Plan&, cudaStream_t);
template bool launch_cl_gather16<c10::Half>(const c10::Half*, const c10::Half*, const c10::Half*, c10::Half*, const Plan&, cudaStream_t);
template bool launch_cl_gather16<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, const c10::BFloat16*, c10::BFloat16*, const Plan&, cudaStream_t);

}  // namespace convx::cuda
