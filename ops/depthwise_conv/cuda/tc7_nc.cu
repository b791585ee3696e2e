// Launcher of the tensor-core 7 x 7 / 5 x 5 NCHW kernel (tc7_nc.cuh), forward and stride-1
// data-grad at padding 3 / 2: ConvNeXt's 56 x 56 planes (heights 49-64, four warps per plane;
// widths of 8 N-blocks for 16-bit, 7 for fp32 as TF32 where the caller found
// torch.backends.cudnn.allow_tf32 true), 16-bit only: 14 x 14 planes (heights up to 16, a warp per
// plane, 3 N-blocks) and, 5 x 5, EfficientNet's 28 x 28 (heights 17-32, two warps per plane, 4
// N-blocks; session 14).
//
// Measured on the H100 (session 13; ms, forward / data-grad, N64, the kernels alternating in one
// process): ConvNeXt 56 x 56 C96: fp16 / bf16 0.084 / 0.084 (nc_plane) -> 0.038 / 0.038, fp32
// (TF32) 0.090 / 0.090 -> 0.067 / 0.065; ConvNeXt 14 x 14 C384: fp16 / bf16 0.033 / 0.033
// (nc_small_planes) -> 0.026 / 0.024 (bench/results/h100/session13/tc7n_call2_ab.log for the
// kernels replaced, tc7f_call1_ab.log for this version). Session 14 (tcnc_call1_ab.log): the
// output tile leaves by bulk copies, 56 x 56 fp16 / bf16 0.0386 -> 0.0364, fp32 0.0678 -> 0.0653;
// EfficientNet 28 x 28 C240 5 x 5 fp16 / bf16 0.045 / 0.046 (nc_plane_cp) -> 0.029 / 0.029.
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/tc7_nc.cuh"

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <atomic>
#include <type_traits>

namespace convx::cuda {

namespace {

template <typename T, int K, int NB, int WPP, int U, int UO>
bool run(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  Tc7Nc L{};
  if (!tc7_nc_plan<T>(L, P, flip, in, out, K, NB, WPP, U, UO)) return false;
  auto kernel = tc7_nc<T, K, NB, WPP, U, UO>;
  const int64_t bytes = tc7_smem_bytes<T>(K, NB, WPP, L.W);
  if (bytes > 48 * 1024) {  // above the default limit: opt in once per size reached
    static std::atomic<int64_t> opted{0};
    if (opted.load(std::memory_order_relaxed) < bytes) {
      C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
      opted.store(bytes, std::memory_order_relaxed);
    }
  }
  // As many blocks as run at once, each a contiguous range of the channel-major planes.
  int per_sm = 0;
  C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 32 * kTc7Warps, static_cast<size_t>(bytes)));
  const int64_t steps = ceil_div(L.planes, kTc7Warps / WPP);
  const int64_t blocks = std::min<int64_t>(steps, int64_t(std::max(per_sm, 1)) * sm_count());
  kernel<<<static_cast<unsigned>(blocks), 32 * kTc7Warps, static_cast<size_t>(bytes), stream>>>(in, w, bias, out, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

}  // namespace

template <typename T>
bool launch_tc7_nc(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  if (!mma16_supported()) return false;
  // 16-byte copies where the tensors' alignment allows them, else 4-byte ones (14 x 14 rows, 28
  // bytes in 16-bit, take 4-byte copies only; 28 x 28 8-byte ones, its output tile 16-byte ones,
  // with no fallback: nc_plane_cp takes the other placements).
  if constexpr (std::is_same_v<T, float>) {
    // 7 x 7 on 56 x 56 only: on 14 x 14 planes the TF32 kernel lost to nc_small_planes (0.046
    // against 0.035 ms, tc7n_call2_ab.log; session 14 with direct stores and 8-byte copies:
    // forward 0.0363 against 0.0349, data-grad 0.0339 against 0.0350), and the TF32 5 x 5 on
    // 28 x 28 lost to nc_plane_cp (0.048 / 0.047 against 0.045 / 0.045, tcnc_call1_ab.log).
    return run<T, 7, 7, 4, 16, 16>(in, w, flip, bias, out, P, stream) ||
           run<T, 7, 7, 4, 4, 4>(in, w, flip, bias, out, P, stream);
  } else {
    return run<T, 5, 4, 2, 8, 16>(in, w, flip, bias, out, P, stream) ||
           run<T, 7, 8, 4, 16, 16>(in, w, flip, bias, out, P, stream) ||
           run<T, 7, 8, 4, 4, 4>(in, w, flip, bias, out, P, stream) ||
           run<T, 7, 3, 1, 4, 4>(in, w, flip, bias, out, P, stream);
  }
}

template bool launch_tc7_nc<float>(const float*, const float*, bool, const float*, float*, const Plan&, cudaStream_t);
template bool launch_tc7_nc<c10::Half>(const c10::Half*, const c10::Half*, bool, const c10::Half*, c10::Half*, const Plan&,
                                       cudaStream_t);
template bool launch_tc7_nc<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, bool, const c10::BFloat16*,
                                           c10::BFloat16*, const Plan&, cudaStream_t);

}  // namespace convx::cuda
