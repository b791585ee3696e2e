// Depthwise convolution on the CPU: direct kernels, no im2col, for every spatial rank.
//
// Two layouts, each with its natural loop order:
//  - NC(D)HW: one (sample, channel) plane per task; every tap is an axpy along the output row,
//    contiguous (and so vectorised by the compiler) when the stride is 1.
//  - channels-last: one output row per task; every tap is an axpy across the channels.
// The layout is the output's (the front picks it like aten); the input is brought to it.
// Arithmetic in the opmath type (float for half/bfloat16). The weight-grad reduces in a fixed
// order (fixed blocks, summed in sequence), so results do not depend on the thread count.
#include "ops/depthwise_conv/depthwise_conv.h"

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <vector>

namespace convx::cpu {
namespace {

// Output positions o in [lo, hi) whose input position o*s - p + k*d lies in [0, n).
struct Range {
  int64_t lo, hi;
};
Range valid(int64_t out, int64_t n, int64_t s, int64_t off) {
  // off = k*d - p; need 0 <= o*s + off < n
  int64_t lo = off >= 0 ? 0 : (-off + s - 1) / s;
  int64_t hi = n - off <= 0 ? 0 : (n - off - 1) / s + 1;
  return {lo, std::max(lo, std::min(hi, out))};
}

struct Taps {
  const Geometry& g;
  int64_t K() const { return g.kernel_numel(); }
  // Tap k's offsets (input = output*stride + off) per spatial dim.
  std::array<int64_t, 3> off(int64_t k) const {
    const int64_t kd = k / (g.kernel[1] * g.kernel[2]), kh = (k / g.kernel[2]) % g.kernel[1],
                  kw = k % g.kernel[2];
    return {kd * g.dilation[0] - g.padding[0], kh * g.dilation[1] - g.padding[1],
            kw * g.dilation[2] - g.padding[2]};
  }
};

// Weight as opmath [C_out, K] (NC layout) or [K, C_out] (channels-last layout).
template <typename acc_t>
std::vector<acc_t> weights(const Tensor& w, bool taps_outer) {
  Tensor t = w.reshape({w.size(0), -1}).to(c10::CppTypeToScalarType<acc_t>::value);
  if (taps_outer) t = t.t();
  t = t.contiguous();
  return std::vector<acc_t>(t.const_data_ptr<acc_t>(), t.const_data_ptr<acc_t>() + t.numel());
}

template <typename acc_t>
std::vector<acc_t> bias_values(const std::optional<Tensor>& bias, int64_t n) {
  if (!bias.has_value() || !bias->defined()) return std::vector<acc_t>(n, acc_t(0));
  Tensor t = bias->to(c10::CppTypeToScalarType<acc_t>::value).contiguous();
  return std::vector<acc_t>(t.const_data_ptr<acc_t>(), t.const_data_ptr<acc_t>() + n);
}

// ---------------------------------------------------------------- forward
template <typename T>
void forward_nc(const T* x, T* y, const Geometry& g,
                const std::vector<at::opmath_type<T>>& w, const std::vector<at::opmath_type<T>>& b) {
  using acc_t = at::opmath_type<T>;
  const int64_t C = g.in_channels, Cout = g.out_channels, m = Cout / C, K = g.kernel_numel();
  const int64_t IL = g.input_numel(), OL = g.output_numel();
  const auto& [D, H, W] = g.input;
  const auto& [OD, OH, OW] = g.output;
  Taps taps{g};
  at::parallel_for(0, g.batch * Cout, 1, [&](int64_t begin, int64_t end) {
    std::vector<acc_t> acc(OL);
    for (int64_t p = begin; p < end; ++p) {
      const int64_t n = p / Cout, oc = p % Cout, c = oc / m;
      const T* xp = x + (n * C + c) * IL;
      std::fill(acc.begin(), acc.end(), b[oc]);
      for (int64_t k = 0; k < K; ++k) {
        const acc_t wv = w[oc * K + k];
        const auto o = taps.off(k);
        const Range rd = valid(OD, D, g.stride[0], o[0]), rh = valid(OH, H, g.stride[1], o[1]),
                    rw = valid(OW, W, g.stride[2], o[2]);
        const int64_t sw = g.stride[2];
        for (int64_t od = rd.lo; od < rd.hi; ++od) {
          for (int64_t oh = rh.lo; oh < rh.hi; ++oh) {
            const T* xr = xp + ((od * g.stride[0] + o[0]) * H + oh * g.stride[1] + o[1]) * W + o[2];
            acc_t* ar = acc.data() + (od * OH + oh) * OW;
            if (sw == 1) {
              for (int64_t ow = rw.lo; ow < rw.hi; ++ow) ar[ow] += wv * acc_t(xr[ow]);
            } else {
              for (int64_t ow = rw.lo; ow < rw.hi; ++ow) ar[ow] += wv * acc_t(xr[ow * sw]);
            }
          }
        }
      }
      T* yp = y + p * OL;
      for (int64_t i = 0; i < OL; ++i) yp[i] = T(acc[i]);
    }
  });
}

template <typename T>
void forward_cl(const T* x, T* y, const Geometry& g, const std::vector<at::opmath_type<T>>& w,
                const std::vector<at::opmath_type<T>>& b) {
  using acc_t = at::opmath_type<T>;
  const int64_t C = g.in_channels, Cout = g.out_channels, m = Cout / C, K = g.kernel_numel();
  const auto& [D, H, W] = g.input;
  const auto& [OD, OH, OW] = g.output;
  Taps taps{g};
  at::parallel_for(0, g.batch * OD * OH, 1, [&](int64_t begin, int64_t end) {
    std::vector<acc_t> acc(OW * Cout);
    for (int64_t r = begin; r < end; ++r) {
      const int64_t n = r / (OD * OH), od = (r / OH) % OD, oh = r % OH;
      for (int64_t ow = 0; ow < OW; ++ow) std::copy(b.begin(), b.end(), acc.begin() + ow * Cout);
      for (int64_t k = 0; k < K; ++k) {
        const auto o = taps.off(k);
        const int64_t id = od * g.stride[0] + o[0], ih = oh * g.stride[1] + o[1];
        if (id < 0 || id >= D || ih < 0 || ih >= H) continue;
        const Range rw = valid(OW, W, g.stride[2], o[2]);
        const acc_t* wk = w.data() + k * Cout;
        for (int64_t ow = rw.lo; ow < rw.hi; ++ow) {
          const T* px = x + (((n * D + id) * H + ih) * W + ow * g.stride[2] + o[2]) * C;
          acc_t* a = acc.data() + ow * Cout;
          if (m == 1) {
            for (int64_t c = 0; c < C; ++c) a[c] += wk[c] * acc_t(px[c]);
          } else {
            for (int64_t oc = 0; oc < Cout; ++oc) a[oc] += wk[oc] * acc_t(px[oc / m]);
          }
        }
      }
      T* yr = y + r * OW * Cout;
      for (int64_t i = 0; i < OW * Cout; ++i) yr[i] = T(acc[i]);
    }
  });
}

// ---------------------------------------------------------------- data grad
// gx[n, c] = sum_j sum_k w[c*m+j, k] * gy[n, c*m+j] scattered back through tap k.
template <typename T>
void data_grad_nc(const T* gy, T* gx, const Geometry& g, const std::vector<at::opmath_type<T>>& w,
                  const std::vector<at::opmath_type<T>>& b) {
  using acc_t = at::opmath_type<T>;
  const int64_t C = g.in_channels, Cout = g.out_channels, m = Cout / C, K = g.kernel_numel();
  const int64_t IL = g.input_numel(), OL = g.output_numel();
  const auto& [D, H, W] = g.input;
  const auto& [OD, OH, OW] = g.output;
  Taps taps{g};
  at::parallel_for(0, g.batch * C, 1, [&](int64_t begin, int64_t end) {
    std::vector<acc_t> acc(IL);
    for (int64_t p = begin; p < end; ++p) {
      const int64_t n = p / C, c = p % C;
      std::fill(acc.begin(), acc.end(), b[c]);
      for (int64_t j = 0; j < m; ++j) {
        const int64_t oc = c * m + j;
        const T* gp = gy + (n * Cout + oc) * OL;
        for (int64_t k = 0; k < K; ++k) {
          const acc_t wv = w[oc * K + k];
          const auto o = taps.off(k);
          const Range rd = valid(OD, D, g.stride[0], o[0]), rh = valid(OH, H, g.stride[1], o[1]),
                      rw = valid(OW, W, g.stride[2], o[2]);
          const int64_t sw = g.stride[2];
          for (int64_t od = rd.lo; od < rd.hi; ++od) {
            for (int64_t oh = rh.lo; oh < rh.hi; ++oh) {
              acc_t* ar = acc.data() + ((od * g.stride[0] + o[0]) * H + oh * g.stride[1] + o[1]) * W + o[2];
              const T* gr = gp + (od * OH + oh) * OW;
              if (sw == 1) {
                for (int64_t ow = rw.lo; ow < rw.hi; ++ow) ar[ow] += wv * acc_t(gr[ow]);
              } else {
                for (int64_t ow = rw.lo; ow < rw.hi; ++ow) ar[ow * sw] += wv * acc_t(gr[ow]);
              }
            }
          }
        }
      }
      T* xp = gx + p * IL;
      for (int64_t i = 0; i < IL; ++i) xp[i] = T(acc[i]);
    }
  });
}

// Channels-last: gather form, one input row per task (no two tasks write the same element).
template <typename T>
void data_grad_cl(const T* gy, T* gx, const Geometry& g, const std::vector<at::opmath_type<T>>& w,
                  const std::vector<at::opmath_type<T>>& b) {
  using acc_t = at::opmath_type<T>;
  const int64_t C = g.in_channels, Cout = g.out_channels, m = Cout / C, K = g.kernel_numel();
  const auto& [D, H, W] = g.input;
  const auto& [OD, OH, OW] = g.output;
  Taps taps{g};
  // Output index along one dim that input index i reads through offset off, or -1.
  auto src = [](int64_t i, int64_t off, int64_t s, int64_t n) -> int64_t {
    const int64_t t = i - off;
    if (t < 0 || t % s != 0 || t / s >= n) return -1;
    return t / s;
  };
  at::parallel_for(0, g.batch * D * H, 1, [&](int64_t begin, int64_t end) {
    std::vector<acc_t> acc(W * C);
    for (int64_t r = begin; r < end; ++r) {
      const int64_t n = r / (D * H), id = (r / H) % D, ih = r % H;
      for (int64_t iw = 0; iw < W; ++iw) std::copy(b.begin(), b.end(), acc.begin() + iw * C);
      for (int64_t k = 0; k < K; ++k) {
        const auto o = taps.off(k);
        const int64_t od = src(id, o[0], g.stride[0], OD), oh = src(ih, o[1], g.stride[1], OH);
        if (od < 0 || oh < 0) continue;
        const acc_t* wk = w.data() + k * Cout;
        for (int64_t iw = 0; iw < W; ++iw) {
          const int64_t ow = src(iw, o[2], g.stride[2], OW);
          if (ow < 0) continue;
          const T* pg = gy + (((n * OD + od) * OH + oh) * OW + ow) * Cout;
          acc_t* a = acc.data() + iw * C;
          if (m == 1) {
            for (int64_t c = 0; c < C; ++c) a[c] += wk[c] * acc_t(pg[c]);
          } else {
            for (int64_t oc = 0; oc < Cout; ++oc) a[oc / m] += wk[oc] * acc_t(pg[oc]);
          }
        }
      }
      T* xr = gx + r * W * C;
      for (int64_t i = 0; i < W * C; ++i) xr[i] = T(acc[i]);
    }
  });
}

// ---------------------------------------------------------------- weight grad
// One output channel per task; for every sample the taps loop inside, so the two planes they
// re-read stay in cache instead of being fetched from memory once per tap.
template <typename T>
void weight_grad_nc(const T* x, const T* gy, std::vector<at::opmath_type<T>>& gw, const Geometry& g) {
  using acc_t = at::opmath_type<T>;
  const int64_t C = g.in_channels, Cout = g.out_channels, m = Cout / C, K = g.kernel_numel();
  const int64_t IL = g.input_numel(), OL = g.output_numel();
  const auto& [D, H, W] = g.input;
  const auto& [OD, OH, OW] = g.output;
  Taps taps{g};
  at::parallel_for(0, Cout, 1, [&](int64_t begin, int64_t end) {
    std::vector<acc_t> total(K);
    for (int64_t oc = begin; oc < end; ++oc) {
      const int64_t c = oc / m;
      std::fill(total.begin(), total.end(), acc_t(0));
      for (int64_t n = 0; n < g.batch; ++n) {
        const T* xp = x + (n * C + c) * IL;
        const T* gp = gy + (n * Cout + oc) * OL;
        for (int64_t k = 0; k < K; ++k) {
          const auto o = taps.off(k);
          const Range rd = valid(OD, D, g.stride[0], o[0]), rh = valid(OH, H, g.stride[1], o[1]),
                      rw = valid(OW, W, g.stride[2], o[2]);
          const int64_t sw = g.stride[2];
          for (int64_t od = rd.lo; od < rd.hi; ++od) {
            for (int64_t oh = rh.lo; oh < rh.hi; ++oh) {
              const T* xr = xp + ((od * g.stride[0] + o[0]) * H + oh * g.stride[1] + o[1]) * W + o[2];
              const T* gr = gp + (od * OH + oh) * OW;
              acc_t s = 0;
              for (int64_t ow = rw.lo; ow < rw.hi; ++ow) s += acc_t(gr[ow]) * acc_t(xr[ow * sw]);
              total[k] += s;
            }
          }
        }
      }
      std::copy(total.begin(), total.end(), gw.begin() + oc * K);
    }
  });
}

template <typename T>
void weight_grad_cl(const T* x, const T* gy, std::vector<at::opmath_type<T>>& gw, const Geometry& g) {
  using acc_t = at::opmath_type<T>;
  const int64_t C = g.in_channels, Cout = g.out_channels, m = Cout / C, K = g.kernel_numel();
  const auto& [D, H, W] = g.input;
  const auto& [OD, OH, OW] = g.output;
  Taps taps{g};
  // Fixed blocks of output rows, each with its own partial sums, added in block order.
  const int64_t rows = g.batch * OD * OH, blocks = std::min<int64_t>(rows, 64);
  std::vector<acc_t> part(blocks * K * Cout, acc_t(0));
  at::parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t blk = begin; blk < end; ++blk) {
      acc_t* pk = part.data() + blk * K * Cout;
      for (int64_t r = rows * blk / blocks; r < rows * (blk + 1) / blocks; ++r) {
        const int64_t n = r / (OD * OH), od = (r / OH) % OD, oh = r % OH;
        for (int64_t k = 0; k < K; ++k) {
          const auto o = taps.off(k);
          const int64_t id = od * g.stride[0] + o[0], ih = oh * g.stride[1] + o[1];
          if (id < 0 || id >= D || ih < 0 || ih >= H) continue;
          const Range rw = valid(OW, W, g.stride[2], o[2]);
          acc_t* a = pk + k * Cout;
          for (int64_t ow = rw.lo; ow < rw.hi; ++ow) {
            const T* px = x + (((n * D + id) * H + ih) * W + ow * g.stride[2] + o[2]) * C;
            const T* pg = gy + (r * OW + ow) * Cout;
            if (m == 1) {
              for (int64_t c = 0; c < C; ++c) a[c] += acc_t(pg[c]) * acc_t(px[c]);
            } else {
              for (int64_t oc = 0; oc < Cout; ++oc) a[oc] += acc_t(pg[oc]) * acc_t(px[oc / m]);
            }
          }
        }
      }
    }
  });
  // part is [blocks, K, Cout]; gw is [Cout, K].
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const acc_t* pk = part.data() + blk * K * Cout;
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t oc = 0; oc < Cout; ++oc) gw[oc * K + k] += pk[k * Cout + oc];
    }
  }
}

