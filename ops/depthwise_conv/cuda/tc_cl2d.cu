// Launcher of the tensor-core channels-last 2-D kernel (tc_cl2d.cuh): fp16 / bf16 7 x 7 (ConvNeXt),
// forward and stride-1 data-grad, tried first for channels-last 16-bit calls.
//
// Where it serves, by the H100 A/B run of session 13 (bench/results/h100/session13/
// tc7c_call2_ab.log, forward / data-grad ms, main's kernel -> tc_cl2d):
//   ConvNeXt-56 (N64 C96, outputs 56 wide): cl_ring 0.109 -> 0.082-0.083 (fp16 and bf16);
//   ConvNeXt-14 (N64 C384, outputs 14 wide): walk_conv2d 0.053 -> 0.033 (convx's cuDNN path: 0.044
//   forward, 0.085 data-grad).
// Since session 14 fp16 outputs 14 wide and at most 14 high go to cl_tile2d first (ConvNeXt-14
// 0.0327 -> 0.0300 ms, cl_tile2d.cu); bf16 stays here.
// Outputs narrower than 14 (not measured) stay on the kernels they had. fp32 as TF32 through the
// same kernel (4 channels per block) measured slower than the exact cl_gather / walk_conv2d (0.158
// against 0.138, 0.051 against 0.045 ms) and was removed.
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/tc_cl2d.cuh"

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

namespace convx::cuda {

template <typename T>
bool launch_tc_cl2d(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  if (P.k[1] != 7 || P.k[2] != 7 || P.out[2] < 14 || !mma16_supported()) return false;
  // Raw bricks in flight and blocks wanted per SM, the fastest of the A/B run (ms, forward):
  // 56-wide rows one brick, 2 blocks per SM (0.082; 2 bricks 4 / SM 0.094, 1 brick 4 / SM 0.092,
  // 8 / SM 0.089); 14-wide rows two bricks, 4 blocks per SM (0.033; 1 brick 0.034, 1 brick at 2 / SM
  // 0.045, 8 / SM 0.034). Widths between (not measured) take the 56-wide settings. Both are about one wave of resident blocks walking their steps.
  const bool wide = P.out[2] >= 28;
  TcCl2d L{};
  if (!tc_cl2d_plan<7>(L, P, flip, wide ? 1 : 2, (wide ? 2 : 4) * sm_count())) return false;
  const int64_t smem = tc_cl2d_smem_bytes<7>(L);
  auto kernel = tc_cl2d<T, 7>;
  if (!allow_dynamic_smem(reinterpret_cast<const void*>(kernel), smem)) return false;
  kernel<<<L.blocks, 32 * L.nw, smem, stream>>>(in, w, bias, out, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

template bool launch_tc_cl2d<c10::Half>(const c10::Half*, const c10::Half*, bool, const c10::Half*, c10::Half*,
                                        const Plan&, cudaStream_t);
template bool launch_tc_cl2d<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, bool, const c10::BFloat16*,
                                            c10::BFloat16*, const Plan&, cudaStream_t);

}  // namespace convx::cuda
