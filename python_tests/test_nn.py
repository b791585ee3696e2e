"""convx.nn modules and convx.convert: torch.nn compatibility, TorchScript, real models."""

import copy
import itertools

import pytest
import torch
import torchvision

import convx
import convx.nn as cnn
from helpers import CountConvx

D = torch.float64
JIT_DEPRECATED = pytest.mark.filterwarnings(
    r"ignore:`torch\.jit\.(script|save|load)` is deprecated:FutureWarning")

CONV = {1: (torch.nn.Conv1d, cnn.Conv1d), 2: (torch.nn.Conv2d, cnn.Conv2d),
        3: (torch.nn.Conv3d, cnn.Conv3d)}
CONV_T = {1: (torch.nn.ConvTranspose1d, cnn.ConvTranspose1d),
          2: (torch.nn.ConvTranspose2d, cnn.ConvTranspose2d),
          3: (torch.nn.ConvTranspose3d, cnn.ConvTranspose3d)}
DW = {1: cnn.DepthwiseConv1d, 2: cnn.DepthwiseConv2d, 3: cnn.DepthwiseConv3d}
CONVX_OPS = {1: torch.ops.convx.conv1d, 2: torch.ops.convx.conv2d, 3: torch.ops.convx.conv3d}


def _input(rank, c, size=9, batch=2, unbatched=False):
    shape = ([] if unbatched else [batch]) + [c] + [size - (i % 2) for i in range(rank)]
    return torch.randn(shape, dtype=D)


# (kwargs for the constructors) -- string paddings, asymmetric 'same', every padding mode
CONV_CONFIGS = [
    dict(in_channels=4, out_channels=6, kernel_size=3),
    dict(in_channels=4, out_channels=6, kernel_size=3, stride=2, padding=1, groups=2, bias=False),
    dict(in_channels=3, out_channels=6, kernel_size=2, padding="same", dilation=3),
    dict(in_channels=3, out_channels=6, kernel_size=4, padding="same"),
    dict(in_channels=3, out_channels=3, kernel_size=3, padding="valid", stride=2, groups=3),
    dict(in_channels=2, out_channels=4, kernel_size=3, padding=2, padding_mode="reflect"),
    dict(in_channels=2, out_channels=4, kernel_size=3, padding=1, padding_mode="circular"),
    dict(in_channels=2, out_channels=4, kernel_size=2, padding="same", padding_mode="replicate"),
    dict(in_channels=4, out_channels=8, kernel_size=3, padding="same", padding_mode="circular",
         dilation=2, groups=4),
]
CONV_T_CONFIGS = [
    dict(in_channels=4, out_channels=6, kernel_size=3),
    dict(in_channels=4, out_channels=6, kernel_size=3, stride=2, padding=1, output_padding=1,
         groups=2, bias=False),
    dict(in_channels=3, out_channels=2, kernel_size=2, stride=3, dilation=2, output_padding=2),
    dict(in_channels=4, out_channels=4, kernel_size=3, stride=2, groups=4),
]
DW_CONFIGS = [
    dict(in_channels=3, out_channels=3, kernel_size=3, padding=1),
    dict(in_channels=3, out_channels=6, kernel_size=2, padding="same", dilation=2, bias=False),
    dict(in_channels=4, out_channels=12, kernel_size=3, stride=2, padding=1,
         padding_mode="reflect"),
    dict(in_channels=2, out_channels=4, kernel_size=3, padding="valid"),
]


def _pairs():
    for kind, configs in [("conv", CONV_CONFIGS), ("conv_t", CONV_T_CONFIGS), ("dw", DW_CONFIGS)]:
        for rank, (i, kw) in itertools.product([1, 2, 3], enumerate(configs)):
            yield pytest.param(rank, kind, kw, id=f"{kind}{rank}d-{i}")


