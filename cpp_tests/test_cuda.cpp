// The comparisons with aten again on the GPU, where there is one: convx's CUDA kernels (and the
// backward built from them) against aten's, up to second derivatives.
#include <convx/convx.h>

#include "testing.h"

using namespace convx_test;

namespace {

const std::vector<int64_t> kStride{2, 1}, kPadding{1, 2}, kDilation{1, 2};

class Cuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA device";
  }
  const at::Device gpu{at::kCUDA};
};

TEST_F(Cuda, Conv2d) {
  at::manual_seed(0);
  expect_same_derivatives(
      [](const std::vector<Tensor>& v) {
        return convx::conv2d(v[0], v[1], v[2], kStride, kPadding, kDilation, 2);
      },
      [](const std::vector<Tensor>& v) {
        return at::conv2d(v[0], v[1], v[2], kStride, kPadding, kDilation, 2);
      },
      {leaf({2, 4, 9, 10}, gpu), leaf({6, 2, 3, 2}, gpu), leaf({6}, gpu)}, 2, "cuda conv2d");
}

TEST_F(Cuda, ConvTranspose2d) {
  at::manual_seed(0);
  const std::vector<int64_t> stride{2, 3}, output_padding{1, 2};
  expect_same_derivatives(
      [&](const std::vector<Tensor>& v) {
        return convx::conv_transpose2d(v[0], v[1], v[2], stride, kPadding, output_padding, 2,
                                       kDilation);
      },
      [&](const std::vector<Tensor>& v) {
        return at::conv_transpose2d(v[0], v[1], v[2], stride, kPadding, output_padding, 2,
                                    kDilation);
      },
      {leaf({2, 4, 5, 6}, gpu), leaf({4, 3, 3, 2}, gpu), leaf({6}, gpu)}, 2,
      "cuda conv_transpose2d");
}

TEST_F(Cuda, DepthwiseConv2dAndConv1d) {
  at::manual_seed(0);
  expect_same_derivatives(
      [](const std::vector<Tensor>& v) {
        return convx::depthwise_conv2d(v[0], v[1], v[2], kStride, kPadding, kDilation);
      },
      [](const std::vector<Tensor>& v) {
        return at::conv2d(v[0], v[1], v[2], kStride, kPadding, kDilation, 3);
      },
      {leaf({2, 3, 9, 10}, gpu), leaf({6, 1, 3, 3}, gpu), leaf({6}, gpu)}, 2,
      "cuda depthwise_conv2d");
  // Depthwise 1-D with a long kernel (the sequence-model case).
  const std::vector<int64_t> one{1}, pad{15};
  expect_same_derivatives(
      [&](const std::vector<Tensor>& v) { return convx::depthwise_conv1d(v[0], v[1], v[2], one, pad); },
      [&](const std::vector<Tensor>& v) { return at::conv1d(v[0], v[1], v[2], one, pad, one, 8); },
      {leaf({2, 8, 64}, gpu), leaf({8, 1, 31}, gpu), leaf({8}, gpu)}, 1,
      "cuda depthwise_conv1d k31");
}

TEST_F(Cuda, MatchesCpu) {
  // The same call on both backends, in float32 (the dtype the GPU kernels are tuned for).
  at::manual_seed(0);
  auto x = at::randn({2, 16, 20, 20}), w = at::randn({16, 8, 4, 4}), b = at::randn({16});
  auto on_cpu = convx::conv_transpose2d(x, w, b, {2, 2}, {1, 1}, {0, 0}, 2);
  auto on_gpu = convx::conv_transpose2d(x.cuda(), w.cuda(), b.cuda(), {2, 2}, {1, 1}, {0, 0}, 2);
  EXPECT_TRUE(at::allclose(on_gpu.cpu(), on_cpu, 1e-4, 1e-4));
  auto gy = at::randn_like(on_cpu);
  EXPECT_TRUE(at::allclose(
      convx::conv2d_weight_grad(on_cpu.cuda(), {16, 8, 4, 4}, x.cuda(), {2, 2}, {1, 1}, {1, 1}, 2).cpu(),
      convx::conv2d_weight_grad(on_cpu, {16, 8, 4, 4}, x, {2, 2}, {1, 1}, {1, 1}, 2), 1e-3, 1e-3));
}

}  // namespace
