// The Autograd-key kernels of the convx operators (rank-generic); see closure.cpp.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

namespace convx::autograd {

using at::Tensor;

Tensor conv(int64_t rank, const Tensor& input, const Tensor& weight,
            const std::optional<Tensor>& bias, c10::IntArrayRef stride, c10::IntArrayRef padding,
            c10::IntArrayRef dilation, int64_t groups);
Tensor conv_transpose(int64_t rank, const Tensor& input, const Tensor& weight,
                      const std::optional<Tensor>& bias, c10::IntArrayRef stride,
                      c10::IntArrayRef padding, c10::IntArrayRef output_padding, int64_t groups,
                      c10::IntArrayRef dilation);
Tensor depthwise_conv(int64_t rank, const Tensor& input, const Tensor& weight,
                      const std::optional<Tensor>& bias, c10::IntArrayRef stride,
                      c10::IntArrayRef padding, c10::IntArrayRef dilation);
Tensor conv_input_grad(int64_t rank, c10::SymIntArrayRef input_size, const Tensor& weight,
                       const Tensor& grad_output, c10::IntArrayRef stride,
                       c10::IntArrayRef padding, c10::IntArrayRef dilation, int64_t groups);
Tensor conv_weight_grad(int64_t rank, const Tensor& input, c10::SymIntArrayRef weight_size,
                        const Tensor& grad_output, c10::IntArrayRef stride,
                        c10::IntArrayRef padding, c10::IntArrayRef dilation, int64_t groups);

}  // namespace convx::autograd
