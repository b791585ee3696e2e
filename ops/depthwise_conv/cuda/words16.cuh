#pragma once
// 16-bit storage to fp32 in registers, shared by the 16-bit weight-grads (cl_wgrad.cu's load_acc /
// raw_to_acc, nc_wgrad_s2d.cuh): the VW values held in the 32-bit words u (two values each; VW == 1:
// the low half of u[0]), converted from the words themselves, with no repacking into c10::Half /
// BFloat16 first. Device code only: the CPU builds of these kernels (cpp_tests/cuda_on_cpu)
// convert element by element.
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

#include <cstring>
#include <type_traits>

namespace convx::cuda {

template <typename T, int VW>
__device__ __forceinline__ void words_to_acc(const unsigned (&u)[(VW + 1) / 2], float (&out)[VW]) {
#ifdef __CUDA_ARCH__
  if constexpr (VW == 1) {
    if constexpr (std::is_same_v<T, c10::Half>) {
      out[0] = __half2float(__ushort_as_half(static_cast<unsigned short>(u[0])));
    } else {
      out[0] = __uint_as_float(u[0] << 16);
    }
  } else {
#pragma unroll
    for (int k = 0; k < VW / 2; ++k) {
      if constexpr (std::is_same_v<T, c10::Half>) {
        __half2 h;
        memcpy(&h, &u[k], 4);
        const float2 f = __half22float2(h);
        out[2 * k] = f.x, out[2 * k + 1] = f.y;
      } else {
        out[2 * k] = __uint_as_float(u[k] << 16), out[2 * k + 1] = __uint_as_float(u[k] & 0xffff0000u);
      }
    }
  }
#endif
}

}  // namespace convx::cuda
