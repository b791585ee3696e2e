// Launcher of the channels-last 7 x 7 weight-grad from staged bands (cl_band_wgrad2d.cuh), tried in
// front of walk_wgrad2d (fp32) and tc_wgrad2d (16-bit), for the shapes where it measured faster
// (H100, session 13, weight-grad alone, main's kernel against this one, ms;
// bench/results/h100/session13/w7_call2_ab.log):
//   ConvNeXt-56 (56 x 56, 96 channels), bands of 8 rows: fp32 0.242 -> 0.125 (walk_wgrad2d + its
//   chunk sum), fp16 / bf16 0.107 -> 0.095 / 0.094 (tc_wgrad2d);
//   ConvNeXt-14 (14 x 14, 384 channels), one band of the whole plane: fp32 0.068 -> 0.052, fp16 /
//   bf16 0.0385 -> 0.035 / 0.036.
// Bands of 16 rows do not fit two stages of a 56-wide plane in 110 KB; bands of 4 rows and two
// waves of blocks measured slower on both rows (same log). Outputs narrower than 14 or wider than
// 56: not measured, left to the others.
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
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace convx::cuda {
namespace {

// TEMPORARY A/B knob (session 14, clw; removed after the A/B): CONVX_CLW unset or "off": main's
// routing (7 x 7 only, TC 8, bands of 16 rows where two stages fit else 8, sum_slots launched
// after); "<TC>,<band rows>,<fused 0|1>": that variant (5 x 5 fp32 too).
struct ClwKnob {
  bool off = true;
  int tc = 8, band = 8, fused = 0, maxt = 256;
};
ClwKnob clw_knob() {
  ClwKnob k;
  const char* e = std::getenv("CONVX_CLW");
  if (e != nullptr && std::strcmp(e, "off") != 0 && std::sscanf(e, "%d,%d,%d,%d", &k.tc, &k.band, &k.fused, &k.maxt) >= 3) k.off = false;
  return k;
}

template <typename T, int K, int TC, int MAXT = kBandWgMaxThreads>
bool run(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream,
         int band_a, int band_b, bool fused) {
  constexpr int64_t max_smem = 110 * 1024;  // two stages: at least two blocks per SM
  constexpr int NV = K * K;
  auto kernel = cl_band_wgrad2d<T, K, TC, MAXT>;
  ClBandWg L{};
  // band_a rows where two stages fit, else band_b; first for the shared memory, then with as many
  // blocks as run at once (one wave).
  int band_rows = band_a;
  if (!cl_band_wgrad2d_plan(L, P, K, TC, band_rows, 1, max_smem, sizeof(T), MAXT)) {
    band_rows = band_b;
    if (!cl_band_wgrad2d_plan(L, P, K, TC, band_rows, 1, max_smem, sizeof(T), MAXT)) return false;
  }
  if (L.smem > 48 * 1024) {
    C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(L.smem)));
  }
  int per_sm = 0;
  C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, L.threads, static_cast<size_t>(L.smem)));
  if (!cl_band_wgrad2d_plan(L, P, K, TC, band_rows, int64_t(std::max(per_sm, 1)) * sm_count(), max_smem, sizeof(T), MAXT))
    return false;
  // partials [C][chunks][taps], then (fused) the groups' zeroed counters
  const int64_t nf = P.in_c * L.chunks * NV;
  const at::Tensor buf = at::empty({nf + L.groups}, like.options().dtype(at::kFloat));
  float* part = buf.mutable_data_ptr<float>();
  unsigned* counters = nullptr;
  if (fused) {
    counters = reinterpret_cast<unsigned*>(part + nf);
    if (L.chunks > 1) C10_CUDA_CHECK(cudaMemsetAsync(counters, 0, L.groups * sizeof(unsigned), stream));
  }
  kernel<<<static_cast<unsigned>(int64_t(L.groups) * L.chunks), L.threads, static_cast<size_t>(L.smem), stream>>>(
      x, gy, part, counters, gw, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  if (!fused) launch_sum_slots<T>(part, gw, P.in_c, L.chunks, NV, stream);
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
    const ClwKnob k = clw_knob();
    if (k.off) {
      if (P.k[1] != 7) return false;
      return run<T, 7, 8>(x, gy, gw, P, like, stream, 16, 8, false);
    }
    const bool ok = [&] {
    if (P.k[1] == 7) {
      if (k.tc == 4) {
        if constexpr (std::is_same_v<T, float>) return run<T, 7, 4>(x, gy, gw, P, like, stream, k.band, 8, k.fused != 0);
        return false;
      }
      if (k.maxt == 128) return run<T, 7, 8, 128>(x, gy, gw, P, like, stream, k.band, 8, k.fused != 0);
      return run<T, 7, 8>(x, gy, gw, P, like, stream, k.band, 8, k.fused != 0);
    }
    if constexpr (std::is_same_v<T, float>) {
      if (P.k[1] == 5) {
        if (k.tc == 4) return run<T, 5, 4>(x, gy, gw, P, like, stream, k.band, 8, k.fused != 0);
        if (k.maxt == 128) return run<T, 5, 8, 128>(x, gy, gw, P, like, stream, k.band, 8, k.fused != 0);
        return run<T, 5, 8>(x, gy, gw, P, like, stream, k.band, 8, k.fused != 0);
      }
    }
    return false;
    }();
    if (!ok && (P.k[1] == 7 || P.k[1] == 5)) std::fprintf(stderr, "CONVX_CLW %s: declined\n", std::getenv("CONVX_CLW"));
    return ok;
  }
}

template bool launch_cl_band_wgrad2d<float>(const float*, const float*, float*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_cl_band_wgrad2d<double>(const double*, const double*, double*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_cl_band_wgrad2d<c10::Half>(const c10::Half*, const c10::Half*, c10::Half*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_cl_band_wgrad2d<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, c10::BFloat16*, const Plan&, bool, const at::TensorBase&, cudaStream_t);

}  // namespace convx::cuda
