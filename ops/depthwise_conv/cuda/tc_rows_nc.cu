// Launcher of the tensor-core NC(D)HW rows kernel (tc_rows_nc.cuh): fp16 / bf16 forward and
// stride-1 data-grad of 2-D and 3-D depthwise filters, multiplier 1, tried before the CUDA-core
// kernels (which need a prepared fp32 copy of the filter; this one reads the layer's own); and
// fp32 31 x 26-33 as TF32 where the caller found torch.backends.cudnn.allow_tf32 true
// (RepLKNet k31 N32 C128 56^2: nc_gather 1.16 -> 0.506 ms forward and data-grad, H100,
// bench/results/h100/session11/k31tf_call2_ab.log), NCHW and (session 12) channels-last (NHWC:
// cl_gather 1.109 -> 0.855 ms, bench/results/h100/session12/clk_call2_ab.log).
//
// Taken only where the H100 measured it faster than the kernel it replaces (session 10,
// bench/results/h100/session10/tcnc_req2_bench.log; ms, forward, before -> after):
//   5 x 3 x w, w <= 9 (X3D k5x3 bf16 N16 C192 16x56x56: nc_depth3d 0.743 -> 0.711; since session 11
//   depth3d_nc_smem, tried first, takes X3D's 5 x 3 x 3 on aligned widths of 8k: 0.77 -> 0.60;
//   depth3d_nc_units since session 12);
//   31 x 26-41 2-D (RepLKNet k31 N32 C128 56^2: nc_gather 1.155 -> 0.374-0.40);
//   7 x w 2-D, w <= 9, on planes of at least 56 x 56 (ConvNeXt k7 N64 C96 56^2: nc_plane 0.110 ->
//   0.099-0.100).
// Square 7 x 7 on planes nc_plane.cu holds is taken by nc_plane first (session 11: 0.083 against
// 0.099 ms on ConvNeXt 56^2); larger planes and 7 x w with w != 7 still come here.
// Declined, because slower there: 7x7 on 14 x 14 planes (0.070 against nc_small_planes' 0.035), 3x3
// and 5x5 (MobileNetV2 56^2 bf16 0.126 against 0.095, EfficientNet 28^2 0.077 against 0.064).
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/tc_rows_nc.cuh"

#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <atomic>
#include <type_traits>

namespace convx::cuda {

namespace {

template <typename T, int KD, int KH, int KS, int MT = 1, bool CL = false>
void run(const T* in, const T* w, const T* bias, T* out, const TcRowsNc& L, cudaStream_t stream) {
  const int bytes = tcn_smem_bytes<T, KD, KH, KS, MT>(L.kw, L.pitch);
  if (bytes > 48 * 1024) {  // above the default limit: opt in once per size reached
    static std::atomic<int> opted{0};
    if (opted.load(std::memory_order_relaxed) < bytes) {
      C10_CUDA_CHECK(cudaFuncSetAttribute(tc_rows_nc<T, KD, KH, KS, MT, CL>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
      opted.store(bytes, std::memory_order_relaxed);
    }
  }
  tc_rows_nc<T, KD, KH, KS, MT, CL><<<L.items, 32 * L.nw, bytes, stream>>>(in, w, bias, out, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace

bool tc_rows_nc_f32_takes(const Plan& P) {
  // RepLKNet's 31 x 31 and the widths of the same five k-steps of 8 (26-33), on planes of at
  // least 56 x 56: measured there only (smaller planes fill fewer of each step's 32 rows and
  // 8-output blocks; not measured, left to the exact kernels).
  return P.k[0] == 1 && P.k[1] == 31 && P.k[2] >= 26 && P.k[2] <= 33 && P.out[1] >= 56 && P.out[2] >= 56;
}

template <typename T>
bool launch_tc_rows_nc(const T* in, const T* w, bool flip, const T* bias, T* out, const Plan& P, bool cl,
                       cudaStream_t stream) {
  if constexpr (std::is_same_v<T, float>) {
    if (!tc_rows_nc_f32_takes(P) || !mma16_supported()) return false;
    TcRowsNc L{};
    int kd = 0, kh = 0, KS = 0;
    // Two M-tiles (32 output rows) per step, 8 blocks wanted per SM (H100, k31tf_call2_ab.log:
    // RepLKNet 0.506 ms against 0.620 with one M-tile, 0.599 at 4 blocks/SM, 0.509 at 16).
    if (!tc_rows_nc_plan(L, P, flip, in, 8 * sm_count(), kd, kh, KS, 2, cl) || KS != 5) return false;
    if (cl) run<float, 1, 31, 5, 2, true>(in, w, bias, out, L, stream);
    else run<float, 1, 31, 5, 2>(in, w, bias, out, L, stream);
    return true;
  } else {
    const int KD = P.k[0], KH = P.k[1], KW = P.k[2];
    const bool x3d = KD == 5 && KH == 3 && KW <= 9;
    const bool k31 = KD == 1 && KH == 31 && KW >= 26 && KW <= 41;
    const bool k7 = KD == 1 && KH == 7 && KW <= 9 && P.out[1] >= 56 && P.out[2] >= 56;
    if (cl || !(x3d || k31 || k7) || !mma16_supported()) return false;
    // Blocks wanted per SM (H100, tcnc_req2_bench.log): 32 for X3D (0.711 ms against 0.797 at 8),
    // 8 for 2-D (RepLKNet 0.374 against 0.402 at 32; ConvNeXt 0.099 / 0.100).
    TcRowsNc L{};
    int kd = 0, kh = 0, KS = 0;
    if (!tc_rows_nc_plan(L, P, flip, in, (KD > 1 ? 32 : 8) * sm_count(), kd, kh, KS)) return false;
    if (x3d && KS == 1) run<T, 5, 3, 1>(in, w, bias, out, L, stream);
    else if (k31 && KS == 3) run<T, 1, 31, 3>(in, w, bias, out, L, stream);
    else if (k7 && KS == 1) run<T, 1, 7, 1>(in, w, bias, out, L, stream);
    else return false;
    return true;
  }
}

template bool launch_tc_rows_nc<float>(const float*, const float*, bool, const float*, float*, const Plan&, bool,
                                       cudaStream_t);
template bool launch_tc_rows_nc<c10::Half>(const c10::Half*, const c10::Half*, bool, const c10::Half*, c10::Half*,
                                           const Plan&, bool, cudaStream_t);
template bool launch_tc_rows_nc<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, bool, const c10::BFloat16*,
                                               c10::BFloat16*, const Plan&, bool, cudaStream_t);

}  // namespace convx::cuda
