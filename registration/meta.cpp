// The Meta key: the shared fronts with no kernels, i.e. the argument checks and output shapes
// and layouts alone. Registered in C++ so every process that loads libconvx.so (Python, export,
// AOTInductor, C++) has them.
#include "registration/per_rank.h"

namespace convx {
namespace {
constexpr Backend kMeta{nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};
}  // namespace
}  // namespace convx

TORCH_LIBRARY_IMPL(convx, Meta, m) { convx::register_all_ranks<convx::Fronts<convx::kMeta>>(m); }
