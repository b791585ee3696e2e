"""Derivatives of every operator: against aten, gradcheck/gradgradcheck, empty batches, which
operators the backward calls, third order, autocast."""

import collections

import pytest
import torch
import torch.nn.functional as F

import convx
from helpers import (ALL_OPS, Case, CountConvx, cases, generator, grads, random_case,
                     random_cotangent, requires_grad_copy)


# ---- first-order gradients against aten ----

FIRST_ORDER_COUNT = {1: 20, 2: 30, 3: 20}


@pytest.mark.parametrize("family,rank", ALL_OPS)
def test_first_order_grads_match_aten(family, rank):
    gen = generator("vjp", family, rank)
    for case in cases(family, rank, FIRST_ORDER_COUNT[rank], "vjp"):
        c = requires_grad_copy(case)
        names = c.differentiable()
        inputs = [c.tensors[n] for n in names]
        out = c.run_convx()
        ref = c.run_ref()
        v = random_cotangent(ref, gen)
        got = grads(out, inputs, v)
        want = grads(ref, inputs, v)
        for n, g, w, x in zip(names, got, want, inputs):
            g = torch.zeros_like(x) if g is None else g
            w = torch.zeros_like(x) if w is None else w
            assert g.shape == x.shape, (n, case)
            torch.testing.assert_close(g, w, rtol=1e-10, atol=1e-10,
                                       msg=lambda m: f"d/d{n} of {case}\n{m}")


# ---- gradcheck / gradgradcheck ----

# chunks x 10 small configurations: 50 per operator for rank 2, 20 for ranks 1 and 3.
GRADCHECK_CHUNKS = {1: 2, 2: 5, 3: 2}
GRADCHECK_PARAMS = [(f, r, c) for f, r in ALL_OPS for c in range(GRADCHECK_CHUNKS[r])]


def _as_function(case: Case):
    names = case.differentiable()

    def fn(*tensors):
        return case.run_convx(dict(zip(names, tensors)))

    return fn, tuple(requires_grad_copy(case).tensors[n] for n in names)


@pytest.mark.parametrize("family,rank,chunk", GRADCHECK_PARAMS)
def test_gradcheck_and_gradgradcheck(family, rank, chunk):
    for case in cases(family, rank, 10, "gradcheck", chunk, small=True):
        fn, inputs = _as_function(case)
        assert torch.autograd.gradcheck(fn, inputs), case
        assert torch.autograd.gradgradcheck(fn, inputs), case


# ---- empty batch ----

@pytest.mark.parametrize("family,rank", ALL_OPS)
def test_batch_zero(family, rank):
    gen = generator("batch0", family, rank)
    for _ in range(3):
        case = requires_grad_copy(random_case(family, rank, gen, batches=(0,), bias=True))
        out = case.run_convx()
        ref = case.run_ref()
        assert out.shape == ref.shape, case
        if family != "conv_weight_grad":
            assert out.numel() == 0, case
        else:
            assert torch.equal(out, torch.zeros_like(ref)), case  # nothing to accumulate
        names = case.differentiable()
        inputs = [case.tensors[n] for n in names]
        got = grads(out, inputs, torch.randn(out.shape, generator=gen, dtype=out.dtype))
        for n, g, x in zip(names, got, inputs):
            assert g is not None and g.shape == x.shape, (n, case)
            assert not g.any(), (n, case)  # zero-size, or zeros for weight / bias


# ---- which operators the backward runs ----

def _forward(family, rank, need):
    """A forward of ``family`` whose inputs in ``need`` require grad; returns out, needed."""
    gen = generator("count", family, rank)
    case = random_case(family, rank, gen, batches=(2,), bias=True)
    t = dict(case.tensors)
    for n in need:
        t[n] = t[n].detach().clone().requires_grad_()
    out = case.run_convx(t)
    return out, [t[n] for n in need]


@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("family,need,must,must_not", [
    ("conv", ("weight",), ("weight_grad",), ("input_grad",)),
    ("conv", ("input",), ("input_grad",), ("weight_grad",)),
    ("conv", ("bias",), (), ("input_grad", "weight_grad")),
    ("depthwise_conv", ("weight",), ("weight_grad",), ("input_grad", "conv")),
    ("depthwise_conv", ("input",), ("input_grad",), ("weight_grad",)),
    ("depthwise_conv", ("bias",), (), ("input_grad", "weight_grad")),
    # grad input of a transposed convolution is a convolution
    ("conv_transpose", ("weight",), ("weight_grad",), ("input_grad", "conv")),
    ("conv_transpose", ("input",), ("conv",), ("weight_grad",)),
    ("conv_transpose", ("bias",), (), ("conv", "weight_grad")),
])
def test_backward_computes_only_what_is_needed(family, need, must, must_not, rank):
    out, inputs = _forward(family, rank, need)
    with CountConvx() as counter:
        torch.autograd.grad(out, inputs, torch.randn_like(out))
    called = counter.calls
    kinds = collections.Counter()
    for name, n in called.items():
        for k in ("input_grad", "weight_grad"):
            if name.endswith(k):
                kinds[k] += n
        if name in (f"conv{rank}d", f"depthwise_conv{rank}d"):
            kinds["conv"] += n
    for k in must:
        assert kinds[k] >= 1, (k, dict(called))
    for k in must_not:
        assert kinds[k] == 0, (k, dict(called))


