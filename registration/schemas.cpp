// Every convx operator schema, for spatial ranks 1, 2 and 3.
//
// Hyper-parameters are int[N] (static: ONNX and cuDNN need them as constants); sizes that can
// follow the batch (input_size, weight_size) are SymInt[] so torch.export keeps a dynamic batch.
#include <torch/library.h>

#include <string>
#include <vector>

namespace {

std::vector<std::string> schemas_for(int r) {
  const std::string n = std::to_string(r), i = "int[" + n + "] ";
  const std::string geometry = i + "stride=1, " + i + "padding=0, " + i + "dilation=1";
  return {
      "conv" + n + "d(Tensor input, Tensor weight, Tensor? bias=None, " + geometry +
          ", int groups=1) -> Tensor",
      "conv_transpose" + n + "d(Tensor input, Tensor weight, Tensor? bias=None, " + i +
          "stride=1, " + i + "padding=0, " + i + "output_padding=0, int groups=1, " + i +
          "dilation=1) -> Tensor",
      "depthwise_conv" + n + "d(Tensor input, Tensor weight, Tensor? bias=None, " + geometry +
          ") -> Tensor",
      "conv" + n + "d_input_grad(SymInt[] input_size, Tensor weight, Tensor grad_output, " +
          geometry + ", int groups=1) -> Tensor",
      "conv" + n + "d_weight_grad(Tensor input, SymInt[] weight_size, Tensor grad_output, " +
          geometry + ", int groups=1) -> Tensor",
  };
}

}  // namespace

TORCH_LIBRARY(convx, m) {
  for (int r = 1; r <= 3; ++r) {
    for (const auto& schema : schemas_for(r)) m.def(schema.c_str(), {at::Tag::pt2_compliant_tag});
  }
  // Private: the bias gradient of the autograd closure (ops/bias_grad/bias_grad.h). No autograd
  // formula of its own; the closure calls it only when the gradient is not differentiated.
  m.def("_bias_grad(Tensor grad_output, int rank) -> Tensor", {at::Tag::pt2_compliant_tag});
  // Private: conv(input, weight) and conv_weight_grad(input, weight.size, grad_output) in one
  // call, the closure's transposed-convolution backward (ops/front.h); with input_sum also input
  // summed over all but its channel dim (the bias gradient; undefined otherwise). No autograd
  // formula either: the closure calls it only when no gradient it returns is differentiated.
  m.def("_conv_and_weight_grad(Tensor input, Tensor weight, Tensor grad_output, int rank, "
        "int[] stride, int[] padding, int[] dilation, int groups, bool input_sum=False) "
        "-> (Tensor, Tensor, Tensor)",
        {at::Tag::pt2_compliant_tag});
}
