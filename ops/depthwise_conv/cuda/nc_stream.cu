// Launcher of the streaming NC(D)HW phased-correlation kernel (nc_stream.cuh) and its
// compile-time specialisations: 1-D rows / 1xK filters of 2, 3, 4, 15 and 31 taps, square filters
// up to 7 wide, where a thread's row segment and filter fit in registers. Everything else (31x31,
// other filters and strides, float64) stays on nc_gather.
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/nc_stream.cuh"

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAMacros.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <type_traits>

namespace convx::cuda {

int64_t sm_count() {
  static std::array<std::atomic<int>, C10_COMPILE_TIME_MAX_GPUS> sms{};
  const c10::DeviceIndex dev = c10::cuda::current_device();
  int n = sms[dev].load(std::memory_order_relaxed);
  if (n == 0) {
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    sms[dev].store(n, std::memory_order_relaxed);
  }
  return n;
}

bool allow_dynamic_smem(const void* kernel, int64_t bytes) {
  static std::array<std::atomic<int>, C10_COMPILE_TIME_MAX_GPUS> limits{};
  const c10::DeviceIndex dev = c10::cuda::current_device();
  int optin = limits[dev].load(std::memory_order_relaxed);
  if (optin == 0) {
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    limits[dev].store(optin, std::memory_order_relaxed);
  }
  if (bytes > optin) return false;
  C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  return true;
}

namespace {

template <typename T, int KH, int KW, int S, int R, int TH, bool VEC = stream_vec<T, KH>()>
bool run(const T* in, const at::opmath_type<T>* w, const T* bias, T* out, const Plan& P,
         cudaStream_t stream) {
  const unsigned threads = kStreamThreads;
  if constexpr (VEC) {
    NcStreamVec L{};
    if (!stream_vec_items(L, P, R, TH)) return false;
    nc_stream_vec<T, KH, KW, S, R, TH, stream_min_blocks<T, KH, KW>()>
        <<<static_cast<unsigned>(ceil_div(L.items, threads)), threads, 0, stream>>>(in, w, bias, out, P, L);
  } else {
    NcStream L{};
    if (!stream_items(L, P, R, TH)) return false;
    nc_stream<T, KH, KW, S, R, TH><<<static_cast<unsigned>(ceil_div(L.items, threads)), threads, 0, stream>>>(in, w, bias, out, P, L);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

// The tiles of nc_stream.cuh (stream_strip, stream_band_*): for fp32 2-D the tall band (fewer
// reloads of the KH-1 halo rows) when that still gives two full waves of threads, else the short
// one (7x7, 14x14 planes).
template <typename T, int KH, int KW, int S>
bool run_tiled(const T* in, const at::opmath_type<T>* w, const T* bias, T* out, const Plan& P,
               cudaStream_t stream) {
  constexpr int R = stream_strip<T, KH, KW>();
  constexpr int tall = stream_band_tall<T, KH, KW>(), shrt = stream_band_short<T, KH, KW>();
  if constexpr (tall != shrt) {
    NcStream L{};
    if (stream_items(L, P, R, tall) && L.items < 2 * sm_count() * 2048) {
      return run<T, KH, KW, S, R, shrt>(in, w, bias, out, P, stream);
    }
  }
  return run<T, KH, KW, S, R, tall>(in, w, bias, out, P, stream);
}

}  // namespace

template <typename T>
bool launch_nc_stream(const T* in, const at::opmath_type<T>* w, const T* bias, T* out,
                      const Plan& P, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;  // float64 is for correctness only: nc_gather's generic kernel
  } else {
    const int kh = P.k[1], kw = P.k[2], s = P.S[1] == P.S[2] ? P.S[1] : 0;
#define CONVX_CASE(KH, KW, S) \
  if (kh == KH && kw == KW && s == S) return run_tiled<T, KH, KW, S>(in, w, bias, out, P, stream);
    CONVX_CASE(1, 2, 1)
    CONVX_CASE(1, 3, 1)
    CONVX_CASE(1, 4, 1)
    CONVX_CASE(1, 15, 1)
    CONVX_CASE(1, 31, 1)
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

template bool launch_nc_stream<float>(const float*, const float*, const float*, float*, const Plan&, cudaStream_t);
template bool launch_nc_stream<double>(const double*, const double*, const double*, double*, const Plan&, cudaStream_t);
template bool launch_nc_stream<c10::Half>(const c10::Half*, const float*, const c10::Half*, c10::Half*, const Plan&, cudaStream_t);
template bool launch_nc_stream<c10::BFloat16>(const c10::BFloat16*, const float*, const c10::BFloat16*, c10::BFloat16*, const Plan&, cudaStream_t);

}  // namespace convx::cuda
