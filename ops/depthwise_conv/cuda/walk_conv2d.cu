// Launcher of the column-walking forward / stride-1 data-grad of 7 x 7 filters (walk2d.cuh),
// tried first for channels-last calls, for the shapes where it measured faster (H100, session 12,
// main's kernel against this one, ms; bench/results/h100/session12/cnx_call2_ab.log):
//   NHWC outputs 14 wide (ConvNeXt-14), forward / data-grad: fp32 0.045 -> 0.036, fp16 0.043 ->
//   0.039, bf16 0.045 -> 0.039 (main: cl_gather).
// 5 x 5 (session 13, bench/results/h100/session13/eff5_call*_ab.log, cl_gather -> this):
//   fp32 NHWC forward / data-grad, outputs 14-28 wide: EfficientNet 28x28 0.068 -> 0.062 (16
//   waves; 8: 0.073), 14x14 (N64 C672) 0.054 -> 0.047.
// Left to the others: 5 x 5 NHWC outputs wider than 28 (56x56 N64 C96: 0.103 against cl_gather's
// 0.094), 5 x 5 NCHW (nc_plane: 0.048 against 0.063 here) and 16-bit NHWC (not measured); 7 x 7
// NHWC outputs 28 wide and more, where cl_ring / cl_gather were faster
// (ConvNeXt-56: fp32 0.139 against 0.146 here, 16-bit 0.110 against 0.215), outputs narrower than
// 14 (not measured) and NCHW (nc_plane / nc_small_planes faster on every row: ConvNeXt-56 fp32
// 0.091 against 0.115, ConvNeXt-14 0.035 against 0.040).
// Since session 14 fp32 / fp16 7 x 7 outputs 14 wide and at most 14 high go to cl_tile2d first
// (ConvNeXt-14 fp32 0.0445 -> 0.0395 ms, cl_tile2d.cu).
// Since session 13 the 16-bit ones go to tc_cl2d first (ConvNeXt-14 0.053 -> 0.033 ms,
// bench/results/h100/session13/tc7c_call2_ab.log); this kernel keeps fp32 and the 16-bit calls
// tc_cl2d declines (channels not a multiple of 8).
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/walk2d.cuh"

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <type_traits>

namespace convx::cuda {

template <typename T>
bool launch_walk_conv2d(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, bool channels_last,
                        cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;
  } else {
    if constexpr (std::is_same_v<T, float>) {
      if (channels_last && P.k[1] == 5 && P.q[2] >= 14 && P.q[2] <= 28) {
        Walk2d L{};
        // 96 registers, 5 blocks per SM: 16 blocks per SM measured faster than 8 (above).
        if (!walk2d_plan(L, P, 5, true, 16 * sm_count())) return false;
        walk_conv2d<T, 5, true><<<static_cast<unsigned>(int64_t(L.groups) * L.chunks), kWalkThreads, 0, stream>>>(
            in, w, flip, bias, out, L);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
        return true;
      }
    }
    if (!channels_last || P.k[1] != 7 || P.q[2] < 14 || P.q[2] >= 28) return false;
    Walk2d L{};
    // About two waves of 3 blocks per SM; blocks of whole rounds even out across the SMs.
    if (!walk2d_plan(L, P, 7, true, 8 * sm_count())) return false;
    walk_conv2d<T, 7, true><<<static_cast<unsigned>(int64_t(L.groups) * L.chunks), kWalkThreads, 0, stream>>>(
        in, w, flip, bias, out, L);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return true;
  }
}

template bool launch_walk_conv2d<float>(const float*, const float*, bool, const float*, float*, const Plan&, bool, cudaStream_t);
template bool launch_walk_conv2d<double>(const double*, const double*, bool, const double*, double*, const Plan&, bool, cudaStream_t);
template bool launch_walk_conv2d<c10::Half>(const c10::Half*, const c10::Half*, bool, const c10::Half*, c10::Half*, const Plan&, bool, cudaStream_t);
template bool launch_walk_conv2d<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, bool, const c10::BFloat16*, c10::BFloat16*, const Plan&, bool, cudaStream_t);

}  // namespace convx::cuda
