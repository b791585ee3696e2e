// Launcher of the whole-plane NCHW 7 x 7 weight-grad (plane_wgrad2d.cuh), tried in front of
// walk_wgrad2d; sm_80 and newer (cp.async).
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/plane_wgrad2d.cuh"
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
#include <string>
#include <type_traits>

namespace convx::cuda {
namespace {

// TEMPORARY A/B knob (removed after the measurement): CONVX_PWG = "off" | "<tile_target>,<waves>".
bool knob(int& tile_target, int& waves) {
  const char* e = std::getenv("CONVX_PWG");
  if (e == nullptr) return true;
  if (std::string(e) == "off") return false;
  std::sscanf(e, "%d,%d", &tile_target, &waves);
  return true;
}

template <typename T, int E>
bool run7(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  constexpr int K = 7;
  int tile_target = 128, waves = 1;
  if (!knob(tile_target, waves)) return false;
  auto kernel = plane_wgrad2d<T, K, E>;
  constexpr int64_t max_smem = 110 * 1024;
  PlaneWg L{};
  // the shared memory first (any block count), then as many blocks as run at once
  if (!plane_wgrad2d_plan(L, P, K, tile_target, 1, max_smem, sizeof(T))) return false;
  if (L.smem > 48 * 1024) {
    C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(L.smem)));
  }
  int per_sm = 0;
  C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, L.threads, static_cast<size_t>(L.smem)));
  if (!plane_wgrad2d_plan(L, P, K, tile_target, int64_t(waves) * std::max(per_sm, 1) * sm_count(), max_smem, sizeof(T)))
    return false;
  const int64_t taps = K * K;
  const at::Tensor part = at::empty({P.in_c, int64_t(L.chunks), taps}, like.options().dtype(at::kFloat));
  kernel<<<static_cast<unsigned>(int64_t(L.C) * L.chunks), L.threads, static_cast<size_t>(L.smem), stream>>>(
      x, gy, part.mutable_data_ptr<float>(), L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  launch_sum_slots<T>(part.const_data_ptr<float>(), gw, P.in_c, L.chunks, taps, stream);
  return true;
}

// TEMPORARY A/B knob (removed after the measurement): CONVX_CLBW = "off" | "<band rows>,<waves>".
bool cl_knob(int& band_rows, int& waves) {
  const char* e = std::getenv("CONVX_CLBW");
  if (e == nullptr) return true;
  if (std::string(e) == "off") return false;
  std::sscanf(e, "%d,%d", &band_rows, &waves);
  return true;
}

template <typename T>
bool run7_cl(const T* x, const T* gy, T* gw, const Plan& P, const at::TensorBase& like, cudaStream_t stream) {
  constexpr int K = 7;
  int band_rows = 8, waves = 1;
  if (!cl_knob(band_rows, waves)) return false;
  auto kernel = cl_band_wgrad2d<T, K>;
  constexpr int64_t max_smem = 110 * 1024;
  ClBandWg L{};
  if (!cl_band_wgrad2d_plan(L, P, K, band_rows, 1, max_smem, sizeof(T))) return false;
  if (L.smem > 48 * 1024) {
    C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(L.smem)));
  }
  int per_sm = 0;
  C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, L.threads, static_cast<size_t>(L.smem)));
  if (!cl_band_wgrad2d_plan(L, P, K, band_rows, int64_t(waves) * std::max(per_sm, 1) * sm_count(), max_smem, sizeof(T)))
    return false;
  const int64_t taps = K * K;
  const at::Tensor part = at::empty({P.in_c, int64_t(L.chunks), taps}, like.options().dtype(at::kFloat));
  kernel<<<static_cast<unsigned>(int64_t(L.groups) * L.chunks), L.threads, static_cast<size_t>(L.smem), stream>>>(
      x, gy, part.mutable_data_ptr<float>(), L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  launch_sum_slots<T>(part.const_data_ptr<float>(), gw, P.in_c, L.chunks, taps, stream);
  return true;
}

}  // namespace

template <typename T>
bool launch_plane_wgrad2d(const T* x, const T* gy, T* gw, const Plan& P, bool channels_last, const at::TensorBase& like,
                          cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;
  } else {
    if (!mma16_supported() || P.k[1] != 7) return false;  // cp.async: sm_80+
    // channels-last: 16-byte copies of a pixel's 32-byte channel group (tensors 16-byte aligned)
    if (channels_last)
      return reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(gy) % 16 == 0 &&
             run7_cl<T>(x, gy, gw, P, like, stream);
    // NCHW: 4-byte copies (the tensors' starts 4-byte aligned)
    if (reinterpret_cast<uintptr_t>(x) % 4 != 0 || reinterpret_cast<uintptr_t>(gy) % 4 != 0) return false;
    if constexpr (sizeof(T) == 4) {
      return run7<T, 0>(x, gy, gw, P, like, stream);
    } else {
      return P.pad[2][0] % 2 == 0 ? run7<T, 0>(x, gy, gw, P, like, stream) : run7<T, 1>(x, gy, gw, P, like, stream);
    }
  }
}

template bool launch_plane_wgrad2d<float>(const float*, const float*, float*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_plane_wgrad2d<double>(const double*, const double*, double*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_plane_wgrad2d<c10::Half>(const c10::Half*, const c10::Half*, c10::Half*, const Plan&, bool, const at::TensorBase&, cudaStream_t);
template bool launch_plane_wgrad2d<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, c10::BFloat16*, const Plan&, bool, const at::TensorBase&, cudaStream_t);

}  // namespace convx::cuda
