// Depthwise convolution kernels: one input channel per group, channel multiplier m (weight
// [C*m, 1, *k]). Calls of conv / conv_transpose / the grad operators with that shape route here.
#pragma once

#include "ops/front.h"

namespace convx::cpu {
ForwardKernel depthwise_forward;
DataGradKernel depthwise_data_grad;
WeightGradKernel depthwise_weight_grad;
}  // namespace convx::cpu

#ifdef CONVX_WITH_CUDA
namespace convx::cuda {
ForwardKernel depthwise_forward;
DataGradKernel depthwise_data_grad;
WeightGradKernel depthwise_weight_grad;
}  // namespace convx::cuda
#endif
