// Helpers shared by the C++ tests: random operands, comparisons with aten, and derivatives of
// every order taken the way gradgradcheck takes them.
#pragma once

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <functional>
#include <string>
#include <vector>

namespace convx_test {

using at::Tensor;
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// Double precision, so that convx and aten agree to rounding whatever order they sum in.
inline Tensor leaf(at::IntArrayRef sizes, at::Device device = at::kCPU) {
  return at::randn(sizes, at::kDouble).to(device).requires_grad_(true);
}

inline void expect_close(const Tensor& actual, const Tensor& expected, const std::string& what) {
  ASSERT_EQ(actual.defined(), expected.defined()) << what;
  if (!actual.defined()) return;
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  ASSERT_EQ(actual.scalar_type(), expected.scalar_type()) << what;
  EXPECT_TRUE(at::allclose(actual, expected, 1e-7, 1e-9))
      << what << ": max |difference| "
      << (actual - expected).abs().max().item<double>();
}

// Random values in the shape of t, laid out contiguously whatever t's strides (randn_like would
// copy them, and then convx and aten results of different layouts would get different values).
inline Tensor random_like(const Tensor& t) { return at::randn(t.sizes(), t.options()); }

// The output of f, then the derivatives of orders 1..order with respect to every input and to
// the output's cotangent: order k differentiates a random linear combination of order k-1's
// results (fixed by the seed, so convx and aten see the same combinations). Treating the
// cotangent as an input keeps the higher orders of these bilinear operators non-zero.
// Derivatives that do not exist (an input that does not reach the result) come back as zeros.
inline std::vector<std::vector<Tensor>> derivatives(const Fn& f, const std::vector<Tensor>& inputs,
                                                    int order) {
  std::vector<Tensor> vars;
  for (const auto& t : inputs) vars.push_back(t.detach().requires_grad_(true));
  auto out = f(vars);
  at::manual_seed(1000);
  vars.push_back(random_like(out).requires_grad_(true));
  std::vector<std::vector<Tensor>> results{{out}};
  Tensor s = (out * vars.back()).sum();
  for (int k = 1; k <= order; ++k) {
    auto grads = torch::autograd::grad({s}, vars, {}, /*retain_graph=*/true,
                                       /*create_graph=*/k < order, /*allow_unused=*/true);
    Tensor next = at::zeros({}, out.options());
    at::manual_seed(1000 + k);
    for (size_t i = 0; i < grads.size(); ++i) {
      if (!grads[i].defined()) grads[i] = at::zeros_like(vars[i]);
      next = next + (grads[i] * random_like(grads[i])).sum();
    }
    results.push_back(grads);
    if (!next.requires_grad()) break;  // the remaining derivatives are all zero
    s = next;
  }
  return results;
}

// Checks convx against aten: outputs and derivatives up to `order`.
inline void expect_same_derivatives(const Fn& convx_fn, const Fn& aten_fn,
                                    const std::vector<Tensor>& inputs, int order,
                                    const std::string& what) {
  auto got = derivatives(convx_fn, inputs, order);
  auto want = derivatives(aten_fn, inputs, order);
  ASSERT_EQ(got.size(), want.size()) << what << ": derivatives vanish at different orders";
  for (size_t k = 0; k < got.size(); ++k)
    for (size_t i = 0; i < got[k].size(); ++i)
      expect_close(got[k][i], want[k][i],
                   what + ", order " + std::to_string(k) + ", argument " + std::to_string(i));
}

}  // namespace convx_test