// Runs `body` with the output in its own dense layout (a temporary when the caller's output
// is not dense), copying back at the end.
template <typename F>
void with_dense_output(const Tensor& out, bool cl, F&& body) {
  if (has_layout(out, cl)) {
    body(out);
  } else {
    auto tmp = new_tensor(out.sym_sizes(), out.options(), cl);
    body(tmp);
    out.copy_(tmp);
  }
}

}  // namespace

void depthwise_forward(const ConvArgs& a, const Tensor& input, const Tensor& weight,
                       const std::optional<Tensor>& bias, const Tensor& output) {
  const Geometry g = geometry(a, input, weight, output);
  const bool cl = is_channels_last(output);
  const auto x = to_layout(input, cl);
  with_dense_output(output, cl, [&](const Tensor& y) {
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "convx_depthwise_fwd", [&] {
      using acc_t = at::opmath_type<scalar_t>;
      const auto w = weights<acc_t>(weight, cl);
      const auto b = bias_values<acc_t>(bias, g.out_channels);
      if (cl) {
        forward_cl(x.const_data_ptr<scalar_t>(), y.mutable_data_ptr<scalar_t>(), g, w, b);
      } else {
        forward_nc(x.const_data_ptr<scalar_t>(), y.mutable_data_ptr<scalar_t>(), g, w, b);
      }
    });
  });
}

