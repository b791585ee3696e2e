// The scatter of the stride == kernel data-grad (patch_gemm.cpp): the patch matrix P, written by
// the GEMM, moved into the fine tensor with the bias added, in one pass.
//
// A generic permuted copy (TensorIterator) ran the channels-last case at about half the copy
// bandwidth on the H100 (8-D index arithmetic per element, no vector access for 16-bit types).
// Here a thread row writes one fine row (n, [c,] d, h) — every value of that row comes from one
// window row of P, so the row's window coordinates are decoded once — in 16-byte vector stores
// where the row allows.
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

// Fine tensor geometry, spatial dims padded to three (leading 1s).
struct ScatterShape {
  int64_t N, C;
  int64_t c[3], k[3];   // windows and taps per dim (fine size = c * k)
  int64_t T, L;         // taps and windows per sample
};

template <typename T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

// Rows are short in NC* tensors (a 64-wide fine row is 8 vectors): a block is blockDim.y rows
// of blockDim.x threads each, so blocks stay full whatever the row length. The row index fits
// 32 bits (checked on the host): its decomposition costs a few 32-bit divisions per thread.
__device__ inline uint32_t block_row() { return blockIdx.x * blockDim.y + threadIdx.y; }

// Channels-last: the fine row (n, d, h) is W*k2 pixels x C channels, contiguous; P is
// [n][window][tap][C]. Element e of the row: pixel fw = e / C, channel e % C.
template <typename T, int V>
__global__ void scatter_cl(const T* __restrict__ P, const T* __restrict__ bias, T* __restrict__ out,
                           ScatterShape s, uint32_t rows) {
  const uint32_t row = block_row();  // (n, fd, fh)
  if (row >= rows) return;
  const uint32_t k0 = s.k[0], k1 = s.k[1], Hf = s.c[1] * k1, Df = s.c[0] * k0;
  const uint32_t fh = row % Hf, nd = row / Hf, fd = nd % Df, n = nd / Df;
  const int64_t win_row = (int64_t(n) * s.c[0] + fd / k0) * s.c[1] + fh / k1;
  const int64_t tap_row = ((fd % k0) * k1 + fh % k1) * s.k[2];
  const int C = static_cast<int>(s.C), k2 = static_cast<int>(s.k[2]);
  const int row_len = static_cast<int>(s.c[2] * s.k[2]) * C;
  T* dst = out + int64_t(row) * row_len;
  const T* src = P + win_row * s.c[2] * s.T * s.C;
  for (int e = threadIdx.x * V; e < row_len; e += blockDim.x * V) {
    const int fw = e / C, ch = e - fw * C;
    const int cw = fw / k2, tw = fw - cw * k2;
    const int64_t off = (static_cast<int64_t>(cw) * s.T + tap_row + tw) * C + ch;
    Vec<T, V> x = *reinterpret_cast<const Vec<T, V>*>(src + off);
    if (bias) {
#pragma unroll
      for (int j = 0; j < V; ++j) x.v[j] = static_cast<T>(static_cast<float>(x.v[j]) + static_cast<float>(bias[ch + j]));
    }
    *reinterpret_cast<Vec<T, V>*>(dst + e) = x;
  }
}

// NC*: the fine row (n, c, d, h) is W*k2 values; P is per sample [(c, taps)][windows]. Element fw
// reads tap row (td, th, fw % k2) of channel c at window (cd, ch, fw / k2): consecutive elements
// alternate between k2 contiguous runs of P (the window / tap pair is stepped, not divided).
template <typename T, int V>
__global__ void scatter_nc(const T* __restrict__ P, const T* __restrict__ bias, T* __restrict__ out,
                           ScatterShape s, uint32_t rows) {
  const uint32_t row = block_row();  // (n, c, fd, fh)
  if (row >= rows) return;
  const uint32_t k0 = s.k[0], k1 = s.k[1], Hf = s.c[1] * k1, Df = s.c[0] * k0;
  const uint32_t fh = row % Hf, ncd = row / Hf, fd = ncd % Df, nc = ncd / Df;
  const uint32_t ch = nc % static_cast<uint32_t>(s.C);
  const int64_t win = (int64_t(fd / k0) * s.c[1] + fh / k1) * s.c[2];
  const int64_t tap = int64_t((fd % k0) * k1 + fh % k1) * s.k[2];
  const T* src = P + (int64_t(nc) * s.T + tap) * s.L + win;  // (n, c), tap row, window row
  const int k2 = static_cast<int>(s.k[2]);
  const int row_len = static_cast<int>(s.c[2]) * k2;
  const int64_t L = s.L;
  const float b = bias ? static_cast<float>(bias[ch]) : 0.f;
  T* dst = out + int64_t(row) * row_len;
  for (int e = threadIdx.x * V; e < row_len; e += blockDim.x * V) {
    int cw = e / k2, tw = e - cw * k2;
    Vec<T, V> x;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      x.v[j] = static_cast<T>(static_cast<float>(src[tw * L + cw]) + b);
      if (++tw == k2) tw = 0, ++cw;
    }
    *reinterpret_cast<Vec<T, V>*>(dst + e) = x;
  }
}

