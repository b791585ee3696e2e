// The launcher of the few-channel data-grad gather (few_channel_gather.cuh: the kernel, its
// design and its tile plan).
#include "ops/conv/cuda/dense_paths.h"
#include "ops/conv/cuda/few_channel_gather.cuh"

#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAException.h>
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

bool few_channel_data_grad(const ConvArgs& a, const Tensor& grad_output, const Tensor& weight,
                           const std::optional<Tensor>& bias, const Tensor& grad_input) {
  const auto dt = grad_input.scalar_type();
  if (a.rank != 2 || weight.size(1) > few_channel::kMaxCog ||
      (dt != at::kFloat && dt != at::kHalf && dt != at::kBFloat16) ||
      grad_output.scalar_type() != dt || weight.scalar_type() != dt)
    return false;
  // 32-bit pixel and tile arithmetic in the kernel; offsets into the tensors are 64-bit.
  constexpr int64_t kMaxSide = int64_t(1) << 24;
  for (int64_t d = 2; d < 4; ++d) {
    if (grad_output.size(d) >= kMaxSide || grad_input.size(d) >= kMaxSide) return false;
  }
  for (int64_t i = 0; i < 2; ++i) {
    if (a.stride[i] > 64 || a.padding[i] >= kMaxSide || a.dilation[i] > 64 || weight.size(2 + i) > 64)
      return false;
  }
  if (grad_output.size(1) >= kMaxSide) return false;
  Params p{};
  p.N = static_cast<int32_t>(grad_output.size(0));
  p.G = static_cast<int32_t>(a.groups);
  p.Cig = static_cast<int32_t>(grad_output.size(1) / a.groups);
  p.Cog = static_cast<int32_t>(weight.size(1));
  p.Hi = static_cast<int32_t>(grad_output.size(2));
  p.Wi = static_cast<int32_t>(grad_output.size(3));
  p.Ho = static_cast<int32_t>(grad_input.size(2));
  p.Wo = static_cast<int32_t>(grad_input.size(3));
  p.kh = static_cast<int32_t>(weight.size(2));
  p.kw = static_cast<int32_t>(weight.size(3));
  p.sh = static_cast<int32_t>(a.stride[0]);
  p.sw = static_cast<int32_t>(a.stride[1]);
  p.ph = static_cast<int32_t>(a.padding[0]);
  p.pw = static_cast<int32_t>(a.padding[1]);
  p.dh = static_cast<int32_t>(a.dilation[0]);
  p.dw = static_cast<int32_t>(a.dilation[1]);
  for (int i = 0; i < 4; ++i) {
    p.xs[i] = grad_output.stride(i);
    p.ws[i] = weight.stride(i);
    p.ys[i] = grad_input.stride(i);
  }
  if (!few_channel::plan(p) || p.blocks >= (int64_t(1) << 31)) return false;
  const auto aligned = [&](const Tensor& t) {
    return reinterpret_cast<uintptr_t>(t.const_data_ptr()) % (4 * t.element_size()) == 0;
  };
  p.x_vec = p.xs[1] == 1 && p.Cig % 4 == 0 && p.xs[0] % 4 == 0 && p.xs[2] % 4 == 0 &&
            p.xs[3] % 4 == 0 && aligned(grad_output);
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
