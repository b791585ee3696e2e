"""convx.export: torch.export with a dynamic batch, AOTInductor packages, their checks.

The package tests compile C++ (about 30 s each on two cores): one package per mode, shared by
the tests of a module-scoped fixture. The C++ side (examples/aoti) runs in CTest.
"""

import zipfile

import pytest
import torch

import convx
import convx.export


class _Net(torch.nn.Module):
    """Converted depthwise + transposed convolutions and a direct operator call."""

    def __init__(self):
        super().__init__()
        self.block = torch.nn.Sequential(
            torch.nn.Conv2d(4, 4, 3, padding=1, groups=4), torch.nn.ReLU(),
            torch.nn.ConvTranspose2d(4, 4, 3, stride=2, padding=1, output_padding=1))
        self.head = torch.nn.Parameter(torch.randn(3, 4, 1, 1) * 0.5)

    def forward(self, x):
        return torch.ops.convx.conv2d(self.block(x), self.head)


def _model():
    torch.manual_seed(0)
    return convx.convert(_Net().eval())


def test_export_keeps_convx_nodes_and_a_dynamic_batch():
    model = _model()
    ep = convx.export.export(model, (torch.randn(2, 4, 6, 6),))
    assert convx.export.convx_ops(ep) == ["convx::conv2d", "convx::conv_transpose2d",
                                          "convx::depthwise_conv2d"]
    assert not any("aten.convolution" in str(n.target) for n in ep.graph.nodes)
    for n in (1, 9):
        x = torch.randn(n, 4, 6, 6)
        torch.testing.assert_close(ep.module()(x), model(x))


def test_export_without_convx_ops_is_an_error():
    with pytest.raises(ValueError, match=r"calls no convx operator.*convx\.convert"):
        convx.export.export(torch.nn.Conv2d(3, 3, 3), (torch.randn(2, 3, 8, 8),))


def test_export_example_above_max_batch_is_an_error():
    with pytest.raises(ValueError, match="example batch 8 is larger than max_batch=4"):
        convx.export.export(_model(), (torch.randn(8, 4, 6, 6),), max_batch=4)


def test_batch_error_message():
    assert convx.export.batch_error(4, 1, 16) is None
    assert convx.export.batch_error(1000, 0, None) is None
    message = convx.export.batch_error(17, 1, 16)
    assert "batch 17 is outside the range 1..16" in message and "max_batch" in message


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    """A package of _Net traced at batch 2, batch bounded to 1..8."""
    model = _model()
    path = tmp_path_factory.mktemp("aoti") / "net.pt2"
    ep = convx.export.export(model, (torch.randn(2, 4, 6, 6),), min_batch=1, max_batch=8)
    convx.export.aoti_package(ep, path)
    return model, path


def test_package_runs_other_batches_and_carries_metadata(package):
    model, path = package
    run = convx.export.load(path)
    for n in (1, 5, 8):
        x = torch.randn(n, 4, 6, 6)
        torch.testing.assert_close(run(x), model(x), rtol=1e-4, atol=1e-5)
    meta = run.metadata
    assert meta["convx.ops"] == "convx::conv2d,convx::conv_transpose2d,convx::depthwise_conv2d"
    assert (meta["convx.batch_min"], meta["convx.batch_max"]) == ("1", "8")
    assert "convx::convx" in meta["convx.missing_library"]


def test_package_batch_above_bound_is_a_convx_error(package):
    _, path = package
    run = convx.export.load(path)
    with pytest.raises(ValueError, match=r"batch 9 is outside the range 1\.\.8 .*max_batch"):
        run(torch.randn(9, 4, 6, 6))


def _package_library(path):
    with zipfile.ZipFile(path) as z:
        name = next(n for n in z.namelist() if n.endswith(".so"))
        return z.read(name)


def test_c_shims_package(tmp_path):
    """The direct path: the compiled code calls convx's C functions (no proxy executor)."""
    model = _model()
    path = convx.export.aoti_package(model, tmp_path / "net.pt2", (torch.randn(2, 4, 6, 6),),
                                     c_shims=True)
    binary = _package_library(path)
    for op in ("conv2d", "conv_transpose2d", "depthwise_conv2d"):
        assert f"aoti_torch_cpu_{op}".encode() in binary, op
    assert b"libconvx.so" in binary  # linked against it: the loader finds the loaded library
    run = convx.export.load(path)
    assert run.metadata["convx.c_shims"] == "1"
    for n in (1, 6):
        x = torch.randn(n, 4, 6, 6)
        torch.testing.assert_close(run(x), model(x), rtol=1e-4, atol=1e-5)


def test_c_shims_refuse_operators_without_shims():
    class Grad(torch.nn.Module):
        def forward(self, x, g):
            return torch.ops.convx.conv2d_weight_grad(x, [3, 3, 3, 3], g)
    ep = torch.export.export(Grad(), (torch.randn(2, 3, 6, 6), torch.randn(2, 3, 4, 4)))
    with pytest.raises(ValueError, match="has no C shim"):
        convx.export.aoti_package(ep, "unused.pt2", c_shims=True)


class _Net13(torch.nn.Module):
    """The rank-1 and rank-3 forward operators, each called once, on two inputs."""

    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(3)
        self.w1 = torch.nn.Parameter(torch.randn(4, 1, 3, generator=g))
        self.t1 = torch.nn.Parameter(torch.randn(4, 2, 4, generator=g))
        self.c1 = torch.nn.Parameter(torch.randn(4, 2, 1, generator=g))
        self.w3 = torch.nn.Parameter(torch.randn(4, 1, 3, 3, 3, generator=g))
        self.t3 = torch.nn.Parameter(torch.randn(4, 2, 2, 2, 2, generator=g))
        self.c3 = torch.nn.Parameter(torch.randn(4, 2, 1, 1, 1, generator=g))

    def forward(self, x1, x3):
        ops = torch.ops.convx
        y1 = ops.depthwise_conv1d(x1, self.w1, None, [1], [1], [1])
        y1 = ops.conv_transpose1d(y1, self.t1, None, [2], [1], [0], 2, [1])
        y1 = ops.conv1d(y1, self.c1, None, [1], [0], [1], 2)
        y3 = ops.depthwise_conv3d(x3, self.w3, None, [1, 1, 1], [1, 1, 1], [1, 1, 1])
        y3 = ops.conv_transpose3d(y3, self.t3, None, [2, 2, 2], [0, 0, 0], [0, 0, 0], 2, [1, 1, 1])
        y3 = ops.conv3d(y3, self.c3, None, [1, 1, 1], [0, 0, 0], [1, 1, 1], 2)
        return y1, y3


def test_c_shims_package_ranks_1_and_3(tmp_path):
    model = _Net13().eval()
    example = (torch.randn(2, 4, 9), torch.randn(2, 4, 3, 4, 5))
    path = convx.export.aoti_package(model, tmp_path / "net13.pt2", example, c_shims=True)
    binary = _package_library(path)
    for op in ("conv1d", "conv_transpose1d", "depthwise_conv1d",
               "conv3d", "conv_transpose3d", "depthwise_conv3d"):
        assert f"aoti_torch_cpu_{op}".encode() in binary, op
    run = convx.export.load(path)
    for n in (1, 5):
        inputs = (torch.randn(n, 4, 9), torch.randn(n, 4, 3, 4, 5))
        for got, want in zip(run(*inputs), model(*inputs)):
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
