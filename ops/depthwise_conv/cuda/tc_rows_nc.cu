// Launcher of the tensor-core NC(D)HW rows kernel (tc_rows_nc.cuh): fp16 / bf16 forward and
// stride-1 data-grad of 2-D and 3-D depthwise filters, multiplier 1, tried before the CUDA-core
// kernels (which need a prepared fp32 copy of the filter; this one reads the layer's own).
// Built for the filters the model rows reach, as (KD, KH, KS): 2-D KH = 3, 5, 7 with widths up
// to 9 (one k-step), 31 x 26-41 (three k-steps: RepLKNet's 31 x 31); 3-D 3 x 3 x w and
// 5 x 3 x w (X3D), widths up to 9.
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/tc_rows_nc.cuh"

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <atomic>
#include <cstdlib>

namespace convx::cuda {

namespace {

template <typename T, int KD, int KH, int KS, int MINB = (KD > 1 ? 3 : 4)>
void run(const T* in, const T* w, const T* bias, T* out, const TcRowsNc& L, cudaStream_t stream) {
  const int bytes = tcn_smem_bytes<KD, KH, KS>(L.kw, L.pitch);
  if (bytes > 48 * 1024) {  // above the default limit: opt in once per size reached
    static std::atomic<int> opted{0};
    if (opted.load(std::memory_order_relaxed) < bytes) {
      C10_CUDA_CHECK(cudaFuncSetAttribute(tc_rows_nc<T, KD, KH, KS, MINB>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
      opted.store(bytes, std::memory_order_relaxed);
    }
  }
  tc_rows_nc<T, KD, KH, KS, MINB><<<L.items, 32 * L.nw, bytes, stream>>>(in, w, bias, out, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace

template <typename T>
bool launch_tc_rows_nc(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, cudaStream_t stream) {
  static_assert(sizeof(T) == 2, "tensor-core rows: fp16 / bf16");
  if (!mma16_supported()) return false;
  static const bool ab_off = [] {  // TEMPORARY A/B knob (session 10 device call), removed after
    const char* e = std::getenv("CONVX_TCNC_AB");
    return e != nullptr && e[0] == '0';
  }();
  if (ab_off) return false;
  static const int ab_t = [] {  // TEMPORARY A/B knob: target blocks per SM
    const char* e = std::getenv("CONVX_TCNC_T");
    return e != nullptr ? std::atoi(e) : 32;
  }();
  static const bool ab_minb2 = [] {  // TEMPORARY A/B knob: 5x3xw with 2 blocks per SM (no register cap)
    const char* e = std::getenv("CONVX_TCNC_MINB");
    return e != nullptr && e[0] == '2';
  }();
  TcRowsNc L{};
  int KD = 0, KH = 0, KS = 0;
  if (!tc_rows_nc_plan(L, P, flip, in, ab_t * sm_count(), KD, KH, KS)) return false;
  if (KD == 1 && KS == 1) {
    switch (KH) {
      case 3: run<T, 1, 3, 1>(in, w, bias, out, L, stream); return true;
      case 5: run<T, 1, 5, 1>(in, w, bias, out, L, stream); return true;
      case 7: run<T, 1, 7, 1>(in, w, bias, out, L, stream); return true;
      default: return false;
    }
  }
  if (KD == 1 && KH == 31 && KS == 3) {
    run<T, 1, 31, 3>(in, w, bias, out, L, stream);
    return true;
  }
  if (KH == 3 && KS == 1) {
    switch (KD) {
      case 3: run<T, 3, 3, 1>(in, w, bias, out, L, stream); return true;
      case 5:
        if (ab_minb2) run<T, 5, 3, 1, 2>(in, w, bias, out, L, stream);
        else run<T, 5, 3, 1>(in, w, bias, out, L, stream);
        return true;
      default: return false;
    }
  }
  return false;
}

template bool launch_tc_rows_nc<c10::Half>(const c10::Half*, const c10::Half*, bool, const c10::Half*, c10::Half*,
                                           const Plan&, cudaStream_t);
template bool launch_tc_rows_nc<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, bool, const c10::BFloat16*,
                                               c10::BFloat16*, const Plan&, cudaStream_t);

}  // namespace convx::cuda
