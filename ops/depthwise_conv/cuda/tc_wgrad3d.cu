// Launcher of the tensor-core weight-grad of KD x 3 x 3 filters (KD 3 or 5) in fp16 / bf16
// (tc_wgrad3d.cuh): tried first for those filters at stride 1 (in front of nc_wgrad_depth3d), on
// sm_80 and newer.
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/tc_wgrad3d.cuh"
#include "ops/depthwise_conv/cuda/wgrad_sum.cuh"

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <type_traits>

namespace convx::cuda {
namespace {

// Blocks of the split (constants: the chunks, and so the bits, depend on the shapes only). X3D
// (N16, C192, 16 x 56 x 56): NCDHW 192 channels x 224 tiles in 21 chunks of 11 (about 8 waves of
// 3 blocks per SM); NDHWC 24 channel groups x 896 tiles in 82 chunks of 11 (7.5 waves of 2).
constexpr int64_t kTcw3NcTarget = 4096, kTcw3ClTarget = 2048;

template <typename T, int KD>
bool run(const T* x, const T* gy, T* gw, const Plan& P, bool cl, const at::TensorBase& like, cudaStream_t stream) {
  Tcw3 L{};
  const bool aligned = reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(gy) % 16 == 0;
  if (!tcw3_plan(L, P, cl, cl ? kTcw3ClTarget : kTcw3NcTarget, aligned)) return false;
  constexpr int NV = 9 * KD;
  const int smem = tcw3_smem_bytes<KD>(cl);
  const auto kernel = cl ? tcw3_cl<T, KD> : tcw3_nc<T, KD>;
  C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const at::Tensor part = at::empty({L.chunks > 1 ? P.out_c * L.chunks * NV : 0}, like.options().dtype(at::kFloat));
  kernel<<<L.groups * L.chunks, cl ? kTcw3ClThreads : kTcw3Threads, smem, stream>>>(x, gy, part.mutable_data_ptr<float>(), gw, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  if (L.chunks > 1) launch_sum_slots<T>(part.const_data_ptr<float>(), gw, P.out_c, L.chunks, NV, stream);
  return true;
}

}  // namespace

template <typename T>
bool launch_tc_wgrad3d(const T* x, const T* gy, T* gw, const Plan& P, bool channels_last, const at::TensorBase& like,
                       cudaStream_t stream) {
  if constexpr (!std::is_same_v<T, c10::Half> && !std::is_same_v<T, c10::BFloat16>) {
    return false;  // tensor cores would change fp32's precision (TF32)
  } else {
    if (!mma16_supported()) return false;
    if (P.k[0] == 5) return run<T, 5>(x, gy, gw, P, channels_last, like, stream);
    if (P.k[0] == 3) return run<T, 3>(x, gy, gw, P, channels_last, like, stream);
    return false;
  }
}

template bool launch_tc_wgrad3d<float>(const float*, const float*, float*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_tc_wgrad3d<double>(const double*, const double*, double*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_tc_wgrad3d<c10::Half>(const c10::Half*, const c10::Half*, c10::Half*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_tc_wgrad3d<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, c10::BFloat16*, const Plan&, bool, const at::TensorBase&, cudaStream_t);

}  // namespace convx::cuda
