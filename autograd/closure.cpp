// The autograd closure of the convx operators, for every spatial rank.
//
// With F = conv, D = conv_input_grad (the same computation as conv_transpose) and
// W = conv_weight_grad, every derivative is a call to another convx operator (docs/autograd.md
// derives the arguments):
//
//   op                         d input                 d weight                 d bias
//   conv(x, w, b)              D(x.size, w, gy)        W(x, w.size, gy)         sum(gy)
//   conv_transpose(x, w, b)    F(gy, w)                W(gy, w.size, x)         sum(gy)
//                              (all three at once: _conv_and_weight_grad, when not differentiated)
//   depthwise_conv(x, w, b)    as conv with groups = C
//   D(size, w, gy):            d gy = F(g, w)          d w = W(g, w.size, gy)
//   W(x, size, gy):            d x = D(x.size, g, gy)  d gy = F(x, g)
//
// The backward calls go through the dispatcher, so they are themselves differentiable: every
// order of derivative works, on every backend, with no more code. Only the gradients an input
// asks for are computed.
#include "autograd/closure.h"

#include <ATen/ops/constant_pad_nd.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/custom_function.h>

#include <initializer_list>
#include <tuple>

#include "ops/bias_grad/bias_grad.h"
#include "ops/common/args.h"
#include "ops/common/calls.h"

namespace convx::autograd {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Hyper-parameters kept for the backward.
struct Saved {
  int64_t rank, groups;
  std::vector<int64_t> stride, padding, dilation, output_padding;

