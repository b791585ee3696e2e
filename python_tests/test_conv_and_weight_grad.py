"""convx::_conv_and_weight_grad, the private joint operator of the conv_transpose backward:
{conv(input, weight), conv_weight_grad(input, weight.size, grad_output), input's channel sum (the
bias gradient, only with input_sum=True; None otherwise)} in one call.

On the CPU: against the two public operators (bitwise: the CPU runs exactly those kernels) and
against aten in float64, every rank, random hyper-parameters, every layout of both activations
(contiguous, channels-last, strided views, broadcast with zero strides), stride == kernel with
and without trailing pixels, batch 0 and unbatched; opcheck; errors; and the conv_transpose
closure, which calls it when both gradients are needed and not differentiated. The GPU tests
(test_cuda_dense.py) reuse `joint_cases` and `Joint`.
"""

import collections

import pytest
import torch
import torch.nn.functional as F

import convx
from helpers import RANKS, Case, CountConvx, generator, random_case

OP = torch.ops.convx._conv_and_weight_grad
ACT_LAYOUTS = ("contiguous", "channels_last", "strided", "broadcast", "broadcast_channels")


def operand(shape, layout, gen, channel_dim):
    """(base, view): random data (never zeros) and the function that makes the operand from it
    (applied after a move to another device or dtype, so the layout survives the move)."""
    shape = list(shape)
    if layout == "contiguous" or len(shape) < 2:
        return torch.randn(shape, generator=gen, dtype=torch.float64), lambda t: t
    if layout == "channels_last":  # channels innermost in memory
        storage = shape[:channel_dim] + shape[channel_dim + 1:] + [shape[channel_dim]]
        return torch.randn(storage, generator=gen, dtype=torch.float64), lambda t: t.movedim(-1, channel_dim)
    if layout == "strided":  # every other element of the last dim
        big = shape[:-1] + [2 * shape[-1]]
        return torch.randn(big, generator=gen, dtype=torch.float64), lambda t: t[..., ::2]
    if layout == "broadcast":  # one value everywhere, as `y.sum().backward()` sends
        return torch.randn(1, generator=gen, dtype=torch.float64), lambda t: t.expand(shape)
    if layout == "broadcast_channels":  # stride 0 over the channels
        one = shape[:channel_dim] + [1] + shape[channel_dim + 1:]
        return torch.randn(one, generator=gen, dtype=torch.float64), lambda t: t.expand(shape)
    raise ValueError(layout)


class Joint:
    """One call of the joint operator: operands as (base, view) pairs, the hyper-parameters."""

    def __init__(self, rank, x, w, gy, stride, padding, dilation, groups, label=""):
        self.rank, self.ops = rank, {"input": x, "weight": w, "grad_output": gy}
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        self.label = label

    def tensors(self, device="cpu", dtype=torch.float64, fn=None):
        """The operands on `device` in `dtype` (cast first, then viewed), fn applied to the base."""
        out = {}
        for name, (base, view) in self.ops.items():
            b = base.to(dtype)
            out[name] = view((fn(b) if fn else b).to(device))
        return out

    def args(self, t, input_sum=False):
        return (t["input"], t["weight"], t["grad_output"], self.rank, self.stride, self.padding,
                self.dilation, self.groups, input_sum)

    def run(self, t, input_sum=False):
        return OP(*self.args(t, input_sum))

    def channel_sum(self, t):
        """aten's sum of input over every dim but the channel dim."""
        x = t["input"]
        cdim = x.dim() - self.rank - 1
        return x.sum([d for d in range(x.dim()) if d != cdim])

    def separate(self, t):
        """The two public operators on the same operands."""
        ops, r = torch.ops.convx, self.rank
        y = getattr(ops, f"conv{r}d")(t["input"], t["weight"], None, self.stride, self.padding,
                                      self.dilation, self.groups)
        gw = getattr(ops, f"conv{r}d_weight_grad")(t["input"], list(t["weight"].shape), t["grad_output"],
                                                   self.stride, self.padding, self.dilation, self.groups)
        return y, gw

    def reference(self, t):
        """aten's conv and conv weight-grad (helpers.Case.run_ref)."""
        common = (self.stride, self.padding, self.dilation, self.groups)
        fwd = Case("conv", self.rank, {"input": t["input"], "weight": t["weight"], "bias": None}, *common)
        wg = Case("conv_weight_grad", self.rank, {"input": t["input"], "grad_output": t["grad_output"]},
                  *common, sizes=list(t["weight"].shape))
        with torch.no_grad():
            return fwd.run_ref(), wg.run_ref()

    def bound(self, t):
        """Per element, the sum of |terms| (run on |operands|): the scale of rounding errors."""
        return self.reference({k: v.double().abs() for k, v in t.items()})

    def __repr__(self):
        desc = {k: (tuple(view(b).shape), tuple(view(b).stride())) for k, (b, view) in self.ops.items()}
        return (f"Joint(r{self.rank} {self.label} {desc} s={self.stride} p={self.padding} "
                f"d={self.dilation} g={self.groups})")


