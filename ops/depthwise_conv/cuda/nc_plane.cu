// Launcher of the whole-plane NCHW kernel (nc_plane.cuh): square filters 2-7 at stride 1 and 3,
// 5, 7 at stride 2 (nc_stream's set), fp32 / fp16 / bf16, the layer's own filter (forward as
// stored, data-grad rotated).
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/nc_plane.cuh"

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
bool run_th(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  NcPlane L{};
  if (!choose_nc_plane(L, P, KH, KW, S, TH, sizeof(T), flip)) return false;
  // A block walks groups blockIdx.x, + gridDim.x, ...: as many blocks as run at once.
  auto kernel = nc_plane<T, KH, KW, S, kPlaneStrip, TH>;
  int per_sm = 0;
  C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kPlaneThreads, static_cast<size_t>(L.smem)));
  int64_t blocks = std::min<int64_t>(L.groups, std::max(per_sm, 1) * sm_count());
  // TEMPORARY (session 11 A/B): CONVX_NC_PLANE=new_1g gives every group its own block.
  const char* knob = std::getenv("CONVX_NC_PLANE");
  if (knob && std::strcmp(knob, "new_1g") == 0) blocks = L.groups;
  kernel<<<static_cast<unsigned>(blocks), kPlaneThreads, static_cast<size_t>(L.smem), stream>>>(in, w, bias, out, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

// Two output rows per thread (TH) share KH - 1 staged rows' loads; one for 5x5 and 7x7 at stride 2,
// which spill at two (ptxas). TEMPORARY (session 11 A/B): CONVX_NC_PLANE=new_th1 runs one everywhere.
template <typename T, int KH, int KW, int S>
bool run(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  const char* knob = std::getenv("CONVX_NC_PLANE");
  if ((knob && std::strcmp(knob, "new_th1") == 0) || (KH >= 5 && S == 2))
    return run_th<T, KH, KW, S, 1>(in, w, flip, bias, out, P, stream);
  return run_th<T, KH, KW, S, 2>(in, w, flip, bias, out, P, stream);
}

}  // namespace

template <typename T>
bool launch_nc_plane(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;  // float64 is for correctness only: nc_gather's generic kernel
  } else {
    const int kh = P.k[1], kw = P.k[2], s = P.S[1] == P.S[2] ? P.S[1] : 0;
#define CONVX_CASE(KH, KW, S) \
  if (kh == KH && kw == KW && s == S) return run<T, KH, KW, S>(in, w, flip, bias, out, P, stream);
    CONVX_CASE(2, 2, 1)
    CONVX_CASE(3, 3, 1)
    CONVX_CASE(4, 4, 1)
    CONVX_CASE(5, 5, 1)
    CONVX_CASE(7, 7, 1)
    CONVX_CASE(3, 3, 2)
    CONVX_CASE(5, 5, 2)
    CONVX_CASE(7, 7, 2)
#undef CONVX_CASE
    return false;
  }
}

template bool launch_nc_plane<float>(const float*, const float*, bool, const float*, float*, const Plan&, cudaStream_t);
template bool launch_nc_plane<double>(const double*, const double*, bool, const double*, double*, const Plan&, cudaStream_t);
template bool launch_nc_plane<c10::Half>(const c10::Half*, const c10::Half*, bool, const c10::Half*, c10::Half*, const Plan&,
                                         cudaStream_t);
template bool launch_nc_plane<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, bool, const c10::BFloat16*,
                                             c10::BFloat16*, const Plan&, cudaStream_t);

}  // namespace convx::cuda
