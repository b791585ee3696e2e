// The Autocast keys (CPU and CUDA): like aten's convolutions, every convx operator is on the
// lower-precision list. Floating inputs (not float64) are cast to the autocast dtype and the op
// runs below autocast; the casts are recorded by autograd, so parameter gradients come back in
// the parameters' own dtype.
#include <ATen/autocast_mode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include "ops/common/calls.h"
#include "registration/per_rank.h"

namespace convx {
namespace {

template <c10::DeviceType D, c10::DispatchKey K>
struct Autocast {
  static Tensor cast(const Tensor& t) {
    return at::autocast::cached_cast(at::autocast::get_autocast_dtype(D), t, D);
  }
  static std::optional<Tensor> cast(const std::optional<Tensor>& t) {
    if (!t.has_value()) return t;
    return cast(*t);
  }

  static Tensor conv(int64_t rank, const Tensor& input, const Tensor& weight,
                     const std::optional<Tensor>& bias, c10::IntArrayRef stride,
                     c10::IntArrayRef padding, c10::IntArrayRef dilation, int64_t groups) {
    c10::impl::ExcludeDispatchKeyGuard no_autocast(K);
    return call::conv(rank, cast(input), cast(weight), cast(bias), stride, padding, dilation, groups);
  }
  static Tensor conv_transpose(int64_t rank, const Tensor& input, const Tensor& weight,
                               const std::optional<Tensor>& bias, c10::IntArrayRef stride,
                               c10::IntArrayRef padding, c10::IntArrayRef output_padding,
                               int64_t groups, c10::IntArrayRef dilation) {
    c10::impl::ExcludeDispatchKeyGuard no_autocast(K);
    return call::conv_transpose(rank, cast(input), cast(weight), cast(bias), stride, padding,
                                output_padding, groups, dilation);
  }
  static Tensor depthwise_conv(int64_t rank, const Tensor& input, const Tensor& weight,
                               const std::optional<Tensor>& bias, c10::IntArrayRef stride,
                               c10::IntArrayRef padding, c10::IntArrayRef dilation) {
    c10::impl::ExcludeDispatchKeyGuard no_autocast(K);
    return call::depthwise_conv(rank, cast(input), cast(weight), cast(bias), stride, padding, dilation);
  }
  static Tensor conv_input_grad(int64_t rank, c10::SymIntArrayRef input_size,
                                const Tensor& weight, const Tensor& grad_output,
                                c10::IntArrayRef stride, c10::IntArrayRef padding,
                                c10::IntArrayRef dilation, int64_t groups) {
    c10::impl::ExcludeDispatchKeyGuard no_autocast(K);
    return call::conv_input_grad(rank, input_size, cast(weight), cast(grad_output), stride,
                                 padding, dilation, groups);
  }
  static Tensor conv_weight_grad(int64_t rank, const Tensor& input,
                                 c10::SymIntArrayRef weight_size, const Tensor& grad_output,
                                 c10::IntArrayRef stride, c10::IntArrayRef padding,
                                 c10::IntArrayRef dilation, int64_t groups) {
    c10::impl::ExcludeDispatchKeyGuard no_autocast(K);
    return call::conv_weight_grad(rank, cast(input), weight_size, cast(grad_output), stride,
                                  padding, dilation, groups);
  }
};

}  // namespace
}  // namespace convx

TORCH_LIBRARY_IMPL(convx, AutocastCPU, m) {
  convx::register_all_ranks<convx::Autocast<c10::DeviceType::CPU, c10::DispatchKey::AutocastCPU>>(m);
}
TORCH_LIBRARY_IMPL(convx, AutocastCUDA, m) {
  convx::register_all_ranks<convx::Autocast<c10::DeviceType::CUDA, c10::DispatchKey::AutocastCUDA>>(m);
}