def _make(rank, kind, kw):
    """(torch module, convx module) built from the same seed."""
    if kind == "conv":
        tcls, ccls = CONV[rank]
        tkw, ckw = kw, kw
    elif kind == "conv_t":
        tcls, ccls = CONV_T[rank]
        tkw, ckw = kw, kw
    else:
        tcls, ccls = CONV[rank][0], DW[rank]
        tkw, ckw = dict(kw, groups=kw["in_channels"]), kw
    torch.manual_seed(1234)
    t = tcls(**tkw, dtype=D)
    torch.manual_seed(1234)
    c = ccls(**ckw, dtype=D)
    return t, c


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths:UserWarning")
@pytest.mark.parametrize("rank,kind,kw", list(_pairs()))
def test_module_matches_torch_nn(rank, kind, kw):
    t, c = _make(rank, kind, kw)
    assert isinstance(c, type(t))
    # same parameters, same initialisation, same state_dict keys
    assert list(t.state_dict()) == list(c.state_dict())
    for (n1, p1), (n2, p2) in zip(t.named_parameters(), c.named_parameters()):
        assert n1 == n2 and torch.equal(p1, p2)
    # a torch.nn state dict loads; outputs agree
    with torch.no_grad():
        for p in t.parameters():
            p.copy_(torch.randn_like(p))
    c.load_state_dict(t.state_dict())
    for unbatched in [False, True]:
        x = _input(rank, kw["in_channels"], unbatched=unbatched)
        torch.testing.assert_close(c(x), t(x))
    if kind == "conv_t":
        x = _input(rank, kw["in_channels"])
        base = t(x).shape[2:]
        stride = t.stride[0]
        size = [s + (stride - 1) - t.output_padding[0] for s in base]  # largest allowed
        torch.testing.assert_close(c(x, output_size=size), t(x, output_size=size))
        torch.testing.assert_close(c(x, list(x.shape[:2]) + size), t(x, list(x.shape[:2]) + size))
    # gradients flow to the same parameters
    x = _input(rank, kw["in_channels"]).requires_grad_()
    gc = torch.autograd.grad(c(x).sum(), [x] + list(c.parameters()))
    gt = torch.autograd.grad(t(x).sum(), [x] + list(t.parameters()))
    for a, b in zip(gc, gt):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_forward_calls_convx(rank):
    """The modules really go through torch.ops.convx (not through torch.nn's forward)."""
    mods = [CONV[rank][1](2, 4, 3, padding="same"), CONV_T[rank][1](2, 4, 3, stride=2),
            DW[rank](2, 4, 3)]
    names = [f"conv{rank}d", f"conv_transpose{rank}d", f"depthwise_conv{rank}d"]
    for m, name in zip(mods, names):
        with CountConvx() as counter:
            m(torch.randn([1, 2] + [6] * rank))
        assert counter.calls[name] == 1, (name, dict(counter.calls))


def test_copy_and_pickle():
    import io
    for m in [cnn.Conv2d(2, 4, 2, padding="same", padding_mode="reflect"),
              cnn.DepthwiseConv1d(2, 4, 4, padding="same"), cnn.ConvTranspose3d(2, 2, 2)]:
        m = m.double()
        x = torch.randn([1, 2] + [5] * (m.weight.dim() - 2), dtype=D)
        buf = io.BytesIO()
        torch.save(m, buf)
        buf.seek(0)
        for other in [copy.deepcopy(m), torch.load(buf, weights_only=False)]:
            assert type(other) is type(m)
            torch.testing.assert_close(other(x), m(x))


def test_depthwise_constructor():
    m = cnn.DepthwiseConv2d(3, 6, 3)
    assert m.groups == 3 and m.weight.shape == (6, 1, 3, 3)
    with pytest.raises(ValueError, match="multiple"):
        cnn.DepthwiseConv2d(3, 4, 3)
    with pytest.raises(TypeError):
        cnn.DepthwiseConv2d(3, 6, 3, groups=3)
    with pytest.raises(ValueError, match="strided"):
        cnn.DepthwiseConv1d(3, 6, 3, stride=2, padding="same")


@JIT_DEPRECATED
@pytest.mark.parametrize("rank,kind,kw", list(_pairs()))
def test_torchscript_modules(rank, kind, kw, tmp_path):
    _, c = _make(rank, kind, kw)
    x = _input(rank, kw["in_channels"])
    s = torch.jit.script(c)
    torch.testing.assert_close(s(x), c(x))
    path = tmp_path / "m.pt"
    torch.jit.save(s, str(path))
    loaded = torch.jit.load(str(path))
    torch.testing.assert_close(loaded(x), c(x))
    torch.testing.assert_close(loaded(x[0]), c(x[0]))  # unbatched
    if kind == "conv_t":
        size = list(c(x).shape[2:])
        torch.testing.assert_close(loaded(x, size), c(x, size))
    assert "ops.convx." in loaded.code, loaded.code


# ---- convert ----

