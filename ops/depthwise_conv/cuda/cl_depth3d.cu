// Launcher of the channels-last depth-streaming forward / data-grad (cl_depth3d.cuh): KD x 3 x 3
// filters (KD 3 or 5; the stride-2 data-grad's 2 x 2 sub-filters too) at depth stride 1. Everything
// else returns false: the caller keeps cl_gather.
#include "ops/depthwise_conv/cuda/cl_depth3d.cuh"
#include "ops/depthwise_conv/cuda/launch.h"

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <type_traits>

namespace convx::cuda {
namespace {

template <typename T, int KD, int KH, int KW, int S>
bool run(const T* in, const at::opmath_type<T>* w, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  constexpr int V = kClVec, R = cl_depth3d_strip<KD>();
  // Depth segments only when a column per thread would not fill the GPU twice (2048 threads per SM).
  const int64_t target = sm_count() * 2048 * 2;
  ClDepth3d L{};
  if (!cl_depth3d_items(L, P, KD, R, V, target)) return false;
  cl_depth3d<T, KD, KH, KW, S, V, R>
      <<<static_cast<unsigned>(ceil_div(L.items, kClDepthThreads)), kClDepthThreads, 0, stream>>>(in, w, bias, out, P, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

}  // namespace

template <typename T>
bool launch_cl_depth3d(const T* in, const at::opmath_type<T>* w, const T* bias, T* out, const Plan& P,
                       cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;  // float64 is for correctness only
  } else {
    const int kd = P.k[0], kh = P.k[1], kw = P.k[2], s = P.S[1] == P.S[2] ? P.S[1] : 0;
#define CONVX_CASE(KD, KH, KW, S) \
  if (kd == KD && kh == KH && kw == KW && s == S) return run<T, KD, KH, KW, S>(in, w, bias, out, P, stream);
    CONVX_DEPTH3D_FILTERS(CONVX_CASE)
#undef CONVX_CASE
    return false;
  }
}

#define CONVX_INST(T)                                                                                 \
  template bool launch_cl_depth3d<T>(const T*, const at::opmath_type<T>*, const T*, T*, const Plan&, \
                                     cudaStream_t);
CONVX_INST(float)
CONVX_INST(double)
CONVX_INST(c10::Half)
CONVX_INST(c10::BFloat16)
#undef CONVX_INST

}  // namespace convx::cuda
