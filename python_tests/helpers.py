"""Shared test helpers: random operator configurations and the aten reference of every op.

A :class:`Case` is one call of one convx operator (family + spatial rank + tensors +
hyper-parameters). ``case.run_convx()`` calls ``torch.ops.convx.<op>``; ``case.run_ref()``
computes the same thing with PyTorch's own operators.
"""

import collections
import zlib
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

FAMILIES = ("conv", "conv_transpose", "depthwise_conv", "conv_input_grad", "conv_weight_grad")
RANKS = (1, 2, 3)
LAYOUTS = ("contiguous", "channels_last", "strided")

# Tensors of each family, in schema order, and the ones autograd differentiates.
TENSOR_NAMES = {
    "conv": ("input", "weight", "bias"),
    "conv_transpose": ("input", "weight", "bias"),
    "depthwise_conv": ("input", "weight", "bias"),
    "conv_input_grad": ("weight", "grad_output"),
    "conv_weight_grad": ("input", "grad_output"),
}

CONV_F = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
CONV_T_F = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}
INPUT_GRAD_F = {1: torch.nn.grad.conv1d_input, 2: torch.nn.grad.conv2d_input,
                3: torch.nn.grad.conv3d_input}
WEIGHT_GRAD_F = {1: torch.nn.grad.conv1d_weight, 2: torch.nn.grad.conv2d_weight,
                 3: torch.nn.grad.conv3d_weight}
CHANNELS_LAST = {2: torch.channels_last, 3: torch.channels_last_3d}


def op_name(family: str, rank: int) -> str:
    """'conv2d', 'conv_transpose1d', 'conv3d_input_grad', ..."""
    if family.endswith("_grad"):
        return f"conv{rank}d_{family[len('conv_'):]}"
    return f"{family}{rank}d"


def convx_op(family: str, rank: int):
    return getattr(torch.ops.convx, op_name(family, rank))


ALL_OPS = [(f, r) for r in RANKS for f in FAMILIES]


def seed_of(*parts) -> int:
    """A stable seed from any labels (``hash`` of str is salted per process)."""
    return zlib.crc32("/".join(map(str, parts)).encode())


def generator(*parts) -> torch.Generator:
    return torch.Generator().manual_seed(seed_of(*parts))


class Rng:
    """Small conveniences over a seeded torch.Generator."""

    def __init__(self, gen: torch.Generator):
        self.gen = gen

    def int(self, lo: int, hi: int) -> int:
        """Uniform in [lo, hi]."""
        return int(torch.randint(lo, hi + 1, (1,), generator=self.gen))

    def choice(self, seq):
        return seq[self.int(0, len(seq) - 1)]

    def ints(self, n: int, lo: int, hi: int) -> List[int]:
        return [self.int(lo, hi) for _ in range(n)]


def make_tensor(shape, layout: str, gen: torch.Generator, dtype=torch.float64,
                channel_dim: int = 1) -> torch.Tensor:
    """Random normal data (never zeros) in the requested memory layout.

    channels_last: the channel dimension innermost in memory, i.e. NHWC / NDHWC storage (and
    for rank 1 an (N, L, C) tensor viewed as (N, C, L)); for unbatched tensors this is just a
    permuted view. strided: a non-contiguous view, every other element of the last dim.
    """
    shape = list(shape)
    if layout == "contiguous" or len(shape) < 2:
        return torch.randn(shape, generator=gen, dtype=dtype)
    if layout == "channels_last":
        storage = shape[:channel_dim] + shape[channel_dim + 1:] + [shape[channel_dim]]
        return torch.randn(storage, generator=gen, dtype=dtype).movedim(-1, channel_dim)
    if layout == "strided":
        big = shape[:-1] + [2 * shape[-1]]
        return torch.randn(big, generator=gen, dtype=dtype)[..., ::2]
    raise ValueError(layout)


def conv_out_size(i, k, s, p, d):
    return (i + 2 * p - d * (k - 1) - 1) // s + 1


def conv_t_out_size(i, k, s, p, d, op):
    return (i - 1) * s - 2 * p + d * (k - 1) + op + 1


