// Dense convolution on the CPU: im2col / col2im + GEMM per group, for every spatial rank.
//
// The batch is processed in chunks whose column buffer stays under kColumnBytes, so memory is
// bounded whatever the batch. Arithmetic runs in the "opmath" type (float for half/bfloat16),
// so reduced-precision inputs accumulate in float.
#include "ops/conv/conv.h"

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/zeros.h>

#include <algorithm>

namespace convx::cpu {
namespace {

constexpr int64_t kColumnBytes = 64 << 20;

at::ScalarType opmath_type(at::ScalarType t) {
  return t == at::kDouble ? at::kDouble : at::kFloat;
}

// Samples per chunk so that the column buffer [chunk, C*K, L] stays bounded.
int64_t chunk_size(const Geometry& g, int64_t elem_size) {
  const int64_t per_sample =
      std::max<int64_t>(1, g.in_channels * g.kernel_numel() * g.output_numel() * elem_size);
  return std::clamp<int64_t>(kColumnBytes / per_sample, 1, std::max<int64_t>(g.batch, 1));
}

// A 1x1 kernel with stride 1 and no padding needs no columns: the input is its own matrix.
bool is_pointwise(const Geometry& g) {
  for (int i = 0; i < 3; ++i) {
    if (g.kernel[i] != 1 || g.stride[i] != 1 || g.padding[i] != 0) return false;
  }
  return true;
}

// cols[c*K + k][o] = x[c][o*s - p + k*d] (0 outside), for one sample.
template <typename T>
void im2col(const T* x, T* cols, const Geometry& g) {
  const auto& [D, H, W] = g.input;
  const auto& [OD, OH, OW] = g.output;
  const auto& [KD, KH, KW] = g.kernel;
  const int64_t K = KD * KH * KW, L = OD * OH * OW;
  at::parallel_for(0, g.in_channels * K, 1, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t c = row / K, k = row % K;
      const int64_t kd = k / (KH * KW), kh = (k / KW) % KH, kw = k % KW;
      const T* xc = x + c * D * H * W;
      T* out = cols + row * L;
      for (int64_t od = 0; od < OD; ++od) {
        const int64_t id = od * g.stride[0] - g.padding[0] + kd * g.dilation[0];
        for (int64_t oh = 0; oh < OH; ++oh) {
          const int64_t ih = oh * g.stride[1] - g.padding[1] + kh * g.dilation[1];
          T* o = out + (od * OH + oh) * OW;
          if (id < 0 || id >= D || ih < 0 || ih >= H) {
            std::fill(o, o + OW, T(0));
            continue;
          }
          const T* xr = xc + (id * H + ih) * W;
          for (int64_t ow = 0; ow < OW; ++ow) {
            const int64_t iw = ow * g.stride[2] - g.padding[2] + kw * g.dilation[2];
            o[ow] = (iw >= 0 && iw < W) ? xr[iw] : T(0);
          }
        }
      }
    }
  });
}

// The adjoint of im2col: x[c][o*s - p + k*d] += cols[c*K + k][o]. Channels are independent,
// so parallelising over them is race-free and deterministic.
template <typename T>
void col2im(const T* cols, T* x, const Geometry& g) {
  const auto& [D, H, W] = g.input;
  const auto& [OD, OH, OW] = g.output;
  const auto& [KD, KH, KW] = g.kernel;
  const int64_t K = KD * KH * KW, L = OD * OH * OW;
  at::parallel_for(0, g.in_channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      T* xc = x + c * D * H * W;
      for (int64_t k = 0; k < K; ++k) {
        const int64_t kd = k / (KH * KW), kh = (k / KW) % KH, kw = k % KW;
        const T* in = cols + (c * K + k) * L;
        for (int64_t od = 0; od < OD; ++od) {
          const int64_t id = od * g.stride[0] - g.padding[0] + kd * g.dilation[0];
          if (id < 0 || id >= D) continue;
          for (int64_t oh = 0; oh < OH; ++oh) {
            const int64_t ih = oh * g.stride[1] - g.padding[1] + kh * g.dilation[1];
            if (ih < 0 || ih >= H) continue;
            const T* r = in + (od * OH + oh) * OW;
            T* xr = xc + (id * H + ih) * W;
            for (int64_t ow = 0; ow < OW; ++ow) {
              const int64_t iw = ow * g.stride[2] - g.padding[2] + kw * g.dilation[2];
              if (iw >= 0 && iw < W) xr[iw] += r[ow];
            }
          }
        }
      }
    }
  });
}

// Columns of a chunk of samples: [B, C*K, L] in the opmath type.
Tensor columns(const Tensor& x_chunk, const Geometry& g) {
  const int64_t B = x_chunk.size(0), CK = g.in_channels * g.kernel_numel(), L = g.output_numel();
  if (is_pointwise(g)) return x_chunk.reshape({B, CK, L});
  auto cols = at::empty({B, CK, L}, x_chunk.options());
  AT_DISPATCH_FLOATING_TYPES(x_chunk.scalar_type(), "convx_im2col", [&] {
    for (int64_t b = 0; b < B; ++b) {
      im2col(x_chunk[b].const_data_ptr<scalar_t>(), cols[b].mutable_data_ptr<scalar_t>(), g);
    }
  });
  return cols;
}

