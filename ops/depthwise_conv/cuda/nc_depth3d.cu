// Launchers of the NCDHW depth-streaming kernels (nc_depth3d.cuh): forward / data-grad and
// weight-grad of KD x 3 x 3 filters (KD 3 or 5; the data-grad's 2 x 2 sub-filters of stride-2
// rows too) at depth stride 1. Everything else returns false: the caller keeps nc_stream /
// nc_wgrad. Measured on the H100 against those (bench/results/h100/session5/ab_knobs.log): X3D
// k3 fp32 forward 0.795 -> 0.572 ms (72% of the copy bandwidth), backward 2.190 -> 1.144;
// k5x3x3 bf16 forward 1.798 -> 1.462, backward 3.500 -> 2.998.
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/nc_depth3d.cuh"
#include "ops/depthwise_conv/cuda/wgrad_sum.cuh"

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Exception.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <type_traits>

namespace convx::cuda {
namespace {

template <typename T, int KD, int KH, int KW, int S>
bool run_fwd(const T* in, const at::opmath_type<T>* w, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  constexpr int R = depth3d_strip<T, KD>(), TH = depth3d_band<T, KD>();
  // Depth segments only when a column per thread would not fill the GPU twice (2048 threads per SM).
  const int64_t target = sm_count() * 2048 * 2;
  NcDepth3d L{};
  if (!depth3d_items(L, P, KD, R, TH, target)) return false;
  nc_depth3d<T, KD, KH, KW, S, R, TH>
      <<<static_cast<unsigned>(ceil_div(L.items, kDepthThreads)), kDepthThreads, 0, stream>>>(in, w, bias, out, P, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

template <typename T, int KD, int KH, int KW, int S>
bool run_wgrad(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  using acc_t = at::opmath_type<T>;
  constexpr int R = wgrad3d_strip<T, S>(), TH = wgrad3d_band<T, KD, S>();
  NcWgrad3d L{};
  if (!choose_wgrad3d(L, P, KD, R, TH, S, KH, KW)) return false;
  constexpr int64_t taps = KD * KH * KW;
  const at::Tensor part = at::empty({P.out_c, int64_t(L.chunks), taps},
                                    like.options().dtype(c10::CppTypeToScalarType<acc_t>::value));
  const int64_t blocks = P.out_c * L.chunks;
  nc_wgrad_depth3d<T, KD, KH, KW, S, R, TH>
      <<<static_cast<unsigned>(std::min<int64_t>(blocks, int64_t(1) << 30)), L.threads, 0, stream>>>(
          x, gy, part.mutable_data_ptr<acc_t>(), P, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  launch_sum_slots<T>(part.const_data_ptr<acc_t>(), gw, P.out_c, L.chunks, taps, stream);
  return true;
}

}  // namespace

template <typename T>
bool launch_nc_depth3d(const T* in, const at::opmath_type<T>* w, const T* bias, T* out, const Plan& P,
                       cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;  // float64 is for correctness only
  } else {
    const int kd = P.k[0], kh = P.k[1], kw = P.k[2], s = P.S[1] == P.S[2] ? P.S[1] : 0;
#define CONVX_CASE(KD, KH, KW, S) \
  if (kd == KD && kh == KH && kw == KW && s == S) return run_fwd<T, KD, KH, KW, S>(in, w, bias, out, P, stream);
    CONVX_DEPTH3D_FILTERS(CONVX_CASE)
#undef CONVX_CASE
    return false;
  }
}

template <typename T>
bool launch_nc_wgrad_depth3d(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like,
                             cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;
  } else {
    const int kd = P.k[0], kh = P.k[1], kw = P.k[2], s = P.S[1] == P.S[2] ? P.S[1] : 0;
#define CONVX_CASE(KD, KH, KW, S) \
  if (kd == KD && kh == KH && kw == KW && s == S) return run_wgrad<T, KD, KH, KW, S>(x, gy, gw, P, like, stream);
    CONVX_DEPTH3D_WGRAD_FILTERS(CONVX_CASE)
#undef CONVX_CASE
    return false;
  }
}

#define CONVX_INST(T)                                                                                          \
  template bool launch_nc_depth3d<T>(const T*, const at::opmath_type<T>*, const T*, T*, const Plan&,          \
                                     cudaStream_t);                                                            \
  template bool launch_nc_wgrad_depth3d<T>(const T*, const T*, T*, const Plan&, const at::TensorBase&,        \
                                           cudaStream_t);
CONVX_INST(float)
CONVX_INST(double)
CONVX_INST(c10::Half)
CONVX_INST(c10::BFloat16)
#undef CONVX_INST

}  // namespace convx::cuda
