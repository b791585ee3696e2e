"""convx.convert on a Conformer-style 1-D block and an X3D-style 3-D block: same outputs and
gradients as aten, scriptable, exportable with a dynamic batch (and sequence length in 1-D)."""
import copy

import pytest
import torch
from torch import nn

import convx


class ConformerConv(nn.Module):
    """pointwise -> GLU -> depthwise k31 'same' -> BN -> SiLU -> pointwise."""

    def __init__(self, c=16):
        super().__init__()
        self.pw1 = nn.Conv1d(c, 2 * c, 1)
        self.dw = nn.Conv1d(c, c, 31, padding=15, groups=c)
        self.bn = nn.BatchNorm1d(c)
        self.pw2 = nn.Conv1d(c, c, 1)

    def forward(self, x):
        y = nn.functional.glu(self.pw1(x), dim=1)
        return x + self.pw2(nn.functional.silu(self.bn(self.dw(y))))


class X3DBlock(nn.Module):
    """1x1x1 expand -> depthwise 3x3x3 -> 1x1x1 project, plus a transposed 3-D upsampling."""

    def __init__(self, c=6):
        super().__init__()
        self.expand = nn.Conv3d(c, 2 * c, 1)
        self.dw = nn.Conv3d(2 * c, 2 * c, 3, padding=1, groups=2 * c)
        self.project = nn.Conv3d(2 * c, c, 1)
        self.up = nn.ConvTranspose3d(c, c, 2, stride=2)

    def forward(self, x):
        return self.up(x + self.project(torch.relu(self.dw(self.expand(x)))))


CASES = [
    (ConformerConv, (3, 16, 40), convx.nn.DepthwiseConv1d),
    (X3DBlock, (2, 6, 4, 6, 6), convx.nn.DepthwiseConv3d),
]


def _pair(cls, shape):
    torch.manual_seed(0)
    ref = cls().double().eval()
    ours = convx.convert(copy.deepcopy(ref))
    x = torch.randn(*shape, dtype=torch.float64)
    return ref, ours, x


@pytest.mark.parametrize("cls,shape,dw_cls", CASES)
def test_convert_matches_outputs_and_gradients(cls, shape, dw_cls):
    ref, ours, x = _pair(cls, shape)
    assert isinstance(ours.dw, dw_cls)
    xr, xo = x.clone().requires_grad_(), x.clone().requires_grad_()
    yr, yo = ref(xr), ours(xo)
    torch.testing.assert_close(yo, yr)
    g = torch.randn_like(yr)
    yr.backward(g)
    yo.backward(g)
    torch.testing.assert_close(xo.grad, xr.grad)
    for (name, pr), (_, po) in zip(ref.named_parameters(), ours.named_parameters()):
        torch.testing.assert_close(po.grad, pr.grad, msg=name)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:FutureWarning")
@pytest.mark.parametrize("cls,shape,dw_cls", CASES)
def test_convert_scripts(cls, shape, dw_cls):
    ref, ours, x = _pair(cls, shape)
    scripted = torch.jit.script(ours)
    torch.testing.assert_close(scripted(x), ref(x))


@pytest.mark.parametrize("cls,shape,dw_cls", CASES)
def test_convert_exports_dynamic(cls, shape, dw_cls):
    ref, ours, x = _pair(cls, shape)
    dims = {0: torch.export.Dim("batch", min=2, max=64)}
    if len(shape) == 3:
        dims[2] = torch.export.Dim("length", min=32, max=4096)
    ep = torch.export.export(ours, (x,), dynamic_shapes={"x": dims})
    targets = {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}
    assert any(t.startswith("convx.") for t in targets), targets
    bigger = list(shape)
    bigger[0] = 5
    if len(shape) == 3:
        bigger[2] = 77
    x2 = torch.randn(*bigger, dtype=torch.float64)
    torch.testing.assert_close(ep.module()(x2), ref(x2))