def random_joint(rank, gen, layouts=ACT_LAYOUTS, **kw):
    """Random conv hyper-parameters and shapes (helpers.random_case: any stride, padding,
    dilation, groups, depthwise-shaped weights, batch 0 / 1 / 3 / unbatched), both activations
    in a random layout each."""
    c = random_case("conv", rank, gen, **kw)
    x, w = c.tensors["input"], c.tensors["weight"]
    with torch.no_grad():
        y = c.run_ref({"bias": None})
    cdim = x.dim() - rank - 1
    pick = lambda: layouts[int(torch.randint(len(layouts), (1,), generator=gen))]  # noqa: E731
    lx, ly = pick(), pick()
    return Joint(rank, operand(x.shape, lx, gen, cdim), (w, lambda t: t), operand(y.shape, ly, gen, cdim),
                 c.stride, c.padding, c.dilation, c.groups, f"random {lx}/{ly}")


def stride_equals_kernel_joints(rank, gen):
    """Stride == kernel (the CUDA patch GEMM's case): kernels 2, 3, 4; both activations in every
    layout; trailing input pixels beyond c * k (an input not divisible by the stride: a
    conv_transpose with output_padding); batch 1 / 3 / unbatched; wide ones (16 -> 24 channels, long
    rows) that take the gather's 16-byte vector paths."""
    out = []
    for k, lx, ly, batch, extra, wide in [
            (2, "contiguous", "contiguous", 3, 0, False), (2, "channels_last", "channels_last", 2, 0, False),
            (2, "contiguous", "contiguous", 2, 1, False), (3, "channels_last", "contiguous", 1, 2, False),
            (2, "strided", "channels_last", 2, 0, False), (2, "broadcast", "contiguous", 2, 0, False),
            (2, "broadcast_channels", "strided", 3, 1, False), (2, "contiguous", "broadcast", 2, 0, False),
            (4, "contiguous", "contiguous", 2, 0, True), (2, "contiguous", "contiguous", None, 0, False),
            (2, "contiguous", "contiguous", 2, 0, True), (2, "channels_last", "channels_last", 2, 1, True),
            (2, "contiguous", "channels_last", 1, 0, True)]:
        coarse = {1: [13], 2: [5, 7], 3: [3, 4, 5]}[rank]
        if wide:
            coarse = coarse[:-1] + [8]
        ci, co = (16, 24) if wide else (6, 10)
        lead = [] if batch is None else [batch]
        fine = [c * k + extra for c in coarse]
        w = torch.randn([co, ci] + [k] * rank, generator=gen, dtype=torch.float64)
        out.append(Joint(rank, operand(lead + [ci] + fine, lx, gen, len(lead)), (w, lambda t: t),
                         operand(lead + [co] + coarse, ly, gen, len(lead)), [k] * rank, [0] * rank,
                         [1] * rank, 1, f"k{k} {lx}/{ly} extra={extra}"))
    return out


