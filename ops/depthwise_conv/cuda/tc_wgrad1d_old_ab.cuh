// TEMPORARY (session 14 c1d A/B only, removed after the measurement): main's tcw_rows.
#pragma once
#include "ops/depthwise_conv/cuda/tc_wgrad1d.cuh"
namespace convx::cuda {
template <int K>
__host__ __device__ constexpr int tcw_warp_bytes_old() {
  const int stage = 16 * (kTcwDyVecs + tcw_x_vecs<K>()), red = 16 * (8 * tcw_tiles<K>() + 1) * 4;
  return stage > red ? stage : red;
}
template <int K>
__host__ __device__ constexpr int tcw_smem_bytes_old() {
  return kTcwWarps * tcw_warp_bytes_old<K>() + kTcwWarps * 32 * 4;
}
// x: [N, C, in_w], gy: [N, C, out_w]. Writes gw [C][K]: directly when L.chunks == 1, else
// through part [C][chunks][K] (fp32), summed by the channel's last block (counters: C, zeroed).
// Grid: C * chunks blocks of kTcwThreads; dynamic shared memory tcw_smem_bytes_old<K>().
// 4 resident blocks (31 taps: 64 registers, 20 bytes spilled; at 3 blocks 77 registers and no
// spills): with the one-wave split the H100 ran Conformer k31 at 32.0 us against 32.8 at 3 blocks,
// its backward 0.065 ms against 0.069 (session 10, conf1d_call2.log; at session 9's 2.6 waves 4
// blocks had measured slower).
template <typename T, int K>
__global__ void __launch_bounds__(kTcwThreads, 4)
tcw_rows_old(const T* __restrict__ x, const T* __restrict__ gy, float* __restrict__ part, unsigned* __restrict__ counters,
         T* __restrict__ gw, const Plan P, const TcwRows L) {
  constexpr int NT = tcw_tiles<K>(), NX = tcw_x_vecs<K>();
  constexpr int DL = (kTcwDyVecs + 31) / 32, XL = (NX + 31) / 32;  // vectors per lane
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  unsigned char* const area = smem_raw + warp * tcw_warp_bytes_old<K>();
  TcwVec* const dys = reinterpret_cast<TcwVec*>(area);
  TcwVec* const xs = dys + kTcwDyVecs;
  float* const sums = reinterpret_cast<float*>(smem_raw + kTcwWarps * tcw_warp_bytes_old<K>());
  const uint32_t co = blockIdx.x / L.chunks, chunk = blockIdx.x % L.chunks;
  const uint32_t t0 = chunk * L.chunk, t1 = t0 + L.chunk < L.items_c ? t0 + L.chunk : L.items_c;

  // The prefetched item: its vectors and how far before its windows they start.
  TcwVec pd[DL], px[XL];
  int pmd = 0, pmx = 0;
  auto fetch = [&](uint32_t t, bool live) {
#pragma unroll
    for (int i = 0; i < DL; ++i) pd[i] = TcwVec{};
#pragma unroll
    for (int i = 0; i < XL; ++i) px[i] = TcwVec{};
    pmd = pmx = 0;
    if (!live) return;
    const uint32_t seg = t % L.segs, n = t / L.segs;
    const T* xr = x + (int64_t(n) * P.in_c + co) * L.in_w;
    const T* gr = gy + (int64_t(n) * P.out_c + co) * L.out_w;
    const int o0 = static_cast<int>(seg) * kTcwSeg, x0 = o0 - L.pad;
    pmd = static_cast<int>((reinterpret_cast<uintptr_t>(gr + o0) % 16) / sizeof(T));
    pmx = static_cast<int>((reinterpret_cast<uintptr_t>(xr + x0) % 16) / sizeof(T));
#pragma unroll
    for (int i = 0; i < DL; ++i) {
      const int v = lane + 32 * i;
      if (v < kTcwDyVecs) pd[i] = tcw_load(gr, o0 - pmd + 8 * v, L.out_w);
    }
#pragma unroll
    for (int i = 0; i < XL; ++i) {
      const int v = lane + 32 * i;
      if (v < NX) px[i] = tcw_load(xr, x0 - pmx + 8 * v, L.in_w);
    }
  };

  float acc[NT][4];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.f;
  uint32_t t = t0 + warp;
  fetch(t, t < t1);
  for (uint32_t first = t0; first < t1; first += kTcwWarps, t += kTcwWarps) {
    const int md = pmd, mx = pmx;
    __syncwarp();  // the warp's reads of the previous item are done
#pragma unroll
    for (int i = 0; i < DL; ++i) {
      if (lane + 32 * i < kTcwDyVecs) dys[lane + 32 * i] = pd[i];
    }
#pragma unroll
    for (int i = 0; i < XL; ++i) {
      if (lane + 32 * i < NX) xs[lane + 32 * i] = px[i];
    }
    __syncwarp();
    fetch(t + kTcwWarps, t + kTcwWarps < t1);
    const T* dv = reinterpret_cast<const T*>(dys) + md;
    const T* xv = reinterpret_cast<const T*>(xs) + mx;
#pragma unroll
    for (int s = 0; s < kTcwSeg / 256; ++s) tcw_step<T, NT>(dv + 256 * s, xv + 256 * s, acc, lane);
  }

  // Diagonal sums per warp, then the warps in order.
  const float s = tcw_diagonal<K, NT>(acc, reinterpret_cast<float*>(area), lane);
  if (lane < K) sums[warp * 32 + lane] = s;
  __syncthreads();
  if (threadIdx.x < K) {
    float sum = 0.f;
#pragma unroll
    for (int w = 0; w < kTcwWarps; ++w) sum += sums[w * 32 + threadIdx.x];
    if (L.chunks == 1) {
      gw[int64_t(co) * K + threadIdx.x] = static_cast<T>(sum);
    } else {
      part[(int64_t(co) * L.chunks + chunk) * K + threadIdx.x] = sum;
    }
  }
  if (L.chunks > 1 && tcw_last_block(counters + co, L.chunks, reinterpret_cast<int*>(sums)))
    tcw_sum_chunks<T, K>(part, gw, co, K, L.chunks);
}

}  // namespace convx::cuda
