// Meta tensors (shape inference without data) and the errors C++ callers get.
#include <convx/convx.h>

#include "testing.h"

#include <c10/util/Exception.h>

using namespace convx_test;

namespace {

Tensor meta(at::IntArrayRef sizes) { return at::empty(sizes, at::device(at::kMeta).dtype(at::kFloat)); }
Tensor real(at::IntArrayRef sizes) { return at::randn(sizes); }

// The meta result has the sizes and strides of the real one, and stays on Meta.
void expect_meta_matches(const Tensor& on_meta, const Tensor& on_cpu, const char* what) {
  EXPECT_TRUE(on_meta.is_meta()) << what;
  EXPECT_EQ(on_meta.sizes(), on_cpu.sizes()) << what;
  EXPECT_EQ(on_meta.strides(), on_cpu.strides()) << what;
}

TEST(Meta, ShapesOfEveryFamily) {
  const std::vector<int64_t> stride{2, 1}, padding{1, 2}, dilation{1, 2};
  expect_meta_matches(convx::conv2d(meta({2, 4, 9, 10}), meta({6, 2, 3, 2}), std::nullopt, stride,
                                    padding, dilation, 2),
                      at::conv2d(real({2, 4, 9, 10}), real({6, 2, 3, 2}), std::nullopt, stride,
                                 padding, dilation, 2),
                      "conv2d");
  expect_meta_matches(
      convx::conv_transpose2d(meta({2, 4, 5, 6}), meta({4, 3, 3, 2}), meta({6}), stride, padding,
                              {1, 0}, 2, dilation),
      at::conv_transpose2d(real({2, 4, 5, 6}), real({4, 3, 3, 2}), real({6}), stride, padding,
                           {1, 0}, 2, dilation),
      "conv_transpose2d");
  expect_meta_matches(convx::depthwise_conv2d(meta({2, 3, 9, 10}), meta({6, 1, 3, 3})),
                      convx::depthwise_conv2d(real({2, 3, 9, 10}), real({6, 1, 3, 3})),
                      "depthwise_conv2d");
  expect_meta_matches(convx::conv2d_input_grad({2, 4, 10, 10}, meta({6, 2, 3, 2}),
                                               meta({2, 6, 5, 12}), stride, padding, dilation, 2),
                      real({2, 4, 10, 10}), "conv2d_input_grad");
  expect_meta_matches(convx::conv2d_weight_grad(meta({2, 4, 9, 10}), {6, 2, 3, 2},
                                                meta({2, 6, 5, 12}), stride, padding, dilation, 2),
                      real({6, 2, 3, 2}), "conv2d_weight_grad");
  expect_meta_matches(convx::conv1d(meta({3, 20}), meta({5, 3, 4}), std::nullopt, {3}),
                      real({5, 6}), "unbatched conv1d");
  expect_meta_matches(convx::conv_transpose3d(meta({1, 2, 3, 4, 3}), meta({2, 3, 2, 3, 3})),
                      real({1, 3, 4, 6, 5}), "conv_transpose3d");
}

TEST(Meta, ChannelsLastLayoutAsOnCpu) {
  auto x = real({2, 4, 6, 6}).contiguous(at::MemoryFormat::ChannelsLast);
  auto w = real({8, 4, 3, 3});
  auto on_cpu = convx::conv2d(x, w);
  auto on_meta = convx::conv2d(x.to(at::kMeta), w.to(at::kMeta));
  EXPECT_TRUE(on_cpu.is_contiguous(at::MemoryFormat::ChannelsLast));
  expect_meta_matches(on_meta, on_cpu, "channels-last conv2d");
}

// Runs f, expecting a c10::Error whose message (backtrace left out) contains every one of words.
template <class F>
void expect_error_naming(F f, std::initializer_list<const char*> words) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one naming " << *words.begin();
  } catch (const c10::Error& e) {
    const std::string message = e.what_without_backtrace();
    for (const char* word : words)
      EXPECT_NE(message.find(word), std::string::npos) << "'" << word << "' not in: " << message;
  }
}

TEST(Errors, NameTheArgument) {
  auto x = real({1, 4, 8, 8}), w = real({4, 4, 3, 3});
  expect_error_naming([&] { convx::conv2d(x, w, std::nullopt, {0, 1}); }, {"stride", "conv2d"});
  expect_error_naming([&] { convx::conv2d(x, w, std::nullopt, {1, 1}, {-1, 0}); }, {"padding"});
  expect_error_naming([&] { convx::conv2d(x, w, std::nullopt, {1, 1}, {0, 0}, {0, 1}); },
                      {"dilation"});
  // Weight [4, 4, 3, 3] with groups = 2 expects 8 input channels.
  expect_error_naming([&] { convx::conv2d(x, w, std::nullopt, {1, 1}, {0, 0}, {1, 1}, 2); },
                      {"groups"});
  expect_error_naming([&] { convx::conv_transpose2d(x, real({4, 2, 3, 3}), std::nullopt, {1, 1},
                                                    {0, 0}, {0, 0}, 3); },
                      {"groups", "conv_transpose2d"});
  expect_error_naming([&] { convx::conv_transpose2d(x, w, std::nullopt, {2, 2}, {0, 0}, {2, 0}); },
                      {"output_padding"});
  expect_error_naming([&] { convx::conv2d(x, w, real({3})); }, {"bias"});
  expect_error_naming([&] { convx::depthwise_conv2d(x, real({4, 2, 3, 3})); }, {"weight"});
  expect_error_naming([&] { convx::conv2d(real({1, 4, 2, 2}), w); }, {"conv2d"});
  // The same checks run on Meta: shape inference rejects what the kernel would.
  expect_error_naming([&] { convx::conv2d(meta({1, 4, 8, 8}), meta({4, 4, 3, 3}), std::nullopt,
                                          {1, 1}, {0, 0}, {1, 1}, 2); },
                      {"groups"});
}

}  // namespace
