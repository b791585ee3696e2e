// Launcher of the cp.async whole-plane NCHW kernel (nc_plane_cp.cuh) for output planes larger than
// 14 x 14 (smaller ones: nc_small_planes.cu): 16-bit 3x3 filters at stride 1 and 2 padded by one,
// input rows of whole 16-byte vectors; fp32 and 16-bit 5x5 at stride 1 padded by two, output rows
// at most 28 wide, input rows of whole 8-byte chunks; the layer's own filter (forward as stored,
// data-grad rotated), sm_80 and newer.
//
// Measured on the H100 (session 12, bench/results/h100/session12/nc16_call2_ab.log; ms, 16-bit,
// nc_plane / nc_stream_vec -> nc_plane_cp, % of copy bandwidth after):
//   MobileNetV2 56x56 3x3: forward 0.060 -> 0.050 (77%), data-grad 0.060 -> 0.050;
//   MobileNetV2 112x112 -> 56x56 3x3 stride 2: forward 0.134 -> 0.077 (83%).
// Four output rows per thread: two measured 0.051 on 56x56, the same on stride 2. Not taken: fp32
// 3x3 (slower than nc_plane with the session-12 strips of 8: 0.100 against 0.086 ms on 56x56).
//
// 5x5 (session 13, bench/results/h100/session13/eff5_call2_ab.log; ms, forward / data-grad,
// nc_plane -> nc_plane_cp, % of copy bandwidth after):
//   EfficientNet 28x28 fp32 0.047 -> 0.045 (71%, the bench row), fp16 0.051 -> 0.045, bf16 0.052
//   -> 0.046; four output rows per thread (two: fp32 0.060, 16-bit 0.048-0.050), bands skewed
//   (unskewed: fp32 the same within 1%; 16-bit four rows not measured unskewed).
//   Not taken: 56x56 planes (fp32 0.074 against nc_plane's 0.070, bf16 0.070 against 0.058).
// The 16-bit 3x3 bands stay unskewed: skewed, MobileNetV2 56x56 measured 0.052 against 0.049-0.050.
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/nc_plane_cp.cuh"
#include "ops/depthwise_conv/cuda/nc_small_planes.cuh"

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <type_traits>

namespace convx::cuda {
namespace {

template <typename T, int K, int S, int TH, int CH>
bool run(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  NcPlaneCp L{};
  // Skewed bands where measured (5x5; above).
  if (!choose_nc_plane_cp(L, P, K, K, S, TH, sizeof(T), CH, in, out, flip, K == 5)) return false;
  if (int64_t(L.oh) * L.ow <= kSmallPlaneMaxOutputs) return false;
  auto kernel = nc_plane_cp<T, K, K, S, TH, CH>;
  // A block of the group's items (whole warps), walking groups blockIdx.x, + gridDim.x, ...: as
  // many blocks as run at once.
  const int threads = static_cast<int>(std::min<int64_t>(kCpThreads, ceil_div(int64_t(L.pb) * L.items.d, 32) * 32));
  if (L.smem > 48 * 1024) {
    C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(L.smem)));
  }
  int per_sm = 0;
  C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, static_cast<size_t>(L.smem)));
  const int64_t blocks = std::min<int64_t>(L.groups, std::max(per_sm, 1) * sm_count());
  kernel<<<static_cast<unsigned>(blocks), threads, static_cast<size_t>(L.smem), stream>>>(in, w, bias, out, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

}  // namespace

template <typename T>
bool launch_nc_plane_cp(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;  // float64: nc_gather
  } else {
    if (!mma16_supported()) return false;  // cp.async: sm_80 and newer
    if (P.k[1] != P.k[2] || P.S[1] != P.S[2]) return false;
    if (P.k[1] == 5 && P.S[1] == 1) {
      if (P.q[2] > 28) return false;  // nc_plane (above)
      return run<T, 5, 1, 4, 8>(in, w, flip, bias, out, P, stream);
    }
    if constexpr (sizeof(T) == 2) {
      if (P.k[1] != 3) return false;
      if (P.S[1] == 1) return run<T, 3, 1, 4, 16>(in, w, flip, bias, out, P, stream);
      if (P.S[1] == 2) return run<T, 3, 2, 4, 16>(in, w, flip, bias, out, P, stream);
    }
    return false;
  }
}

template bool launch_nc_plane_cp<float>(const float*, const float*, bool, const float*, float*, const Plan&, cudaStream_t);
template bool launch_nc_plane_cp<double>(const double*, const double*, bool, const double*, double*, const Plan&,
                                         cudaStream_t);
template bool launch_nc_plane_cp<c10::Half>(const c10::Half*, const c10::Half*, bool, const c10::Half*, c10::Half*,
                                            const Plan&, cudaStream_t);
template bool launch_nc_plane_cp<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, bool,
                                                const c10::BFloat16*, c10::BFloat16*, const Plan&, cudaStream_t);

}  // namespace convx::cuda
