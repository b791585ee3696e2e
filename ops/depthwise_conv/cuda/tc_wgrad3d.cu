// Launcher of the tensor-core weight-grad of KD x 3 x 3 filters in fp16 / bf16 (tc_wgrad3d.cuh),
// tried in front of nc_wgrad_depth3d / cl_wgrad_depth3d on sm_80 and newer: NCDHW KD 3 and 5,
// NDHWC KD 5 only. Measured against those (H100, session 10, the weight-grad kernel + its chunk
// sum, bench/results/h100/session10/x3dwg_call2_bench.log): X3D k5x3x3 bf16 NCDHW 1092 -> 422 us,
// NDHWC 1027 -> 997; k3 bf16 NCDHW 666 -> 355, NDHWC 548 -> 725 (slower: left to
// cl_wgrad_depth3d). Since session 11 cl_wgrad_d3r (cl_wgrad.cu), tried before, takes the NDHWC
// 5 x 3 x 3 widths of 8k with width padding 1 (X3D: 978 -> 787 us).
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
// (N16, C192, 16 x 56 x 56): NCDHW KD 5 192 channels x 224 tiles in 8 chunks of 28 (2.9 waves of
// 4 blocks per SM: tcw3_nc_blocks; session 14, measured with it), KD 3 the 4096 of session 10;
// NDHWC 24 channel groups x 896 tiles in 82 chunks of 11 (15 waves of 1).
constexpr int64_t kTcw3Nc5Target = 1536, kTcw3Nc3Target = 4096, kTcw3ClTarget = 2048;

template <typename T, int KD, bool CL>
bool run(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  Tcw3 L{};
  const bool aligned = reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(gy) % 16 == 0;
  if (!tcw3_plan(L, P, CL, CL ? kTcw3ClTarget : (KD == 5 ? kTcw3Nc5Target : kTcw3Nc3Target), aligned)) return false;
  constexpr int NV = 9 * KD, smem = tcw3_smem_bytes<KD>(CL);
  const auto kernel = [] {  // only the reachable kernels are instantiated
    if constexpr (CL) {
      return tcw3_cl<T, KD>;
    } else {
      return tcw3_nc<T, KD>;
    }
  }();
  C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  if constexpr (!CL && tcw3_nc_blocks<KD>() > 3) {  // 4 x 54.5 KB: the largest shared-memory carveout
    C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        cudaSharedmemCarveoutMaxShared));
  }
  const at::Tensor part = at::empty({L.chunks > 1 ? P.out_c * L.chunks * NV : 0}, like.options().dtype(at::kFloat));
  kernel<<<L.groups * L.chunks, CL ? kTcw3ClThreads : kTcw3Threads, smem, stream>>>(
      x, gy, part.mutable_data_ptr<float>(), gw, L);
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
    if (channels_last) return P.k[0] == 5 && run<T, 5, true>(x, gy, gw, P, like, stream);  // tcw3_plan: KD 5 only
    if (P.k[0] == 5) return run<T, 5, false>(x, gy, gw, P, like, stream);
    if (P.k[0] == 3) return run<T, 3, false>(x, gy, gw, P, like, stream);
    return false;
  }
}

template bool launch_tc_wgrad3d<float>(const float*, const float*, float*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_tc_wgrad3d<double>(const double*, const double*, double*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_tc_wgrad3d<c10::Half>(const c10::Half*, const c10::Half*, c10::Half*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_tc_wgrad3d<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, c10::BFloat16*, const Plan&, bool, const at::TensorBase&, cudaStream_t);

}  // namespace convx::cuda
