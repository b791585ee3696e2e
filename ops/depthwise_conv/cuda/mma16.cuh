// One warp-wide tensor-core step for 16-bit depthwise kernels: D (16x8, fp32) += A (16x16) * B
// (16x8), A and B in fp16 or bf16, products exact and sums in fp32 (mma.sync m16n8k16, sm_80+),
// so a 16-bit kernel that feeds its taps through it keeps the fp32 accumulation the CUDA-core
// kernels have. mma1688_tf32 (below) is the fp32 kernels' TF32 step.
//
// Fragments (PTX ISA, "mma.m16n8k16" for .f16/.bf16; g = lane / 4, t = lane % 4), each 32-bit
// register holding two 16-bit values, the lower column (A) or row (B) in the low half:
//   a[0]: A[g][2t, 2t+1]     a[1]: A[g+8][2t, 2t+1]   a[2]: A[g][2t+8, 2t+9]   a[3]: A[g+8][2t+8, 2t+9]
//   b[0]: B[2t, 2t+1][g]     b[1]: B[2t+8, 2t+9][g]
//   d[0], d[1]: D[g][2t, 2t+1]                        d[2], d[3]: D[g+8][2t, 2t+1]
//
// tc_ldsm_x4 / tc_ldsm_x2 / tc_ldsm_x4_trans (ldmatrix) load A fragments from shared memory
// (tc_row1d, tc_rows_nc, tc_wgrad2d, tc_wgrad3d).
//
// Outside nvcc (the CPU harness, cpp_tests/cuda_on_cpu/shim.h) the step is emulated by the
// shim's warp exchange: every lane of the block must make the same calls (as for its shuffles).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

namespace convx::cuda {

// Two 16-bit values packed as an MMA operand register, lo in the low half.
template <typename T>
__device__ __forceinline__ uint32_t pack16x2(T lo, T hi) {
  static_assert(sizeof(T) == 2, "pack16x2: 16-bit types only");
  uint16_t l, h;
  std::memcpy(&l, &lo, 2);
  std::memcpy(&h, &hi, 2);
  return uint32_t(l) | (uint32_t(h) << 16);
}

#if defined(__CUDACC__)
template <typename T>
__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  static_assert(std::is_same_v<T, c10::Half> || std::is_same_v<T, c10::BFloat16>, "mma16816: fp16 or bf16");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same_v<T, c10::BFloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
#else
  // Launchers only choose a tensor-core kernel on sm_80 and newer (mma16_supported); this body
  // exists so that older architectures in TORCH_CUDA_ARCH_LIST still compile.
  __trap();
#endif
}
#else
// The CPU harness: gather the warp's fragments through the shim's exchange, compute this lane's
// four outputs in the fragment layout above.
template <typename T>
void mma16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const uint32_t* frags = shim_warp_exchange(a, b);  // [lane][6]: a[0..3], b[0..1] of the warp's lanes
  auto half = [](uint32_t r, int hi) {
    const uint16_t bits = static_cast<uint16_t>(hi ? r >> 16 : r & 0xffffu);
    T v;
    std::memcpy(&v, &bits, 2);
    return static_cast<float>(v);
  };
  auto A = [&](int row, int col) {  // owner lane g = row % 8, t = (col % 8) / 2
    const int g = row % 8, t = (col % 8) / 2, reg = (row >= 8 ? 1 : 0) + (col >= 8 ? 2 : 0);
    return half(frags[(g * 4 + t) * 6 + reg], col & 1);
  };
  auto B = [&](int row, int col) {  // owner lane g = col, t = (row % 8) / 2
    const int t = (row % 8) / 2, reg = row >= 8 ? 1 : 0;
    return half(frags[(col * 4 + t) * 6 + 4 + reg], row & 1);
  };
  const int g = lane / 4, t = lane % 4;
  for (int i = 0; i < 4; ++i) {
    const int row = g + (i >= 2 ? 8 : 0), col = 2 * t + (i & 1);
    float s = d[i];
    for (int k = 0; k < 16; ++k) s += A(row, k) * B(k, col);
    d[i] = s;
  }
  shim_warp_release();
}
#endif

// fp32 on tensor cores (TF32, taken only where torch.backends.cudnn.allow_tf32 allows it): one
// warp-wide m16n8k8 step, D (16x8, fp32) += A (16x8) * B (8x8), A and B fp32 bit patterns of
// which the tensor core uses sign, exponent and the top 10 mantissa bits (tf32_round first gives
// round-to-nearest instead of dropping the rest). Fragments (PTX ISA, "mma.m16n8k8" for .tf32;
// g = lane / 4, t = lane % 4), one value per register:
//   a[0]: A[g][t]   a[1]: A[g+8][t]   a[2]: A[g][t+4]   a[3]: A[g+8][t+4]
//   b[0]: B[t][g]   b[1]: B[t+4][g]   d as for m16n8k16.
// The A fragment is tc_ldsm_x4 over rows of 8 fp32 values (each 8x8 16-bit matrix is 8 rows x 4
// fp32 columns, lane g t receiving row g, column t).
#if defined(__CUDACC__)
__device__ __forceinline__ uint32_t tf32_round(uint32_t bits) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(__uint_as_float(bits)));
  return r;