class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, padding=1)                       # stays
        self.dw = torch.nn.Conv2d(8, 16, 3, padding="same", groups=8)         # -> Depthwise
        self.grouped = torch.nn.Conv2d(16, 16, 1, groups=4)                   # stays (not dw)
        self.dw1 = torch.nn.Conv1d(1, 2, 3, groups=1)                          # stays (C == 1)
        self.up = torch.nn.ConvTranspose2d(16, 4, 2, stride=2)                # -> convx
        self.already = cnn.DepthwiseConv2d(4, 4, 3, padding=1)                 # untouched
        self.seq = torch.nn.Sequential(torch.nn.Conv3d(2, 2, 3, groups=2, padding_mode="reflect",
                                                       padding=1),
                                       torch.nn.ConvTranspose1d(2, 2, 3))

    def forward(self, x):
        y = self.up(self.grouped(self.dw(self.stem(x))))
        y = self.already(y)
        z = self.seq[0](y[:, :2].unsqueeze(2).repeat(1, 1, 3, 1, 1))
        w = self.seq[1](z.flatten(2)[:, :, :20])
        return y.sum() + z.sum() + w.sum() + self.dw1(w[:, :1]).sum()


@JIT_DEPRECATED
def test_convert_small_model():
    model = Small().double()
    model.dw.register_forward_hook(lambda m, i, o: o * 2)
    reference = copy.deepcopy(model)
    params = {n: p for n, p in model.named_parameters()}
    keys = list(model.state_dict())
    already = model.already
    out = convx.convert(model)
    assert out is model
    assert type(model.dw) is cnn.DepthwiseConv2d
    assert type(model.up) is cnn.ConvTranspose2d
    assert type(model.seq[0]) is cnn.DepthwiseConv3d
    assert type(model.seq[1]) is cnn.ConvTranspose1d
    assert type(model.stem) is torch.nn.Conv2d
    assert type(model.grouped) is torch.nn.Conv2d
    assert type(model.dw1) is torch.nn.Conv1d
    assert model.already is already
    # the very same Parameter objects, same keys
    for n, p in model.named_parameters():
        assert p is params[n], n
    assert list(model.state_dict()) == keys
    # hooks kept (the forward hook doubles dw's output)
    assert len(model.dw._forward_hooks) == 1
    x = torch.randn(2, 3, 10, 10, dtype=D)
    torch.testing.assert_close(model(x), reference(x))
    # training a converted model updates the shared parameters
    opt = torch.optim.SGD(params.values(), lr=0.1)
    model(x).backward()
    before = model.dw.weight.detach().clone()
    opt.step()
    assert not torch.equal(before, model.dw.weight)
    # idempotent
    assert convx.convert(model) is model and type(model.dw) is cnn.DepthwiseConv2d
    # scripts (hooks are not scriptable: drop it on both sides)
    model.dw._forward_hooks.clear()
    reference.dw._forward_hooks.clear()
    scripted = torch.jit.script(model)
    torch.testing.assert_close(scripted(x), model(x))  # (trained a step above)


def test_convert_root_and_shared_modules():
    conv = torch.nn.Conv2d(4, 4, 3, groups=4)
    new = convx.convert(conv)
    assert type(new) is cnn.DepthwiseConv2d and new.weight is conv.weight
    shared = torch.nn.ConvTranspose2d(2, 2, 3)
    seq = torch.nn.Sequential(shared, torch.nn.ReLU(), shared)
    convx.convert(seq)
    assert seq[0] is seq[2] and type(seq[0]) is cnn.ConvTranspose2d


def _convert_and_compare(model, x):
    model.eval()
    reference = copy.deepcopy(model)
    n_params = len(list(model.parameters()))
    ids = [id(p) for p in model.parameters()]
    convx.convert(model)
    assert [id(p) for p in model.parameters()] == ids and len(ids) == n_params
    kinds = {type(m) for m in model.modules()}
    assert kinds & {cnn.DepthwiseConv2d, cnn.ConvTranspose2d}
    with torch.no_grad():
        want = reference(x)
        got = model(x)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    return model, want


@JIT_DEPRECATED
@pytest.mark.parametrize("name", ["mobilenet_v3_small", "convnext_tiny"])
def test_convert_torchvision(name, tmp_path):
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None)
    x = torch.randn(1, 3, 64, 64)
    model, want = _convert_and_compare(model, x)
    n_dw = sum(isinstance(m, cnn.DepthwiseConv2d) for m in model.modules())
    assert n_dw >= 9  # every depthwise block of either network
    assert not any(type(m) is torch.nn.Conv2d and m.groups == m.in_channels > 1
                   for m in model.modules())
    scripted = torch.jit.script(model)
    path = tmp_path / f"{name}.pt"
    torch.jit.save(scripted, str(path))
    loaded = torch.jit.load(str(path))
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), want, rtol=1e-4, atol=1e-4)
