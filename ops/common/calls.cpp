#include "ops/common/calls.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include "ops/front.h"

namespace convx::call {
namespace {

// One typed handle per (operator, rank), looked up once.
template <typename Sig>
const c10::TypedOperatorHandle<Sig>& handle(const char* family, int64_t rank) {
  TORCH_CHECK(rank >= 1 && rank <= 3, "convx: spatial rank must be 1, 2 or 3, got ", rank);
  static const auto table = [family] {
    std::array<c10::TypedOperatorHandle<Sig>, 3> t{
        c10::Dispatcher::singleton().findSchemaOrThrow(op_name(family, 1).c_str(), "").template typed<Sig>(),
        c10::Dispatcher::singleton().findSchemaOrThrow(op_name(family, 2).c_str(), "").template typed<Sig>(),
        c10::Dispatcher::singleton().findSchemaOrThrow(op_name(family, 3).c_str(), "").template typed<Sig>()};
    return t;
  }();
  return table[rank - 1];
}

using ConvSig = Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, IntArrayRef,
                       IntArrayRef, IntArrayRef, int64_t);
using ConvTransposeSig = Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&,
                                IntArrayRef, IntArrayRef, IntArrayRef, int64_t, IntArrayRef);
using DepthwiseSig = Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&,
                            IntArrayRef, IntArrayRef, IntArrayRef);
using InputGradSig = Tensor(c10::SymIntArrayRef, const Tensor&, const Tensor&, IntArrayRef,
                            IntArrayRef, IntArrayRef, int64_t);
using WeightGradSig = Tensor(const Tensor&, c10::SymIntArrayRef, const Tensor&, IntArrayRef,
                             IntArrayRef, IntArrayRef, int64_t);

}  // namespace

Tensor bias_grad(int64_t rank, const Tensor& grad_output) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("convx::_bias_grad", "")
                             .typed<Tensor(const Tensor&, int64_t)>();
  return op.call(grad_output, rank);
}

std::tuple<Tensor, Tensor, Tensor> conv_and_weight_grad(int64_t rank, const Tensor& input,
                                                        const Tensor& weight,
                                                        const Tensor& grad_output,
                                                        IntArrayRef stride, IntArrayRef padding,
                                                        IntArrayRef dilation, int64_t groups,
                                                        bool input_sum) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("convx::_conv_and_weight_grad", "")
          .typed<std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&,
                                                    int64_t, IntArrayRef, IntArrayRef, IntArrayRef,
                                                    int64_t, bool)>();
  return op.call(input, weight, grad_output, rank, stride, padding, dilation, groups, input_sum);
}

Tensor conv(int64_t rank, const Tensor& input, const Tensor& weight,
            const std::optional<Tensor>& bias, IntArrayRef stride, IntArrayRef padding,
            IntArrayRef dilation, int64_t groups) {
  return handle<ConvSig>("conv", rank).call(input, weight, bias, stride, padding, dilation, groups);
}

Tensor conv_transpose(int64_t rank, const Tensor& input, const Tensor& weight,
                      const std::optional<Tensor>& bias, IntArrayRef stride, IntArrayRef padding,
                      IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  return handle<ConvTransposeSig>("conv_transpose", rank)
      .call(input, weight, bias, stride, padding, output_padding, groups, dilation);
}

Tensor depthwise_conv(int64_t rank, const Tensor& input, const Tensor& weight,
                      const std::optional<Tensor>& bias, IntArrayRef stride, IntArrayRef padding,
                      IntArrayRef dilation) {
  return handle<DepthwiseSig>("depthwise_conv", rank).call(input, weight, bias, stride, padding, dilation);
}

Tensor conv_input_grad(int64_t rank, c10::SymIntArrayRef input_size, const Tensor& weight,
                       const Tensor& grad_output, IntArrayRef stride, IntArrayRef padding,
                       IntArrayRef dilation, int64_t groups) {
  return handle<InputGradSig>("conv_input_grad", rank)
      .call(input_size, weight, grad_output, stride, padding, dilation, groups);
}

Tensor conv_weight_grad(int64_t rank, const Tensor& input, c10::SymIntArrayRef weight_size,
                        const Tensor& grad_output, IntArrayRef stride, IntArrayRef padding,
                        IntArrayRef dilation, int64_t groups) {
  return handle<WeightGradSig>("conv_weight_grad", rank)
      .call(input, weight_size, grad_output, stride, padding, dilation, groups);
}

}  // namespace convx::call
