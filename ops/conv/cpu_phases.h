// The CPU's phase-decomposed transposed convolution (ops/conv/cpu_phases.cpp).
#pragma once

#include "ops/front.h"

namespace convx::cpu {
// Channels-last grad_input, groups 1, dilation 1, some stride > 1.
bool phase_data_grad_applies(const Geometry& g, const Tensor& grad_input);
void phase_data_grad(const Geometry& g, const Tensor& grad_output, const Tensor& weight,
                     const std::optional<Tensor>& bias, const Tensor& grad_input);
}  // namespace convx::cpu
