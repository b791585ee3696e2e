// The ways the CUDA key computes a dense (non-depthwise) convolution, chosen per call by
// ops/conv/cuda/dense.cpp: a GEMM for convolutions whose stride equals their kernel, a direct
// gather for data-grads with few result channels, cuDNN (the rest), and im2col + GEMM (the
// fallback, correct for every valid call).
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

// ops/conv/cuda/dense.cpp: torch.backends.cudnn.allow_tf32, the flag of convolutions.
bool tf32_allowed_for_conv();

// ops/conv/cuda/patch_gemm.cpp: a convolution whose stride equals its kernel (padding 0, dilation
// 1, one group, no output padding; half types, or float32 with TF32 allowed; not under the
// deterministic flags) as a cuBLAS GEMM plus one gather / scatter pass. `fine` is the tensor at
// the input resolution of the forward (the conv input, the transposed output), `coarse` the other.
bool patch_gemm_applies(const ConvArgs& a, const Tensor& fine, const Tensor& weight,
                        const Tensor& coarse);
// Whether the patch matrix's rows are pixels (a channels-last fine tensor: unit channel stride)
// rather than (channels, taps) of an NC* one.
bool patch_rows_are_pixels(const Tensor& fine);
// ops/conv/cuda/patch_scatter.cu: the data-grad's patch matrix P (contiguous, in the order its
// rows_are_pixels flag names) into a dense fine tensor, plus the bias; false (nothing written)
// for layouts or sizes it does not take.
bool patch_scatter(const Tensor& P, bool rows_are_pixels, at::IntArrayRef coarse, at::IntArrayRef k,
                   const std::optional<Tensor>& bias, const Tensor& fine);
// ops/conv/cuda/patch_gather.cu: the fine tensor's windows into the contiguous patch matrix P
// (the inverse of patch_scatter): rows_are_pixels P [N, L, (taps, C)]; else [N, (C, taps), L],
// or with samples_inner [(C, taps), N, L]. False (nothing written) for views whose last dim
// (channels-last: channels and last dim) is not dense, or sizes beyond its 32-bit row offsets.
bool patch_gather(const Tensor& fine, bool rows_are_pixels, at::IntArrayRef coarse, at::IntArrayRef k,
                  bool samples_inner, const Tensor& P);
ForwardKernel patch_gemm_forward;
DataGradKernel patch_gemm_data_grad;
WeightGradKernel patch_gemm_weight_grad;
// The forward and the weight-grad of one input on one gather of its patches (where
// patch_gemm_applies to the forward, it applies to the weight-grad too: same fine tensor,
// kernel and coarse size).
ConvAndWeightGradKernel patch_gemm_conv_and_weight_grad;

// ops/conv/cuda/few_channel_gather.cu: the data-grad (transposed convolution) of rank 2 whose
// result has at most 4 channels per group (weight.size(1) <= 4), float32 / float16 / bfloat16,
// operands of any strides, as one direct gather kernel with the bias added. False (nothing
// written) for calls it does not take: other ranks or dtypes, more than 16 stride phases, a tile
// that does not fit its shared memory, sizes beyond its 32-bit pixel arithmetic.
bool few_channel_data_grad(const ConvArgs& a, const Tensor& grad_output, const Tensor& weight,
                           const std::optional<Tensor>& bias, const Tensor& grad_input);
// Where the gather serves by default (where it was measured faster than cuDNN): one group, 2-4
// result channels, at least 16 summed channels.
bool few_channel_by_default(const ConvArgs& a, const Tensor& grad_output, const Tensor& weight);

}  // namespace convx::cuda
