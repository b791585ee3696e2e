// The Meta key: the shared fronts with no kernels, i.e. the argument checks and output shapes
// and layouts alone. Registered in C++ so every process that loads libconvx.so (Python, export,
// AOTInductor, C++) has them.
#include "ops/bias_grad/bias_grad.h"
#include "registration/per_rank.h"

namespace convx {
namespace {
constexpr Backend kMeta{nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};
}  // namespace
}  // namespace convx

TORCH_LIBRARY_IMPL(convx, Meta, m) {
  convx::register_all_ranks<convx::Fronts<convx::kMeta>>(m);
  m.impl("_bias_grad", convx::meta::bias_grad);
  m.impl("_conv_and_weight_grad", convx::front::conv_and_weight_grad<convx::kMeta>);
}
