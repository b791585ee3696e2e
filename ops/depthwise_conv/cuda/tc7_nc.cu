// Launcher of the tensor-core 7 x 7 NCHW kernel (tc7_nc.cuh), forward and stride-1 data-grad at
// padding 3: ConvNeXt's 56 x 56 planes (heights 49-64, four warps per plane; widths of 8 N-blocks
// for 16-bit, 7 for fp32) and 14 x 14 planes (heights up to 16, a warp per plane; 3 N-blocks for
// 16-bit, 2 for fp32); fp32 as TF32 where the caller found torch.backends.cudnn.allow_tf32 true.
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/tc7_nc.cuh"

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <type_traits>

namespace convx::cuda {

namespace {

template <typename T, int NB, int WPP, bool V8 = false>
bool run(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  Tc7Nc L{};
  if (!tc7_nc_plan<T>(L, P, flip, in, out, NB, WPP)) return false;
  auto kernel = tc7_nc<T, NB, WPP, V8>;
  const int64_t bytes = tc7_smem_bytes<T, V8>(NB, WPP, L.W);
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
  if (const char* e = std::getenv("CONVX_TC7_AB"); e && e[0] == '0') return false;  // temporary A/B knob
  if (!mma16_supported()) return false;
  if constexpr (std::is_same_v<T, float>) {
    return run<T, 7, 4>(in, w, flip, bias, out, P, stream) || run<T, 2, 1>(in, w, flip, bias, out, P, stream);
  } else {
    if (const char* e = std::getenv("CONVX_TC7_AB"); e && e[0] == '2')  // temporary A/B variant
      return run<T, 8, 4, true>(in, w, flip, bias, out, P, stream) || run<T, 3, 1, true>(in, w, flip, bias, out, P, stream);
    return run<T, 8, 4>(in, w, flip, bias, out, P, stream) || run<T, 3, 1>(in, w, flip, bias, out, P, stream);
  }
}

template bool launch_tc7_nc<float>(const float*, const float*, bool, const float*, float*, const Plan&, cudaStream_t);
template bool launch_tc7_nc<c10::Half>(const c10::Half*, const c10::Half*, bool, const c10::Half*, c10::Half*, const Plan&,
                                       cudaStream_t);
template bool launch_tc7_nc<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, bool, const c10::BFloat16*,
                                           c10::BFloat16*, const Plan&, cudaStream_t);

}  // namespace convx::cuda
