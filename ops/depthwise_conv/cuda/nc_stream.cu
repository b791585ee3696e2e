// Launcher of the streaming NC(D)HW phased-correlation kernel (nc_stream.cuh) and its
// compile-time specialisations: filters up to 7 wide, where a thread's row segment and filter
// fit in registers. Wider filters (1x15, 1x31) and everything else stay on nc_gather.
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
namespace {

constexpr int kStreamR = 4;  // outputs per thread along W

// Threads that fill the current GPU once (2048 per SM), for choosing the band height. The SM
// count is asked of the driver once per device, not on every launch (0: not asked yet; two
// threads asking at once store the same value).
int64_t resident_threads() {
  static std::array<std::atomic<int>, C10_COMPILE_TIME_MAX_GPUS> sms{};
  const c10::DeviceIndex dev = c10::cuda::current_device();
  int n = sms[dev].load(std::memory_order_relaxed);
  if (n == 0) {
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    sms[dev].store(n, std::memory_order_relaxed);
  }
  return int64_t(n) * 2048;
}

template <typename T, int KH, int KW, int S, int TH>
bool run(const T* in, const at::opmath_type<T>* w, const T* bias, T* out, const Plan& P,
         const NcStream& L, cudaStream_t stream) {
  const unsigned grid = static_cast<unsigned>(ceil_div(L.items, kStreamThreads));
  nc_stream<T, KH, KW, S, kStreamR, TH><<<grid, kStreamThreads, 0, stream>>>(in, w, bias, out, P, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

// Bands of 8 rows (fewer reloads of the KH-1 halo rows) when that still gives two full waves of
// threads; else 4, so that small planes (7x7, 14x14) keep the GPU busy. One-row filters: 1.
template <typename T, int KH, int KW, int S>
bool run_banded(const T* in, const at::opmath_type<T>* w, const T* bias, T* out, const Plan& P,
                cudaStream_t stream) {
  NcStream L{};
  if constexpr (KH == 1) {
    if (!stream_items(L, P, kStreamR, 1)) return false;
    return run<T, KH, KW, S, 1>(in, w, bias, out, P, L, stream);
  } else {
    if (!stream_items(L, P, kStreamR, 8)) return false;
    if (L.items >= 2 * resident_threads()) return run<T, KH, KW, S, 8>(in, w, bias, out, P, L, stream);
    if (!stream_items(L, P, kStreamR, 4)) return false;
    return run<T, KH, KW, S, 4>(in, w, bias, out, P, L, stream);
  }
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
  if (kh == KH && kw == KW && s == S) return run_banded<T, KH, KW, S>(in, w, bias, out, P, stream);
    CONVX_CASE(1, 2, 1)
    CONVX_CASE(1, 3, 1)
    CONVX_CASE(1, 4, 1)
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