# ---- third order ----

def _third_order_setup(family, output_padding):
    gen = generator("third", family, output_padding)
    if family == "conv_transpose":
        x = torch.randn(2, 4, 4, 3, generator=gen, dtype=torch.float64)
        w = torch.randn(4, 3, 2, 3, generator=gen, dtype=torch.float64)
        b = torch.randn(6, generator=gen, dtype=torch.float64)
        kw = dict(stride=2, padding=1, output_padding=1 if output_padding else 0, groups=2,
                  dilation=1)

        def op(x, w, b):
            return convx.functional.conv_transpose2d(x, w, b, **kw)

        def ref(x, w, b):
            return F.conv_transpose2d(x, w, b, **kw)
    else:
        x = torch.randn(2, 3, 5, 4, generator=gen, dtype=torch.float64)
        w = torch.randn(6, 1, 3, 2, generator=gen, dtype=torch.float64)
        b = torch.randn(6, generator=gen, dtype=torch.float64)
        kw = dict(stride=(1, 2), padding=1, dilation=(2, 1))

        def op(x, w, b):
            return convx.functional.depthwise_conv2d(x, w, b, **kw)

        def ref(x, w, b):
            return F.conv2d(x, w, b, groups=3, **kw)
    return gen, (x, w, b), op, ref


def _second_derivative_fn(op):
    """(x, w, b, v, u) -> the second derivatives of <op(x, w, b), v> in direction u, w.r.t.
    (x, w, v). Its own gradient is a third derivative of ``op``."""

    def fn(x, w, b, v, ux, uw):
        y = op(x, w, b)
        gx, gw = torch.autograd.grad(y, (x, w), v, create_graph=True)
        s = (gx * ux).sum() + (gw * uw).sum()
        out = torch.autograd.grad(s, (x, w, v), create_graph=True, allow_unused=True)
        return tuple(o for o in out if o is not None)

    return fn


@pytest.mark.parametrize("family,output_padding", [
    ("conv_transpose", False), ("conv_transpose", True), ("depthwise_conv", False)])
def test_third_order(family, output_padding):
    gen, (x, w, b), op, ref = _third_order_setup(family, output_padding)
    y = op(x, w, b)
    v = torch.randn(y.shape, generator=gen, dtype=torch.float64)
    ux = torch.randn(x.shape, generator=gen, dtype=torch.float64)
    uw = torch.randn(w.shape, generator=gen, dtype=torch.float64)
    inputs = tuple(t.clone().requires_grad_() for t in (x, w, b, v, ux, uw))
    fn = _second_derivative_fn(op)
    # gradcheck of a second derivative = checks the third derivatives.
    assert torch.autograd.gradcheck(fn, inputs)
    if output_padding:
        return  # aten's own double backward of conv_transpose with output_padding fails

    # The third derivative against aten's: d/d(x, w, v, ux, uw) of <second derivative, t>.
    def third(f):
        ins = tuple(t.clone().requires_grad_() for t in (x, w, b, v, ux, uw))
        outs = _second_derivative_fn(f)(*ins)
        ts = [torch.randn(o.shape, generator=torch.Generator().manual_seed(i), dtype=o.dtype)
              for i, o in enumerate(outs)]
        s = sum((o * t).sum() for o, t in zip(outs, ts))
        gs = torch.autograd.grad(s, ins, allow_unused=True)
        return [torch.zeros_like(i) if g is None else g for g, i in zip(gs, ins)]

    got, want = third(op), third(ref)
    assert any(g.any() for g in want)  # a real comparison
    for g, w_ in zip(got, want):
        torch.testing.assert_close(g, w_, rtol=1e-10, atol=1e-10)


# ---- autocast ----