def joint_cases(rank, label, random_count=12):
    gen = generator("joint", rank, label)
    return stride_equals_kernel_joints(rank, gen) + [random_joint(rank, gen) for _ in range(random_count)]


@pytest.mark.parametrize("rank", RANKS)
def test_matches_separate_ops_and_aten(rank):
    for case in joint_cases(rank, "cpu"):
        t = case.tensors()
        y, gw, none = case.run(t)
        assert none is None, case
        y_sep, gw_sep = case.separate(t)
        y_ref, gw_ref = case.reference(t)
        assert torch.equal(y, y_sep) and torch.equal(gw, gw_sep), case  # the same CPU kernels
        y2, gw2, db = case.run(t, input_sum=True)
        assert torch.equal(y2, y) and torch.equal(gw2, gw), case
        assert torch.equal(db, torch.ops.convx._bias_grad(t["input"], rank)), case
        torch.testing.assert_close(db, case.channel_sum(t), rtol=1e-10, atol=1e-10, msg=lambda m: f"{case}\n{m}")
        assert y.stride() == y_sep.stride() and gw.stride() == gw_sep.stride(), case
        torch.testing.assert_close(y, y_ref, rtol=1e-10, atol=1e-10, msg=lambda m: f"{case}\n{m}")
        torch.testing.assert_close(gw, gw_ref, rtol=1e-10, atol=1e-10, msg=lambda m: f"{case}\n{m}")


@pytest.mark.parametrize("rank", RANKS)
def test_batch_zero(rank):
    gen = generator("joint0", rank)
    for _ in range(3):
        case = random_joint(rank, gen, batches=(0,))
        t = case.tensors()
        y, gw, db = case.run(t, input_sum=True)
        y_ref, gw_ref = case.reference(t)
        assert y.shape == y_ref.shape and y.numel() == 0, case
        assert gw.shape == gw_ref.shape and torch.equal(gw, torch.zeros_like(gw)), case
        assert torch.equal(db, torch.zeros(t["input"].shape[1], dtype=db.dtype)), case


# torch's own AOT-dispatch checker reads .grad of the non-leaf tensors it makes.
@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf:UserWarning")
@pytest.mark.parametrize("input_sum", [False, True])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "unbatched"])
@pytest.mark.parametrize("rank", RANKS)
def test_opcheck(rank, layout, input_sum):
    """Schema, Meta kernel (shapes and strides agree with the CPU kernel's), dynamic shapes. No
    autograd formula (the closure uses the two differentiable operators under create_graph), so
    the autograd registration check is left out."""
    gen = generator("joint_opcheck", rank, layout)
    batch = None if layout == "unbatched" else 2
    lay = "channels_last" if layout == "channels_last" else "contiguous"
    lead = [] if batch is None else [batch]
    case = Joint(rank, operand(lead + [4] + [6] * rank, lay, gen, len(lead)),
                 (torch.randn([6, 2] + [2] * rank, generator=gen, dtype=torch.float64), lambda t: t),
                 operand(lead + [6] + [3] * rank, lay, gen, len(lead)), [2] * rank, [0] * rank, [1] * rank, 2)
    torch.library.opcheck(OP.default, case.args(case.tensors(), input_sum),
                          test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_static",
                                      "test_aot_dispatch_dynamic"))
    assert torch.Tag.pt2_compliant_tag in OP.default.tags