// [*, C] bias broadcast over the spatial dims of a [B, C, *] tensor.
void add_bias(Tensor& y, const std::optional<Tensor>& bias) {
  if (!bias.has_value() || !bias->defined()) return;
  std::vector<int64_t> shape(y.dim(), 1);
  shape[1] = y.size(1);
  y.add_(bias->to(y.scalar_type()).view(shape));
}

}  // namespace

void dense_forward(const ConvArgs& a, const Tensor& input, const Tensor& weight,
                   const std::optional<Tensor>& bias, const Tensor& output) {
  const Geometry g = geometry(a, input, weight, output);
  const auto acc = opmath_type(input.scalar_type());
  const int64_t G = g.groups, Cout_g = g.out_channels / G;
  const int64_t CK_g = g.in_channels / G * g.kernel_numel(), L = g.output_numel();
  // [G, C_out/G, C_in/G * K]: per sample, one batched GEMM over the groups.
  const auto w = weight.to(acc).contiguous().view({G, Cout_g, CK_g});
  const int64_t chunk = chunk_size(g, at::elementSize(acc));
  for (int64_t b0 = 0; b0 < g.batch; b0 += chunk) {
    const int64_t B = std::min(chunk, g.batch - b0);
    const auto x = input.narrow(0, b0, B).to(acc).contiguous();
    const auto cols = columns(x, g).view({B, G, CK_g, L});
    auto y = at::empty({B, G, Cout_g, L}, cols.options());
    for (int64_t b = 0; b < B; ++b) {
      auto yb = y[b];
      at::bmm_out(yb, w, cols[b]);
    }
    y = y.view(output.narrow(0, b0, B).sizes());
    add_bias(y, bias);
    output.narrow(0, b0, B).copy_(y);
  }
}

void dense_data_grad(const ConvArgs& a, const Tensor& grad_output, const Tensor& weight,
                     const std::optional<Tensor>& bias, const Tensor& grad_input) {
  const Geometry g = geometry(a, grad_input, weight, grad_output);
  const auto acc = opmath_type(grad_output.scalar_type());
  const int64_t G = g.groups, Cout_g = g.out_channels / G;
  const int64_t CK_g = g.in_channels / G * g.kernel_numel(), L = g.output_numel();
  const auto wt = weight.to(acc).contiguous().view({G, Cout_g, CK_g}).transpose(1, 2);
  const int64_t chunk = chunk_size(g, at::elementSize(acc));
  for (int64_t b0 = 0; b0 < g.batch; b0 += chunk) {
    const int64_t B = std::min(chunk, g.batch - b0);
    const auto gy = grad_output.narrow(0, b0, B).to(acc).contiguous().view({B, G, Cout_g, L});
    auto cols = at::empty({B, G, CK_g, L}, gy.options());  // = [B, C*K, L]
    for (int64_t b = 0; b < B; ++b) {
      auto cb = cols[b];
      at::bmm_out(cb, wt, gy[b]);
    }
    auto gx = grad_input.narrow(0, b0, B);
    Tensor gx_acc;
    if (is_pointwise(g)) {
      gx_acc = cols.view(gx.sizes());
    } else {
      gx_acc = at::zeros(gx.sizes(), cols.options());
      AT_DISPATCH_FLOATING_TYPES(acc, "convx_col2im", [&] {
        for (int64_t b = 0; b < B; ++b) {
          col2im(cols[b].const_data_ptr<scalar_t>(), gx_acc[b].mutable_data_ptr<scalar_t>(), g);
        }
      });
    }
    add_bias(gx_acc, bias);
    gx.copy_(gx_acc);
  }
}

void dense_weight_grad(const ConvArgs& a, const Tensor& input, const Tensor& grad_output,
                       const Tensor& grad_weight) {
  const Geometry g = geometry(a, input, grad_weight, grad_output);
  const auto acc = opmath_type(input.scalar_type());
  const int64_t G = g.groups, Cout_g = g.out_channels / G;
  const int64_t CK_g = g.in_channels / G * g.kernel_numel(), L = g.output_numel();
  auto gw = at::zeros({G, Cout_g, CK_g}, input.options().dtype(acc));
  const int64_t chunk = chunk_size(g, at::elementSize(acc));
  for (int64_t b0 = 0; b0 < g.batch; b0 += chunk) {
    const int64_t B = std::min(chunk, g.batch - b0);
    const auto x = input.narrow(0, b0, B).to(acc).contiguous();
    const auto cols = columns(x, g).view({B, G, CK_g, L});
    const auto gy = grad_output.narrow(0, b0, B).to(acc).contiguous().view({B, G, Cout_g, L});
    // Fixed order over the samples: deterministic.
    for (int64_t b = 0; b < B; ++b) gw.baddbmm_(gy[b], cols[b].transpose(1, 2));
  }
  grad_weight.copy_(gw.view(grad_weight.sizes()));
}

}  // namespace convx::cpu
