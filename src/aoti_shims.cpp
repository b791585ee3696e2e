// C entry points for AOTInductor's direct path (torch._inductor.config.aot_inductor.
// custom_ops_to_c_shims, used by convx.export.aoti_package(..., c_shims=True)).
//
// By default an AOTInductor package calls a custom operator through the "proxy executor": the
// arguments are serialised at compile time and, at every call, rebuilt as an IValue stack and
// dispatched boxed. With c_shims, the generated code calls these functions instead, with
// AtenTensorHandles and plain integer arrays, in the calling convention Inductor generates for
// the operator's schema (Tensor -> AtenTensorHandle, Tensor? -> AtenTensorHandle* (null for
// None), int[N] -> const int64_t* + length, int -> int64_t, result -> AtenTensorHandle*).
// The names follow Inductor's rule aoti_torch_<device>_<operator name>.
//
// Only the forward operators (the ones inference graphs hold) have shims. Each calls the
// convx C++ API, i.e. the dispatcher with unboxed arguments, so every backend key applies.
#include <convx/convx.h>

#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/inductor/aoti_torch/utils.h>

namespace {

using torch::aot_inductor::new_tensor_handle;
using torch::aot_inductor::tensor_handle_to_tensor_pointer;

const at::Tensor& tensor(AtenTensorHandle handle) {
  return *tensor_handle_to_tensor_pointer(handle);
}

// Tensor? arrives as a pointer to a handle, null for None.
std::optional<at::Tensor> optional_tensor(AtenTensorHandle* handle) {
  if (handle == nullptr) return std::nullopt;
  return tensor(*handle);
}

}  // namespace

#define CONVX_INTS(name) at::IntArrayRef(name, name##_len_)
#define CONVX_INT_PARAM(name) const int64_t *name, int64_t name##_len_

// conv{N}d and depthwise_conv{N}d share their argument list (depthwise has no groups).
#define CONVX_CONV_SHIM(device, op)                                                          \
  extern "C" CONVX_API AOTITorchError aoti_torch_##device##_##op(                            \
      AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias,               \
      CONVX_INT_PARAM(stride), CONVX_INT_PARAM(padding), CONVX_INT_PARAM(dilation),          \
      int64_t groups, AtenTensorHandle* ret0) {                                              \
    AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({                                             \
      *ret0 = new_tensor_handle(convx::op(tensor(input), tensor(weight),                     \
                                          optional_tensor(bias), CONVX_INTS(stride),     \
                                          CONVX_INTS(padding), CONVX_INTS(dilation), groups)); \
    });                                                                                      \
  }

#define CONVX_DEPTHWISE_SHIM(device, op)                                                     \
  extern "C" CONVX_API AOTITorchError aoti_torch_##device##_##op(                            \
      AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias,               \
      CONVX_INT_PARAM(stride), CONVX_INT_PARAM(padding), CONVX_INT_PARAM(dilation),          \
      AtenTensorHandle* ret0) {                                                              \
    AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({                                             \
      *ret0 = new_tensor_handle(convx::op(tensor(input), tensor(weight),                     \
                                          optional_tensor(bias), CONVX_INTS(stride),     \
                                          CONVX_INTS(padding), CONVX_INTS(dilation)));       \
    });                                                                                      \
  }

#define CONVX_TRANSPOSE_SHIM(device, op)                                                     \
  extern "C" CONVX_API AOTITorchError aoti_torch_##device##_##op(                            \
      AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias,               \
      CONVX_INT_PARAM(stride), CONVX_INT_PARAM(padding), CONVX_INT_PARAM(output_padding),    \
      int64_t groups, CONVX_INT_PARAM(dilation), AtenTensorHandle* ret0) {                   \
    AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({                                             \
      *ret0 = new_tensor_handle(convx::op(                                                   \
          tensor(input), tensor(weight), optional_tensor(bias), CONVX_INTS(stride),      \
          CONVX_INTS(padding), CONVX_INTS(output_padding), groups, CONVX_INTS(dilation)));   \
    });                                                                                      \
  }

#define CONVX_SHIMS(device)                      \
  CONVX_CONV_SHIM(device, conv1d)                \
  CONVX_CONV_SHIM(device, conv2d)                \
  CONVX_CONV_SHIM(device, conv3d)                \
  CONVX_DEPTHWISE_SHIM(device, depthwise_conv1d) \
  CONVX_DEPTHWISE_SHIM(device, depthwise_conv2d) \
  CONVX_DEPTHWISE_SHIM(device, depthwise_conv3d) \
  CONVX_TRANSPOSE_SHIM(device, conv_transpose1d) \
  CONVX_TRANSPOSE_SHIM(device, conv_transpose2d) \
  CONVX_TRANSPOSE_SHIM(device, conv_transpose3d)

// The dispatcher picks the kernel from the tensors, so both device names serve both.
CONVX_SHIMS(cpu)
CONVX_SHIMS(cuda)
