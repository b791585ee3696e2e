// The CPU's implicit-GEMM convolution forward and weight grad (ops/conv/cpu_direct.cpp).
#pragma once

#include "ops/front.h"

namespace convx::cpu {
// Groups 1, float, C_in >= 64, C_out >= 32, where ATen runs AVX-512 (not NCHW 1x1 stride 1).
bool direct_forward_applies(const Geometry& g, const Tensor& input, const Tensor& output);
void direct_forward(const Geometry& g, const Tensor& input, const Tensor& weight,
                    const std::optional<Tensor>& bias, const Tensor& output);
// The same conditions, for the weight grad (either layout; NCHW operands are transposed a few
// samples at a time, as for the forward).
bool direct_weight_grad_applies(const Geometry& g, const Tensor& input, const Tensor& grad_output);
void direct_weight_grad(const Geometry& g, const Tensor& input, const Tensor& grad_output,
                        const Tensor& grad_weight);
}  // namespace convx::cpu
