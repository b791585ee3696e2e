// Launcher of the channels-last K x K weight-grad from staged bands (cl_band_wgrad2d.cuh), tried in
// front of walk_wgrad2d (fp32 7 x 7), tc_wgrad2d (16-bit 7 x 7) and cl_wgrad_partial (fp32 5 x 5),
// for the shapes where it measured faster (H100, weight-grad alone, main's kernel against this one,
// ms).
// Session 13 (bench/results/h100/session13/w7_call2_ab.log), tiles of 8 columns, sum_slots after:
//   ConvNeXt-56 (56 x 56, 96 channels), bands of 8 rows: fp32 0.242 -> 0.125 (walk_wgrad2d + its
//   chunk sum), fp16 / bf16 0.107 -> 0.095 / 0.094 (tc_wgrad2d);
//   ConvNeXt-14 (14 x 14, 384 channels), one band of the whole plane: fp32 0.068 -> 0.052, fp16 /
//   bf16 0.0385 -> 0.035 / 0.036.
// Bands of 16 rows do not fit two stages of a 56-wide plane in 110 KB; bands of 4 rows and two
// waves of blocks measured slower on both rows (same log). Outputs narrower than 14 or wider than
// 56: not measured, left to the others.
// Session 14 (clw; bench/results/h100/session14/clw_call1_ab.log), fp32 on tiles of 4 columns with
// the chunk sum in the group's last block, against session 13's fp32 kernel: ConvNeXt-56 0.1197 ->
// 0.1171, ConvNeXt-14 0.0483 -> 0.0421; 5 x 5 on EfficientNet-B0's 28 x 28 (240 channels), bands of
// 16 rows, against cl_wgrad_partial + sum_chunks: 0.0937 -> 0.0608 (5 x 5 measured there only:
// outputs 24 to 32 wide). 16-bit keeps tiles of 8 columns and sum_slots: the folded sum measured
// 0.99x on ConvNeXt-56 and 0.86x on ConvNeXt-14, and up to 255 registers (a 128-thread bound)
// 0.89-0.94x (same log).
#include "ops/depthwise_conv/cuda/cl_band_wgrad2d.cuh"
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/wgrad_sum.cuh"

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace convx::cuda {
namespace {

// Bands of 16 rows where two stages fit, else of 8; first for the shared memory, then with as many
// blocks as run at once (one wave). fused: the group's last block sums the chunks (zeroed
// counters), else sum_slots after.
template <typename T, int K, int TC, bool Fused>
bool run(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  constexpr int64_t max_smem = 110 * 1024;  // two stages: at least two blocks per SM
  constexpr int NV = K * K;
  auto kernel = cl_band_wgrad2d<T, K, TC>;
  ClBandWg L{};
  int band_rows = 16;
  if (!cl_band_wgrad2d_plan(L, P, K, TC, band_rows, 1, max_smem, sizeof(T))) {
    band_rows = 8;
    if (!cl_band_wgrad2d_plan(L, P, K, TC, band_rows, 1, max_smem, sizeof(T))) return false;
  }
  if (L.smem > 48 * 1024) {
    C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(L.smem)));
  }
  int per_sm = 0;
  C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, L.threads, static_cast<size_t>(L.smem)));
  if (!cl_band_wgrad2d_plan(L, P, K, TC, band_rows, int64_t(std::max(per_sm, 1)) * sm_count(), max_smem, sizeof(T)))
    return false;
  // partials [C][chunks][taps], then (fused) the groups' zeroed counters
  const int64_t nf = P.in_c * L.chunks * NV;
  const at::Tensor buf = at::empty({nf + (Fused ? L.groups : 0)}, like.options().dtype(at::kFloat));
  float* part = buf.mutable_data_ptr<float>();
  unsigned* counters = nullptr;
  if constexpr (Fused) {
    counters = reinterpret_cast<unsigned*>(part + nf);
    if (L.chunks > 1) C10_CUDA_CHECK(cudaMemsetAsync(counters, 0, L.groups * sizeof(unsigned), stream));
  }
  kernel<<<static_cast<unsigned>(int64_t(L.groups) * L.chunks), L.threads, static_cast<size_t>(L.smem), stream>>>(
      x, gy, part, counters, gw, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  if constexpr (!Fused) launch_sum_slots<T>(part, gw, P.in_c, L.chunks, NV, stream);
  return true;
}

}  // namespace

template <typename T>
bool launch_cl_band_wgrad2d(const T* x, const T* gy, T* gw, const Plan& P, bool channels_last,
                            const at::TensorBase& like, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;
  } else {
    // cp.async (sm_80+) of 16-byte halves of a pixel's 32-byte channel group
    if (!channels_last || !mma16_supported() || P.q[2] < 14 || P.q[2] > 56 ||
        reinterpret_cast<uintptr_t>(x) % 16 != 0 || reinterpret_cast<uintptr_t>(gy) % 16 != 0)
      return false;
    if constexpr (std::is_same_v<T, float>) {
      if (P.k[1] == 7) return run<T, 7, 4, true>(x, gy, gw, P, like, stream);
      if (P.k[1] == 5 && P.q[2] >= 24 && P.q[2] <= 32) return run<T, 5, 4, true>(x, gy, gw, P, like, stream);
      return false;
    } else {
      return P.k[1] == 7 && run<T, 7, 8, false>(x, gy, gw, P, like, stream);
    }
  }
}

template bool launch_cl_band_wgrad2d<float>(const float*, const float*, float*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_cl_band_wgrad2d<double>(const double*, const double*, double*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_cl_band_wgrad2d<c10::Half>(const c10::Half*, const c10::Half*, c10::Half*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_cl_band_wgrad2d<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, c10::BFloat16*, const Plan&, bool, const at::TensorBase&, cudaStream_t);

}  // namespace convx::cuda
