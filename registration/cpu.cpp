// Which function serves the CPU key: the shared fronts (ops/front.h) over the CPU kernels.
#include "ops/bias_grad/bias_grad.h"
#include "ops/conv/conv.h"
#include "ops/depthwise_conv/depthwise_conv.h"
#include "registration/per_rank.h"

namespace convx {
namespace {
constexpr Backend kCpu{cpu::dense_forward,     cpu::dense_data_grad,     cpu::dense_weight_grad,
                       cpu::depthwise_forward, cpu::depthwise_data_grad, cpu::depthwise_weight_grad};
}  // namespace
}  // namespace convx

TORCH_LIBRARY_IMPL(convx, CPU, m) {
  convx::register_all_ranks<convx::Fronts<convx::kCpu>>(m);
  m.impl("_bias_grad", convx::cpu::bias_grad);
  m.impl("_conv_and_weight_grad", convx::front::conv_and_weight_grad<convx::kCpu>);
}