def test_errors_name_the_operator_and_argument():
    x, w, gy = torch.randn(2, 4, 6, 6), torch.randn(5, 4, 2, 2), torch.randn(2, 5, 3, 3)
    s, p, d = [2, 2], [0, 0], [1, 1]
    with pytest.raises(RuntimeError, match="_conv_and_weight_grad: expected rank to be 1, 2 or 3, but got rank=4"):
        OP(x, w, gy, 4, s, p, d, 1)
    with pytest.raises(RuntimeError, match="_conv_and_weight_grad: expected stride to have 2 element"):
        OP(x, w, gy, 2, [2], p, d, 1)
    with pytest.raises(RuntimeError, match="_conv_and_weight_grad: expected input to have 4 channels"):
        OP(torch.randn(2, 3, 6, 6), w, gy, 2, s, p, d, 1)
    with pytest.raises(RuntimeError, match="_conv_and_weight_grad: expected grad_output to have 5 channels"):
        OP(x, w, torch.randn(2, 4, 3, 3), 2, s, p, d, 1)
    with pytest.raises(RuntimeError, match="_conv_and_weight_grad: expected grad_output spatial size 4"):
        OP(x, w, torch.randn(2, 5, 4, 3), 2, s, p, d, 1)
    with pytest.raises(RuntimeError, match="_conv_and_weight_grad: expected grad_output to have the same dtype"):
        OP(x, w, gy.double(), 2, s, p, d, 1)


# ---- the conv_transpose closure ----

def transpose_setup(rank, output_padding, dilation, gen, batch=2):
    """A grouped-free k2 s2 conv_transpose (the patch GEMM's shape on CUDA) or, with dilation >
    stride, one whose output_padding reaches the stride (dx narrowed, x zero-extended for dw)."""
    x = torch.randn([batch, 6] + [5, 4, 3][:rank], generator=gen, dtype=torch.float64)
    w = torch.randn([6, 4] + [2] * rank, generator=gen, dtype=torch.float64)
    b = torch.randn(4, generator=gen, dtype=torch.float64)
    kw = dict(stride=2, padding=0, output_padding=output_padding, groups=1, dilation=dilation)
    return x, w, b, kw


CONV_T = {1: convx.functional.conv_transpose1d, 2: convx.functional.conv_transpose2d,
          3: convx.functional.conv_transpose3d}
CONV_T_ATEN = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


