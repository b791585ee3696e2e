// Which function serves the CUDA key: the shared fronts (ops/front.h) over the CUDA kernels.
#include "ops/bias_grad/bias_grad.h"
#include "ops/conv/conv.h"
#include "ops/depthwise_conv/depthwise_conv.h"
#include "registration/per_rank.h"

namespace convx {
namespace {
constexpr Backend kCuda{cuda::dense_forward,     cuda::dense_data_grad,     cuda::dense_weight_grad,
                        cuda::depthwise_forward, cuda::depthwise_data_grad, cuda::depthwise_weight_grad,
                        cuda::dense_conv_and_weight_grad, cuda::bias_grad_beside};
}  // namespace
}  // namespace convx

TORCH_LIBRARY_IMPL(convx, CUDA, m) {
  convx::register_all_ranks<convx::Fronts<convx::kCuda>>(m);
  m.impl("_bias_grad", convx::cuda::bias_grad);
  m.impl("_conv_and_weight_grad", convx::front::conv_and_weight_grad<convx::kCuda>);
}
