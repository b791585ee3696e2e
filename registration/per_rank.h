// Registers one key's rank-generic implementation of the five operator families under the
// per-rank operator names (conv1d, conv2d, conv3d, ...). `Impl` has static functions conv,
// conv_transpose, depthwise_conv, conv_input_grad and conv_weight_grad taking the rank first.
#pragma once

#include <torch/library.h>

#include "ops/front.h"

namespace convx {

template <typename Impl, int64_t R>
void register_rank(torch::Library& m) {
  const std::string r = std::to_string(R);
  m.impl(("conv" + r + "d").c_str(),
         [](const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
            c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
            int64_t groups) {
           return Impl::conv(R, input, weight, bias, stride, padding, dilation, groups);
         });
  m.impl(("conv_transpose" + r + "d").c_str(),
         [](const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
            c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef output_padding,
            int64_t groups, c10::IntArrayRef dilation) {
           return Impl::conv_transpose(R, input, weight, bias, stride, padding, output_padding,
                                       groups, dilation);
         });
  m.impl(("depthwise_conv" + r + "d").c_str(),
         [](const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
            c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation) {
           return Impl::depthwise_conv(R, input, weight, bias, stride, padding, dilation);
         });
  m.impl(("conv" + r + "d_input_grad").c_str(),
         [](c10::SymIntArrayRef input_size, const Tensor& weight, const Tensor& grad_output,
            c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
            int64_t groups) {
           return Impl::conv_input_grad(R, input_size, weight, grad_output, stride, padding,
                                        dilation, groups);
         });
  m.impl(("conv" + r + "d_weight_grad").c_str(),
         [](const Tensor& input, c10::SymIntArrayRef weight_size, const Tensor& grad_output,
            c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
            int64_t groups) {
           return Impl::conv_weight_grad(R, input, weight_size, grad_output, stride, padding,
                                         dilation, groups);
         });
}

template <typename Impl>
void register_all_ranks(torch::Library& m) {
  register_rank<Impl, 1>(m);
  register_rank<Impl, 2>(m);
  register_rank<Impl, 3>(m);
}

// A backend's kernels behind the shared fronts (ops/front.h).
template <const Backend& B>
struct Fronts {
  static constexpr auto conv = front::conv<B>;
  static constexpr auto conv_transpose = front::conv_transpose<B>;
  static constexpr auto depthwise_conv = front::depthwise_conv<B>;
  static constexpr auto conv_input_grad = front::conv_input_grad<B>;
  static constexpr auto conv_weight_grad = front::conv_weight_grad<B>;
};

}  // namespace convx
