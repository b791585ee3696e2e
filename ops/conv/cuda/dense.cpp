// The CUDA key's dense kernels: which path serves a call (ops/conv/cuda/dense_paths.h).
//
// Default: cuDNN, and im2col + GEMM whenever cuDNN has no plan, torch.backends.cudnn.enabled is
// False, or convx was built without cuDNN. The stride == kernel GEMM for transposed convolutions is not on by default: it has not
// yet been measured faster than cuDNN (docs/performance.md, "Dense CUDA (cuDNN)"). The
// environment variable CONVX_CUDA_DENSE, read on every call, forces a path for tests and
// benchmarks: `cudnn` (cuDNN, im2col where cuDNN has no plan), `upsample_gemm` (the GEMM where it
// applies, else as `cudnn`) or `im2col`.
#include "ops/conv/conv.h"
#include "ops/conv/cuda/dense_paths.h"

#include <ATen/Context.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/util/Exception.h>

#include <cstdlib>
#include <cstring>

namespace convx::cuda {
namespace {

enum class Path { Default, Cudnn, UpsampleGemm, Im2col };

Path forced_path() {
  const char* e = std::getenv("CONVX_CUDA_DENSE");
  if (!e || !*e) return Path::Default;
  if (std::strcmp(e, "cudnn") == 0) return Path::Cudnn;
  if (std::strcmp(e, "upsample_gemm") == 0) return Path::UpsampleGemm;
  if (std::strcmp(e, "im2col") == 0) return Path::Im2col;
  TORCH_CHECK(false, "convx: CONVX_CUDA_DENSE must be 'cudnn', 'upsample_gemm', 'im2col' or unset, got '",
              e, "'");
}

#ifdef CONVX_WITH_CUDNN
// cuDNN unless the path is forced to im2col or the user turned cuDNN off, as aten does.
bool try_cudnn(Path path) { return path != Path::Im2col && at::globalContext().userEnabledCuDNN(); }
#endif

}  // namespace

void dense_forward(const ConvArgs& a, const Tensor& input, const Tensor& weight,
                   const std::optional<Tensor>& bias, const Tensor& output) {
  c10::cuda::CUDAGuard guard(input.device());
#ifdef CONVX_WITH_CUDNN
  if (try_cudnn(forced_path()) && cudnn_forward(a, input, weight, bias, output)) return;
#else
  forced_path();  // still validates the variable
#endif
  im2col_forward(a, input, weight, bias, output);
}

void dense_data_grad(const ConvArgs& a, const Tensor& grad_output, const Tensor& weight,
                     const std::optional<Tensor>& bias, const Tensor& grad_input) {
  c10::cuda::CUDAGuard guard(grad_output.device());
  const Path path = forced_path();
  // The GEMM only on request until measured faster than cuDNN (see the top of this file).
  if (path == Path::UpsampleGemm && upsample_gemm_applies(a, grad_output, weight, grad_input)) {
    upsample_gemm(a, grad_output, weight, bias, grad_input);
    return;
  }
#ifdef CONVX_WITH_CUDNN
  if (try_cudnn(path) && cudnn_data_grad(a, grad_output, weight, bias, grad_input)) return;
#endif
  im2col_data_grad(a, grad_output, weight, bias, grad_input);
}

void dense_weight_grad(const ConvArgs& a, const Tensor& input, const Tensor& grad_output,
                       const Tensor& grad_weight) {
  c10::cuda::CUDAGuard guard(input.device());
#ifdef CONVX_WITH_CUDNN
  if (try_cudnn(forced_path()) && cudnn_weight_grad(a, input, grad_output, grad_weight)) return;
#else
  forced_path();
#endif
  im2col_weight_grad(a, input, grad_output, grad_weight);
}

}  // namespace convx::cuda
