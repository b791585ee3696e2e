// Launcher of the channels-last ring kernel (cl_ring.cuh) and its specialisations: 3x3 at
// stride 1 and 2, 5x5 and 7x7 at stride 1, fp32 / fp16 / bf16.
#include "ops/depthwise_conv/cuda/cl_ring.cuh"
#include "ops/depthwise_conv/cuda/launch.h"

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace convx::cuda {
namespace {

template <typename T, typename WT, int K, int S, int MINB>
bool run(const T* in, const T* w, const T* bias, T* out, ClRing L, cudaStream_t stream) {
  L.wsz = sizeof(WT);
  if (!ring_tile(L, K, K, S, sizeof(T), 256 * MINB)) return false;
  auto kernel = cl_ring<T, WT, K, K, S, MINB>;
  C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kRingSmemMax)));
  const int64_t smem = ring_smem_bytes(L, K, K, sizeof(T));
  int per_sm = 0;
  C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, L.threads, smem));
  if (per_sm < 1 || !ring_bands(L, int64_t(per_sm) * sm_count())) return false;
  kernel<<<static_cast<unsigned>(L.blocks), L.threads, smem, stream>>>(in, w, bias, out, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

template <typename T, int K, int S>
bool run_minb(const T* in, const T* w, const T* bias, T* out, const ClRing& L, int minb, bool wf32,
              cudaStream_t stream) {
  if (wf32 && !std::is_same_v<T, float>) {
    return minb == 3 ? run<T, float, K, S, 3>(in, w, bias, out, L, stream)
                     : run<T, float, K, S, 2>(in, w, bias, out, L, stream);
  }
  return minb == 3 ? run<T, T, K, S, 3>(in, w, bias, out, L, stream) : run<T, T, K, S, 2>(in, w, bias, out, L, stream);
}

}  // namespace

template <typename T>
bool launch_cl_ring(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;  // float64 is for correctness only: the generic kernel
  } else {
    // A/B knob of this branch's device runs (removed before merge): "off" / "cudnn" = not
    // taken; "dXmY[f]" = taken with X steps of lookahead and __launch_bounds__(256, Y), the filter
    // staged in fp32 with "f" (else in T); unset = the routing proposed from the first run (fp32:
    // 3x3 stride 1, D 0; 16-bit: outputs >= 28 wide, D 1).
    const char* knob = std::getenv("CONVX_CLRING");
    int D = sizeof(T) == 4 ? 0 : 1, minb = 2;
    bool wf32 = false;
    const int k = P.k[1], s = P.S[1];
    if (knob && knob[0] == 'd' && std::strlen(knob) >= 4) {
      D = knob[1] - '0', minb = knob[3] - '0', wf32 = knob[4] == 'f';
    } else if (knob) {
      return false;
    } else if (sizeof(T) == 4 ? !(k == 3 && s == 1) : P.out[2] < 28) {
      return false;
    }
    ClRing L{};
    if (!ring_plan(L, P, flip, D, sizeof(T))) return false;
    if (k == 3 && s == 1) return run_minb<T, 3, 1>(in, w, bias, out, L, minb, wf32, stream);
    if (k == 3 && s == 2) return run_minb<T, 3, 2>(in, w, bias, out, L, minb, wf32, stream);
    if (k == 5 && s == 1) return run_minb<T, 5, 1>(in, w, bias, out, L, minb, wf32, stream);
    if (k == 7 && s == 1) return run_minb<T, 7, 1>(in, w, bias, out, L, minb, wf32, stream);
    return false;
  }
}

template bool launch_cl_ring<float>(const float*, const float*, bool, const float*, float*, const Plan&, cudaStream_t);
template bool launch_cl_ring<double>(const double*, const double*, bool, const double*, double*, const Plan&,
                                     cudaStream_t);
template bool launch_cl_ring<c10::Half>(const c10::Half*, const c10::Half*, bool, const c10::Half*, c10::Half*,
                                        const Plan&, cudaStream_t);
template bool launch_cl_ring<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, bool, const c10::BFloat16*,
                                            c10::BFloat16*, const Plan&, cudaStream_t);

}  // namespace convx::cuda
