// The device-independent half of the dense kernels: batch chunking, one GEMM per group
// (at::bmm, so BLAS on the CPU and cuBLAS on CUDA), bias, and the opmath type (float for
// half/bfloat16). A backend supplies only im2col and col2im.
#pragma once

#include "ops/front.h"

namespace convx {

struct ColumnOps {
  // [B, C*K, L] columns of a contiguous opmath chunk [B, C, *in].
  Tensor (*im2col)(const Tensor& x, const Geometry& g);
  // The adjoint: a contiguous [B, C, *in] (sizes `sizes`) from [B, C*K, L].
  Tensor (*col2im)(const Tensor& cols, const Geometry& g, c10::IntArrayRef sizes);
  // The column buffer of one chunk stays under this many bytes.
  int64_t column_bytes;
  // Optional channels-last forms (groups == 1), where the columns are pixel rows: [B*L, K*C]
  // (tap-major, channel-minor) of a channels-last [B, *in, C] chunk, and the adjoint, which
  // gathers such rows (plus an optional bias) into `x`, a channels-last dense opmath chunk
  // [B, C, *in] that it overwrites. With them, channels-last calls run one GEMM per chunk and
  // read and write NHWC directly, with no layout copies.
  Tensor (*im2col_cl)(const Tensor& x, const Geometry& g) = nullptr;
  void (*col2im_cl)(const Tensor& cols, const Geometry& g, const Tensor& x,
                    const std::optional<Tensor>& bias) = nullptr;
};

void gemm_forward(const ColumnOps& ops, const ConvArgs& a, const Tensor& input,
                  const Tensor& weight, const std::optional<Tensor>& bias, const Tensor& output);
void gemm_data_grad(const ColumnOps& ops, const ConvArgs& a, const Tensor& grad_output,
                    const Tensor& weight, const std::optional<Tensor>& bias,
                    const Tensor& grad_input);
void gemm_weight_grad(const ColumnOps& ops, const ConvArgs& a, const Tensor& input,
                      const Tensor& grad_output, const Tensor& grad_weight);

}  // namespace convx
