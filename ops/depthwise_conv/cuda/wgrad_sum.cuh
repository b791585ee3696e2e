// The ordered sum of the weight-grads' per-block partials [row][slot][tap] (nc_wgrad.cu,
// nc_depth3d.cu, row1d.cu, row_warp.cu; tc_wgrad1d.cuh sums in the same order inside its kernels): a
// fixed order, so bitwise repeatable.
#pragma once

#include <ATen/OpMathType.h>

#include <algorithm>
#include <cstdint>

#if defined(__CUDACC__)
#include <c10/cuda/CUDAException.h>
#include <cuda_runtime_api.h>
#endif

namespace convx::cuda {

// gw[i] = sum over slots, in order, of part[row][slot][tap] (i = row * taps + tap).
template <typename T>
__global__ void sum_slots(const at::opmath_type<T>* __restrict__ part, T* __restrict__ gw,
                          int64_t rows, int64_t slots, int64_t taps) {
  using acc_t = at::opmath_type<T>;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * taps;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i / taps, tap = i % taps;
    const acc_t* p = part + row * slots * taps + tap;
    acc_t s = acc_t(0);
    for (int64_t k = 0; k < slots; ++k) s += p[k * taps];
    gw[i] = static_cast<T>(s);
  }
}

#if defined(__CUDACC__)
// sum_slots over rows * taps outputs on `stream` (the CPU harness launches the kernel itself).
template <typename T>
void launch_sum_slots(const at::opmath_type<T>* part, T* gw, int64_t rows, int64_t slots, int64_t taps,
                      cudaStream_t stream) {
  const int64_t n = rows * taps;
  sum_slots<T><<<static_cast<unsigned>(std::clamp<int64_t>((n + 255) / 256, 1, 1 << 20)), 256, 0, stream>>>(
      part, gw, rows, slots, taps);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}
#endif

}  // namespace convx::cuda
