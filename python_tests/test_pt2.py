"""torch.compile and torch.export with convx operators."""

import pytest
import torch

import convx
import convx.nn as cnn

class Net(torch.nn.Module):
    """Every forward family, plus a functional call with a string padding."""

    def __init__(self):
        super().__init__()
        self.stem = cnn.Conv2d(3, 8, 3, padding=1)
        self.dw = cnn.DepthwiseConv2d(8, 16, 3, stride=2, padding=1)
        self.up = cnn.ConvTranspose2d(16, 4, 2, stride=2)
        self.w1 = torch.nn.Parameter(torch.randn(4, 1, 3) * 0.3)
        self.t3 = cnn.ConvTranspose3d(4, 2, (1, 2, 2), stride=(1, 2, 2))

    def forward(self, x):
        y = torch.relu(self.stem(x))
        y = torch.relu(self.dw(y))
        y = self.up(y)                                              # [N, 4, H, W]
        s = y.flatten(2)                                            # [N, 4, H*W]
        s = convx.functional.depthwise_conv1d(s, self.w1, None, padding="causal")
        z = self.t3(y.unsqueeze(2))                                 # [N, 2, 1, 2H, 2W]
        return y.mean() + s.mean() + z.mean() + s.pow(2).mean()


def _eager_and_compiled(backend):
    torch.manual_seed(0)
    model = Net()
    x = torch.randn(2, 3, 12, 12, requires_grad=True)
    compiled = torch.compile(model, backend=backend, fullgraph=True)
    outs = []
    for fn in (model, compiled):
        out = fn(x)
        g = torch.autograd.grad(out, [x] + list(model.parameters()))
        outs.append((out, g))
    return outs


@pytest.mark.parametrize("backend", ["aot_eager", pytest.param("inductor", marks=pytest.mark.slow)])
def test_compile_fullgraph_forward_backward(backend):
    torch._dynamo.reset()
    (out, grads), (cout, cgrads) = _eager_and_compiled(backend)
    torch.testing.assert_close(cout, out, rtol=1e-4, atol=1e-5)
    for a, b in zip(cgrads, grads):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_export_dynamic_batch():
    torch.manual_seed(0)
    model = Net().eval()
    x = torch.randn(3, 3, 12, 12)
    batch = torch.export.Dim("batch")
    ep = torch.export.export(model, (x,), dynamic_shapes={"x": {0: batch}})
    targets = {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}
    used = {t.split(".")[1] for t in targets if t.startswith("convx.")}
    assert {"conv2d", "depthwise_conv2d", "conv_transpose2d", "depthwise_conv1d",
            "conv_transpose3d"} <= used, targets
    # the batch stayed dynamic: other batch sizes run and agree with eager
    for n in (1, 5):
        xn = torch.randn(n, 3, 12, 12)
        torch.testing.assert_close(ep.module()(xn), model(xn))


def test_export_keeps_convx_ops_through_decompositions():
    torch.manual_seed(0)
    model = torch.nn.Sequential(cnn.Conv2d(3, 4, 3), cnn.DepthwiseConv2d(4, 4, 3))
    x = torch.randn(2, 3, 8, 8)
    ep = torch.export.export(model, (x,)).run_decompositions()
    names = {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}
    assert "convx.conv2d.default" in names and "convx.depthwise_conv2d.default" in names, names
    torch.testing.assert_close(ep.module()(x), model(x))


def test_aot_backward_graph_uses_grad_ops():
    """The traced backward graph is made of the convx gradient operators."""
    from functorch.compile import aot_function, make_boxed_func
    graphs = []

    def capture(gm, _):
        graphs.append({str(n.target) for n in gm.graph.nodes if n.op == "call_function"})
        return make_boxed_func(gm.forward)

    fn = aot_function(lambda x, w: convx.functional.conv2d(x, w, None, padding=1),
                      fw_compiler=capture, bw_compiler=capture)
    w = torch.randn(4, 3, 3, 3, requires_grad=True)
    xr = torch.randn(2, 3, 8, 8, requires_grad=True)
    fn(xr, w).sum().backward()
    assert len(graphs) == 2
    assert any("convx.conv2d_input_grad" in t for t in graphs[1]), graphs[1]
    assert any("convx.conv2d_weight_grad" in t for t in graphs[1]), graphs[1]
