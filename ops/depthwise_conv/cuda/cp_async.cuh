// cp.async (sm_80+): global -> shared copies that hold no registers while in flight, for kernels
// that keep whole windows or bricks in flight (tc_row1d_cl, tcw_cl, tc_rows_nc, tc_wgrad3d,
// nc_plane_cp).
// Outside nvcc (the CPU harness, cpp_tests/cuda_on_cpu/shim.h) a copy happens at once and the
// waits do nothing.
#pragma once

#include <cstdint>
#include <cstring>

namespace convx::cuda {

#if defined(__CUDACC__)
// dst (shared, 16-byte aligned) = the first `bytes` (0-16) bytes at src (16-byte aligned; not
// read when bytes == 0), the rest of the 16 zeros.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(bytes) : "memory");
#else
  __trap();  // the launchers take these kernels on sm_80 and newer only
#endif
}
// dst (shared) = `bytes` (16, 8 or 4) bytes at src, both aligned to it: 16 bypassing L1 (.cg),
// 8 and 4 through it (.ca: .cg copies 16 bytes only).
__device__ __forceinline__ void cp_async_n(void* dst, const void* src, int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  if (bytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src) : "memory");
  } else if (bytes == 8) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(d), "l"(src) : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(d), "l"(src) : "memory");
  }
#else
  __trap();  // the launchers take these kernels on sm_80 and newer only
#endif
}
// The shared-window address of a shared-memory pointer, for cp_async16_at: taken once per thread
// instead of per copy (depth3d_cl_smem: less address arithmetic per copy, 527 -> ~520 SASS
// instructions per plane, 2% faster; under register pressure ptxas may still recompute it).
__device__ __forceinline__ uint32_t shared_addr(const void* p) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
#else
  (void)p;
  return 0;
#endif
}
// cp_async16 to the shared memory `off` bytes past base, whose shared_addr is sbase.
__device__ __forceinline__ void cp_async16_at(void* base, uint32_t sbase, uint32_t off, const void* src, int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  (void)base;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(sbase + off), "l"(src), "r"(bytes) : "memory");
#else
  (void)sbase;
  cp_async16(static_cast<unsigned char*>(base) + off, src, bytes);  // traps below sm_80
#endif
}
// Closes the thread's group of copies issued since the last commit.
__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
// Waits until at most N of the thread's committed groups are still in flight (then a block
// barrier makes every thread's copies visible to the block).
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}
#else
inline void cp_async16(void* dst, const void* src, int bytes) {
  std::memset(dst, 0, 16);
  if (bytes > 0) std::memcpy(dst, src, bytes);
}
inline void cp_async_n(void* dst, const void* src, int bytes) { std::memcpy(dst, src, bytes); }
inline uint32_t shared_addr(const void*) { return 0; }
inline void cp_async16_at(void* base, uint32_t, uint32_t off, const void* src, int bytes) {
  cp_async16(static_cast<unsigned char*>(base) + off, src, bytes);
}
inline void cp_async_commit() {}
template <int N>
void cp_async_wait() {}
#endif

}  // namespace convx::cuda
