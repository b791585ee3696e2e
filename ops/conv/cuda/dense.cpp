// The CUDA key's dense kernels: which path serves a call (ops/conv/cuda/dense_paths.h).
//
// Default: the stride == kernel GEMM (patch_gemm.cpp) where it applies for data-grads
// (transposed convolutions) in every layout and for forwards and weight-grads whose fine tensor
// is NC* (not channels-last); the few-channel gather (few_channel_gather.cu) for the other rank-2
// data-grads of one group with 2-4 result channels and at least 16 summed ones; else cuDNN, and im2col + GEMM
// whenever cuDNN has no plan, torch.backends.cudnn.enabled is False, or convx was built without
// cuDNN. The environment variable CONVX_CUDA_DENSE, read on every call, forces a path for tests
// and benchmarks: `cudnn` (cuDNN, im2col where cuDNN has no plan), `patch_gemm` (the GEMM for all
// three directions where it applies, else as `cudnn`), `few_channel` (the gather for every
// data-grad it takes, else as `cudnn`) or `im2col`. The joint forward + weight-grad of the private
// _conv_and_weight_grad follows the same choice, sharing the GEMM's gather between the two.
#include "ops/conv/conv.h"
#include "ops/conv/cuda/dense_paths.h"

#include <ATen/Context.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/util/Exception.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

