// The launcher of the few-channel data-grad gather (few_channel_gather.cuh: the kernel, its
// design and its tile plan).
#include "ops/conv/cuda/dense_paths.h"
#include "ops/conv/cuda/few_channel_gather.cuh"

#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdint>

namespace convx::cuda {
namespace {

using few_channel::Params;

template <typename T, int COG>
void launch(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, const Tensor& y,
            const Params& p) {
  auto kernel = few_channel::gather<T, COG>;
  if (p.smem > 48 * 1024) {
    C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(p.smem)));
  }
  kernel<<<static_cast<unsigned>(p.blocks), p.threads, p.smem, c10::cuda::getCurrentCUDAStream()>>>(
      x.const_data_ptr<T>(), w.const_data_ptr<T>(), bias ? bias->const_data_ptr<T>() : nullptr,
      y.mutable_data_ptr<T>(), p);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename T>
void launch_cog(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias,
                const Tensor& y, const Params& p) {
  switch (p.Cog) {
    case 1: launch<T, 1>(x, w, bias, y, p); break;
    case 2: launch<T, 2>(x, w, bias, y, p); break;
    case 3: launch<T, 3>(x, w, bias, y, p); break;
    default: launch<T, 4>(x, w, bias, y, p); break;
  }
}

}  // namespace

// Measured on the H100 against cuDNN (session 9, bench/results/h100/session9/few_channel_ab.log):
// one group with 3 result channels won everywhere (autoencoder head 64 -> 3 at 14², RGB head
// 32 -> 3 at 64², an RGB stem's input-grad 64 -> 3 at 112²); one result channel (a depthwise-
// shaped call of multiplier 256 handed to the dense path) lost in float32 NCHW (0.058 against
// 0.043 ms); 32 groups of 4 -> 4 channels (a ResNeXt input-grad) lost in three of four dtype /
// layout pairs (up to 4x in bfloat16 channels-last).
bool few_channel_by_default(const ConvArgs& a, const Tensor& grad_output, const Tensor& weight) {
  return a.groups == 1 && weight.size(1) >= 2 && grad_output.size(1) >= 16;
}

bool few_channel_data_grad(const ConvArgs& a, const Tensor& grad_output, const Tensor& weight,
                           const std::optional<Tensor>& bias, const Tensor& grad_input) {
  const auto dt = grad_input.scalar_type();
  if ((dt != at::kFloat && dt != at::kHalf && dt != at::kBFloat16) ||
      grad_output.scalar_type() != dt || weight.scalar_type() != dt)
    return false;
  const int dev = c10::cuda::current_device();
  int sms = 0, smem_optin = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  Params p{};
  if (!few_channel::prepare(p, a, grad_output, weight, grad_input, sms, smem_optin)) return false;
  if (p.blocks == 0) return true;  // an empty batch
  std::optional<Tensor> b;
  if (bias.has_value() && bias->defined()) b = bias->to(dt).contiguous();
  switch (dt) {
    case at::kFloat: launch_cog<float>(grad_output, weight, b, grad_input, p); break;
    case at::kHalf: launch_cog<c10::Half>(grad_output, weight, b, grad_input, p); break;
    default: launch_cog<c10::BFloat16>(grad_output, weight, b, grad_input, p); break;
  }
  return true;
}

}  // namespace convx::cuda
