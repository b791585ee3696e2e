// Argument checks, output shapes and layouts shared by every backend (CPU, CUDA, Meta).
//
// Every operator family is generic over the spatial rank (1, 2 or 3). The checks are written
// once over SymInt so that the Meta kernels (fake tensors, torch.compile, torch.export) raise
// exactly the errors the real kernels raise and compute exactly the same output shape.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/SymInt.h>
#include <c10/util/ArrayRef.h>

#include <array>
#include <optional>
#include <vector>

namespace convx {

using at::Tensor;

// The hyper-parameters of one call, as given (one entry per spatial dimension).
struct ConvArgs {
  int64_t rank = 2;
  std::vector<int64_t> stride, padding, dilation, output_padding;
  int64_t groups = 1;
};

ConvArgs make_args(int64_t rank, c10::IntArrayRef stride, c10::IntArrayRef padding,
                   c10::IntArrayRef dilation, int64_t groups,
                   c10::IntArrayRef output_padding = {});

// What a kernel needs to know, with the spatial dimensions padded to three (leading 1s), so one
// loop nest serves ranks 1, 2 and 3. "input"/"output" are the forward convolution's: for the
// data-grad (= transposed convolution) "output" is the grad_output / transposed input.
struct Geometry {
  int64_t batch = 0, in_channels = 0, out_channels = 0, groups = 1;
  std::array<int64_t, 3> input{1, 1, 1}, output{1, 1, 1}, kernel{1, 1, 1};
  std::array<int64_t, 3> stride{1, 1, 1}, padding{0, 0, 0}, dilation{1, 1, 1};

  int64_t input_numel() const { return input[0] * input[1] * input[2]; }
  int64_t output_numel() const { return output[0] * output[1] * output[2]; }
  int64_t kernel_numel() const { return kernel[0] * kernel[1] * kernel[2]; }
  // Depthwise-shaped: one input channel per group (any channel multiplier). Such calls of the
  // dense operators route to the depthwise kernels.
  bool depthwise() const { return groups == in_channels; }
};

// A size that is static in every model we know of (channels, kernel). Unlike Tensor::size(),
// this does not materialise (and so guard on) the other, possibly symbolic, sizes.
inline int64_t static_size(const Tensor& t, int64_t dim) {
  return t.sym_size(dim).guard_int(__FILE__, __LINE__);
}

// ---- checks (each names the argument, what was expected and what came) ----

// The spatial rank of an operator that takes it as an argument (the private ones): 1, 2 or 3.
void check_rank(int64_t rank, const char* op);

// input [N, C_in, *in] or unbatched [C_in, *in]; weight [C_out, C_in/groups, *k].
void check_conv(const ConvArgs& a, const Tensor& input, const Tensor& weight,
                const std::optional<Tensor>& bias, const char* op);
// Transposed: input [N, C_in, *in], weight [C_in, C_out/groups, *k].
void check_conv_transpose(const ConvArgs& a, const Tensor& input, const Tensor& weight,
                          const std::optional<Tensor>& bias, const char* op);
// Depthwise: weight [C*m, 1, *k].
void check_depthwise(const ConvArgs& a, const Tensor& input, const Tensor& weight,
                     const std::optional<Tensor>& bias, const char* op);
void check_input_grad(const ConvArgs& a, c10::SymIntArrayRef input_size, const Tensor& weight,
                      const Tensor& grad_output, const char* op);
void check_weight_grad(const ConvArgs& a, const Tensor& input, c10::SymIntArrayRef weight_size,
                       const Tensor& grad_output, const char* op);

// ---- shapes ----

// Forward output spatial size for one dimension; checks it is positive.
c10::SymInt conv_output_size(const c10::SymInt& in, int64_t k, int64_t s, int64_t p, int64_t d,
                             const char* op, int64_t dim);
// Full output sizes (batched or not, matching the input).
std::vector<c10::SymInt> conv_output_sizes(const ConvArgs& a, const Tensor& input,
                                           const Tensor& weight);
std::vector<c10::SymInt> conv_transpose_output_sizes(const ConvArgs& a, const Tensor& input,
                                                     const Tensor& weight);

// ---- layout ----

// Output is channels-last when the input (or, for ranks 2 and 3, the weight) is, as in aten.
// For rank 1 "channels-last" means an (N, L, C) tensor viewed as (N, C, L).
bool is_channels_last(const Tensor& t);
bool prefer_channels_last(const Tensor& a, const Tensor& b);
// A new tensor of the given (batched or unbatched) sizes, channels-last or contiguous. Real and
// Meta kernels both allocate through here, so their strides agree.
Tensor new_tensor(c10::SymIntArrayRef sizes, const at::TensorOptions& opts, bool channels_last);

// Whether t is densely laid out as new_tensor(t.sizes(), ..., channels_last) would lay it out
// (dims of size 1 may have any stride), and a copy of t in that layout when it is not.
bool has_layout(const Tensor& t, bool channels_last);
Tensor to_layout(const Tensor& t, bool channels_last);

// Runs `body` on an output tensor of dtype `dtype`, dense in the layout: `out` itself when it
// already is one, otherwise a temporary that is copied into `out` afterwards. Kernels that can
// only write one layout (or only their opmath type) write through this.
template <typename F>
void with_output_as(const Tensor& out, at::ScalarType dtype, bool channels_last, F&& body) {
  if (out.scalar_type() == dtype && has_layout(out, channels_last)) {
    body(out);
  } else {
    auto tmp = new_tensor(out.sym_sizes(), out.options().dtype(dtype), channels_last);
    body(tmp);
    out.copy_(tmp);
  }
}

// Adds the batch dimension to unbatched operands and removes it from the result.
inline bool is_unbatched(const Tensor& t, int64_t rank) { return t.dim() == rank + 1; }
inline Tensor batched(const Tensor& t, int64_t rank) { return is_unbatched(t, rank) ? t.unsqueeze(0) : t; }

// Geometry of a batched, checked call.
Geometry geometry(const ConvArgs& a, const Tensor& input, const Tensor& weight, const Tensor& output);

}  // namespace convx