namespace convx::cuda {
namespace {

// torch.backends.cudnn.allow_tf32 for convolutions. The accessor's parameter changed across
// torch releases (none; an op name string; an optional Float32Op enum): ask by its own type,
// so that the question names the convolution flag (a question without one warns).
template <typename F> struct accessor_arg { using type = void; };
template <typename R, typename C, typename A> struct accessor_arg<R (C::*)(A) const> {
  using type = std::decay_t<A>;
};
template <typename R, typename C, typename A> struct accessor_arg<R (C::*)(A)> {
  using type = std::decay_t<A>;
};

// A template so that only the branch for this torch's signature is compiled.
template <typename Ctx, typename Arg>
bool tf32_flag(Ctx& ctx) {
  if constexpr (std::is_void_v<Arg>) {
    return ctx.allowTF32CuDNN();
  } else if constexpr (std::is_same_v<Arg, std::string>) {
    return ctx.allowTF32CuDNN("conv");
  } else {
    return ctx.allowTF32CuDNN(Arg::value_type::CONV);
  }
}

}  // namespace

bool tf32_allowed_for_conv() {
  using Arg = typename accessor_arg<decltype(&at::Context::allowTF32CuDNN)>::type;
  return tf32_flag<at::Context, Arg>(at::globalContext());
}

namespace {

enum class Path { Default, Cudnn, PatchGemm, FewChannel, Im2col };

Path forced_path() {
  const char* e = std::getenv("CONVX_CUDA_DENSE");
  if (!e || !*e) return Path::Default;
  if (std::strcmp(e, "cudnn") == 0) return Path::Cudnn;
  if (std::strcmp(e, "patch_gemm") == 0) return Path::PatchGemm;
  if (std::strcmp(e, "few_channel") == 0) return Path::FewChannel;
  if (std::strcmp(e, "im2col") == 0) return Path::Im2col;
  TORCH_CHECK(false,
              "convx: CONVX_CUDA_DENSE must be 'cudnn', 'patch_gemm', 'few_channel', 'im2col' or unset, got '",
              e, "'");
}

// Where the patch GEMM serves by default, as measured on the H100 (bench/gpu_dense_bench.py
// --split, docs/performance.md): the data-grad (transposed direction) beat cuDNN in every
// layout; the forward and weight-grad (a gather of the fine tensor, then the GEMM) beat cuDNN on
// NC* fine tensors and lost to its implicit-GEMM kernels on channels-last ones (which cuDNN
// reads in place): those run through the GEMM only on request.
// Channels-last fine tensors with windows of 16 taps or more (the k4 s4 / k16 s16 stems) are the
// exception: their gather moves long contiguous runs and the GEMM's K is large, and there the
// patch GEMM beat cuDNN (ConvNeXt stem backward 1.55x, ViT stem 3.65x, against 0.68-0.94x at
// the 4 and 8 taps of k2 s2).
bool gather_by_default(const Tensor& fine, const Tensor& weight) {
  int64_t taps = 1;
  for (int64_t i = 2; i < weight.dim(); ++i) taps *= weight.size(i);
  return !patch_rows_are_pixels(fine) || taps >= 16;
}

bool try_patch_gemm(Path path, bool by_default) {
  return (path == Path::PatchGemm || (by_default && path == Path::Default)) &&
         at::globalContext().userEnabledCuDNN();
}

#ifdef CONVX_WITH_CUDNN
// cuDNN unless the path is forced to im2col or the user turned cuDNN off, as aten does.
bool try_cudnn(Path path) { return path != Path::Im2col && at::globalContext().userEnabledCuDNN(); }
#endif

}  // namespace

// Each: the stride == kernel GEMM where it applies and is chosen, (data-grad) the few-channel
// gather, then cuDNN, then im2col. With torch.backends.cudnn.enabled = False only im2col runs
// (the GEMM path keeps cuDNN's precision rules, so it goes with cuDNN; the gather follows the
// same switch, so that one flag still selects aten's own kind of kernels).
void dense_forward(const ConvArgs& a, const Tensor& input, const Tensor& weight,
                   const std::optional<Tensor>& bias, const Tensor& output) {
  c10::cuda::CUDAGuard guard(input.device());
  const Path path = forced_path();
  if (try_patch_gemm(path, gather_by_default(input, weight)) &&
      patch_gemm_applies(a, input, weight, output)) {
    patch_gemm_forward(a, input, weight, bias, output);
    return;
  }
#ifdef CONVX_WITH_CUDNN
  if (try_cudnn(path) && cudnn_forward(a, input, weight, bias, output)) return;
#endif
  im2col_forward(a, input, weight, bias, output);
}

void dense_data_grad(const ConvArgs& a, const Tensor& grad_output, const Tensor& weight,
                     const std::optional<Tensor>& bias, const Tensor& grad_input) {
  c10::cuda::CUDAGuard guard(grad_output.device());
  const Path path = forced_path();
  if (try_patch_gemm(path, true) && patch_gemm_applies(a, grad_input, weight, grad_output)) {
    patch_gemm_data_grad(a, grad_output, weight, bias, grad_input);
    return;
  }
  const bool few = path == Path::FewChannel ||
                   (path == Path::Default && few_channel_by_default(a, grad_output, weight));
  if (few && at::globalContext().userEnabledCuDNN() &&
      few_channel_data_grad(a, grad_output, weight, bias, grad_input))
    return;
#ifdef CONVX_WITH_CUDNN
  if (try_cudnn(path) && cudnn_data_grad(a, grad_output, weight, bias, grad_input)) return;
#endif
  im2col_data_grad(a, grad_output, weight, bias, grad_input);
}

void dense_weight_grad(const ConvArgs& a, const Tensor& input, const Tensor& grad_output,
                       const Tensor& grad_weight) {
  c10::cuda::CUDAGuard guard(input.device());
  const Path path = forced_path();
  if (try_patch_gemm(path, gather_by_default(input, grad_weight)) &&
      patch_gemm_applies(a, input, grad_weight, grad_output)) {
    patch_gemm_weight_grad(a, input, grad_output, grad_weight);
    return;
  }
#ifdef CONVX_WITH_CUDNN
  if (try_cudnn(path) && cudnn_weight_grad(a, input, grad_output, grad_weight)) return;
#endif
  im2col_weight_grad(a, input, grad_output, grad_weight);
}

// The patch GEMM's forward and weight-grad of one fine tensor gather the same patches: where
// both would run on the GEMM, one gather serves the two (the backward of a stride == kernel
// transposed convolution: its gradient is gathered once instead of twice). Elsewhere the two
// directions are independent calls, each choosing its own path.
void dense_conv_and_weight_grad(const ConvArgs& a, const Tensor& input, const Tensor& weight,
                                const Tensor& grad_output, const Tensor& output,
                                const Tensor& grad_weight) {
  c10::cuda::CUDAGuard guard(input.device());
  if (try_patch_gemm(forced_path(), gather_by_default(input, weight)) &&
      patch_gemm_applies(a, input, weight, output)) {
    patch_gemm_conv_and_weight_grad(a, input, weight, grad_output, output, grad_weight);
    return;
  }
  dense_forward(a, input, weight, std::nullopt, output);
  dense_weight_grad(a, input, grad_output, grad_weight);
}

}  // namespace convx::cuda
