// The gather of the stride == kernel forward and weight-grad (patch_gemm.cpp): the fine tensor's
// windows copied into the patch matrix P, in one pass; the inverse of patch_scatter.cu.
//
// A generic permuted copy (TensorIterator) ran this at about half the copy bandwidth on the H100
// (8-D index arithmetic per element, no vector access for 16-bit types). Here a thread row reads
// one fine row (n, [c,] d, h) — every value of that row goes to one window row of P, so the
// row's window coordinates are decoded once — in 16-byte vector loads where the row allows.
// The fine tensor may be any view whose last dim (and, channels-last, its channels) is dense:
// its rows are addressed by their strides, and trailing pixels beyond c * k, which a stride-k
// forward never reads, are skipped.
#include "ops/conv/cuda/dense_paths.h"

#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cstdint>

namespace convx::cuda {
namespace {

// Fine tensor geometry, spatial dims padded to three (leading 1s), with its strides, and the
// strides of P's rows for NC* (P[n * pn + (c * T + tap) * pct + window]).
struct GatherShape {
  int64_t N, C;
  int64_t c[3], k[3];   // windows and taps per dim (used fine size = c * k)
  int64_t T, L;         // taps and windows per sample
  int64_t sn, sc, s[3]; // fine strides (s[2] == 1 for NC*, == C with sc == 1 channels-last)
  int64_t pn, pct;      // NC* P strides of a sample and of a (channel, tap) row
};

template <typename T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

// A block is blockDim.y rows of blockDim.x threads (NC* rows are short). The row index fits 32
// bits (checked on the host).
__device__ inline uint32_t block_row() { return blockIdx.x * blockDim.y + threadIdx.y; }

// Channels-last: the fine row (n, d, h) holds c2*k2 pixels x C channels, contiguous; P is
// [n][window][tap][C], contiguous. Element e of the row: pixel fw = e / C, channel e % C.
template <typename T, int V>
__global__ void gather_cl(const T* __restrict__ fine, T* __restrict__ P, GatherShape s, uint32_t rows) {
  const uint32_t row = block_row();  // (n, fd, fh) over the used rows
  if (row >= rows) return;
  const uint32_t k0 = s.k[0], k1 = s.k[1], Hf = s.c[1] * k1, Df = s.c[0] * k0;
  const uint32_t fh = row % Hf, nd = row / Hf, fd = nd % Df, n = nd / Df;
  const int64_t win_row = (int64_t(n) * s.c[0] + fd / k0) * s.c[1] + fh / k1;
  const int64_t tap_row = ((fd % k0) * k1 + fh % k1) * s.k[2];
  const int C = static_cast<int>(s.C), k2 = static_cast<int>(s.k[2]);
  const int row_len = static_cast<int>(s.c[2] * s.k[2]) * C;
  const T* src = fine + int64_t(n) * s.sn + int64_t(fd) * s.s[0] + int64_t(fh) * s.s[1];
  T* dst = P + win_row * s.c[2] * s.T * s.C;
  for (int e = threadIdx.x * V; e < row_len; e += blockDim.x * V) {
    const int fw = e / C, ch = e - fw * C;
    const int cw = fw / k2, tw = fw - cw * k2;
    const int64_t off = (static_cast<int64_t>(cw) * s.T + tap_row + tw) * C + ch;
    *reinterpret_cast<Vec<T, V>*>(dst + off) = *reinterpret_cast<const Vec<T, V>*>(src + e);
  }
}

// NC*: the fine row (n, c, d, h) holds c2*k2 values; element fw goes to tap row (td, th, fw % k2)
// of channel c at window (cd, ch, fw / k2): consecutive elements alternate between k2 runs of P
// (the window / tap pair is stepped, not divided).
template <typename T, int V>
__global__ void gather_nc(const T* __restrict__ fine, T* __restrict__ P, GatherShape s, uint32_t rows) {
  const uint32_t row = block_row();  // (n, c, fd, fh) over the used rows
  if (row >= rows) return;
  const uint32_t k0 = s.k[0], k1 = s.k[1], Hf = s.c[1] * k1, Df = s.c[0] * k0;
  const uint32_t fh = row % Hf, ncd = row / Hf, fd = ncd % Df, nc = ncd / Df;
  const uint32_t ch = nc % static_cast<uint32_t>(s.C), n = nc / static_cast<uint32_t>(s.C);
  const int64_t win = (int64_t(fd / k0) * s.c[1] + fh / k1) * s.c[2];
  const int64_t tap = int64_t((fd % k0) * k1 + fh % k1) * s.k[2];
  const T* src = fine + int64_t(n) * s.sn + int64_t(ch) * s.sc + int64_t(fd) * s.s[0] + int64_t(fh) * s.s[1];
  T* dst = P + int64_t(n) * s.pn + (int64_t(ch) * s.T + tap) * s.pct + win;
  const int k2 = static_cast<int>(s.k[2]);
  const int row_len = static_cast<int>(s.c[2]) * k2;
  const int64_t pct = s.pct;
  for (int e = threadIdx.x * V; e < row_len; e += blockDim.x * V) {
    const Vec<T, V> x = *reinterpret_cast<const Vec<T, V>*>(src + e);
    int cw = e / k2, tw = e - cw * k2;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      dst[tw * pct + cw] = x.v[j];
      if (++tw == k2) tw = 0, ++cw;
    }
  }
}

// NC* with a last-dim kernel K2 dividing the vector width: the V values a thread loads hold
// V / K2 consecutive windows of each of the K2 taps, stored as one vector of V / K2 per tap (P's
// runs aligned to it: checked on the host) instead of V scalar stores.
template <typename T, int V, int K2>
__global__ void gather_nc_packed(const T* __restrict__ fine, T* __restrict__ P, GatherShape s, uint32_t rows) {
  constexpr int W = V / K2;
  const uint32_t row = block_row();
  if (row >= rows) return;
  const uint32_t k0 = s.k[0], k1 = s.k[1], Hf = s.c[1] * k1, Df = s.c[0] * k0;
  const uint32_t fh = row % Hf, ncd = row / Hf, fd = ncd % Df, nc = ncd / Df;
  const uint32_t ch = nc % static_cast<uint32_t>(s.C), n = nc / static_cast<uint32_t>(s.C);
  const int64_t win = (int64_t(fd / k0) * s.c[1] + fh / k1) * s.c[2];
  const int64_t tap = int64_t((fd % k0) * k1 + fh % k1) * K2;
  const T* src = fine + int64_t(n) * s.sn + int64_t(ch) * s.sc + int64_t(fd) * s.s[0] + int64_t(fh) * s.s[1];
  T* dst = P + int64_t(n) * s.pn + (int64_t(ch) * s.T + tap) * s.pct + win;
  const int row_len = static_cast<int>(s.c[2]) * K2;
  const int64_t pct = s.pct;
  for (int e = threadIdx.x * V; e < row_len; e += blockDim.x * V) {
    const Vec<T, V> x = *reinterpret_cast<const Vec<T, V>*>(src + e);
#pragma unroll
    for (int tw = 0; tw < K2; ++tw) {
      Vec<T, W> y;
#pragma unroll
      for (int u = 0; u < W; ++u) y.v[u] = x.v[u * K2 + tw];
      *reinterpret_cast<Vec<T, W>*>(dst + tw * pct + e / K2) = y;
    }
  }
}

template <typename T>
void launch(bool channels_last, const Tensor& fine, const Tensor& P, const GatherShape& s) {
  const T* f = fine.const_data_ptr<T>();
  T* p = P.mutable_data_ptr<T>();
  const int64_t row_len = channels_last ? s.c[2] * s.k[2] * s.C : s.c[2] * s.k[2];
  const int64_t rows = s.N * (channels_last ? 1 : s.C) * s.c[0] * s.k[0] * s.c[1] * s.k[1];
  constexpr int V16 = 16 / sizeof(T);
  const auto aligned = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; };
  // 16-byte vectors when every row starts aligned and every vector stays inside one row and one
  // run of P (channels-last: whole channel vectors; NC*: the stores being scalar).
  const bool rows_aligned = s.sn % V16 == 0 && s.s[0] % V16 == 0 && s.s[1] % V16 == 0 &&
                            (channels_last || s.sc % V16 == 0);
  const bool vec = aligned(f) && rows_aligned && row_len % V16 == 0 &&
                   (channels_last ? s.C % V16 == 0 && aligned(p) : true);
  const int64_t vpr = row_len / (vec ? V16 : 1);
  const unsigned bx = static_cast<unsigned>(std::min<int64_t>(vpr, 256));
  const unsigned by = std::max(1u, 256u / bx);
  const dim3 block(bx, by), grid(static_cast<unsigned>((rows + by - 1) / by));
  const auto stream = c10::cuda::getCurrentCUDAStream();
  const auto r32 = static_cast<uint32_t>(rows);
  if (channels_last) {
    if (vec) gather_cl<T, V16><<<grid, block, 0, stream>>>(f, p, s, r32);
    else gather_cl<T, 1><<<grid, block, 0, stream>>>(f, p, s, r32);
  } else {
    // Packed stores: P's runs start on multiples of V / k2 elements (windows per row, the run
    // and sample strides) and P itself is aligned.
    const auto packs = [&](int64_t k2) {
      const int64_t w = V16 / k2;
      return vec && s.k[2] == k2 && aligned(p) && s.c[2] % w == 0 && s.pct % w == 0 && s.pn % w == 0;
    };
    if (packs(2)) gather_nc_packed<T, V16, 2><<<grid, block, 0, stream>>>(f, p, s, r32);
    else if (packs(4)) gather_nc_packed<T, V16, 4><<<grid, block, 0, stream>>>(f, p, s, r32);
    else if (vec) gather_nc<T, V16><<<grid, block, 0, stream>>>(f, p, s, r32);
    else gather_nc<T, 1><<<grid, block, 0, stream>>>(f, p, s, r32);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace

bool patch_gather(const Tensor& fine, bool rows_are_pixels, at::IntArrayRef coarse, at::IntArrayRef k,
                  bool samples_inner, const Tensor& P) {
  const int64_t r = k.size();
  if (!P.is_contiguous() || fine.size(0) == 0) return false;
  GatherShape s{fine.size(0), fine.size(1), {1, 1, 1}, {1, 1, 1}, 1, 1,
                fine.stride(0), fine.stride(1), {0, 0, 0}, 0, 0};
  for (int64_t i = 0; i < r; ++i) {
    s.c[3 - r + i] = coarse[i];
    s.k[3 - r + i] = k[i];
    s.s[3 - r + i] = fine.stride(2 + i);
    s.T *= k[i];
    s.L *= coarse[i];
  }
  // The last dim (and channels-last its channels) dense; the other strides are free.
  if (rows_are_pixels) {
    if (!(s.sc == 1 && (s.c[2] * s.k[2] == 1 || s.s[2] == s.C))) return false;
  } else {
    if (!(s.s[2] == 1 || s.c[2] * s.k[2] == 1)) return false;
    s.pn = samples_inner ? s.L : s.C * s.T * s.L;
    s.pct = samples_inner ? s.N * s.L : s.L;
  }
  const int64_t row_len = rows_are_pixels ? s.c[2] * s.k[2] * s.C : s.c[2] * s.k[2];
  const int64_t rows = s.N * (rows_are_pixels ? 1 : s.C) * s.c[0] * s.k[0] * s.c[1] * s.k[1];
  // Rows and row pieces within 32-bit offsets, the row index within 32 bits.
  if (row_len * 16 > (int64_t(1) << 31) || s.c[2] * s.T * s.C > (int64_t(1) << 31) ||
      rows >= (int64_t(1) << 31))
    return false;
  switch (fine.scalar_type()) {
    case at::kFloat: launch<float>(rows_are_pixels, fine, P, s); return true;
    case at::kHalf: launch<c10::Half>(rows_are_pixels, fine, P, s); return true;
    case at::kBFloat16: launch<c10::BFloat16>(rows_are_pixels, fine, P, s); return true;
    default: return false;
  }
}

}  // namespace convx::cuda
