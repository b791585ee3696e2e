// Dense convolution on the CPU: the im2col / col2im column kernels, for every spatial rank.
// The GEMMs, batch chunking and opmath handling are shared with CUDA (ops/conv/gemm.cpp).
#include "ops/conv/conv.h"
#include "ops/conv/gemm.h"
#include "ops/conv/cpu_direct.h"
#include "ops/conv/cpu_phases.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <algorithm>

namespace convx::cpu {
namespace {

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

Tensor im2col_cpu(const Tensor& x, const Geometry& g) {
  const int64_t B = x.size(0), CK = g.in_channels * g.kernel_numel(), L = g.output_numel();
  auto cols = at::empty({B, CK, L}, x.options());
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "convx_im2col", [&] {
    for (int64_t b = 0; b < B; ++b) {
      im2col(x[b].const_data_ptr<scalar_t>(), cols[b].mutable_data_ptr<scalar_t>(), g);
    }
  });
  return cols;
}

Tensor col2im_cpu(const Tensor& cols, const Geometry& g, c10::IntArrayRef sizes) {
  // col2im accumulates, so it starts from zeros.
  auto x = at::zeros(sizes, cols.options());
  AT_DISPATCH_FLOATING_TYPES(cols.scalar_type(), "convx_col2im", [&] {
    for (int64_t b = 0; b < x.size(0); ++b) {
      col2im(cols[b].const_data_ptr<scalar_t>(), x[b].mutable_data_ptr<scalar_t>(), g);
    }
  });
  return x;
}

// ---- channels-last: one column row per output pixel, [K][C] within it

// rows[b][o][k][c] = x[b][o*s - p + k*d][c] (0 outside); one output row (b, od, oh) per task.
template <typename T>
void im2col_rows(const T* x, T* rows, const Geometry& g, int64_t batch) {
  const auto& [D, H, W] = g.input;
  const auto& [OD, OH, OW] = g.output;
  const auto& [KD, KH, KW] = g.kernel;
  const int64_t C = g.in_channels, K = KD * KH * KW;
  at::parallel_for(0, batch * OD * OH, 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t b = r / (OD * OH), od = r / OH % OD, oh = r % OH;
      T* out = rows + r * OW * K * C;
      for (int64_t ow = 0; ow < OW; ++ow) {
        for (int64_t k = 0; k < K; ++k, out += C) {
          const int64_t id = od * g.stride[0] - g.padding[0] + k / (KH * KW) * g.dilation[0];
          const int64_t ih = oh * g.stride[1] - g.padding[1] + k / KW % KH * g.dilation[1];
          const int64_t iw = ow * g.stride[2] - g.padding[2] + k % KW * g.dilation[2];
          if (id < 0 || id >= D || ih < 0 || ih >= H || iw < 0 || iw >= W) {
            std::fill(out, out + C, T(0));
          } else {
            const T* src = x + (((b * D + id) * H + ih) * W + iw) * C;
            std::copy(src, src + C, out);
          }
        }
      }
    }
  });
}

