// Launcher of the cp.async whole-plane NCHW kernel (nc_plane_cp.cuh) for output planes larger than
// 14 x 14 (smaller ones: nc_small_planes.cu): 3x3 and 5x5 filters at stride 1 and 2 padded by half
// the filter, input rows of whole 16-byte vectors, fp32 / fp16 / bf16, the layer's own filter
// (forward as stored, data-grad rotated), sm_80 and newer.
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

template <typename T, int KH, int KW, int S, int TH>
bool run(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  NcPlaneCp L{};
  if (!choose_nc_plane_cp(L, P, KH, KW, S, TH, sizeof(T), in, out, flip)) return false;
  if (int64_t(L.oh) * L.ow <= kSmallPlaneMaxOutputs) return false;
  auto kernel = nc_plane_cp<T, KH, KW, S, TH>;
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

// A/B knob (session 12, removed after the measurement): CONVX_NC_PLANE_CP=0 off, 1 on, 2 on with
// the other row count.
int knob() {
  const char* v = std::getenv("CONVX_NC_PLANE_CP");
  return v ? std::atoi(v) : 1;
}

}  // namespace

template <typename T>
bool launch_nc_plane_cp(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;  // float64 is for correctness only: nc_gather's generic kernel
  } else {
    const int k = knob();
    if (k == 0 || !mma16_supported()) return false;  // cp.async: sm_80 and newer
    const bool alt = k == 2;
    const int kh = P.k[1], kw = P.k[2], s = P.S[1] == P.S[2] ? P.S[1] : 0;
#define CONVX_CASE(KH, S, TH, TH2)                                                                    \
  if (kh == KH && kw == KH && s == S)                                                                 \
    return alt ? run<T, KH, KH, S, TH2>(in, w, flip, bias, out, P, stream)                           \
               : run<T, KH, KH, S, TH>(in, w, flip, bias, out, P, stream);
    CONVX_CASE(3, 1, 4, 2)
    CONVX_CASE(5, 1, 4, 2)
    CONVX_CASE(3, 2, 4, 2)
    CONVX_CASE(5, 2, 2, 2)
#undef CONVX_CASE
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
