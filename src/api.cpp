// The C++ API (include/convx/convx.h): each function calls its operator through the dispatcher
// (ops/common/calls.h), so autograd, autocast and every backend apply as for torch.ops.convx.*.
#include "convx/convx.h"

#include "ops/common/calls.h"

namespace convx {

using at::IntArrayRef;
using at::Tensor;
using OptTensor = std::optional<Tensor>;

#define CONVX_DEFINE_RANK(N)                                                                    \
  Tensor conv##N##d(const Tensor& input, const Tensor& weight, const OptTensor& bias,           \
                    IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,              \
                    int64_t groups) {                                                           \
    return call::conv(N, input, weight, bias, stride, padding, dilation, groups);               \
  }                                                                                             \
  Tensor conv_transpose##N##d(const Tensor& input, const Tensor& weight, const OptTensor& bias, \
                              IntArrayRef stride, IntArrayRef padding,                          \
                              IntArrayRef output_padding, int64_t groups,                       \
                              IntArrayRef dilation) {                                           \
    return call::conv_transpose(N, input, weight, bias, stride, padding, output_padding,        \
                                groups, dilation);                                              \
  }                                                                                             \
  Tensor depthwise_conv##N##d(const Tensor& input, const Tensor& weight, const OptTensor& bias, \
                              IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation) {  \
    return call::depthwise_conv(N, input, weight, bias, stride, padding, dilation);             \
  }                                                                                             \
  Tensor conv##N##d_input_grad_symint(c10::SymIntArrayRef input_size, const Tensor& weight,     \
                                      const Tensor& grad_output, IntArrayRef stride,            \
                                      IntArrayRef padding, IntArrayRef dilation,                \
                                      int64_t groups) {                                         \
    return call::conv_input_grad(N, input_size, weight, grad_output, stride, padding,           \
                                 dilation, groups);                                             \
  }                                                                                             \
  Tensor conv##N##d_weight_grad_symint(const Tensor& input, c10::SymIntArrayRef weight_size,    \
                                       const Tensor& grad_output, IntArrayRef stride,           \
                                       IntArrayRef padding, IntArrayRef dilation,               \
                                       int64_t groups) {                                        \
    return call::conv_weight_grad(N, input, weight_size, grad_output, stride, padding,          \
                                  dilation, groups);                                            \
  }                                                                                             \
  Tensor conv##N##d_input_grad(IntArrayRef input_size, const Tensor& weight,                    \
                               const Tensor& grad_output, IntArrayRef stride,                   \
                               IntArrayRef padding, IntArrayRef dilation, int64_t groups) {     \
    return call::conv_input_grad(N, c10::fromIntArrayRefSlow(input_size), weight, grad_output,  \
                                 stride, padding, dilation, groups);                            \
  }                                                                                             \
  Tensor conv##N##d_weight_grad(const Tensor& input, IntArrayRef weight_size,                   \
                                const Tensor& grad_output, IntArrayRef stride,                  \
                                IntArrayRef padding, IntArrayRef dilation, int64_t groups) {    \
    return call::conv_weight_grad(N, input, c10::fromIntArrayRefSlow(weight_size), grad_output, \
                                  stride, padding, dilation, groups);                           \
  }

CONVX_DEFINE_RANK(1)
CONVX_DEFINE_RANK(2)
CONVX_DEFINE_RANK(3)
#undef CONVX_DEFINE_RANK

bool library_anchor() noexcept { return true; }

}  // namespace convx
