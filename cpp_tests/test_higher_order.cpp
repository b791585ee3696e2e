// Second and third derivatives (create_graph) against aten's. convx's backward is written with
// convx operators, so every order exists; aten is the reference where it has the order.
#include <convx/convx.h>

#include "testing.h"

using namespace convx_test;

namespace {

const std::vector<int64_t> kStride{2, 1}, kPadding{1, 0}, kDilation{1, 2};

class HigherOrder : public ::testing::TestWithParam<int> {};

TEST_P(HigherOrder, Conv2d) {
  at::manual_seed(0);
  expect_same_derivatives(
      [](const std::vector<Tensor>& v) {
        return convx::conv2d(v[0], v[1], v[2], kStride, kPadding, kDilation, /*groups=*/2);
      },
      [](const std::vector<Tensor>& v) {
        return at::conv2d(v[0], v[1], v[2], kStride, kPadding, kDilation, /*groups=*/2);
      },
      {leaf({2, 4, 7, 8}), leaf({4, 2, 3, 2}), leaf({4})}, GetParam(), "conv2d");
}

TEST_P(HigherOrder, ConvTranspose2d) {
  at::manual_seed(0);
  // No output_padding: aten's own third derivative of conv_transpose2d refuses it.
  expect_same_derivatives(
      [](const std::vector<Tensor>& v) {
        return convx::conv_transpose2d(v[0], v[1], v[2], kStride, kPadding, {0, 0}, 1, kDilation);
      },
      [](const std::vector<Tensor>& v) {
        return at::conv_transpose2d(v[0], v[1], v[2], kStride, kPadding, {0, 0}, 1, kDilation);
      },
      {leaf({2, 3, 4, 5}), leaf({3, 2, 2, 3}), leaf({2})}, GetParam(), "conv_transpose2d");
}

TEST_P(HigherOrder, DepthwiseConv2d) {
  at::manual_seed(0);
  expect_same_derivatives(
      [](const std::vector<Tensor>& v) {
        return convx::depthwise_conv2d(v[0], v[1], v[2], kStride, kPadding, kDilation);
      },
      [](const std::vector<Tensor>& v) {
        return at::conv2d(v[0], v[1], v[2], kStride, kPadding, kDilation, /*groups=*/3);
      },
      {leaf({2, 3, 7, 8}), leaf({6, 1, 3, 3}), leaf({6})}, GetParam(), "depthwise_conv2d");
}

INSTANTIATE_TEST_SUITE_P(Orders, HigherOrder, ::testing::Values(2, 3),
                         [](const auto& info) { return "order" + std::to_string(info.param); });

}  // namespace
