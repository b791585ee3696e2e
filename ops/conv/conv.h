// Dense convolution kernels (forward, data-grad = transposed convolution, weight-grad), per
// backend. They take batched, checked operands and write preallocated outputs (ops/front.h).
#pragma once

#include "ops/front.h"

namespace convx::cpu {
ForwardKernel dense_forward;
DataGradKernel dense_data_grad;
WeightGradKernel dense_weight_grad;
}  // namespace convx::cpu

#ifdef CONVX_WITH_CUDA
namespace convx::cuda {
ForwardKernel dense_forward;
DataGradKernel dense_data_grad;
WeightGradKernel dense_weight_grad;
ConvAndWeightGradKernel dense_conv_and_weight_grad;
}  // namespace convx::cuda
#endif