void depthwise_data_grad(const ConvArgs& a, const Tensor& grad_output, const Tensor& weight,
                         const std::optional<Tensor>& bias, const Tensor& grad_input) {
  const Geometry g = geometry(a, grad_input, weight, grad_output);
  const bool cl = is_channels_last(grad_input);
  const auto gy = to_layout(grad_output, cl);
  with_dense_output(grad_input, cl, [&](const Tensor& gx) {
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, gy.scalar_type(), "convx_depthwise_dgrad", [&] {
      using acc_t = at::opmath_type<scalar_t>;
      const auto w = weights<acc_t>(weight, cl);
      const auto b = bias_values<acc_t>(bias, g.in_channels);
      if (cl) {
        data_grad_cl(gy.const_data_ptr<scalar_t>(), gx.mutable_data_ptr<scalar_t>(), g, w, b);
      } else {
        data_grad_nc(gy.const_data_ptr<scalar_t>(), gx.mutable_data_ptr<scalar_t>(), g, w, b);
      }
    });
  });
}

void depthwise_weight_grad(const ConvArgs& a, const Tensor& input, const Tensor& grad_output,
                           const Tensor& grad_weight) {
  const Geometry g = geometry(a, input, grad_weight, grad_output);
  // The activations' layout decides the loop order here; the weight is tiny.
  const bool cl = is_channels_last(input) || is_channels_last(grad_output);
  const auto x = to_layout(input, cl);
  const auto gy = to_layout(grad_output, cl);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "convx_depthwise_wgrad", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    std::vector<acc_t> gw(g.out_channels * g.kernel_numel(), acc_t(0));
    if (cl) {
      weight_grad_cl(x.const_data_ptr<scalar_t>(), gy.const_data_ptr<scalar_t>(), gw, g);
    } else {
      weight_grad_nc(x.const_data_ptr<scalar_t>(), gy.const_data_ptr<scalar_t>(), gw, g);
    }
    Tensor t = at::empty({g.out_channels, g.kernel_numel()}, x.options().dtype(c10::CppTypeToScalarType<acc_t>::value));
    std::copy(gw.begin(), gw.end(), t.mutable_data_ptr<acc_t>());
    grad_weight.copy_(t.view(grad_weight.sizes()));
  });
}

}  // namespace convx::cpu