@dataclass
class Case:
    family: str
    rank: int
    tensors: Dict[str, Optional[torch.Tensor]]
    stride: List[int]
    padding: List[int]
    dilation: List[int]
    groups: int = 1
    output_padding: List[int] = field(default_factory=list)
    sizes: List[int] = field(default_factory=list)  # input_size / weight_size of grad ops

    # ---- calls ----

    def _t(self, overrides):
        t = dict(self.tensors)
        if overrides:
            t.update(overrides)
        return t

    def convx_args(self, overrides=None):
        """Positional arguments of the convx operator, in schema order."""
        t = self._t(overrides)
        f = self.family
        if f == "conv":
            return (t["input"], t["weight"], t["bias"], self.stride, self.padding, self.dilation,
                    self.groups)
        if f == "depthwise_conv":
            return (t["input"], t["weight"], t["bias"], self.stride, self.padding, self.dilation)
        if f == "conv_transpose":
            return (t["input"], t["weight"], t["bias"], self.stride, self.padding,
                    self.output_padding, self.groups, self.dilation)
        if f == "conv_input_grad":
            return (self.sizes, t["weight"], t["grad_output"], self.stride, self.padding,
                    self.dilation, self.groups)
        if f == "conv_weight_grad":
            return (t["input"], self.sizes, t["grad_output"], self.stride, self.padding,
                    self.dilation, self.groups)
        raise ValueError(f)

    def run_convx(self, overrides=None):
        return convx_op(self.family, self.rank)(*self.convx_args(overrides))

    def run_ref(self, overrides=None):
        """The same computation by PyTorch (aten)."""
        t = self._t(overrides)
        f, r = self.family, self.rank
        if f == "conv":
            return CONV_F[r](t["input"], t["weight"], t["bias"], self.stride, self.padding,
                             self.dilation, self.groups)
        if f == "depthwise_conv":
            x = t["input"]
            return CONV_F[r](x, t["weight"], t["bias"], self.stride, self.padding, self.dilation,
                             x.shape[-r - 1])
        if f == "conv_transpose":
            return CONV_T_F[r](t["input"], t["weight"], t["bias"], self.stride, self.padding,
                               self.output_padding, self.groups, self.dilation)
        if f == "conv_input_grad":
            go = t["grad_output"]
            size = list(self.sizes)
            unbatched = len(size) == r + 1
            if unbatched:
                go, size = go.unsqueeze(0), [1] + size
            out = INPUT_GRAD_F[r](size, t["weight"], go, self.stride, self.padding,
                                  self.dilation, self.groups)
            return out.squeeze(0) if unbatched else out
        if f == "conv_weight_grad":
            x, go = t["input"], t["grad_output"]
            if x.dim() == r + 1:
                x, go = x.unsqueeze(0), go.unsqueeze(0)
            return WEIGHT_GRAD_F[r](x, list(self.sizes), go, self.stride, self.padding,
                                    self.dilation, self.groups)
        raise ValueError(f)

    # ---- views of the case ----

    def differentiable(self) -> List[str]:
        return [n for n in TENSOR_NAMES[self.family] if self.tensors.get(n) is not None]

    def map_tensors(self, fn) -> Dict[str, Optional[torch.Tensor]]:
        return {k: (None if v is None else fn(v)) for k, v in self.tensors.items()}

    def with_tensors(self, tensors) -> "Case":
        return Case(self.family, self.rank, dict(tensors), self.stride, self.padding,
                    self.dilation, self.groups, self.output_padding, self.sizes)

    def batched(self) -> bool:
        t = self.tensors.get("input")
        if t is None:
            t = self.tensors["grad_output"]
        return t.dim() == self.rank + 2

    def __repr__(self) -> str:
        def desc(t):
            if t is None:
                return "None"
            return f"{tuple(t.shape)}/stride{tuple(t.stride())}/{str(t.dtype)[6:]}"
        parts = [f"{op_name(self.family, self.rank)}("]
        parts += [f"{k}={desc(v)}, " for k, v in self.tensors.items()]
        if self.sizes:
            parts.append(f"sizes={self.sizes}, ")
        parts.append(f"stride={self.stride}, padding={self.padding}, dilation={self.dilation}, "
                     f"groups={self.groups}")
        if self.family == "conv_transpose":
            parts.append(f", output_padding={self.output_padding}")
        return "".join(parts) + ")"


