// TorchScript compiled in C++ sees the operators as torch.ops.convx.*, with their schemas'
// defaults and scalar-to-list broadcasting of int[N] arguments.
#include <convx/convx.h>

#include "testing.h"

#include <torch/csrc/jit/api/compilation_unit.h>
#include <torch/csrc/jit/frontend/resolver.h>
#include <torch/csrc/jit/frontend/sugared_value.h>

using namespace convx_test;

namespace {

namespace jit = torch::jit;

// torch::jit::compile's resolver knows `torch.<aten op>` only; Python's also resolves
// `torch.ops.<namespace>.<op>`, as this one does.
struct OpsNamespaces : jit::SugaredValue {
  std::string kind() const override { return "torch.ops"; }
  std::shared_ptr<jit::SugaredValue> attr(const jit::SourceRange&, jit::GraphFunction&,
                                          const std::string& ns) override {
    return std::make_shared<jit::BuiltinModule>(ns);
  }
};

struct Torch : jit::BuiltinModule {
  Torch() : BuiltinModule("aten") {}
  std::shared_ptr<jit::SugaredValue> attr(const jit::SourceRange& loc, jit::GraphFunction& m,
                                          const std::string& field) override {
    if (field == "ops") return std::make_shared<OpsNamespaces>();
    return BuiltinModule::attr(loc, m, field);
  }
};

struct TorchOpsResolver : jit::Resolver {
  std::shared_ptr<jit::SugaredValue> resolveValue(const std::string& name, jit::GraphFunction&,
                                                  const jit::SourceRange&) override {
    return name == "torch" ? std::make_shared<Torch>() : nullptr;
  }
};

std::shared_ptr<jit::CompilationUnit> compile(const std::string& source) {
  auto cu = std::make_shared<jit::CompilationUnit>();
  cu->define(std::nullopt, source, std::make_shared<TorchOpsResolver>(), nullptr);
  return cu;
}

TEST(TorchScript, CallsEveryFamily) {
  auto cu = compile(R"JIT(
def decoder(x: Tensor, w: Tensor, b: Tensor, dw: Tensor):
    y = torch.ops.convx.conv_transpose2d(x, w, b, stride=[2, 2], padding=[1, 1], output_padding=[1, 1])
    return torch.ops.convx.depthwise_conv2d(y, dw, None, 1, 1)

def grads(x: Tensor, w: Tensor, gy: Tensor):
    gx = torch.ops.convx.conv2d_input_grad(x.size(), w, gy, [2, 2])
    gw = torch.ops.convx.conv2d_weight_grad(x, w.size(), gy, [2, 2])
    return gx, gw

def conv(x: Tensor, w: Tensor):
    return torch.ops.convx.conv1d(x, w, padding=[1])
)JIT");

  at::manual_seed(0);
  auto x = at::randn({2, 4, 5, 5}, at::kDouble), w = at::randn({4, 3, 3, 3}, at::kDouble);
  auto b = at::randn({3}, at::kDouble), dw = at::randn({3, 1, 3, 3}, at::kDouble);
  const std::vector<int64_t> two{2, 2}, one{1, 1};
  auto y = at::conv_transpose2d(x, w, b, two, one, one);
  expect_close(cu->run_method("decoder", x, w, b, dw).toTensor(),
               at::conv2d(y, dw, std::nullopt, one, one, one, 3), "decoder");

  auto xi = at::randn({2, 3, 9, 9}, at::kDouble), wi = at::randn({4, 3, 3, 3}, at::kDouble);
  auto gy = at::randn({2, 4, 4, 4}, at::kDouble);
  auto gx_gw = cu->run_method("grads", xi, wi, gy).toTuple();
  expect_close(gx_gw->elements()[0].toTensor(),
               convx::conv2d_input_grad(xi.sizes(), wi, gy, {2, 2}), "conv2d_input_grad");
  expect_close(gx_gw->elements()[1].toTensor(),
               convx::conv2d_weight_grad(xi, wi.sizes(), gy, {2, 2}), "conv2d_weight_grad");

  auto x1 = at::randn({2, 3, 8}, at::kDouble), w1 = at::randn({5, 3, 3}, at::kDouble);
  expect_close(cu->run_method("conv", x1, w1).toTensor(), convx::conv1d(x1, w1, {}, {1}, {1}),
               "conv1d");
}

}  // namespace
