#include "ops/conv/gemm.h"

#include <ATen/ops/bmm.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/zeros.h>

#include <algorithm>

namespace convx {
namespace {

at::ScalarType opmath_type(at::ScalarType t) {
  return t == at::kDouble ? at::kDouble : at::kFloat;
}

// Samples per chunk so that the column buffer [chunk, C*K, L] stays bounded.
int64_t chunk_size(const ColumnOps& ops, const Geometry& g, at::ScalarType acc) {
  const int64_t per_sample = std::max<int64_t>(
      1, g.in_channels * g.kernel_numel() * g.output_numel() * at::elementSize(acc));
  return std::clamp<int64_t>(ops.column_bytes / per_sample, 1, std::max<int64_t>(g.batch, 1));
}

// A 1x1 kernel with stride 1 and no padding needs no columns: the input is its own matrix.
// (Not when output_padding made the transposed output larger than the input: stride 1 with
// dilation 2 allows an output_padding of 1.)
bool is_pointwise(const Geometry& g) {
  for (int i = 0; i < 3; ++i) {
    if (g.kernel[i] != 1 || g.stride[i] != 1 || g.padding[i] != 0) return false;
    if (g.input[i] != g.output[i]) return false;
  }
  return true;
}

Tensor columns(const ColumnOps& ops, const Tensor& x, const Geometry& g) {
  if (is_pointwise(g)) return x.reshape({x.size(0), g.in_channels, g.output_numel()});
  return ops.im2col(x, g);
}

// bias broadcast over the spatial dims of a [B, C, *] tensor.
void add_bias(Tensor& y, const std::optional<Tensor>& bias) {
  if (!bias.has_value() || !bias->defined()) return;
  std::vector<int64_t> shape(y.dim(), 1);
  shape[1] = y.size(1);
  y.add_(bias->to(y.scalar_type()).view(shape));
}

// ---- channels-last (groups == 1): pixel rows, one GEMM per chunk

// A dense channels-last [B, C, *sp] as the matrix [B*L, C] it is in memory.
Tensor pixel_rows(const Tensor& t) {
  std::vector<int64_t> order{0};
  for (int64_t d = 2; d < t.dim(); ++d) order.push_back(d);
  order.push_back(1);
  return t.permute(order).view({-1, t.size(1)});  // view: throws rather than copy
}

// weight [C_out, C, *k] as [C_out, K*C] (tap-major, channel-minor, like the pixel columns).
Tensor weight_rows(const Tensor& weight, at::ScalarType acc, const Geometry& g) {
  return weight.to(acc).reshape({g.out_channels, g.in_channels, g.kernel_numel()})
      .transpose(1, 2).reshape({g.out_channels, -1});
}

bool use_pixel_rows(const ColumnOps& ops, const Geometry& g, bool cl) {
  return cl && g.groups == 1 && ops.im2col_cl != nullptr;
}

void forward_pixel_rows(const ColumnOps& ops, const Geometry& g, const Tensor& input,
                        const Tensor& weight, const std::optional<Tensor>& bias,
                        const Tensor& output, at::ScalarType acc) {
  const auto wt = weight_rows(weight, acc, g).t();  // [K*C, C_out]
  const int64_t chunk = chunk_size(ops, g, acc);
  for (int64_t b0 = 0; b0 < g.batch; b0 += chunk) {
    const int64_t B = std::min(chunk, g.batch - b0);
    const auto x = to_layout(input.narrow(0, b0, B).to(acc), true);
    const auto cols = is_pointwise(g) ? pixel_rows(x) : ops.im2col_cl(x, g);
    with_output_as(output.narrow(0, b0, B), acc, true, [&](const Tensor& y) {
      auto rows = pixel_rows(y);  // a view: y is channels-last dense
      if (bias.has_value() && bias->defined()) {
        at::addmm_out(rows, bias->to(acc), cols, wt);
      } else {
        at::mm_out(rows, cols, wt);
      }
    });
  }
}

void data_grad_pixel_rows(const ColumnOps& ops, const Geometry& g, const Tensor& grad_output,
                          const Tensor& weight, const std::optional<Tensor>& bias,
                          const Tensor& grad_input, at::ScalarType acc) {
  const auto w = weight_rows(weight, acc, g);  // [C_out, K*C]
  const int64_t chunk = chunk_size(ops, g, acc);
  std::optional<Tensor> b;
  if (bias.has_value() && bias->defined()) b = bias->to(acc);
  for (int64_t b0 = 0; b0 < g.batch; b0 += chunk) {
    const int64_t B = std::min(chunk, g.batch - b0);
    const auto gy = pixel_rows(to_layout(grad_output.narrow(0, b0, B).to(acc), true));
    with_output_as(grad_input.narrow(0, b0, B), acc, true, [&](const Tensor& gx) {
      if (is_pointwise(g)) {
        auto rows = pixel_rows(gx);  // a view: the GEMM writes gx
        if (b) {
          at::addmm_out(rows, *b, gy, w);
        } else {
          at::mm_out(rows, gy, w);
        }
      } else {
        ops.col2im_cl(at::mm(gy, w), g, gx, b);  // columns [B*L, K*C]
      }
    });
  }
}

void weight_grad_pixel_rows(const ColumnOps& ops, const Geometry& g, const Tensor& input,
                            const Tensor& grad_output, const Tensor& grad_weight,
                            at::ScalarType acc) {
  auto gw = at::zeros({g.out_channels, g.kernel_numel() * g.in_channels}, input.options().dtype(acc));
  const int64_t chunk = chunk_size(ops, g, acc);
  for (int64_t b0 = 0; b0 < g.batch; b0 += chunk) {
    const int64_t B = std::min(chunk, g.batch - b0);
    const auto x = to_layout(input.narrow(0, b0, B).to(acc), true);
    const auto cols = is_pointwise(g) ? pixel_rows(x) : ops.im2col_cl(x, g);
    const auto gy = pixel_rows(to_layout(grad_output.narrow(0, b0, B).to(acc), true));
    gw.addmm_(gy.t(), cols);  // chunks in order: deterministic
  }
  // [C_out, K, C] -> [C_out, C, K]
  grad_weight.copy_(gw.view({g.out_channels, g.kernel_numel(), g.in_channels}).transpose(1, 2)
                        .reshape(grad_weight.sizes()));
}

}  // namespace

void gemm_forward(const ColumnOps& ops, const ConvArgs& a, const Tensor& input,
                  const Tensor& weight, const std::optional<Tensor>& bias, const Tensor& output) {
  const Geometry g = geometry(a, input, weight, output);
  const auto acc = opmath_type(input.scalar_type());
  if (use_pixel_rows(ops, g, is_channels_last(output))) {
    return forward_pixel_rows(ops, g, input, weight, bias, output, acc);
  }
  const int64_t G = g.groups, Cout_g = g.out_channels / G;
  const int64_t CK_g = g.in_channels / G * g.kernel_numel(), L = g.output_numel();
  // [G, C_out/G, C_in/G * K]: per sample, one batched GEMM over the groups.
  const auto w = weight.to(acc).contiguous().view({G, Cout_g, CK_g});
  const int64_t chunk = chunk_size(ops, g, acc);
  for (int64_t b0 = 0; b0 < g.batch; b0 += chunk) {
    const int64_t B = std::min(chunk, g.batch - b0);
    const auto x = input.narrow(0, b0, B).to(acc).contiguous();
    const auto cols = columns(ops, x, g).view({B, G, CK_g, L});
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

void gemm_data_grad(const ColumnOps& ops, const ConvArgs& a, const Tensor& grad_output,
                    const Tensor& weight, const std::optional<Tensor>& bias,
                    const Tensor& grad_input) {
  const Geometry g = geometry(a, grad_input, weight, grad_output);
  const auto acc = opmath_type(grad_output.scalar_type());
  if (use_pixel_rows(ops, g, is_channels_last(grad_input))) {
    return data_grad_pixel_rows(ops, g, grad_output, weight, bias, grad_input, acc);
  }
  const int64_t G = g.groups, Cout_g = g.out_channels / G;
  const int64_t CK_g = g.in_channels / G * g.kernel_numel(), L = g.output_numel();
  const auto wt = weight.to(acc).contiguous().view({G, Cout_g, CK_g}).transpose(1, 2);
  const int64_t chunk = chunk_size(ops, g, acc);
  for (int64_t b0 = 0; b0 < g.batch; b0 += chunk) {
    const int64_t B = std::min(chunk, g.batch - b0);
    const auto gy = grad_output.narrow(0, b0, B).to(acc).contiguous().view({B, G, Cout_g, L});
    auto cols = at::empty({B, G, CK_g, L}, gy.options());  // = [B, C*K, L]
    for (int64_t b = 0; b < B; ++b) {
      auto cb = cols[b];
      at::bmm_out(cb, wt, gy[b]);
    }
    auto gx = grad_input.narrow(0, b0, B);
    Tensor gx_acc = is_pointwise(g) ? cols.view(gx.sizes())
                                    : ops.col2im(cols.view({B, -1, L}), g, gx.sizes());
    add_bias(gx_acc, bias);
    gx.copy_(gx_acc);
  }
}

void gemm_weight_grad(const ColumnOps& ops, const ConvArgs& a, const Tensor& input,
                      const Tensor& grad_output, const Tensor& grad_weight) {
  const Geometry g = geometry(a, input, grad_weight, grad_output);
  const auto acc = opmath_type(input.scalar_type());
  if (use_pixel_rows(ops, g, is_channels_last(input) || is_channels_last(grad_output))) {
    return weight_grad_pixel_rows(ops, g, input, grad_output, grad_weight, acc);
  }
  const int64_t G = g.groups, Cout_g = g.out_channels / G;
  const int64_t CK_g = g.in_channels / G * g.kernel_numel(), L = g.output_numel();
  auto gw = at::zeros({G, Cout_g, CK_g}, input.options().dtype(acc));
  const int64_t chunk = chunk_size(ops, g, acc);
  for (int64_t b0 = 0; b0 < g.batch; b0 += chunk) {
    const int64_t B = std::min(chunk, g.batch - b0);
    const auto x = input.narrow(0, b0, B).to(acc).contiguous();
    const auto cols = columns(ops, x, g).view({B, G, CK_g, L});
    const auto gy = grad_output.narrow(0, b0, B).to(acc).contiguous().view({B, G, Cout_g, L});
    // Fixed order over the samples: deterministic.
    for (int64_t b = 0; b < B; ++b) gw.baddbmm_(gy[b], cols[b].transpose(1, 2));
  }
  grad_weight.copy_(gw.view(grad_weight.sizes()));
}

}  // namespace convx
