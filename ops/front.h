// The operator entry points, written once for every backend and every spatial rank.
//
// Each entry checks its arguments (ops/common/args.h), adds the batch dimension to unbatched
// operands, allocates the output in the layout aten would pick, routes the call to the dense
// or the depthwise kernel of a backend, and removes the batch dimension again. A backend is a
// table of six kernels; the Meta backend is the empty table, so Meta kernels are this file's
// checks and shapes and nothing else, and can never disagree with the real ones.
#pragma once

#include "ops/bias_grad/bias_grad.h"
#include "ops/common/args.h"

#include <c10/util/FunctionRef.h>

#include <string>
#include <tuple>

namespace convx {

// All kernels take batched, checked operands and write a preallocated output (any layout the
// front chose: contiguous or channels-last). `bias` may be absent.
using ForwardKernel = void(const ConvArgs&, const Tensor& input, const Tensor& weight,
                           const std::optional<Tensor>& bias, const Tensor& output);
// grad_input of a convolution = the transposed convolution of grad_output (bias added for
// conv_transpose, absent for the input-grad operator).
using DataGradKernel = void(const ConvArgs&, const Tensor& grad_output, const Tensor& weight,
                            const std::optional<Tensor>& bias, const Tensor& grad_input);
using WeightGradKernel = void(const ConvArgs&, const Tensor& input, const Tensor& grad_output,
                              const Tensor& grad_weight);
// The forward (no bias) and the weight-grad of the same input at once, for a backend that can
// share work between them (the CUDA stride == kernel GEMM gathers the input's patches once).
using ConvAndWeightGradKernel = void(const ConvArgs&, const Tensor& input, const Tensor& weight,
                                     const Tensor& grad_output, const Tensor& output,
                                     const Tensor& grad_weight);

// Sums input's channels (a transposed convolution's bias gradient) while `work` runs, for a
// backend that can overlap the two (CUDA: the memory-bound sum on a side stream beside the
// compute-bound GEMMs). Returns the sum; `work` has run when it returns.
using ChannelSumBesideKernel = Tensor(const Tensor& input, int64_t rank,
                                      c10::function_ref<void()> work);

struct Backend {
  ForwardKernel* dense_forward;
  DataGradKernel* dense_data_grad;
  WeightGradKernel* dense_weight_grad;
  ForwardKernel* depthwise_forward;
  DataGradKernel* depthwise_data_grad;
  WeightGradKernel* depthwise_weight_grad;
  // Optional: without it the joint operator runs dense_forward and dense_weight_grad.
  ConvAndWeightGradKernel* dense_conv_and_weight_grad = nullptr;
  // Optional: without it the joint operator's channel sum is at::sum after the two kernels.
  ChannelSumBesideKernel* channel_sum_beside = nullptr;
};

// "convx::conv2d", "convx::conv_transpose1d", "convx::conv3d_input_grad", ...
std::string op_name(const char* family, int64_t rank);

namespace front {

inline Tensor unbatch(const Tensor& out, bool unbatched) { return unbatched ? out.squeeze(0) : out; }

// Depthwise-shaped: one input channel per group of the (forward) convolution, any channel
// multiplier. The weight is [C_out, C_in/groups, *k] for conv and the grads, and
// [C_in, C_out/groups, *k] for conv_transpose: in both, dim 1 is 1 exactly then.
inline bool depthwise_shaped(const c10::SymInt& weight_dim1) { return weight_dim1 == 1; }

template <const Backend& B>
Tensor conv(int64_t rank, const Tensor& input, const Tensor& weight,
            const std::optional<Tensor>& bias, c10::IntArrayRef stride, c10::IntArrayRef padding,
            c10::IntArrayRef dilation, int64_t groups) {
  auto a = make_args(rank, stride, padding, dilation, groups);
  check_conv(a, input, weight, bias, op_name("conv", rank).c_str());
  auto x = batched(input, rank);
  auto y = new_tensor(conv_output_sizes(a, x, weight), x.options(), prefer_channels_last(x, weight));
  if (B.dense_forward && x.sym_numel() != 0) {
    auto k = depthwise_shaped(weight.sym_size(1)) ? B.depthwise_forward : B.dense_forward;
    k(a, x, weight, bias, y);
  }
  return unbatch(y, is_unbatched(input, rank));
}

template <const Backend& B>
Tensor depthwise_conv(int64_t rank, const Tensor& input, const Tensor& weight,
                      const std::optional<Tensor>& bias, c10::IntArrayRef stride,
                      c10::IntArrayRef padding, c10::IntArrayRef dilation) {
  const int64_t c = input.dim() >= rank + 1 ? static_size(input, input.dim() - rank - 1) : 1;
  auto a = make_args(rank, stride, padding, dilation, c);
  check_depthwise(a, input, weight, bias, op_name("depthwise_conv", rank).c_str());
  auto x = batched(input, rank);
  auto y = new_tensor(conv_output_sizes(a, x, weight), x.options(), prefer_channels_last(x, weight));
  if (B.depthwise_forward && x.sym_numel() != 0) B.depthwise_forward(a, x, weight, bias, y);
  return unbatch(y, is_unbatched(input, rank));
}

template <const Backend& B>
Tensor conv_transpose(int64_t rank, const Tensor& input, const Tensor& weight,
                      const std::optional<Tensor>& bias, c10::IntArrayRef stride,
                      c10::IntArrayRef padding, c10::IntArrayRef output_padding, int64_t groups,
                      c10::IntArrayRef dilation) {
  auto a = make_args(rank, stride, padding, dilation, groups, output_padding);
  check_conv_transpose(a, input, weight, bias, op_name("conv_transpose", rank).c_str());
  auto x = batched(input, rank);
  auto y = new_tensor(conv_transpose_output_sizes(a, x, weight), x.options(),
                      prefer_channels_last(x, weight));
  if (B.dense_data_grad && x.sym_numel() != 0) {
    auto k = depthwise_shaped(weight.sym_size(1)) ? B.depthwise_data_grad : B.dense_data_grad;
    k(a, x, weight, bias, y);
  }
  return unbatch(y, is_unbatched(input, rank));
}

template <const Backend& B>
Tensor conv_input_grad(int64_t rank, c10::SymIntArrayRef input_size, const Tensor& weight,
                       const Tensor& grad_output, c10::IntArrayRef stride,
                       c10::IntArrayRef padding, c10::IntArrayRef dilation, int64_t groups) {
  auto a = make_args(rank, stride, padding, dilation, groups);
  check_input_grad(a, input_size, weight, grad_output, op_name("conv_input_grad", rank).c_str());
  const bool unbatched = is_unbatched(grad_output, rank);
  auto gy = batched(grad_output, rank);
  std::vector<c10::SymInt> size(input_size.begin(), input_size.end());
  if (unbatched) size.insert(size.begin(), c10::SymInt(1));
  auto gx = new_tensor(size, gy.options(), prefer_channels_last(gy, weight));
  if (B.dense_data_grad && gy.sym_numel() != 0 && gx.sym_numel() != 0) {
    auto k = depthwise_shaped(weight.sym_size(1)) ? B.depthwise_data_grad : B.dense_data_grad;
    k(a, gy, weight, std::nullopt, gx);
  } else if (B.dense_data_grad) {
    gx.zero_();
  }
  return unbatch(gx, unbatched);
}

template <const Backend& B>
Tensor conv_weight_grad(int64_t rank, const Tensor& input, c10::SymIntArrayRef weight_size,
                        const Tensor& grad_output, c10::IntArrayRef stride,
                        c10::IntArrayRef padding, c10::IntArrayRef dilation, int64_t groups) {
  auto a = make_args(rank, stride, padding, dilation, groups);
  check_weight_grad(a, input, weight_size, grad_output, op_name("conv_weight_grad", rank).c_str());
  auto x = batched(input, rank);
  auto gy = batched(grad_output, rank);
  auto gw = new_tensor(weight_size, x.options(), prefer_channels_last(x, gy));
  if (B.dense_weight_grad && x.sym_numel() != 0) {
    auto k = depthwise_shaped(weight_size[1]) ? B.depthwise_weight_grad : B.dense_weight_grad;
    k(a, x, gy, gw);
  } else if (B.dense_weight_grad) {
    gw.zero_();  // an empty batch contributes nothing
  }
  return gw;
}

// The private operator _conv_and_weight_grad: conv(input, weight) and
// conv_weight_grad(input, weight.size, grad_output), both checked and laid out exactly as the
// two public operators would (the outputs are theirs, bit for bit, on a backend without a joint
// kernel), and, with input_sum, input summed over all but its channel dim (what _bias_grad
// returns for it; undefined without input_sum, as aten's convolution_backward leaves the
// gradients its output_mask does not ask for).
template <const Backend& B>
std::tuple<Tensor, Tensor, Tensor> conv_and_weight_grad(const Tensor& input, const Tensor& weight,
                                                        const Tensor& grad_output, int64_t rank,
                                                        c10::IntArrayRef stride,
                                                        c10::IntArrayRef padding,
                                                        c10::IntArrayRef dilation, int64_t groups,
                                                        bool input_sum) {
  const char* op = "convx::_conv_and_weight_grad";
  check_rank(rank, op);
  auto a = make_args(rank, stride, padding, dilation, groups);
  check_conv(a, input, weight, std::nullopt, op);
  check_weight_grad(a, input, weight.sym_sizes(), grad_output, op);
  auto x = batched(input, rank);
  auto gy = batched(grad_output, rank);
  auto y = new_tensor(conv_output_sizes(a, x, weight), x.options(), prefer_channels_last(x, weight));
  auto gw = new_tensor(weight.sym_sizes(), x.options(), prefer_channels_last(x, gy));
  auto work = [&] {
    if (B.dense_forward && x.sym_numel() != 0) {
      if (depthwise_shaped(weight.sym_size(1))) {
        B.depthwise_forward(a, x, weight, std::nullopt, y);
        B.depthwise_weight_grad(a, x, gy, gw);
      } else if (B.dense_conv_and_weight_grad) {
        B.dense_conv_and_weight_grad(a, x, weight, gy, y, gw);
      } else {
        B.dense_forward(a, x, weight, std::nullopt, y);
        B.dense_weight_grad(a, x, gy, gw);
      }
    } else if (B.dense_forward) {
      gw.zero_();  // an empty batch contributes nothing
    }
  };
  Tensor sum;
  if (!input_sum) {
    work();
  } else if (B.channel_sum_beside && x.sym_numel() != 0) {
    sum = B.channel_sum_beside(x, rank, work);
  } else {
    work();
    sum = bias_grad_by_sum(x, rank);  // on Meta: the shape [C] and nothing else
  }
  return {unbatch(y, is_unbatched(input, rank)), gw, sum};
}

}  // namespace front
}  // namespace convx