#else
  __trap();
  return bits;
#endif
}
__device__ __forceinline__ void mma1688_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  __trap();  // launchers take the tensor-core kernels on sm_80 and newer only
#endif
}
#else
// Round to nearest, ties away from zero, to 10 mantissa bits (cvt.rna.tf32.f32); Inf and NaN
// unchanged.
inline uint32_t tf32_round(uint32_t bits) {
  if ((bits & 0x7f800000u) == 0x7f800000u) return bits;
  return (bits + 0x1000u) & 0xffffe000u;
}
// The CPU harness: the tensor core's view of an operand is its top 19 bits (the kernels round
// before), products exact in float (11 x 11 significant bits), sums in float.
inline void mma1688_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const uint32_t* frags = shim_warp_exchange(a, b);
  auto val = [](uint32_t r) {
    const uint32_t bits = r & 0xffffe000u;
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  };
  auto A = [&](int row, int col) { return val(frags[((row % 8) * 4 + col % 4) * 6 + (row >= 8) + 2 * (col >= 4)]); };
  auto B = [&](int row, int col) { return val(frags[(col * 4 + row % 4) * 6 + 4 + (row >= 4)]); };
  const int g = lane / 4, t = lane % 4;
  for (int i = 0; i < 4; ++i) {
    const int row = g + (i >= 2 ? 8 : 0), col = 2 * t + (i & 1);
    float s = d[i];
    for (int k = 0; k < 8; ++k) s += A(row, k) * B(k, col);
    d[i] = s;
  }
  shim_warp_release();
}
#endif

// ldmatrix.x4: the A fragment (mma16.cuh's layout) of the 16 x 16 matrix whose row (lane % 8) +
// 8 (lane / 8 % 2), columns 8 (lane / 16) + [0, 8), starts at this lane's p (16-byte aligned
// shared memory). The CPU harness gathers the rows through the shim's shuffle (block-uniform).
#if defined(__CUDACC__)
__device__ __forceinline__ void tc_ldsm_x4(uint32_t (&a)[4], const uint32_t* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(addr)
               : "memory");
#else
  __trap();  // launchers take the tensor-core kernels on sm_80 and newer only
#endif
}
#else
inline void tc_ldsm_x4(uint32_t (&a)[4], const uint32_t* p) {
  const int lane = static_cast<int>(threadIdx.x % 32), g = lane / 4, t = lane % 4;
  for (int j = 0; j < 4; ++j) a[j] = __shfl_sync(0xffffffffu, p, 8 * j + g)[t];
}
#endif

// ldmatrix.x2: a[0] and a[2] of an A fragment whose row lane % 8, columns 8 (lane / 8) + [0, 8),
// starts at lane (< 16)'s p; a[1] = a[3] = 0 (rows 8-15). CPU harness: the shim's shuffle.
#if defined(__CUDACC__)
__device__ __forceinline__ void tc_ldsm_x2(uint32_t (&a)[4], const uint32_t* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(a[0]), "=r"(a[2])
               : "r"(addr)
               : "memory");
#else
  __trap();  // launchers take the tensor-core kernels on sm_80 and newer only
#endif
  a[1] = a[3] = 0;
}
#else
inline void tc_ldsm_x2(uint32_t (&a)[4], const uint32_t* p) {
  const int lane = static_cast<int>(threadIdx.x % 32), g = lane / 4, t = lane % 4;
  for (int j = 0; j < 2; ++j) a[2 * j] = __shfl_sync(0xffffffffu, p, 8 * j + g)[t];
  a[1] = a[3] = 0;
}
#endif

// ldmatrix.x4.trans: matrix j (rows at lanes 8j ... 8j + 7's p, 8 16-bit values each) transposed,
// so that a[j] of lane (g, t) holds rows 2t and 2t + 1 of column g: here column g = channel g and
// rows = 8 consecutive positions, i.e. channel g's values at positions 2t, 2t + 1 (one word of the
// channel's shared row, in tc_wgrad2d's channels-last tiles). CPU harness: the shim's shuffle.
#if defined(__CUDACC__)
__device__ __forceinline__ void tc_ldsm_x4_trans(uint32_t (&a)[4], const uint32_t* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(addr)
               : "memory");
#else
  __trap();  // launchers take the tensor-core kernels on sm_80 and newer only
#endif
}
#else
inline void tc_ldsm_x4_trans(uint32_t (&a)[4], const uint32_t* p) {
  const int lane = static_cast<int>(threadIdx.x % 32), g = lane / 4, t = lane % 4;
  for (int j = 0; j < 4; ++j) {
    const uint16_t* r0 = reinterpret_cast<const uint16_t*>(__shfl_sync(0xffffffffu, p, 8 * j + 2 * t));
    const uint16_t* r1 = reinterpret_cast<const uint16_t*>(__shfl_sync(0xffffffffu, p, 8 * j + 2 * t + 1));
    a[j] = uint32_t(r0[g]) | (uint32_t(r1[g]) << 16);
  }
}
#endif

}  // namespace convx::cuda
