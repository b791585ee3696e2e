// The ordered sum of the NC(D)HW weight-grads' per-block partials (nc_wgrad.cu, nc_depth3d.cu).
#pragma once

#include <ATen/OpMathType.h>

#include <cstdint>

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

}  // namespace convx::cuda