@pytest.mark.parametrize("family", ["conv", "conv_transpose", "depthwise_conv"])
def test_autocast_cpu_bfloat16(family):
    gen = generator("autocast", family)
    x = torch.randn(2, 4, 9, 8, generator=gen)
    if family == "conv_transpose":
        w = torch.randn(4, 3, 3, 3, generator=gen)
        b = torch.randn(6, generator=gen)
        op = lambda x, w, b: convx.functional.conv_transpose2d(x, w, b, stride=2, groups=2)
        ref = lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, groups=2)
    elif family == "conv":
        w = torch.randn(6, 2, 3, 3, generator=gen)
        b = torch.randn(6, generator=gen)
        op = lambda x, w, b: convx.functional.conv2d(x, w, b, padding=1, groups=2)
        ref = lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=2)
    else:
        w = torch.randn(8, 1, 3, 3, generator=gen)
        b = torch.randn(8, generator=gen)
        op = lambda x, w, b: convx.functional.depthwise_conv2d(x, w, b, padding=1)
        ref = lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=4)
    w.requires_grad_()
    b.requires_grad_()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = op(x, w, b)
        expected = ref(x, w, b)
    assert expected.dtype == torch.bfloat16  # what aten does
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), expected.float(), rtol=2e-2, atol=5e-2)
    gw, gb = torch.autograd.grad(out.float().sum(), (w, b))
    assert gw.dtype == torch.float32 and gb.dtype == torch.float32
    rw, rb = torch.autograd.grad(expected.float().sum(), (w, b))
    torch.testing.assert_close(gw, rw, rtol=3e-2, atol=0.3)
    torch.testing.assert_close(gb, rb, rtol=3e-2, atol=0.3)
    # outside autocast nothing changes
    assert op(x, w, b).dtype == torch.float32


@pytest.mark.parametrize("op", ["conv2d", "depthwise_conv2d", "conv_transpose2d"])
def test_grad_input_takes_the_input_format_when_grad_output_is_one_pixel(op):
    # A one-pixel grad_output is contiguous and channels-last at once; aten's backward gives
    # grad_input the input's format, and so must the closure.
    g = torch.Generator().manual_seed(11)
    if op == "conv_transpose2d":
        x = torch.randn(2, 6, 3, 3, generator=g, dtype=torch.float64)
        w = torch.randn(6, 4, 1, 1, generator=g, dtype=torch.float64)
        ref = lambda x, w: F.conv_transpose2d(x, w, None, 1, 1)  # noqa: E731  3x3 -> 1x1
        ours = lambda x, w: torch.ops.convx.conv_transpose2d(x, w, None, [1, 1], [1, 1], [0, 0], 1, [1, 1])  # noqa: E731
    else:
        groups = 6 if op == "depthwise_conv2d" else 1
        x = torch.randn(2, 6, 3, 3, generator=g, dtype=torch.float64)
        w = torch.randn(6, 6 // groups, 3, 3, generator=g, dtype=torch.float64)
        ref = lambda x, w: F.conv2d(x, w, None, 1, 0, 1, groups)  # noqa: E731
        if op == "depthwise_conv2d":
            ours = lambda x, w: torch.ops.convx.depthwise_conv2d(x, w, None, [1, 1], [0, 0], [1, 1])  # noqa: E731
        else:
            ours = lambda x, w: torch.ops.convx.conv2d(x, w, None, [1, 1], [0, 0], [1, 1], 1)  # noqa: E731
    x = x.contiguous(memory_format=torch.channels_last).requires_grad_()
    w.requires_grad_()
    y, y_ref = ours(x, w), ref(x, w)
    assert y.shape[-2:] == (1, 1)
    gy = torch.randn(y.shape, generator=g, dtype=torch.float64)
    gx, = torch.autograd.grad(y, x, gy)
    gx_ref, = torch.autograd.grad(y_ref, x, gy)
    torch.testing.assert_close(gx, gx_ref)
    assert gx.stride() == gx_ref.stride()


@pytest.mark.parametrize("op", ["conv2d", "conv_transpose2d"])
def test_grad_input_stays_channels_last_with_a_channels_last_weight(op):
    # aten gives grad_input channels-last when the input or the weight is; a contiguous input with
    # a channels-last weight must not be converted back to contiguous by the closure.
    g = torch.Generator().manual_seed(12)
    x = torch.randn(2, 6, 9, 9, generator=g, dtype=torch.float64, requires_grad=True)
    if op == "conv_transpose2d":
        w = torch.randn(6, 4, 3, 3, generator=g, dtype=torch.float64)
        ref = lambda x, w: F.conv_transpose2d(x, w, None, 2, 1)  # noqa: E731
        ours = lambda x, w: torch.ops.convx.conv_transpose2d(x, w, None, [2, 2], [1, 1], [0, 0], 1, [1, 1])  # noqa: E731
    else:
        w = torch.randn(6, 6, 3, 3, generator=g, dtype=torch.float64)
        ref = lambda x, w: F.conv2d(x, w, None, 1, 1)  # noqa: E731
        ours = lambda x, w: torch.ops.convx.conv2d(x, w, None, [1, 1], [1, 1], [1, 1], 1)  # noqa: E731
    w = w.contiguous(memory_format=torch.channels_last).requires_grad_()
    y, y_ref = ours(x, w), ref(x, w)
    gy = torch.randn(y_ref.shape, generator=g, dtype=torch.float64)
    gx, = torch.autograd.grad(y, x, gy)
    gx_ref, = torch.autograd.grad(y_ref, x, gy)
    torch.testing.assert_close(gx, gx_ref)
    assert gx.is_contiguous(memory_format=torch.channels_last)
    assert gx.stride() == gx_ref.stride()
