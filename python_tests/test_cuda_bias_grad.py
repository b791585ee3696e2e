"""GPU tests of convx::_bias_grad (ops/bias_grad/cuda/bias_grad.cu), the bias gradient of the
autograd closure: against a float64 sum on random data in every layout it reads in place (NC*,
channel dim innermost, (N, L, C) sequences), the fallbacks (other strides, float64, misaligned
vectors), bitwise repeatability and the conv backward that uses it. Skipped without a GPU."""

import pytest
import torch

if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import helpers  # noqa: E402,F401  (loads convx)

DEV = "cuda"
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def reference(g, rank):
    channel = g.dim() - rank - 1
    return g.double().sum([d for d in range(g.dim()) if d != channel])


def layouts(shape, rank, dtype, gen):
    """(name, tensor) pairs with the same values in different memory layouts."""
    base = torch.randn(shape, generator=gen, dtype=torch.float64).to(dtype).to(DEV)
    out = [("contiguous", base)]
    if len(shape) == rank + 2:
        perm = [0] + list(range(2, rank + 2)) + [1]
        inv = [0, rank + 1] + list(range(1, rank + 1))
        out.append(("channels_innermost", base.permute(perm).contiguous().permute(inv)))
        # a storage offset of one element: the 16-byte loads step aside
        flat = torch.empty(base.numel() + 1, dtype=dtype, device=DEV)
        off = flat[1:].view(shape)
        off.copy_(base)
        out.append(("offset1", off))
        flat_cl = torch.empty(base.numel() + 1, dtype=dtype, device=DEV)
        cl = flat_cl[1:].view([shape[i] for i in perm]).permute(inv)
        cl.copy_(base)
        out.append(("channels_innermost_offset1", cl))
        out.append(("sliced", torch.cat([base, base], dim=-1)[..., ::2]))  # other strides: at::sum
    return out


SHAPES = [  # (shape, rank): odd and even channel counts, short and long rows, unbatched
    ((3, 5, 7, 9), 2), ((2, 256, 16, 16), 2), ((4, 3, 28, 28), 2), ((1, 24, 1, 1), 2),
    ((5, 16, 33), 1), ((2, 64, 4096), 1), ((7, 40), 1), ((2, 8, 3, 5, 7), 3), ((2, 24, 4, 8, 8), 3),
    ((6, 11, 13), 2), ((0, 8, 4, 4), 2),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).split(".")[1])
@pytest.mark.parametrize("shape,rank", SHAPES, ids=lambda v: str(v))
def test_bias_grad_matches_float64(shape, rank, dtype):
    gen = torch.Generator().manual_seed(sum(shape) + rank)
    tol = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1e-2}[dtype]
    for name, g in layouts(shape, rank, dtype, gen):
        got = torch.ops.convx._bias_grad(g, rank)
        ref = reference(g, rank)
        assert got.dtype == dtype and got.shape == ref.shape, name
        scale = g.double().abs().sum([d for d in range(g.dim()) if d != g.dim() - rank - 1]).clamp_min(1)
        err = ((got.double() - ref).abs() / scale).max().item() if ref.numel() else 0.0
        assert err <= tol, (name, err)
        assert torch.equal(got, torch.ops.convx._bias_grad(g, rank)), f"{name}: not repeatable"


def test_bias_grad_large_reduction():
    """A channels-last UNet-sized gradient: many row slices summed in order."""
    gen = torch.Generator().manual_seed(0)
    g = torch.randn(8, 64, 64, 256, generator=gen).to(DEV).permute(0, 3, 1, 2)
    got = torch.ops.convx._bias_grad(g, 2)
    ref = reference(g, 2)
    assert torch.allclose(got.double(), ref, rtol=1e-5, atol=1e-3)
    assert torch.equal(got, torch.ops.convx._bias_grad(g, 2))


def test_bias_grad_float64_falls_back():
    g = torch.randn(2, 5, 6, 7, dtype=torch.float64, device=DEV)
    assert torch.allclose(torch.ops.convx._bias_grad(g, 2), g.sum((0, 2, 3)))


@pytest.mark.parametrize("fmt", ["contiguous", "channels_last"])
def test_conv_backward_bias_grad_vs_aten(fmt):
    """The closure's bias gradient (this kernel when not differentiated, at::sum under
    create_graph) against aten's conv_transpose2d backward."""
    gen = torch.Generator().manual_seed(1)
    mf = torch.channels_last if fmt == "channels_last" else torch.contiguous_format
    x = torch.randn(4, 16, 9, 9, generator=gen).to(DEV).to(memory_format=mf)
    w = torch.randn(16, 8, 2, 2, generator=gen).to(DEV)
    b = torch.randn(8, generator=gen).to(DEV)
    dy = torch.randn(4, 8, 18, 18, generator=gen).to(DEV).to(memory_format=mf)
    for create_graph in (False, True):
        bc = b.clone().requires_grad_()
        ba = b.clone().requires_grad_()
        yc = torch.ops.convx.conv_transpose2d(x, w, bc, [2, 2], [0, 0], [0, 0], 1, [1, 1])
        ya = torch.nn.functional.conv_transpose2d(x, w, ba, stride=2)
        (gc,) = torch.autograd.grad(yc, bc, dy, create_graph=create_graph)
        (ga,) = torch.autograd.grad(ya, ba, dy, create_graph=create_graph)
        assert torch.allclose(gc, ga, rtol=1e-4, atol=1e-3)