@pytest.mark.parametrize("rank", RANKS)
@pytest.mark.parametrize("output_padding,dilation", [(0, 1), (1, 1), (2, 3)])
def test_closure_uses_it_and_matches_aten(rank, output_padding, dilation):
    """conv_transpose's backward with dx and dw needed calls the joint operator once (and no
    separate conv / weight-grad, no _bias_grad: the joint operator sums gy too); under
    create_graph it calls the two differentiable operators and _bias_grad (v needs no grad). Every gradient
    matches aten's."""
    gen = generator("joint_closure", rank, output_padding, dilation)
    x, w, b, kw = transpose_setup(rank, output_padding, dilation, gen)
    ins = [t.clone().requires_grad_() for t in (x, w, b)]
    ins_ref = [t.clone().requires_grad_() for t in (x, w, b)]
    y, y_ref = CONV_T[rank](*ins, **kw), CONV_T_ATEN[rank](*ins_ref, **kw)
    v = torch.randn(y_ref.shape, generator=gen, dtype=torch.float64)
    want = torch.autograd.grad(y_ref, ins_ref, v, create_graph=True)
    for create_graph in (False, True):
        with CountConvx() as counter:
            got = torch.autograd.grad(y, ins, v, retain_graph=True, create_graph=create_graph)
        calls = counter.calls
        if create_graph:
            assert calls["_conv_and_weight_grad"] == 0, dict(calls)
            assert calls[f"conv{rank}d"] == 1 and calls[f"conv{rank}d_weight_grad"] == 1, dict(calls)
            assert calls["_bias_grad"] == 1, dict(calls)  # v needs no grad: db is not differentiated
        else:
            assert calls["_conv_and_weight_grad"] == 1, dict(calls)
            assert calls[f"conv{rank}d"] == 0 and calls[f"conv{rank}d_weight_grad"] == 0, dict(calls)
            assert calls["_bias_grad"] == 0, dict(calls)
        for g, r in zip(got, want):
            torch.testing.assert_close(g, r, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("need", [(0,), (1,), (0, 2), (1, 2)])
def test_closure_one_gradient_runs_one_operator(need):
    gen = generator("joint_one", need)
    x, w, b, kw = transpose_setup(2, 0, 1, gen)
    ins = [t.clone().requires_grad_(i in need) for i, t in enumerate((x, w, b))]
    y = CONV_T[2](*ins, **kw)
    with CountConvx() as counter:
        torch.autograd.grad(y, [ins[i] for i in need], torch.randn_like(y))
    calls = collections.Counter(counter.calls)
    assert calls["_conv_and_weight_grad"] == 0, dict(calls)
    assert calls["conv2d"] == (1 if 0 in need else 0), dict(calls)
    assert calls["conv2d_weight_grad"] == (1 if 1 in need else 0), dict(calls)
    assert calls["_bias_grad"] == (1 if 2 in need else 0), dict(calls)


@pytest.mark.parametrize("need_bias", [False, True])
def test_closure_asks_for_the_sum_only_with_bias_grad(need_bias):
    """dx and dw needed: the joint operator sums gy exactly when db is needed too."""
    gen = generator("joint_sum_flag", need_bias)
    x, w, b, kw = transpose_setup(2, 0, 1, gen)
    ins = [x.clone().requires_grad_(), w.clone().requires_grad_(), b.clone().requires_grad_(need_bias)]
    y = CONV_T[2](*ins, **kw)

    class Flags(CountConvx):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func is OP.default:
                self.flags.append(args[8] if len(args) > 8 else (kwargs or {}).get("input_sum", False))
            return super().__torch_dispatch__(func, types, args, kwargs)

    with Flags() as counter:
        counter.flags = []
        grads = torch.autograd.grad(y, ins if need_bias else ins[:2], torch.randn_like(y))
    assert counter.calls["_conv_and_weight_grad"] == 1 and counter.calls["_bias_grad"] == 0, dict(counter.calls)
    assert counter.flags == [need_bias], counter.flags
    assert len(grads) == (3 if need_bias else 2)


def test_closure_broadcast_gradient():
    """`y.sum().backward()` sends an expanded (all zero strides) gradient to the joint operator."""
    gen = generator("joint_sum")
    for rank in RANKS:
        x, w, b, kw = transpose_setup(rank, 1, 1, gen)
        ins = [t.clone().requires_grad_() for t in (x, w, b)]
        ins_ref = [t.clone().requires_grad_() for t in (x, w, b)]
        CONV_T[rank](*ins, **kw).sum().backward()
        CONV_T_ATEN[rank](*ins_ref, **kw).sum().backward()
        for a, r in zip(ins, ins_ref):
            torch.testing.assert_close(a.grad, r.grad, rtol=1e-10, atol=1e-10)


def test_aot_backward_graph_uses_it():
    """AOT autograd (torch.compile's backward) traces the joint operator through its Meta
    kernel, and the compiled gradients match aten's."""
    from functorch.compile import aot_function, make_boxed_func
    graphs = []

    def capture(gm, _):
        graphs.append({str(n.target) for n in gm.graph.nodes if n.op == "call_function"})
        return make_boxed_func(gm.forward)

    fn = aot_function(lambda x, w, b: convx.functional.conv_transpose2d(x, w, b, stride=2),
                      fw_compiler=capture, bw_compiler=capture)
    gen = generator("joint_aot")
    x, w, b = (torch.randn(s, generator=gen, dtype=torch.float64) for s in ((2, 4, 5, 5), (4, 3, 2, 2), (3,)))
    ins = [t.clone().requires_grad_() for t in (x, w, b)]
    ins_ref = [t.clone().requires_grad_() for t in (x, w, b)]
    fn(*ins).sum().backward()
    F.conv_transpose2d(*ins_ref, stride=2).sum().backward()
    assert len(graphs) == 2 and "convx._conv_and_weight_grad.default" in graphs[1], graphs
    for a, r in zip(ins, ins_ref):
        torch.testing.assert_close(a.grad, r.grad, rtol=1e-10, atol=1e-10)
