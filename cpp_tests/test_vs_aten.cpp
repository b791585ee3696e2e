// The C++ API against aten: forward and first-order gradients of every 2-D operator, 1-D and
// 3-D cases, unbatched inputs and the API's defaults.
#include <convx/convx.h>

#include "testing.h"

using namespace convx_test;

namespace {

// aten's conv*d also take padding as a string: spell the lists out to keep overloads apart.
using V = std::vector<int64_t>;

// Asymmetric hyper-parameters, so that a swapped axis shows.
const std::vector<int64_t> kStride{2, 1}, kPadding{1, 2}, kDilation{1, 2};
constexpr int64_t kGroups = 2;

}  // namespace

TEST(VsAten, Conv2d) {
  at::manual_seed(0);
  expect_same_derivatives(
      [](const std::vector<Tensor>& v) {
        return convx::conv2d(v[0], v[1], v[2], kStride, kPadding, kDilation, kGroups);
      },
      [](const std::vector<Tensor>& v) {
        return at::conv2d(v[0], v[1], v[2], kStride, kPadding, kDilation, kGroups);
      },
      {leaf({2, 4, 9, 10}), leaf({6, 2, 3, 2}), leaf({6})}, 1, "conv2d");
}

TEST(VsAten, ConvTranspose2d) {
  at::manual_seed(0);
  const std::vector<int64_t> stride{2, 3}, output_padding{1, 2};
  expect_same_derivatives(
      [&](const std::vector<Tensor>& v) {
        return convx::conv_transpose2d(v[0], v[1], v[2], stride, kPadding, output_padding,
                                       kGroups, kDilation);
      },
      [&](const std::vector<Tensor>& v) {
        return at::conv_transpose2d(v[0], v[1], v[2], stride, kPadding, output_padding, kGroups,
                                    kDilation);
      },
      {leaf({2, 4, 5, 6}), leaf({4, 3, 3, 2}), leaf({6})}, 1, "conv_transpose2d");
}

TEST(VsAten, DepthwiseConv2d) {
  at::manual_seed(0);
  // Channel multiplier 2: 3 input channels, 6 output channels.
  expect_same_derivatives(
      [](const std::vector<Tensor>& v) {
        return convx::depthwise_conv2d(v[0], v[1], v[2], kStride, kPadding, kDilation);
      },
      [](const std::vector<Tensor>& v) {
        return at::conv2d(v[0], v[1], v[2], kStride, kPadding, kDilation, /*groups=*/3);
      },
      {leaf({2, 3, 9, 10}), leaf({6, 1, 3, 3}), leaf({6})}, 1, "depthwise_conv2d");
}

TEST(VsAten, Conv2dInputGrad) {
  at::manual_seed(0);
  // The input had one more row than the forward shape rules give back from this grad_output:
  // aten's equivalent is conv_transpose2d with output_padding.
  const std::vector<int64_t> input_size{2, 4, 10, 10};
  expect_same_derivatives(
      [&](const std::vector<Tensor>& v) {
        return convx::conv2d_input_grad(input_size, v[0], v[1], kStride, kPadding, kDilation,
                                        kGroups);
      },
      [&](const std::vector<Tensor>& v) {
        return at::conv_transpose2d(v[1], v[0], std::nullopt, kStride, kPadding, {1, 0}, kGroups,
                                    kDilation);
      },
      {leaf({6, 2, 3, 2}), leaf({2, 6, 5, 12})}, 1, "conv2d_input_grad");
}

TEST(VsAten, Conv2dWeightGrad) {
  at::manual_seed(0);
  const std::vector<int64_t> weight_size{6, 2, 3, 2};
  expect_same_derivatives(
      [&](const std::vector<Tensor>& v) {
        return convx::conv2d_weight_grad(v[0], weight_size, v[1], kStride, kPadding, kDilation,
                                         kGroups);
      },
      [&](const std::vector<Tensor>& v) {
        // aten's weight gradient, kept differentiable.
        auto w = at::zeros(weight_size, at::kDouble).requires_grad_(true);
        auto y = at::conv2d(v[0], w, std::nullopt, kStride, kPadding, kDilation, kGroups);
        return torch::autograd::grad({y}, {w}, {v[1]}, true, /*create_graph=*/true)[0];
      },
      {leaf({2, 4, 9, 10}), leaf({2, 6, 5, 12})}, 1, "conv2d_weight_grad");
}

TEST(VsAten, Conv1d) {
  at::manual_seed(0);
  expect_same_derivatives(
      [](const std::vector<Tensor>& v) { return convx::conv1d(v[0], v[1], v[2], {3}, {2}, {2}); },
      [](const std::vector<Tensor>& v) { return at::conv1d(v[0], v[1], v[2], V{3}, V{2}, V{2}); },
      {leaf({2, 3, 20}), leaf({5, 3, 4}), leaf({5})}, 1, "conv1d");
}

TEST(VsAten, ConvTranspose1d) {
  at::manual_seed(0);
  expect_same_derivatives(
      [](const std::vector<Tensor>& v) {
        return convx::conv_transpose1d(v[0], v[1], v[2], {3}, {1}, {2});
      },
      [](const std::vector<Tensor>& v) {
        return at::conv_transpose1d(v[0], v[1], v[2], {3}, {1}, {2});
      },
      {leaf({2, 3, 7}), leaf({3, 5, 4}), leaf({5})}, 1, "conv_transpose1d");
}

