// The C++ API of convx: one function per operator, with the operator's name, argument order and
// defaults (see registration/schemas.cpp and docs/ops.md).
//
// Every function calls its operator through the dispatcher, so C++ callers get what Python
// callers of torch.ops.convx.* get: autograd (all orders), autocast, and the CPU, CUDA and Meta
// kernels. Tensors may be batched [N, C, *spatial] or unbatched [C, *spatial].
//
//   #include <convx/convx.h>
//   at::Tensor y = convx::conv_transpose2d(x, w, b, /*stride=*/{2, 2}, /*padding=*/{1, 1},
//                                          /*output_padding=*/{1, 1});
//
// Only ATen's core headers are included: this header is cheap, and does not need torch/torch.h.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/SymInt.h>
#include <c10/util/ArrayRef.h>

#include <cstdint>
#include <optional>

#if defined(__GNUC__)
#define CONVX_API __attribute__((visibility("default")))
#else
#define CONVX_API
#endif

namespace convx {

// ---- convolution: input [N, C_in, *in], weight [C_out, C_in/groups, *k] ----

CONVX_API at::Tensor conv1d(const at::Tensor& input, const at::Tensor& weight,
                            const std::optional<at::Tensor>& bias = std::nullopt,
                            at::IntArrayRef stride = {1}, at::IntArrayRef padding = {0},
                            at::IntArrayRef dilation = {1}, int64_t groups = 1);
CONVX_API at::Tensor conv2d(const at::Tensor& input, const at::Tensor& weight,
                            const std::optional<at::Tensor>& bias = std::nullopt,
                            at::IntArrayRef stride = {1, 1}, at::IntArrayRef padding = {0, 0},
                            at::IntArrayRef dilation = {1, 1}, int64_t groups = 1);
CONVX_API at::Tensor conv3d(const at::Tensor& input, const at::Tensor& weight,
                            const std::optional<at::Tensor>& bias = std::nullopt,
                            at::IntArrayRef stride = {1, 1, 1},
                            at::IntArrayRef padding = {0, 0, 0},
                            at::IntArrayRef dilation = {1, 1, 1}, int64_t groups = 1);

// ---- transposed convolution: weight [C_in, C_out/groups, *k]; note groups before dilation ----

CONVX_API at::Tensor conv_transpose1d(const at::Tensor& input, const at::Tensor& weight,
                                      const std::optional<at::Tensor>& bias = std::nullopt,
                                      at::IntArrayRef stride = {1}, at::IntArrayRef padding = {0},
                                      at::IntArrayRef output_padding = {0}, int64_t groups = 1,
                                      at::IntArrayRef dilation = {1});
CONVX_API at::Tensor conv_transpose2d(const at::Tensor& input, const at::Tensor& weight,
                                      const std::optional<at::Tensor>& bias = std::nullopt,
                                      at::IntArrayRef stride = {1, 1},
                                      at::IntArrayRef padding = {0, 0},
                                      at::IntArrayRef output_padding = {0, 0}, int64_t groups = 1,
                                      at::IntArrayRef dilation = {1, 1});
CONVX_API at::Tensor conv_transpose3d(const at::Tensor& input, const at::Tensor& weight,
                                      const std::optional<at::Tensor>& bias = std::nullopt,
                                      at::IntArrayRef stride = {1, 1, 1},
                                      at::IntArrayRef padding = {0, 0, 0},
                                      at::IntArrayRef output_padding = {0, 0, 0},
                                      int64_t groups = 1, at::IntArrayRef dilation = {1, 1, 1});

// ---- depthwise convolution: weight [C*m, 1, *k] (groups = C, any channel multiplier m) ----

CONVX_API at::Tensor depthwise_conv1d(const at::Tensor& input, const at::Tensor& weight,
                                      const std::optional<at::Tensor>& bias = std::nullopt,
                                      at::IntArrayRef stride = {1}, at::IntArrayRef padding = {0},
                                      at::IntArrayRef dilation = {1});
CONVX_API at::Tensor depthwise_conv2d(const at::Tensor& input, const at::Tensor& weight,
                                      const std::optional<at::Tensor>& bias = std::nullopt,
                                      at::IntArrayRef stride = {1, 1},
                                      at::IntArrayRef padding = {0, 0},
                                      at::IntArrayRef dilation = {1, 1});
CONVX_API at::Tensor depthwise_conv3d(const at::Tensor& input, const at::Tensor& weight,
                                      const std::optional<at::Tensor>& bias = std::nullopt,
                                      at::IntArrayRef stride = {1, 1, 1},
                                      at::IntArrayRef padding = {0, 0, 0},
                                      at::IntArrayRef dilation = {1, 1, 1});

// ---- gradients of convNd: grad_input of an input of input_size, grad_weight of weight_size ----
//
// input_size may differ from what the forward shape rules give back (the extra rows and columns
// output_padding adds): that is what torch.nn.grad.conv*_input cannot express.
// The *_symint forms take symbolic sizes (for code that runs under tracing); the plain forms
// take concrete sizes, e.g. conv2d_input_grad(x.sizes(), w, gy).

CONVX_API at::Tensor conv1d_input_grad_symint(c10::SymIntArrayRef input_size,
                                              const at::Tensor& weight,
                                              const at::Tensor& grad_output,
                                              at::IntArrayRef stride = {1},
                                              at::IntArrayRef padding = {0},
                                              at::IntArrayRef dilation = {1}, int64_t groups = 1);
CONVX_API at::Tensor conv2d_input_grad_symint(c10::SymIntArrayRef input_size,
                                              const at::Tensor& weight,
                                              const at::Tensor& grad_output,
                                              at::IntArrayRef stride = {1, 1},
                                              at::IntArrayRef padding = {0, 0},
                                              at::IntArrayRef dilation = {1, 1},
                                              int64_t groups = 1);
CONVX_API at::Tensor conv3d_input_grad_symint(c10::SymIntArrayRef input_size,
                                              const at::Tensor& weight,
                                              const at::Tensor& grad_output,
                                              at::IntArrayRef stride = {1, 1, 1},
                                              at::IntArrayRef padding = {0, 0, 0},
                                              at::IntArrayRef dilation = {1, 1, 1},
                                              int64_t groups = 1);

CONVX_API at::Tensor conv1d_weight_grad_symint(const at::Tensor& input,
                                               c10::SymIntArrayRef weight_size,
                                               const at::Tensor& grad_output,
                                               at::IntArrayRef stride = {1},
                                               at::IntArrayRef padding = {0},
                                               at::IntArrayRef dilation = {1}, int64_t groups = 1);
CONVX_API at::Tensor conv2d_weight_grad_symint(const at::Tensor& input,
                                               c10::SymIntArrayRef weight_size,
                                               const at::Tensor& grad_output,
                                               at::IntArrayRef stride = {1, 1},
                                               at::IntArrayRef padding = {0, 0},
                                               at::IntArrayRef dilation = {1, 1},
                                               int64_t groups = 1);
CONVX_API at::Tensor conv3d_weight_grad_symint(const at::Tensor& input,
                                               c10::SymIntArrayRef weight_size,
                                               const at::Tensor& grad_output,
                                               at::IntArrayRef stride = {1, 1, 1},
                                               at::IntArrayRef padding = {0, 0, 0},
                                               at::IntArrayRef dilation = {1, 1, 1},
                                               int64_t groups = 1);

CONVX_API at::Tensor conv1d_input_grad(at::IntArrayRef input_size, const at::Tensor& weight,
                                       const at::Tensor& grad_output,
                                       at::IntArrayRef stride = {1},
                                       at::IntArrayRef padding = {0},
                                       at::IntArrayRef dilation = {1}, int64_t groups = 1);
CONVX_API at::Tensor conv1d_weight_grad(const at::Tensor& input, at::IntArrayRef weight_size,
                                        const at::Tensor& grad_output,
                                        at::IntArrayRef stride = {1},
                                        at::IntArrayRef padding = {0},
                                        at::IntArrayRef dilation = {1}, int64_t groups = 1);
CONVX_API at::Tensor conv2d_input_grad(at::IntArrayRef input_size, const at::Tensor& weight,
                                       const at::Tensor& grad_output,
                                       at::IntArrayRef stride = {1, 1},
                                       at::IntArrayRef padding = {0, 0},
                                       at::IntArrayRef dilation = {1, 1}, int64_t groups = 1);
CONVX_API at::Tensor conv2d_weight_grad(const at::Tensor& input, at::IntArrayRef weight_size,
                                        const at::Tensor& grad_output,
                                        at::IntArrayRef stride = {1, 1},
                                        at::IntArrayRef padding = {0, 0},
                                        at::IntArrayRef dilation = {1, 1}, int64_t groups = 1);
CONVX_API at::Tensor conv3d_input_grad(at::IntArrayRef input_size, const at::Tensor& weight,
                                       const at::Tensor& grad_output,
                                       at::IntArrayRef stride = {1, 1, 1},
                                       at::IntArrayRef padding = {0, 0, 0},
                                       at::IntArrayRef dilation = {1, 1, 1}, int64_t groups = 1);
CONVX_API at::Tensor conv3d_weight_grad(const at::Tensor& input, at::IntArrayRef weight_size,
                                        const at::Tensor& grad_output,
                                        at::IntArrayRef stride = {1, 1, 1},
                                        at::IntArrayRef padding = {0, 0, 0},
                                        at::IntArrayRef dilation = {1, 1, 1}, int64_t groups = 1);

// ---- keeping libconvx.so linked ----
//
// The operators are registered by static initialisers inside libconvx.so. A program that names
// no convx symbol (it only runs TorchScript or AOTInductor models that call torch.ops.convx.*)
// would lose the library to the linker's --as-needed and then fail with "Unknown builtin op".
// Every translation unit that includes this header calls library_anchor() from a dynamic
// initialiser, which the compiler cannot drop: the reference keeps the library needed.
// (The CMake target convx::convx also links with --no-as-needed, for programs that include no
// convx header at all.)

// Does nothing and returns true: it exists to be referenced.
CONVX_API bool library_anchor() noexcept;

namespace detail {
[[maybe_unused]] inline const bool library_linked = library_anchor();
}  // namespace detail

}  // namespace convx
