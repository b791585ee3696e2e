// The Autograd key: the closure in autograd/closure.cpp, where every backward is a convx call.
#include "autograd/closure.h"
#include "registration/per_rank.h"

namespace convx {
namespace {
struct Autograd {
  static constexpr auto conv = autograd::conv;
  static constexpr auto conv_transpose = autograd::conv_transpose;
  static constexpr auto depthwise_conv = autograd::depthwise_conv;
  static constexpr auto conv_input_grad = autograd::conv_input_grad;
  static constexpr auto conv_weight_grad = autograd::conv_weight_grad;
};
}  // namespace
}  // namespace convx

TORCH_LIBRARY_IMPL(convx, Autograd, m) { convx::register_all_ranks<convx::Autograd>(m); }
