// Launcher of the register-blocked channels-last tile (cl_tile2d.cuh): 7 x 7 at stride 1, forward
// and stride-1 data-grad, fp32 / fp16, on outputs 14 wide and at most 14 high.
//
// Where it serves, by the H100 A/B run of session 14 (bench/results/h100/session14/cl7_call1_ab.log,
// one process, main's kernels first and last; forward / data-grad ms):
//   ConvNeXt-14 (N64 C384 14x14) fp32 0.0445 / 0.0448 (walk_conv2d) -> 0.0395 / 0.0391,
//   fp16 0.0327 / 0.0326 (tc_cl2d) -> 0.0300 / 0.0296, with 8 channel vectors x 2 x 7 strips per
//   block (16 vectors x 2 x 7: 0.0413 / 0.0413 fp32; 32 x 2 x 4 and 16 x 2 x 4: 0.046-0.047).
// Declined, measured slower: ConvNeXt-56 (N64 C96 56x56) fp32 0.139 (cl_gather) against 0.148-0.188
// over seven tiles, fp16 0.083 (tc_cl2d) against 0.118-0.138; EfficientNet 5x5 28x28 fp32 0.063
// (walk_conv2d) against 0.066-0.096 over six tiles. Nsight Compute of the 56x56 fp32 launch
// (cl7_call1_ncu.log): L2 throughput 67% at 28% DRAM and 30% SM, 12 warps per SM -- a warp's
// copies and stores spread over 8-32 cache lines (lanes are pixels), and a block computes only
// after its whole tile has arrived. Other widths were not measured.
#include "ops/depthwise_conv/cuda/cl_tile2d.cuh"
#include "ops/depthwise_conv/cuda/launch.h"

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <type_traits>

namespace convx::cuda {

template <typename T>
bool launch_cl_tile2d(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, c10::BFloat16>) {
    // float64 is for correctness only (the generic kernel); bf16 was not measured on the kept tile
    // (with 4 vectors per block, the bench rows of the same call: ConvNeXt-14 0.034 ms against
    // tc_cl2d's 0.033), so it stays on tc_cl2d.
    return false;
  } else {
    if (P.k[1] != 7 || P.out[2] != 14 || P.out[1] > 14 || !mma16_supported()) return false;
    ClTile2d L{};
    if (!cl_tile2d_plan(L, P, flip, 7, 8, 7, sizeof(T))) return false;
    auto kernel = cl_tile2d<T, 7>;
    const int64_t smem = cl_tile2d_smem_bytes<T, 7>(L);
    // About 58 KB (fp32) for the 14 x 14 tile of 8 vectors: above the default 48 KB, within the
    // opt-in limit of the sm_80+ GPUs.
    if (!allow_dynamic_smem(reinterpret_cast<const void*>(kernel), smem)) return false;
    kernel<<<static_cast<unsigned>(L.blocks), L.threads, smem, stream>>>(in, w, bias, out, L);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return true;
  }
}

template bool launch_cl_tile2d<float>(const float*, const float*, bool, const float*, float*, const Plan&, cudaStream_t);
template bool launch_cl_tile2d<double>(const double*, const double*, bool, const double*, double*, const Plan&,
                                       cudaStream_t);
template bool launch_cl_tile2d<c10::Half>(const c10::Half*, const c10::Half*, bool, const c10::Half*, c10::Half*,
                                          const Plan&, cudaStream_t);
template bool launch_cl_tile2d<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, bool, const c10::BFloat16*,
                                              c10::BFloat16*, const Plan&, cudaStream_t);

}  // namespace convx::cuda
