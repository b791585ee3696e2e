// A float GEMM with a packed right-hand side, AVX-512 (ops/conv/cpu_gemm.cpp).
#pragma once

#include <ATen/core/Tensor.h>

namespace convx::cpu {
using at::Tensor;
// Whether packed_gemm_rows runs here (x86-64 where ATen's CPU capability is AVX512).
bool packed_gemm_available();
// b: a float [K, N] matrix -> the packed form packed_gemm reads.
Tensor pack_gemm_b(const Tensor& b);
// Rows i < M: c[i][0:N] = start + sum over k < kc of a[i][k] * B[k0 + k][0:N], where start is
// c[i] itself (accumulate), init[0:N] or zero. bp = pack_gemm_b(B) (B: [K, N]); a[i] points at
// element k0 of A's row i.
void packed_gemm_rows(int64_t M, int64_t N, int64_t K, int64_t k0, int64_t kc,
                      const float* const* a, const float* bp, float* const* c,
                      const float* init, bool accumulate);
}  // namespace convx::cpu
