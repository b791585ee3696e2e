// The bias gradient on the CPU and its Meta shape (bias_grad.h).
#include "ops/bias_grad/bias_grad.h"
#include "ops/common/args.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/sum.h>
#include <c10/util/Exception.h>

#include <vector>

namespace convx {

int64_t bias_grad_channel_dim(const Tensor& grad_output, int64_t rank) {
  check_rank(rank, "convx::_bias_grad");
  TORCH_CHECK(grad_output.dim() == rank + 1 || grad_output.dim() == rank + 2,
              "convx::_bias_grad: expected grad_output with ", rank + 1, " (unbatched) or ",
              rank + 2, " (batched) dims, got ", grad_output.dim());
  return grad_output.dim() - rank - 1;
}

Tensor bias_grad_by_sum(const Tensor& grad_output, int64_t rank) {
  const int64_t channel = bias_grad_channel_dim(grad_output, rank);
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < grad_output.dim(); ++i) {
    if (i != channel) dims.push_back(i);
  }
  return at::sum(grad_output, dims);
}

Tensor cpu::bias_grad(const Tensor& grad_output, int64_t rank) { return bias_grad_by_sum(grad_output, rank); }

Tensor meta::bias_grad(const Tensor& grad_output, int64_t rank) {
  const int64_t channel = bias_grad_channel_dim(grad_output, rank);
  return at::empty_symint({grad_output.sym_size(channel)}, grad_output.options());
}

}  // namespace convx
