// The ordered sum of the weight-grads' per-block partials [row][slot][tap] (nc_wgrad.cu,
// nc_depth3d.cu, row1d.cu, row_warp.cu, walk_wgrad2d.cu, cl_band_wgrad2d.cu; tc_wgrad1d.cuh sums
// in the same order inside its kernels): a fixed order, so bitwise repeatable.
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

// The same sum where slots are many (walk_wgrad2d's NHWC partials: ConvNeXt-56 fp32 has 352 slots
// per output, and sum_slots' one thread per output walking them in turn took 56.6 us of a 242 us
// weight-grad, H100, bench/results/h100/session13/w7_call1_kernels.log): a block per (row, tile of
// kSumTaps taps), its kSumGroups thread groups summing kSumGroups consecutive ranges of slots, each
// in order, then the group sums in order. A fixed order for given shapes: bitwise repeatable.
constexpr int kSumTaps = 32, kSumGroups = 16;
template <typename T>
__global__ void sum_slots_grouped(const at::opmath_type<T>* __restrict__ part, T* __restrict__ gw, int64_t slots,
                                  int64_t taps) {
  using acc_t = at::opmath_type<T>;
  __shared__ acc_t red[kSumGroups][kSumTaps];
  const int64_t row = blockIdx.x, tap = int64_t(blockIdx.y) * kSumTaps + threadIdx.x % kSumTaps;
  const int g = static_cast<int>(threadIdx.x / kSumTaps);
  const int64_t len = (slots + kSumGroups - 1) / kSumGroups, k0 = g * len, k1 = k0 + len < slots ? k0 + len : slots;
  acc_t s = acc_t(0);
  if (tap < taps) {
    const acc_t* p = part + row * slots * taps + tap;
    for (int64_t k = k0; k < k1; ++k) s += p[k * taps];
  }
  red[g][threadIdx.x % kSumTaps] = s;
  __syncthreads();
  if (g == 0 && tap < taps) {
    acc_t t = acc_t(0);
    for (int i = 0; i < kSumGroups; ++i) t += red[i][threadIdx.x];
    gw[row * taps + tap] = static_cast<T>(t);
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
// sum_slots_grouped over rows x taps outputs on `stream`.
template <typename T>
void launch_sum_slots_grouped(const at::opmath_type<T>* part, T* gw, int64_t rows, int64_t slots, int64_t taps,
                              cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(rows), static_cast<unsigned>((taps + kSumTaps - 1) / kSumTaps));
  sum_slots_grouped<T><<<grid, kSumTaps * kSumGroups, 0, stream>>>(part, gw, slots, taps);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}
#endif

}  // namespace convx::cuda
