// Launcher of the cp.async whole-plane NCHW kernel (nc_plane_cp.cuh) for 16-bit output planes
// larger than 14 x 14 (smaller ones: nc_small_planes.cu): 3x3 filters at stride 1 and 2 padded by
// one, input rows of whole 16-byte vectors, the layer's own filter (forward as stored, data-grad
// rotated), sm_80 and newer.
//
// Measured on the H100 (session 12, bench/results/h100/session12/nc16_call2_ab.log; ms, 16-bit,
// nc_plane / nc_stream_vec -> nc_plane_cp, % of copy bandwidth after):
//   MobileNetV2 56x56 3x3: forward 0.060 -> 0.050 (77%), data-grad 0.060 -> 0.050;
//   MobileNetV2 112x112 -> 56x56 3x3 stride 2: forward 0.134 -> 0.077 (83%).
// Four output rows per thread: two measured 0.051 on 56x56, the same on stride 2. Not taken: fp32
// (slower than nc_plane: 0.100 against 0.086 ms on 56x56, 0.050 against 0.048 on EfficientNet
// 5x5; the kernel is 16-bit only) and 5x5 (no 16-bit row of the benchmark has 16-byte input
// rows: EfficientNet's 28-wide rows are 56 bytes).
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/nc_plane_cp.cuh"
#include "ops/depthwise_conv/cuda/nc_small_planes.cuh"

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace convx::cuda {
namespace {

template <typename T, int K, int S, int TH, int CH>
bool run(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  NcPlaneCp L{};
  // TEMPORARY A/B (session 13, eff5): CONVX_EFF5_SKEW=0 keeps the bands unskewed.
  const char* sk = std::getenv("CONVX_EFF5_SKEW");
  if (!choose_nc_plane_cp(L, P, K, K, S, TH, sizeof(T), CH, in, out, flip, !(sk && std::strcmp(sk, "0") == 0)))
    return false;
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
      // TEMPORARY A/B (session 13, eff5): CONVX_EFF5_FW=main leaves 5x5 to nc_plane; th2 / th4.
      const char* fw = std::getenv("CONVX_EFF5_FW");
      if (fw && std::strcmp(fw, "main") == 0) return false;
      if constexpr (sizeof(T) == 4) {
        if (fw && std::strcmp(fw, "th2") == 0) return run<T, 5, 1, 2, 8>(in, w, flip, bias, out, P, stream);
        return run<T, 5, 1, 4, 8>(in, w, flip, bias, out, P, stream);
      } else {
        if (fw && std::strcmp(fw, "th4") == 0) return run<T, 5, 1, 4, 8>(in, w, flip, bias, out, P, stream);
        return run<T, 5, 1, 2, 8>(in, w, flip, bias, out, P, stream);
      }
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