TEST(VsAten, DepthwiseConv3d) {
  at::manual_seed(0);
  expect_same_derivatives(
      [](const std::vector<Tensor>& v) {
        return convx::depthwise_conv3d(v[0], v[1], v[2], {1, 2, 1}, {1, 0, 1});
      },
      [](const std::vector<Tensor>& v) {
        return at::conv3d(v[0], v[1], v[2], V{1, 2, 1}, V{1, 0, 1}, V{1, 1, 1}, /*groups=*/2);
      },
      {leaf({2, 2, 4, 6, 5}), leaf({4, 1, 3, 2, 3}), leaf({4})}, 1, "depthwise_conv3d");
}

TEST(VsAten, ConvTranspose3d) {
  at::manual_seed(0);
  expect_same_derivatives(
      [](const std::vector<Tensor>& v) {
        return convx::conv_transpose3d(v[0], v[1], v[2], {2, 1, 2}, {0, 1, 1}, {1, 0, 0});
      },
      [](const std::vector<Tensor>& v) {
        return at::conv_transpose3d(v[0], v[1], v[2], {2, 1, 2}, {0, 1, 1}, {1, 0, 0});
      },
      {leaf({1, 2, 3, 4, 3}), leaf({2, 3, 2, 3, 3}), leaf({3})}, 1, "conv_transpose3d");
}

TEST(VsAten, Conv3dGrads) {
  at::manual_seed(0);
  const std::vector<int64_t> input_size{2, 2, 5, 6, 5}, weight_size{4, 1, 2, 3, 2};
  auto x = leaf(input_size), gy = leaf({2, 4, 4, 4, 4});
  expect_same_derivatives(
      [&](const std::vector<Tensor>& v) {
        return convx::conv3d_input_grad(input_size, v[0], v[1], {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 2);
      },
      [&](const std::vector<Tensor>& v) {
        return at::conv_transpose3d(v[1], v[0], std::nullopt, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, 2);
      },
      {leaf(weight_size), gy}, 1, "conv3d_input_grad");
  auto w = at::randn(weight_size, at::kDouble).requires_grad_(true);
  auto y = at::conv3d(x, w, std::nullopt, V{1, 1, 1}, V{0, 0, 0}, V{1, 1, 1}, 2);
  auto expected = torch::autograd::grad({y}, {w}, {gy})[0];
  expect_close(convx::conv3d_weight_grad(x, weight_size, gy, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 2),
               expected, "conv3d_weight_grad");
}

TEST(VsAten, Defaults) {
  at::manual_seed(0);
  auto x = at::randn({1, 2, 6, 6}, at::kDouble), w = at::randn({2, 2, 3, 3}, at::kDouble);
  auto dw = at::randn({2, 1, 3, 3}, at::kDouble);
  expect_close(convx::conv2d(x, w), at::conv2d(x, w), "conv2d defaults");
  expect_close(convx::conv_transpose2d(x, w), at::conv_transpose2d(x, w), "conv_transpose2d");
  expect_close(convx::depthwise_conv2d(x, dw), at::conv2d(x, dw, {}, V{1, 1}, V{0, 0}, V{1, 1}, 2),
               "depthwise_conv2d defaults");
  auto gy = at::randn({1, 2, 4, 4}, at::kDouble);
  expect_close(convx::conv2d_input_grad(x.sizes(), w, gy), at::conv_transpose2d(gy, w),
               "conv2d_input_grad defaults");
  expect_close(convx::conv2d_input_grad_symint(x.sym_sizes(), w, gy), at::conv_transpose2d(gy, w),
               "conv2d_input_grad_symint");
  expect_close(convx::conv1d(x.select(3, 0), w.select(3, 0)),
               at::conv1d(x.select(3, 0), w.select(3, 0)), "conv1d defaults");
}

TEST(VsAten, Unbatched) {
  at::manual_seed(0);
  // An unbatched input behaves as a batch of one, gradients included.
  expect_same_derivatives(
      [](const std::vector<Tensor>& v) {
        return convx::conv_transpose2d(v[0], v[1], v[2], {2, 2}, {1, 0}, {1, 1});
      },
      [](const std::vector<Tensor>& v) {
        return at::conv_transpose2d(v[0].unsqueeze(0), v[1], v[2], {2, 2}, {1, 0}, {1, 1})
            .squeeze(0);
      },
      {leaf({3, 5, 4}), leaf({3, 2, 3, 3}), leaf({2})}, 1, "unbatched conv_transpose2d");
  expect_same_derivatives(
      [](const std::vector<Tensor>& v) { return convx::depthwise_conv1d(v[0], v[1], v[2], {2}); },
      [](const std::vector<Tensor>& v) {
        return at::conv1d(v[0].unsqueeze(0), v[1], v[2], V{2}, V{0}, V{1}, 3).squeeze(0);
      },
      {leaf({3, 11}), leaf({3, 1, 3}), leaf({3})}, 1, "unbatched depthwise_conv1d");
  auto x = at::randn({4, 7, 7}, at::kDouble), gy = at::randn({6, 4, 9}, at::kDouble);
  auto expected = convx::conv2d_weight_grad(x.unsqueeze(0), {6, 2, 3, 2}, gy.unsqueeze(0),
                                            kStride, kPadding, kDilation, kGroups);
  expect_close(convx::conv2d_weight_grad(x, {6, 2, 3, 2}, gy, kStride, kPadding, kDilation, kGroups),
               expected, "unbatched conv2d_weight_grad");
}
