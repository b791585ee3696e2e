// Launcher of the column-walking weight-grad of 7 x 7 filters at stride 1 (walk2d.cuh), tried in
// front of the tensor-core tc_wgrad2d and the CUDA-core nc_wgrad_stream / cl_wgrad_partial, for
// the shapes where it measured faster (H100, session 12, weight-grad alone, main's kernel against
// this one, ms; bench/results/h100/session12/cnx_call2_ab.log):
//   fp32 NCHW: ConvNeXt-56 0.252 -> 0.136, ConvNeXt-14 0.086 -> 0.039;
//   fp32 NHWC: ConvNeXt-56 0.267 -> 0.197, ConvNeXt-14 0.084 -> 0.059;
//   fp16 / bf16 NCHW rows 14 wide (tc_wgrad2d declines rows up to 32): ConvNeXt-14 0.075 -> 0.039.
// 5 x 5 (session 13, bench/results/h100/session13/eff5_call*_ab.log, nc_wgrad_stream -> this):
//   fp32 NCHW rows at least 14 wide that nc_wgrad_cp declines: 14x14 (N64 C672) 0.078 -> 0.057;
//   EfficientNet 28x28 0.090 -> 0.062 (16 waves; 8: 0.068), where nc_wgrad_cp is faster (0.056).
// Left to cl_wgrad_partial: 5 x 5 NHWC (EfficientNet 0.093 against 0.101 here).
// Left to the others: 16-bit rows tc_wgrad2d takes (ConvNeXt-56 NCHW 0.075 against 0.202 here,
// NHWC 0.107 against 0.347 and ConvNeXt-14 NHWC 0.039 against 0.068) and rows narrower than 14
// (not measured).
// Since session 13 the NHWC ConvNeXt rows go to cl_band_wgrad2d first (cl_band_wgrad2d.cu); this
// one keeps the NHWC calls it declines (channels not a multiple of 8, misaligned tensors, outputs
// wider than 56).
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/walk2d.cuh"
#include "ops/depthwise_conv/cuda/wgrad_sum.cuh"

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <type_traits>

namespace convx::cuda {
namespace {

template <typename T, int K, bool CL>
bool run(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  using acc_t = at::opmath_type<T>;
  Walk2d L{};
  // 7 x 7: about two waves of 3 blocks per SM; 5 x 5 (96 registers, 5 blocks per SM): 16 blocks per
  // SM measured faster than 8 (above). Blocks of whole rounds even out across the SMs.
  if (!walk2d_plan(L, P, K, CL, (K == 5 ? 16 : 8) * sm_count())) return false;
  const int64_t taps = K * K;
  const at::Tensor part = at::empty({P.in_c, int64_t(L.chunks), taps},
                                    like.options().dtype(c10::CppTypeToScalarType<acc_t>::value));
  walk_wgrad2d<T, K, CL><<<static_cast<unsigned>(int64_t(L.groups) * L.chunks), kWalkThreads, 0, stream>>>(
      x, gy, part.mutable_data_ptr<acc_t>(), L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  // Many chunks (NHWC: 352 on ConvNeXt-56) in groups: 57 -> 4.5 us there, ConvNeXt-14 8.5 -> 3.4 us
  // (H100, session 13, w7_call1_kernels.log / w7_call2_kernels.log). NCHW's 11 chunks keep sum_slots.
  if (L.chunks >= 64) {
    launch_sum_slots_grouped<T>(part.const_data_ptr<acc_t>(), gw, P.in_c, L.chunks, taps, stream);
  } else {
    launch_sum_slots<T>(part.const_data_ptr<acc_t>(), gw, P.in_c, L.chunks, taps, stream);
  }
  return true;
}

}  // namespace

template <typename T>
bool launch_walk_wgrad2d(const T* x, const T* gy, T* gw, const Plan& P, bool channels_last, const at::TensorBase& like,
                         cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;
  } else {
    if constexpr (std::is_same_v<T, float>) {
      if (P.k[1] == 5 && P.q[2] >= 14 && !channels_last) return run<T, 5, false>(x, gy, gw, P, like, stream);
    }
    if (P.k[1] != 7 || P.q[2] < 14) return false;
    if constexpr (std::is_same_v<T, float>) {
      return channels_last ? run<T, 7, true>(x, gy, gw, P, like, stream) : run<T, 7, false>(x, gy, gw, P, like, stream);
    } else {
      if (channels_last || P.q[2] > 32) return false;
      return run<T, 7, false>(x, gy, gw, P, like, stream);
    }
  }
}

template bool launch_walk_wgrad2d<float>(const float*, const float*, float*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_walk_wgrad2d<double>(const double*, const double*, double*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_walk_wgrad2d<c10::Half>(const c10::Half*, const c10::Half*, c10::Half*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_walk_wgrad2d<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, c10::BFloat16*, const Plan&, bool, const at::TensorBase&, cudaStream_t);

}  // namespace convx::cuda
