// Launcher of the channels-last stride-2 data-grad kernel writing both column phases of an
// output row (cl_stride2_dgrad.cuh): 2 x 2 sub-filters with pads (1, 0) (k4 s2 p1, k3 s2 p1),
// tried before cl_gather, which it replaces on these plans.
//
// Tiles (R q-columns x TH q-rows per thread, V = 4 channels) measured on the H100 in one process
// against cl_gather (bench/results/h100/session12/clk_call2_ab.log; ms for the depthwise
// transposed conv N32 C256 64^2 k4 s2 p1 / MobileNetV2's stride-2 data-grad N64 C96 56^2 ->
// 112^2, k3 s2 p1):
//   fp16: cl_gather 0.229 / 0.151; R2xTH2 0.215 / 0.145; R4xTH1 0.225 / 0.151; R8xTH1 0.204 / 0.163;
//         R4xTH2 0.168 / 0.114; R4xTH4 0.158 / 0.110 (kept; 128 registers, 48 bytes spilled);
//   bf16: cl_gather 0.231 / 0.155; R2xTH2 0.217 / 0.146; R8xTH1 0.191 / 0.152; R4xTH2 0.172 / 0.117
//         (kept); R4xTH4 0.386 / 0.238 (spills: the bf16 conversions take more registers);
//   fp32: cl_gather 0.271 / 0.172; R2xTH2 0.244 / 0.150; R4xTH2 0.254 / 0.150; R4xTH1 0.243 / 0.150
//         (kept); R4xTH4 0.401 / 0.237 (spills).
// At 80 registers (3 blocks per SM) the tiles spilled in their loops and measured slower
// (clk_call1_ab.log: R2xTH2 fp32 0.502, bf16 0.457).
#include "ops/depthwise_conv/cuda/cl_stride2_dgrad.cuh"
#include "ops/depthwise_conv/cuda/launch.h"

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <type_traits>

namespace convx::cuda {
namespace {

template <typename T, int V, int R, int TH, int MINB>
bool run(const T* in, const at::opmath_type<T>* w, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  const ClS2Tile L = choose_cl_s2_tile(P, V, R, TH);
  if (L.blocks <= 0 || L.blocks >= (int64_t(1) << 31)) return false;
  cl_stride2_dgrad<T, V, R, TH, MINB>
      <<<static_cast<unsigned>(L.blocks), cl_s2_threads(L), 0, stream>>>(in, w, bias, out, P, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

}  // namespace

template <typename T>
bool launch_cl_stride2_dgrad(const T* in, const at::opmath_type<T>* w, const T* bias, T* out, const Plan& P,
                             cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;  // float64 is for correctness only: the generic kernel
  } else {
    if (!cl_s2_covers(P) || P.out_c % 4 != 0) return false;
    // The tile per dtype, as measured (V = 4 channels; see the file header).
    if constexpr (std::is_same_v<T, c10::Half>) return run<T, 4, 4, 4, 2>(in, w, bias, out, P, stream);
    else if constexpr (std::is_same_v<T, c10::BFloat16>) return run<T, 4, 4, 2, 2>(in, w, bias, out, P, stream);
    else return run<T, 4, 4, 1, 2>(in, w, bias, out, P, stream);
  }
}

template bool launch_cl_stride2_dgrad<float>(const float*, const float*, const float*, float*, const Plan&, cudaStream_t);
template bool launch_cl_stride2_dgrad<double>(const double*, const double*, const double*, double*, const Plan&,
                                              cudaStream_t);
template bool launch_cl_stride2_dgrad<c10::Half>(const c10::Half*, const float*, const c10::Half*, c10::Half*,
                                                 const Plan&, cudaStream_t);
template bool launch_cl_stride2_dgrad<c10::BFloat16>(const c10::BFloat16*, const float*, const c10::BFloat16*,
                                                     c10::BFloat16*, const Plan&, cudaStream_t);

}  // namespace convx::cuda
