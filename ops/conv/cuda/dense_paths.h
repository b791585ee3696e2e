// The three ways the CUDA key computes a dense (non-depthwise) convolution, chosen per call by
// ops/conv/cuda/dense.cpp: cuDNN (the default), a GEMM for transposed convolutions whose stride
// equals their kernel (on request), and im2col + GEMM (the fallback, correct for every valid
// call).
// Signatures as in ops/front.h: batched, checked operands, preallocated outputs.
#pragma once

#include "ops/front.h"

namespace convx::cuda {

// ops/conv/cuda/im2col.cu
ForwardKernel im2col_forward;
DataGradKernel im2col_data_grad;
WeightGradKernel im2col_weight_grad;

#ifdef CONVX_WITH_CUDNN
// ops/conv/cuda/cudnn_conv.cpp. Each returns false, having left the output for the caller to
// write, when cuDNN has no execution plan for the call.
bool cudnn_forward(const ConvArgs& a, const Tensor& input, const Tensor& weight,
                   const std::optional<Tensor>& bias, const Tensor& output);
bool cudnn_data_grad(const ConvArgs& a, const Tensor& grad_output, const Tensor& weight,
                     const std::optional<Tensor>& bias, const Tensor& grad_input);
bool cudnn_weight_grad(const ConvArgs& a, const Tensor& input, const Tensor& grad_output,
                       const Tensor& grad_weight);
#endif

// ops/conv/cuda/upsample_gemm.cpp: a transposed convolution with stride == kernel, no padding,
// dilation 1, no output padding and one group writes every output element exactly once, from one
// input pixel: a GEMM [N*in, C_in] x [C_in, k*C_out] followed by a scatter of its rows.
bool upsample_gemm_applies(const ConvArgs& a, const Tensor& grad_output, const Tensor& weight,
                           const Tensor& grad_input);
DataGradKernel upsample_gemm;

}  // namespace convx::cuda