def random_case(family: str, rank: int, gen: torch.Generator, *, dtype=torch.float64,
                small: bool = False, layouts=LAYOUTS, batches=None, bias=None,
                max_tries: int = 1000) -> Case:
    """A random valid configuration of ``family`` at ``rank``.

    Full size: stride 1-3, padding 0-3, dilation 1-3, groups 1-4, 1-3 channels per group (the
    channel multiplier for depthwise), kernels 1-7 per dim (1-3 for 3-D), spatial sizes 1-20
    (1-8 for 3-D), batch unbatched/0/1/3, every tensor in a random layout. ``small`` shrinks
    everything for gradcheck. Configurations PyTorch rejects are resampled.
    """
    rng = Rng(gen)
    if small:
        max_k, max_sp, max_g, max_c = (2, 4, 2, 2) if rank == 3 else (3, 6 if rank == 2 else 8, 2, 2)
        max_s, max_p, max_d = 2, 2, 2
        batches = batches or (None, 1, 2)
    else:
        max_k, max_sp, max_g, max_c = (3, 8, 4, 3) if rank == 3 else (7, 20, 4, 3)
        max_s, max_p, max_d = 3, 3, 3
        batches = batches or (None, None, 0, 1, 1, 3, 3)
    for _ in range(max_tries):
        stride = rng.ints(rank, 1, max_s)
        padding = rng.ints(rank, 0, max_p)
        dilation = rng.ints(rank, 1, max_d)
        kernel = rng.ints(rank, 1, max_k)
        spatial = rng.ints(rank, 1, max_sp)
        batch = rng.choice(batches)
        groups = rng.int(1, max_g)
        cin_g, cout_g = rng.int(1, max_c), rng.int(1, max_c)
        output_padding = []
        if family == "depthwise_conv":
            cin = groups  # channels C; weight [C*m, 1, *k]
            cout = cin * cout_g
            groups = cin
            weight_shape = [cout, 1] + kernel
        elif family == "conv_transpose":
            cin, cout = groups * cin_g, groups * cout_g
            weight_shape = [cin, cout_g] + kernel
            output_padding = [rng.int(0, max(s, d) - 1) for s, d in zip(stride, dilation)]
        else:
            cin, cout = groups * cin_g, groups * cout_g
            weight_shape = [cout, cin_g] + kernel
        # Shape validity first (cheap), then PyTorch has the last word.
        if family == "conv_transpose":
            out_sp = [conv_t_out_size(*a) for a in zip(spatial, kernel, stride, padding, dilation,
                                                       output_padding)]
        else:
            if any(i + 2 * p < d * (k - 1) + 1
                   for i, k, p, d in zip(spatial, kernel, padding, dilation)):
                continue
            out_sp = [conv_out_size(*a) for a in zip(spatial, kernel, stride, padding, dilation)]
        if any(o <= 0 for o in out_sp):
            continue
        lead = [] if batch is None else [batch]
        in_shape = lead + [cin] + spatial
        out_shape = lead + [cout] + out_sp
        cdim = len(lead)

        def act(shape):
            return make_tensor(shape, rng.choice(layouts), gen, dtype, cdim)

        def wt(shape):
            lay = "contiguous" if rng.int(0, 1) == 0 else rng.choice(layouts)
            return make_tensor(shape, lay, gen, dtype, 1)

        with_bias = (rng.int(0, 2) > 0) if bias is None else bias
        if family in ("conv", "depthwise_conv", "conv_transpose"):
            tensors = {"input": act(in_shape), "weight": wt(weight_shape),
                       "bias": torch.randn(cout, generator=gen, dtype=dtype) if with_bias else None}
            sizes = []
        elif family == "conv_input_grad":
            tensors = {"weight": wt(weight_shape), "grad_output": act(out_shape)}
            sizes = in_shape
        else:
            tensors = {"input": act(in_shape), "grad_output": act(out_shape)}
            sizes = weight_shape
        case = Case(family, rank, tensors, stride, padding, dilation, groups, output_padding,
                    sizes)
        try:
            with torch.no_grad():
                case.run_ref(case.map_tensors(lambda t: t.double()))
        except RuntimeError:
            continue
        return case
    raise AssertionError(f"no valid {family}{rank}d configuration found")


def cases(family: str, rank: int, count: int, *labels, **kwargs) -> List[Case]:
    gen = generator(family, rank, *labels)
    return [random_case(family, rank, gen, **kwargs) for _ in range(count)]


def requires_grad_copy(case: Case) -> Case:
    """The case with fresh leaf tensors (same values and layouts) that require grad."""
    return case.with_tensors(case.map_tensors(lambda t: t.detach().clone().requires_grad_()))


def random_cotangent(out: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    return torch.randn(out.shape, generator=gen, dtype=out.dtype)


def abs_bound(case: Case) -> torch.Tensor:
    """Elementwise sum of |terms| of the op's output (each op is multilinear in its tensors, so
    running the float64 reference on the absolute values gives it): the scale of the rounding
    error a correct implementation in lower precision may make."""
    return case.run_ref(case.map_tensors(lambda t: t.double().abs()))


def grads(out, inputs, cotangent, **kwargs):
    """autograd.grad with None for inputs that do not influence ``out``."""
    return torch.autograd.grad(out, inputs, cotangent, allow_unused=True, **kwargs)


class CountConvx(TorchDispatchMode):
    """Counts the convx operators dispatched while active, by name ('conv2d_weight_grad')."""

    def __init__(self):
        super().__init__()
        self.calls = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.name()
        if name.startswith("convx::"):
            self.calls[name.split("::")[1].split(".")[0]] += 1
        return func(*args, **(kwargs or {}))
