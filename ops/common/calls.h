// Rank-generic calls of the convx operators through the dispatcher, so that whoever calls them
// (the autograd closure, the autocast kernels, the C++ API) gets every dispatch key's behaviour.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace convx::call {

using at::Tensor;
using c10::IntArrayRef;

Tensor conv(int64_t rank, const Tensor& input, const Tensor& weight,
            const std::optional<Tensor>& bias, IntArrayRef stride, IntArrayRef padding,
            IntArrayRef dilation, int64_t groups);
Tensor conv_transpose(int64_t rank, const Tensor& input, const Tensor& weight,
                      const std::optional<Tensor>& bias, IntArrayRef stride, IntArrayRef padding,
                      IntArrayRef output_padding, int64_t groups, IntArrayRef dilation);
Tensor depthwise_conv(int64_t rank, const Tensor& input, const Tensor& weight,
                      const std::optional<Tensor>& bias, IntArrayRef stride, IntArrayRef padding,
                      IntArrayRef dilation);
Tensor conv_input_grad(int64_t rank, c10::SymIntArrayRef input_size, const Tensor& weight,
                       const Tensor& grad_output, IntArrayRef stride, IntArrayRef padding,
                       IntArrayRef dilation, int64_t groups);
Tensor conv_weight_grad(int64_t rank, const Tensor& input, c10::SymIntArrayRef weight_size,
                        const Tensor& grad_output, IntArrayRef stride, IntArrayRef padding,
                        IntArrayRef dilation, int64_t groups);

// The private bias gradient (ops/bias_grad/bias_grad.h): grad_output summed over all but the
// channel dim.
Tensor bias_grad(int64_t rank, const Tensor& grad_output);

// The private joint operator (ops/front.h): {conv(input, weight), conv_weight_grad(input,
// weight.size, grad_output), input's channel sum (undefined unless input_sum)}.
std::tuple<Tensor, Tensor, Tensor> conv_and_weight_grad(int64_t rank, const Tensor& input,
                                                        const Tensor& weight,
                                                        const Tensor& grad_output,
                                                        IntArrayRef stride, IntArrayRef padding,
                                                        IntArrayRef dilation, int64_t groups,
                                                        bool input_sum);

}  // namespace convx::call
