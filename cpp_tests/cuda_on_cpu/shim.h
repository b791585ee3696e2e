// CPU stand-in for the CUDA runtime, enough to run the depthwise kernels' sources unchanged in
// logic: one std::thread per CUDA thread, a std::barrier per block for __syncthreads, warp
// shuffles through block-wide scratch (every shuffle in these kernels is block-uniform), dynamic
// shared memory as an exactly sized heap buffer filled with 0xFF (NaN) so AddressSanitizer sees
// overruns and unwritten reads show up as NaN. Blocks run one after another. Used by run.sh.
#pragma once
#include <barrier>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>
#include <functional>
struct dim3 { unsigned x = 1, y = 1, z = 1; };
inline thread_local dim3 tl_threadIdx, tl_blockIdx;
inline dim3 g_blockDim, g_gridDim;
#define threadIdx tl_threadIdx
#define blockIdx tl_blockIdx
#define blockDim g_blockDim
#define gridDim g_gridDim
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) float2 { float x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
inline float2 make_float2(float x, float y) { return {x, y}; }
inline std::barrier<>* g_bar = nullptr;
inline void __syncthreads() { g_bar->arrive_and_wait(); }
// A block barrier stands in for the warp's: callers keep the count of __syncwarp block-uniform.
inline void __syncwarp(unsigned = 0xffffffffu) { __syncthreads(); }
// Blocks run one after another: a fence has nothing to order, an atomic nothing to race with.
inline void __threadfence() {}
inline unsigned atomicAdd(unsigned* p, unsigned v) {
  const unsigned old = *p;
  *p = old + v;
  return old;
}
template <typename V>
V __ldcg(const V* p) { return *p; }
inline unsigned char* g_smem = nullptr; inline size_t g_smem_bytes = 0;
alignas(16) inline double g_shfl[512];
template <typename V>
V __shfl_xor_sync(unsigned, V v, int off) {
  const int t = threadIdx.x;
  __syncthreads();
  std::memcpy(&g_shfl[t], &v, sizeof(V));
  __syncthreads();
  V r;
  std::memcpy(&r, &g_shfl[t ^ off], sizeof(V));
  return r;
}
// Lane srcLane of the caller's warp (row_warp.cuh runs under 32-thread blocks here, so the block
// barrier is the warp's and per-warp control flow stays uniform).
template <typename V>
V __shfl_sync(unsigned, V v, int srcLane) {
  const int t = threadIdx.x;
  __syncthreads();
  std::memcpy(&g_shfl[t], &v, sizeof(V));
  __syncthreads();
  V r;
  std::memcpy(&r, &g_shfl[(t & ~31) + (srcLane & 31)], sizeof(V));
  return r;
}
// Runs f() for every thread of every block (blocks one after another).
inline void launch(dim3 grid, dim3 block, const std::function<void()>& f) {
  g_gridDim = grid;
  g_blockDim = block;
  std::vector<unsigned char>* buf = new std::vector<unsigned char>(g_smem_bytes ? g_smem_bytes : 1, 0xFF); g_smem = buf->data();
  for (unsigned by = 0; by < grid.y; ++by)
    for (unsigned bx = 0; bx < grid.x; ++bx) {
      std::barrier<> bar(block.x);
      g_bar = &bar;
      std::vector<std::thread> ts;
      for (unsigned t = 0; t < block.x; ++t)
        ts.emplace_back([&, t] { tl_threadIdx.x = t; tl_blockIdx.x = bx; tl_blockIdx.y = by; f(); });
      for (auto& th : ts) th.join();
    }
  delete buf;
  g_smem_bytes = 0;
}
// mma16.cuh's tensor-core step: every lane publishes its A / B fragments; the caller reads its
// warp's 32 x 6 words, computes its own outputs, then calls shim_warp_release (block-uniform).
alignas(16) inline uint32_t g_mma[512 * 6];
inline const uint32_t* shim_warp_exchange(const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  const int t = threadIdx.x;
  __syncthreads();
  for (int i = 0; i < 4; ++i) g_mma[t * 6 + i] = a[i];
  g_mma[t * 6 + 4] = b[0];
  g_mma[t * 6 + 5] = b[1];
  __syncthreads();
  return &g_mma[(t & ~31) * 6];
}
inline void shim_warp_release() { __syncthreads(); }