// The adjoint as a gather: x[b][i][c] = bias[c] + sum over the taps k whose output position
// o = (i + p - k*d) / s is integral and inside of rows[b][o][k][c]. One input row per task, taps
// in a fixed order: race-free and deterministic.
template <typename T>
void col2im_rows(const T* rows, T* x, const T* bias, const Geometry& g, int64_t batch) {
  const auto& [D, H, W] = g.input;
  const auto& [OD, OH, OW] = g.output;
  const auto& [KD, KH, KW] = g.kernel;
  const int64_t C = g.in_channels, K = KD * KH * KW;
  // Output index along one dim that input index i reads through tap offset k*d - p, or -1.
  auto src = [](int64_t i, int64_t off, int64_t s, int64_t n) -> int64_t {
    const int64_t t = i - off;
    return t < 0 || t % s != 0 || t / s >= n ? -1 : t / s;
  };
  at::parallel_for(0, batch * D * H, 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t b = r / (D * H), id = r / H % D, ih = r % H;
      T* out = x + r * W * C;
      for (int64_t iw = 0; iw < W; ++iw, out += C) {
        bool written = false;  // the first tap (with bias) writes, the others add
        for (int64_t k = 0; k < K; ++k) {
          const int64_t od = src(id, k / (KH * KW) * g.dilation[0] - g.padding[0], g.stride[0], OD);
          const int64_t oh = src(ih, k / KW % KH * g.dilation[1] - g.padding[1], g.stride[1], OH);
          const int64_t ow = src(iw, k % KW * g.dilation[2] - g.padding[2], g.stride[2], OW);
          if (od < 0 || oh < 0 || ow < 0) continue;
          const T* in = rows + ((((b * OD + od) * OH + oh) * OW + ow) * K + k) * C;
          if (written) {
            for (int64_t c = 0; c < C; ++c) out[c] += in[c];
          } else if (bias) {
            for (int64_t c = 0; c < C; ++c) out[c] = bias[c] + in[c];
          } else {
            std::copy(in, in + C, out);
          }
          written = true;
        }
        if (!written) {
          if (bias) {
            std::copy(bias, bias + C, out);
          } else {
            std::fill(out, out + C, T(0));
          }
        }
      }
    }
  });
}

Tensor im2col_cl_cpu(const Tensor& x, const Geometry& g) {
  const int64_t B = x.size(0);
  auto rows = at::empty({B * g.output_numel(), g.kernel_numel() * g.in_channels}, x.options());
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "convx_im2col_cl", [&] {
    im2col_rows(x.const_data_ptr<scalar_t>(), rows.mutable_data_ptr<scalar_t>(), g, B);
  });
  return rows;
}

void col2im_cl_cpu(const Tensor& rows, const Geometry& g, const Tensor& x,
                   const std::optional<Tensor>& bias) {
  AT_DISPATCH_FLOATING_TYPES(rows.scalar_type(), "convx_col2im_cl", [&] {
    const auto b = bias.has_value() ? bias->contiguous() : Tensor();
    col2im_rows(rows.const_data_ptr<scalar_t>(), x.mutable_data_ptr<scalar_t>(),
                b.defined() ? b.const_data_ptr<scalar_t>() : nullptr, g, x.size(0));
  });
}

// The GEMM work holds a column buffer of at most 64 MiB per batch chunk.
constexpr ColumnOps kColumns{im2col_cpu, col2im_cpu, int64_t(64) << 20, im2col_cl_cpu, col2im_cl_cpu};

}  // namespace

void dense_forward(const ConvArgs& a, const Tensor& input, const Tensor& weight,
                   const std::optional<Tensor>& bias, const Tensor& output) {
  const Geometry g = geometry(a, input, weight, output);
  if (direct_forward_applies(g, input, output)) return direct_forward(g, input, weight, bias, output);
  gemm_forward(kColumns, a, input, weight, bias, output);
}

void dense_data_grad(const ConvArgs& a, const Tensor& grad_output, const Tensor& weight,
                     const std::optional<Tensor>& bias, const Tensor& grad_input) {
  const Geometry g = geometry(a, grad_input, weight, grad_output);
  if (phase_data_grad_applies(g, grad_input)) {
    return phase_data_grad(g, grad_output, weight, bias, grad_input);
  }
  gemm_data_grad(kColumns, a, grad_output, weight, bias, grad_input);
}

void dense_weight_grad(const ConvArgs& a, const Tensor& input, const Tensor& grad_output,
                       const Tensor& grad_weight) {
  const Geometry g = geometry(a, input, grad_weight, grad_output);
  if (direct_weight_grad_applies(g, input, grad_output)) {
    return direct_weight_grad(g, input, grad_output, grad_weight);
  }
  gemm_weight_grad(kColumns, a, input, grad_output, grad_weight);
}

}  // namespace convx::cpu
