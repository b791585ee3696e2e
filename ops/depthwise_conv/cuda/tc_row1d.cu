// Launchers of the tensor-core 1-D row kernels (tc_row1d.cuh): fp16 / bf16 forward and stride-1
// data-grad of 1-D filters of 8 to 48 taps (2-4 k-steps), NCL and channels-last, tried before the
// CUDA-core kernels. Measured on the H100 against those (bf16 N8 C1024 L2048, 'same' padding,
// bench/results/h100/session9/req*_sweep.log): faster at every tap count from 9 to 47 in both
// layouts and directions -- 10-15x where only the generic kernel served (9-13, 17-25, 33-47
// taps), 1.24x / 1.66x (NCL k15 / k31, req2) and 1.05x / 1.4x ((N, L, C) k15 / k31, req1) over
// the specialised ones; shorter filters stay on row_warp / cl_row1d (7 taps: no kernel here).
#include "ops/depthwise_conv/cuda/launch.h"
#include "ops/depthwise_conv/cuda/pdl.cuh"
#include "ops/depthwise_conv/cuda/tc_row1d.cuh"

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAMacros.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <array>
#include <atomic>
#include <type_traits>

namespace convx::cuda {

namespace {
// The current GPU's compute capability major, asked of the driver once per device (0: not asked yet).
int cc_major() {
  static std::array<std::atomic<int>, C10_COMPILE_TIME_MAX_GPUS> major{};
  const c10::DeviceIndex dev = c10::cuda::current_device();
  int m = major[dev].load(std::memory_order_relaxed);
  if (m == 0) {
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&m, cudaDevAttrComputeCapabilityMajor, dev));
    major[dev].store(m, std::memory_order_relaxed);
  }
  return m;
}
}  // namespace

// Declared in launch.h.
bool mma16_supported() { return cc_major() >= 8; }

// Declared in pdl.cuh.
bool pdl_supported() { return cc_major() >= 9; }

namespace {

template <typename T, int KS>
void run_ncl(const T* in, const T* w, const T* bias, T* out, const TcRow& L, cudaStream_t stream) {
  const unsigned blocks = static_cast<unsigned>(ceil_div(L.items, kTcWarps));
  tc_row1d<T, KS><<<blocks, 32 * kTcWarps, tc_smem_bytes<KS>(kTcWarps), stream>>>(in, w, bias, out, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// LDSM for 3 k-steps only (measured there; tc_row1d.cuh).
template <typename T, int KS>
void run_cl(const T* in, const T* w, const T* bias, T* out, const TcRowCl& L, cudaStream_t stream) {
  constexpr bool ldsm = KS == 3;
  tc_row1d_cl<T, KS, ldsm><<<L.blocks, kTcClThreads, tc_cl_smem_bytes<KS, ldsm>(), stream>>>(in, w, bias, out, L);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace

template <typename T>
bool launch_tc_row1d(const T* in, const T* w, int wbase, int wstep, const T* bias, T* out, const Plan& P, bool cl,
                     cudaStream_t stream) {
  static_assert(sizeof(T) == 2, "tensor-core rows: fp16 / bf16");
  const int K = P.k[2];
  if (K < 8 || K > 48) return false;
  if (!mma16_supported()) return false;
  int KS = 0;
  if (cl) {
    TcRowCl L{};
    if (!tc_row1d_cl_blocks(L, P, K, wbase, wstep, tc_cl_tiles_per_block(K, P.pad[2][0], P.out[2]), KS)) return false;
    switch (KS) {
      case 2: run_cl<T, 2>(in, w, bias, out, L, stream); return true;
      case 3: run_cl<T, 3>(in, w, bias, out, L, stream); return true;
      case 4: run_cl<T, 4>(in, w, bias, out, L, stream); return true;
      default: return false;
    }
  }
  TcRow L{};
  if (!tc_row1d_items(L, P, K, wbase, wstep, kTcTilesPerWarp, KS)) return false;
  switch (KS) {
    case 2: run_ncl<T, 2>(in, w, bias, out, L, stream); return true;
    case 3: run_ncl<T, 3>(in, w, bias, out, L, stream); return true;
    case 4: run_ncl<T, 4>(in, w, bias, out, L, stream); return true;
    default: return false;
  }
}

template bool launch_tc_row1d<c10::Half>(const c10::Half*, const c10::Half*, int, int, const c10::Half*, c10::Half*,
                                         const Plan&, bool, cudaStream_t);
template bool launch_tc_row1d<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*, int, int,
                                             const c10::BFloat16*, c10::BFloat16*, const Plan&, bool, cudaStream_t);

}  // namespace convx::cuda