template <typename T>
void launch(bool channels_last, const Tensor& P, const std::optional<Tensor>& bias,
            const Tensor& out, const ScatterShape& s) {
  const T* p = P.const_data_ptr<T>();
  const T* b = bias ? bias->const_data_ptr<T>() : nullptr;
  T* o = out.mutable_data_ptr<T>();
  const int64_t row_len = channels_last ? s.c[2] * s.k[2] * s.C : s.c[2] * s.k[2];
  const int64_t rows = out.numel() / row_len;
  constexpr int V16 = 16 / sizeof(T);
  const auto aligned = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; };
  // 16-byte vectors when every vector stays inside one row and one run of the source (CL: whole
  // channel vectors; NC: rows of whole vectors, the reads being scalar).
  const bool vec = aligned(o) && row_len % V16 == 0 &&
                   (channels_last ? s.C % V16 == 0 && aligned(p) : true);
  const int64_t vpr = row_len / (vec ? V16 : 1);
  const unsigned bx = static_cast<unsigned>(std::min<int64_t>(vpr, 256));
  const unsigned by = std::max(1u, 256u / bx);
  const dim3 block(bx, by), grid(static_cast<unsigned>((rows + by - 1) / by));
  const auto stream = c10::cuda::getCurrentCUDAStream();
  const auto r32 = static_cast<uint32_t>(rows);
  if (channels_last) {
    if (vec) scatter_cl<T, V16><<<grid, block, 0, stream>>>(p, b, o, s, r32);
    else scatter_cl<T, 1><<<grid, block, 0, stream>>>(p, b, o, s, r32);
  } else {
    if (vec) scatter_nc<T, V16><<<grid, block, 0, stream>>>(p, b, o, s, r32);
    else scatter_nc<T, 1><<<grid, block, 0, stream>>>(p, b, o, s, r32);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace

bool patch_scatter(const Tensor& P, bool channels_last, at::IntArrayRef coarse, at::IntArrayRef k,
                   const std::optional<Tensor>& bias, const Tensor& fine) {
  const int64_t r = k.size();
  // A dense fine tensor in the order of P's layout, rows and row pieces within 32-bit offsets
  // and one block per row within the grid.
  const auto mf = r == 3 ? at::MemoryFormat::ChannelsLast3d : at::MemoryFormat::ChannelsLast;
  bool dense;
  if (channels_last) {
    dense = r == 1 ? fine.permute({0, 2, 1}).is_contiguous() : fine.is_contiguous(mf);
  } else {
    dense = fine.is_contiguous();
  }
  if (!dense || !P.is_contiguous()) return false;
  for (int64_t i = 0; i < r; ++i) {  // the rows below assume windows tiling the fine tensor
    if (fine.size(2 + i) != coarse[i] * k[i]) return false;
  }
  ScatterShape s{fine.size(0), fine.size(1), {1, 1, 1}, {1, 1, 1}, 1, 1};
  for (int64_t i = 0; i < r; ++i) {
    s.c[3 - r + i] = coarse[i];
    s.k[3 - r + i] = k[i];
    s.T *= k[i];
    s.L *= coarse[i];
  }
  const int64_t row_len = channels_last ? s.c[2] * s.k[2] * s.C : s.c[2] * s.k[2];
  const int64_t rows = fine.numel() / row_len;
  if (row_len * 16 > (int64_t(1) << 31) || s.c[2] * s.T * s.C > (int64_t(1) << 31) ||
      rows >= (int64_t(1) << 31) || fine.numel() / fine.size(0) >= (int64_t(1) << 31))
    return false;
  std::optional<Tensor> b;
  if (bias.has_value() && bias->defined()) b = bias->to(fine.scalar_type()).contiguous();
  switch (fine.scalar_type()) {
    case at::kFloat: launch<float>(channels_last, P, b, fine, s); return true;
    case at::kHalf: launch<c10::Half>(channels_last, P, b, fine, s); return true;
    case at::kBFloat16: launch<c10::BFloat16>(channels_last, P, b, fine, s); return true;
    default: return false;
  }
}

}  // namespace convx::cuda