  static void store(AutogradContext* ctx, int64_t rank, c10::IntArrayRef stride,
                    c10::IntArrayRef padding, c10::IntArrayRef dilation, int64_t groups,
                    c10::IntArrayRef output_padding = {}) {
    ctx->saved_data["rank"] = rank;
    ctx->saved_data["groups"] = groups;
    ctx->saved_data["stride"] = stride.vec();
    ctx->saved_data["padding"] = padding.vec();
    ctx->saved_data["dilation"] = dilation.vec();
    ctx->saved_data["output_padding"] = output_padding.vec();
  }
  static Saved load(AutogradContext* ctx) {
    return {ctx->saved_data["rank"].toInt(), ctx->saved_data["groups"].toInt(),
            ctx->saved_data["stride"].toIntVector(), ctx->saved_data["padding"].toIntVector(),
            ctx->saved_data["dilation"].toIntVector(),
            ctx->saved_data["output_padding"].toIntVector()};
  }
};

// Whether a gradient computed from these tensors is itself being differentiated (grad mode on,
// as under create_graph, and one of them requiring grad): then it must come from operators with
// a derivative, not from the private ones (_bias_grad, _conv_and_weight_grad).
bool differentiated(std::initializer_list<Tensor> from) {
  if (!c10::GradMode::is_enabled()) return false;
  for (const Tensor& t : from) {
    if (t.requires_grad()) return true;
  }
  return false;
}

// grad of a bias: gy summed over every dim but the channel dim. convx::_bias_grad (a faster,
// deterministic CUDA reduction) has no derivative of its own, so when this gradient is itself
// being differentiated (create_graph) at::sum does it.
Tensor bias_grad(const Tensor& gy, int64_t rank) {
  if (differentiated({gy})) return bias_grad_by_sum(gy, rank);
  return call::bias_grad(rank, gy);
}

bool has(const std::optional<Tensor>& t) { return t.has_value() && t->defined(); }

// grad_input channels-last when the input is, as aten's backward gives it (aten: when the input
// or the weight is). The data-grad operators pick their output's format from grad_output and the
// weight, which agrees except where grad_output's format is not the input's (a one-output-pixel
// grad_output is contiguous and channels-last at once); a channels-last dx from a channels-last
// weight stays as it is.
Tensor in_format_of(const Tensor& dx, const Tensor& x) {
  const auto format = x.suggest_memory_format();
  if (format == at::MemoryFormat::Contiguous || dx.suggest_memory_format() == format) return dx;
  return dx.contiguous(format);
}

// d conv / d (input, weight, bias); depthwise_conv is conv with groups = C.
variable_list conv_backward(AutogradContext* ctx, const Tensor& gy, bool with_bias) {
  const auto s = Saved::load(ctx);
  const auto saved = ctx->get_saved_variables();
  const Tensor &x = saved[0], &w = saved[1];
  Tensor dx, dw, db;
  if (ctx->needs_input_grad(0)) {
    dx = in_format_of(call::conv_input_grad(s.rank, x.sym_sizes(), w, gy, s.stride, s.padding,
                                            s.dilation, s.groups),
                      x);
  }
  if (ctx->needs_input_grad(1)) {
    dw = call::conv_weight_grad(s.rank, x, w.sym_sizes(), gy, s.stride, s.padding, s.dilation, s.groups);
  }
  if (with_bias && ctx->needs_input_grad(2)) db = bias_grad(gy, s.rank);
  return {dx, dw, db};
}

struct Conv : torch::autograd::Function<Conv> {
  static Tensor forward(AutogradContext* ctx, int64_t rank, const Tensor& input,
                        const Tensor& weight, const std::optional<Tensor>& bias,
                        c10::IntArrayRef stride, c10::IntArrayRef padding,
                        c10::IntArrayRef dilation, int64_t groups) {
    at::AutoDispatchBelowADInplaceOrView below;
    Saved::store(ctx, rank, stride, padding, dilation, groups);
    ctx->saved_data["bias"] = has(bias);
    ctx->save_for_backward({input, weight});
    return call::conv(rank, input, weight, bias, stride, padding, dilation, groups);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto g = conv_backward(ctx, grads[0], ctx->saved_data["bias"].toBool());
    return {Tensor(), g[0], g[1], g[2], Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

struct DepthwiseConv : torch::autograd::Function<DepthwiseConv> {
  static Tensor forward(AutogradContext* ctx, int64_t rank, const Tensor& input,
                        const Tensor& weight, const std::optional<Tensor>& bias,
                        c10::IntArrayRef stride, c10::IntArrayRef padding,
                        c10::IntArrayRef dilation) {
    at::AutoDispatchBelowADInplaceOrView below;
    const int64_t channels = static_size(input, input.dim() - rank - 1);
    Saved::store(ctx, rank, stride, padding, dilation, channels);
    ctx->saved_data["bias"] = has(bias);
    ctx->save_for_backward({input, weight});
    return call::depthwise_conv(rank, input, weight, bias, stride, padding, dilation);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto g = conv_backward(ctx, grads[0], ctx->saved_data["bias"].toBool());
    return {Tensor(), g[0], g[1], g[2], Tensor(), Tensor(), Tensor()};
  }
};

struct ConvTranspose : torch::autograd::Function<ConvTranspose> {
  static Tensor forward(AutogradContext* ctx, int64_t rank, const Tensor& input,
                        const Tensor& weight, const std::optional<Tensor>& bias,
                        c10::IntArrayRef stride, c10::IntArrayRef padding,
                        c10::IntArrayRef output_padding, int64_t groups,
                        c10::IntArrayRef dilation) {
    at::AutoDispatchBelowADInplaceOrView below;
    Saved::store(ctx, rank, stride, padding, dilation, groups, output_padding);
    ctx->saved_data["bias"] = has(bias);
    ctx->save_for_backward({input, weight});
    return call::conv_transpose(rank, input, weight, bias, stride, padding, output_padding, groups,
                                dilation);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = Saved::load(ctx);
    const auto saved = ctx->get_saved_variables();
    const Tensor &x = saved[0], &w = saved[1], &gy = grads[0];
    // With output_padding >= stride (allowed when dilation is larger) the convolution of gy
    // has floor(output_padding / stride) more positions per dimension than x: they are beyond
    // x, so dx drops them and the weight-grad sees x padded with zeros there.
    std::vector<int64_t> extra(s.rank);
    bool any_extra = false;
    for (int64_t i = 0; i < s.rank; ++i) {
      extra[i] = s.output_padding[i] / s.stride[i];
      any_extra |= extra[i] > 0;
    }
    const bool want_dx = ctx->needs_input_grad(0), want_dw = ctx->needs_input_grad(1);
    Tensor dx, dw, db, xp = x;
    if (want_dw && any_extra) {
      std::vector<int64_t> pad;  // constant_pad_nd: last dim first, (before, after) pairs
      for (int64_t i = s.rank - 1; i >= 0; --i) pad.insert(pad.end(), {0, extra[i]});
      xp = at::constant_pad_nd(x, pad, 0);
    }
    const bool want_db = ctx->saved_data["bias"].toBool() && ctx->needs_input_grad(2);
    // Both read gy as the input of a convolution: convx::_conv_and_weight_grad shares that work
    // (one gather of gy on the stride == kernel GEMM path) and sums gy for db beside it (on CUDA
    // on a side stream, overlapping the GEMMs). It has no derivative of its own, so when the
    // gradients are themselves differentiated the operators run apart.
    if (want_dx && want_dw && !differentiated({gy, w, xp})) {
      std::tie(dx, dw, db) = call::conv_and_weight_grad(s.rank, gy, w, xp, s.stride, s.padding,
                                                        s.dilation, s.groups, want_db);
    } else {
      if (want_dx) dx = call::conv(s.rank, gy, w, std::nullopt, s.stride, s.padding, s.dilation, s.groups);
      if (want_dw) {
        dw = call::conv_weight_grad(s.rank, gy, w.sym_sizes(), xp, s.stride, s.padding, s.dilation,
                                    s.groups);
      }
    }
    if (want_dx) {
      for (int64_t i = 0; i < s.rank && any_extra; ++i) {
        const int64_t d = dx.dim() - s.rank + i;
        dx = dx.narrow_symint(d, 0, x.sym_size(d));
      }
      dx = in_format_of(dx, x);
    }
    if (want_db && !db.defined()) db = bias_grad(gy, s.rank);
    return {Tensor(), dx, dw, db, Tensor(), Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

struct InputGrad : torch::autograd::Function<InputGrad> {
  static Tensor forward(AutogradContext* ctx, int64_t rank, c10::SymIntArrayRef input_size,
                        const Tensor& weight, const Tensor& grad_output, c10::IntArrayRef stride,
                        c10::IntArrayRef padding, c10::IntArrayRef dilation, int64_t groups) {
    at::AutoDispatchBelowADInplaceOrView below;
    Saved::store(ctx, rank, stride, padding, dilation, groups);
    ctx->save_for_backward({weight, grad_output});
    return call::conv_input_grad(rank, input_size, weight, grad_output, stride, padding, dilation,
                                 groups);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = Saved::load(ctx);
    const auto saved = ctx->get_saved_variables();
    const Tensor &w = saved[0], &gy = saved[1], &g = grads[0];
    Tensor dw, dgy;
    if (ctx->needs_input_grad(0)) {
      dw = call::conv_weight_grad(s.rank, g, w.sym_sizes(), gy, s.stride, s.padding, s.dilation, s.groups);
    }
    if (ctx->needs_input_grad(1)) {
      dgy = call::conv(s.rank, g, w, std::nullopt, s.stride, s.padding, s.dilation, s.groups);
    }
    return {Tensor(), Tensor(), dw, dgy, Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

struct WeightGrad : torch::autograd::Function<WeightGrad> {
  static Tensor forward(AutogradContext* ctx, int64_t rank, const Tensor& input,
                        c10::SymIntArrayRef weight_size, const Tensor& grad_output,
                        c10::IntArrayRef stride, c10::IntArrayRef padding,
                        c10::IntArrayRef dilation, int64_t groups) {
    at::AutoDispatchBelowADInplaceOrView below;
    Saved::store(ctx, rank, stride, padding, dilation, groups);
    ctx->save_for_backward({input, grad_output});
    return call::conv_weight_grad(rank, input, weight_size, grad_output, stride, padding, dilation,
                                  groups);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = Saved::load(ctx);
    const auto saved = ctx->get_saved_variables();
    const Tensor &x = saved[0], &gy = saved[1], &g = grads[0];
    Tensor dx, dgy;
    if (ctx->needs_input_grad(0)) {
      dx = call::conv_input_grad(s.rank, x.sym_sizes(), g, gy, s.stride, s.padding, s.dilation, s.groups);
    }
    if (ctx->needs_input_grad(1)) {
      dgy = call::conv(s.rank, x, g, std::nullopt, s.stride, s.padding, s.dilation, s.groups);
    }
    return {Tensor(), dx, Tensor(), dgy, Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

}  // namespace

Tensor conv(int64_t rank, const Tensor& input, const Tensor& weight,
            const std::optional<Tensor>& bias, c10::IntArrayRef stride, c10::IntArrayRef padding,
            c10::IntArrayRef dilation, int64_t groups) {
  return Conv::apply(rank, input, weight, bias, stride, padding, dilation, groups);
}

Tensor depthwise_conv(int64_t rank, const Tensor& input, const Tensor& weight,
                      const std::optional<Tensor>& bias, c10::IntArrayRef stride,
                      c10::IntArrayRef padding, c10::IntArrayRef dilation) {
  return DepthwiseConv::apply(rank, input, weight, bias, stride, padding, dilation);
}

Tensor conv_transpose(int64_t rank, const Tensor& input, const Tensor& weight,
                      const std::optional<Tensor>& bias, c10::IntArrayRef stride,
                      c10::IntArrayRef padding, c10::IntArrayRef output_padding, int64_t groups,
                      c10::IntArrayRef dilation) {
  return ConvTranspose::apply(rank, input, weight, bias, stride, padding, output_padding, groups,
                              dilation);
}

Tensor conv_input_grad(int64_t rank, c10::SymIntArrayRef input_size, const Tensor& weight,
                       const Tensor& grad_output, c10::IntArrayRef stride,
                       c10::IntArrayRef padding, c10::IntArrayRef dilation, int64_t groups) {
  return InputGrad::apply(rank, input_size, weight, grad_output, stride, padding, dilation, groups);
}

Tensor conv_weight_grad(int64_t rank, const Tensor& input, c10::SymIntArrayRef weight_size,
                        const Tensor& grad_output, c10::IntArrayRef stride,
                        c10::IntArrayRef padding, c10::IntArrayRef dilation, int64_t groups) {
  return WeightGrad::apply(rank, input, weight_size, grad_output, stride, padding, dilation, groups);
}

}  // namespace convx::autograd
