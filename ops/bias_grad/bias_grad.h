// The gradient of a convolution's bias: grad_output summed over every dim but the channel dim.
//
// The autograd closure needs it for every convolution with a bias. at::sum does it, but on the
// H100 at 0.65-1.9 TB/s (a quarter to a half of the backward of a k2 s2 upsampling with a
// channels-last gradient); the CUDA kernel here reads grad_output once in 16-byte loads and sums
// in a fixed order (deterministic). Served by the private operator `convx::_bias_grad`
// (registration/), which has no autograd formula: the closure calls it only when the gradient
// itself is not being differentiated (grad mode off), and at::sum otherwise.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/FunctionRef.h>

namespace convx {

using at::Tensor;

// Checks grad_output's rank (a batch dim is optional: the channel dim is dim() - rank - 1) and
// returns the channel dim.
int64_t bias_grad_channel_dim(const Tensor& grad_output, int64_t rank);

// at::sum over every dim but the channel dim, on any device: the CPU kernel, the CUDA kernel's
// fallback, and the closure's differentiable form (under create_graph).
Tensor bias_grad_by_sum(const Tensor& grad_output, int64_t rank);

namespace cpu {
Tensor bias_grad(const Tensor& grad_output, int64_t rank);
}
namespace meta {
Tensor bias_grad(const Tensor& grad_output, int64_t rank);
}
#ifdef CONVX_WITH_CUDA
namespace cuda {
Tensor bias_grad(const Tensor& grad_output, int64_t rank);
// The same sum on a side stream while `work` runs on the current stream (bias_grad.cu says how
// the two are ordered).
Tensor bias_grad_beside(const Tensor& grad_output, int64_t rank, c10::function_ref<void()> work);
}
#endif

}  // namespace convx
