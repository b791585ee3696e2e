// Dense convolution on CUDA by im2col / col2im kernels + cuBLAS GEMMs (ops/conv/gemm.cpp), for
// every spatial rank: the fallback for calls cuDNN has no plan for (ops/conv/cuda/dense.cpp).
//
// The GEMM-level logic (chunks, groups, opmath, bias) is shared with the CPU in ops/conv/gemm.cpp.
// col2im is a gather (each thread owns one input element and sums the columns that read it),
// so there are no atomics and the result is deterministic.
#include "ops/conv/cuda/dense_paths.h"
#include "ops/conv/gemm.h"

#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>

namespace convx::cuda {
namespace {

constexpr int kThreads = 256;

struct Geo {
  int64_t C;  // input channels (all groups)
  int64_t in[3], out[3], k[3], s[3], p[3], d[3];
};

Geo geo(const Geometry& g) {
  Geo G{};
  G.C = g.in_channels;
  for (int i = 0; i < 3; ++i) {
    G.in[i] = g.input[i], G.out[i] = g.output[i], G.k[i] = g.kernel[i];
    G.s[i] = g.stride[i], G.p[i] = g.padding[i], G.d[i] = g.dilation[i];
  }
  return G;
}

unsigned blocks_for(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, int64_t(1) << 20));
}

#define CONVX_GRID_STRIDE(i, n)                                                         \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

// cols[b][c*K + k][o] = x[b][c][o*s - p + k*d] (0 outside); x contiguous [B, C, *in].
template <typename T>
__global__ void im2col_kernel(const T* __restrict__ x, T* __restrict__ cols, const Geo G, int64_t B) {
  const int64_t K = G.k[0] * G.k[1] * G.k[2], L = G.out[0] * G.out[1] * G.out[2];
  const int64_t total = B * G.C * K * L;
  CONVX_GRID_STRIDE(idx, total) {
    const int64_t o = idx % L, r = idx / L, kk = r % K, bc = r / K;
    const int64_t ow = o % G.out[2], oh = (o / G.out[2]) % G.out[1], od = o / (G.out[2] * G.out[1]);
    const int64_t kw = kk % G.k[2], kh = (kk / G.k[2]) % G.k[1], kd = kk / (G.k[2] * G.k[1]);
    const int64_t id = od * G.s[0] - G.p[0] + kd * G.d[0];
    const int64_t ih = oh * G.s[1] - G.p[1] + kh * G.d[1];
    const int64_t iw = ow * G.s[2] - G.p[2] + kw * G.d[2];
    const bool in = id >= 0 && id < G.in[0] && ih >= 0 && ih < G.in[1] && iw >= 0 && iw < G.in[2];
    cols[idx] = in ? x[((bc * G.in[0] + id) * G.in[1] + ih) * G.in[2] + iw] : T(0);
  }
}

// The adjoint, as a gather: x[b][c][i] = sum over taps k with o = (i + p - k*d) / s integral
// and in range of cols[b][c*K + k][o].
template <typename T>
__global__ void col2im_kernel(const T* __restrict__ cols, T* __restrict__ x, const Geo G, int64_t B) {
  const int64_t K = G.k[0] * G.k[1] * G.k[2], L = G.out[0] * G.out[1] * G.out[2];
  const int64_t total = B * G.C * G.in[0] * G.in[1] * G.in[2];
  CONVX_GRID_STRIDE(idx, total) {
    int64_t r = idx;
    const int64_t iw = r % G.in[2];
    r /= G.in[2];
    const int64_t ih = r % G.in[1];
    r /= G.in[1];
    const int64_t id = r % G.in[0], bc = r / G.in[0];
    const T* cb = cols + bc * K * L;
    T sum = 0;
    for (int64_t kd = 0; kd < G.k[0]; ++kd) {
      const int64_t td = id + G.p[0] - kd * G.d[0];
      if (td < 0 || td % G.s[0] != 0 || td / G.s[0] >= G.out[0]) continue;
      for (int64_t kh = 0; kh < G.k[1]; ++kh) {
        const int64_t th = ih + G.p[1] - kh * G.d[1];
        if (th < 0 || th % G.s[1] != 0 || th / G.s[1] >= G.out[1]) continue;
        for (int64_t kw = 0; kw < G.k[2]; ++kw) {
          const int64_t tw = iw + G.p[2] - kw * G.d[2];
          if (tw < 0 || tw % G.s[2] != 0 || tw / G.s[2] >= G.out[2]) continue;
          const int64_t kk = (kd * G.k[1] + kh) * G.k[2] + kw;
          const int64_t o = (td / G.s[0] * G.out[1] + th / G.s[1]) * G.out[2] + tw / G.s[2];
          sum += cb[kk * L + o];
        }
      }
    }
    x[idx] = sum;
  }
}

Tensor im2col_cuda(const Tensor& x, const Geometry& g) {
  const int64_t B = x.size(0), CK = g.in_channels * g.kernel_numel(), L = g.output_numel();
  auto cols = at::empty({B, CK, L}, x.options());
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "convx_im2col_cuda", [&] {
    im2col_kernel<scalar_t><<<blocks_for(cols.numel()), kThreads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        x.const_data_ptr<scalar_t>(), cols.mutable_data_ptr<scalar_t>(), geo(g), B);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return cols;
}

// The gather kernel writes every element, so the output needs no zero fill.
Tensor col2im_cuda(const Tensor& cols, const Geometry& g, c10::IntArrayRef sizes) {
  auto x = at::empty(sizes, cols.options());
  AT_DISPATCH_FLOATING_TYPES(cols.scalar_type(), "convx_col2im_cuda", [&] {
    col2im_kernel<scalar_t><<<blocks_for(x.numel()), kThreads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        cols.const_data_ptr<scalar_t>(), x.mutable_data_ptr<scalar_t>(), geo(g), x.size(0));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return x;
}

constexpr ColumnOps kColumns{im2col_cuda, col2im_cuda, int64_t(256) << 20};

}  // namespace

void im2col_forward(const ConvArgs& a, const Tensor& input, const Tensor& weight,
                    const std::optional<Tensor>& bias, const Tensor& output) {
  gemm_forward(kColumns, a, input, weight, bias, output);
}

void im2col_data_grad(const ConvArgs& a, const Tensor& grad_output, const Tensor& weight,
                      const std::optional<Tensor>& bias, const Tensor& grad_input) {
  gemm_data_grad(kColumns, a, grad_output, weight, bias, grad_input);
}

void im2col_weight_grad(const ConvArgs& a, const Tensor& input, const Tensor& grad_output,
                        const Tensor& grad_weight) {
  gemm_weight_grad(kColumns, a, input, grad_output, grad_weight);
}

}  // namespace convx::cuda
