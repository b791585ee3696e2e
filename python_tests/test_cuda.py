"""The CUDA kernels: every operator against aten on CUDA, gradients, determinism, CUDA graphs,
64-bit indexing and multi-GPU placement.

Skipped as a whole when no GPU is visible. Outputs are poisoned: every op runs with NaN-filled
caching-allocator blocks and under ``torch.use_deterministic_algorithms(True)`` (which fills
``torch.empty`` results with NaN), so an element a kernel forgets to write shows up as NaN.
"""

import contextlib
import functools
import os
import warnings

# cuBLAS (the dense fallback's GEMMs) refuses to run under use_deterministic_algorithms without
# a fixed workspace; must be set before the first cuBLAS handle is created.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import pytest
import torch

if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import helpers  # noqa: E402
from helpers import ALL_OPS, abs_bound, cases, convx_op, grads, random_cotangent  # noqa: E402

DEV = torch.device("cuda")
LOW = {torch.float32: 2e-5, torch.float16: 4e-3, torch.bfloat16: 3e-2}


def to_dev(t, device=DEV, dtype=None):
    """t on `device` (and `dtype`) with the same layout: dense tensors keep their strides,
    non-dense views stay non-dense (every other element of the last dim)."""
    if t is None:
        return None
    dtype = dtype or t.dtype
    if torch.empty_like(t).stride() == t.stride():
        return t.to(device=device, dtype=dtype)
    shape = list(t.shape)
    out = torch.empty(shape[:-1] + [2 * shape[-1]], device=device, dtype=dtype)[..., ::2]
    out.copy_(t)
    return out


def on(case, device=DEV, dtype=None):
    return case.with_tensors(case.map_tensors(lambda t: to_dev(t, device, dtype)))


def poison(device=DEV):
    """Fill free caching-allocator blocks of both pools (small: <= 1 MB, large) with NaN."""
    with torch.cuda.device(device):
        keep = [torch.full((n,), float("nan"), device=device) for n in [1 << 26] + [1 << 18] * 16 + [1 << 12] * 64]
        del keep


def run_poisoned(case, deterministic_mode=True):
    """The case's convx call on NaN-poisoned memory: under torch.use_deterministic_algorithms
    (which also NaN-fills empty tensors), or without it for paths that step aside under it."""
    poison()
    with torch.no_grad(), (deterministic() if deterministic_mode else contextlib.nullcontext()):
        return case.run_convx()


class deterministic:
    """torch.use_deterministic_algorithms(True) (NaN-filled empty tensors), warnings as errors."""

    def __enter__(self):
        self.prev = torch.are_deterministic_algorithms_enabled()
        self.w = warnings.catch_warnings()
        self.w.__enter__()
        warnings.simplefilter("error")
        torch.use_deterministic_algorithms(True)

    def __exit__(self, *exc):
        torch.use_deterministic_algorithms(self.prev)
        self.w.__exit__(*exc)


def check_low(case, dtype, tol=None, deterministic_mode=True):
    """The case in `dtype` on the GPU (poisoned) against float64 on the operands rounded to
    `dtype` (so the reference sees exactly what convx sees), within LOW[dtype] (or `tol`) of the
    scale of the terms summed."""
    rounded = case.with_tensors(case.map_tensors(lambda t: t.to(dtype).double()))
    out = run_poisoned(on(case, dtype=dtype), deterministic_mode)
    assert out.dtype == dtype
    with torch.no_grad():
        ref = rounded.run_ref()
        bound = abs_bound(rounded)
    err = (out.double().cpu() - ref).abs()
    tol = (LOW[dtype] if tol is None else tol) * bound + 1e-6
    assert not torch.isnan(out).any(), case
    assert bool((err <= tol).all()), f"{case}: max excess {float((err - tol).max())}"


def graph_replay_vs_eager(step, x):
    """Captures ``step(static_x)`` in a CUDA graph (after warm-up on a side stream, as capture
    requires), replays it with new data in ``static_x``, and returns the replayed outputs and
    those of an eager ``step`` on the same data."""
    static_x = x.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            step(static_x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = step(static_x)
    new_x = torch.randn_like(x)
    static_x.copy_(new_x)
    graph.replay()
    torch.cuda.synchronize()
    return static_out, step(new_x)


def ids(ops):
    return [helpers.op_name(f, r) for f, r in ops]


@pytest.mark.parametrize("family,rank", ALL_OPS, ids=ids(ALL_OPS))
def test_float64_matches_aten_cuda(family, rank):
    for case in cases(family, rank, 12, "cuda64"):
        c = on(case)
        out = run_poisoned(c)
        with torch.no_grad():
            ref = c.run_ref()
        assert out.shape == ref.shape, case
        assert out.device == ref.device, case
        torch.testing.assert_close(out, ref, rtol=1e-9, atol=1e-9, msg=lambda m: f"{case}\n{m}")


@pytest.mark.parametrize("dtype", list(LOW), ids=lambda d: str(d)[6:])
@pytest.mark.parametrize("family,rank", ALL_OPS, ids=ids(ALL_OPS))
def test_low_precision_vs_float64(family, rank, dtype):
    # float32 at full precision (cuDNN's TF32 default is tested in test_cuda_dense.py).
    with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        for case in cases(family, rank, 6, "cudalow", str(dtype)):
            check_low(case, dtype)


@pytest.mark.parametrize("family,rank", ALL_OPS, ids=ids(ALL_OPS))
def test_first_order_grads_match_aten_cuda(family, rank):
    gen = torch.Generator().manual_seed(helpers.seed_of("cudagrad", family, rank))
    for case in cases(family, rank, 4, "cudagrad"):
        c = on(case)
        a = helpers.requires_grad_copy(c)
        b = helpers.requires_grad_copy(c)
        out = a.run_convx()
        ref = b.run_ref()
        ct = random_cotangent(ref, gen).to(DEV)
        names = a.differentiable()
        ga = grads(out, [a.tensors[n] for n in names], ct)
        gb = grads(ref, [b.tensors[n] for n in names], ct)
        for n, x, y in zip(names, ga, gb):
            if y is None:
                continue
            torch.testing.assert_close(x, y, rtol=1e-9, atol=1e-9, msg=lambda m: f"{case} d/d{n}\n{m}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=lambda d: str(d)[6:])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_depthwise_weight_grad_deterministic(layout, dtype):
    mf = torch.channels_last if layout == "channels_last" else torch.contiguous_format
    x = torch.randn(8, 64, 56, 56, device=DEV, dtype=dtype).to(memory_format=mf)
    gy = torch.randn(8, 64, 56, 56, device=DEV, dtype=dtype).to(memory_format=mf)
    op = torch.ops.convx.conv2d_weight_grad
    with deterministic():
        a = op(x, [64, 1, 7, 7], gy, [1, 1], [3, 3], [1, 1], 64)
        poison()
        b = op(x, [64, 1, 7, 7], gy, [1, 1], [3, 3], [1, 1], 64)
    assert torch.equal(a, b)


def test_depthwise_nc_weight_grad_2d_bitwise_repeatable():
    """The streaming NC weight-grad on planes split into several chunks: same bits every run."""
    gen = torch.Generator().manual_seed(6)
    x = torch.randn(16, 24, 28, 28, generator=gen).to(DEV, torch.float16)
    gy = torch.randn(16, 24, 28, 28, generator=gen).to(DEV, torch.float16)
    op = torch.ops.convx.conv2d_weight_grad
    with deterministic():
        a = op(x, [24, 1, 5, 5], gy, [1, 1], [2, 2], [1, 1], 24)
        poison()
        b = op(x, [24, 1, 5, 5], gy, [1, 1], [2, 2], [1, 1], 24)
    assert torch.equal(a, b)
    ref = torch.nn.grad.conv2d_weight(x.double(), [24, 1, 5, 5], gy.double(), 1, 2, 1, 24)
    tol = LOW[torch.float16]
    torch.testing.assert_close(a.double(), ref, rtol=tol * 10, atol=tol * float(ref.abs().max()))


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_cuda_graph_replay_equals_eager(layout):
    mf = torch.channels_last if layout == "channels_last" else torch.contiguous_format
    x = torch.randn(4, 32, 20, 20, device=DEV).to(memory_format=mf)
    w = torch.randn(64, 1, 5, 5, device=DEV)
    wd = torch.randn(16, 16, 3, 3, device=DEV)
    bias = torch.randn(64, device=DEV)
    ops = torch.ops.convx

    def step(inp):
        y = ops.depthwise_conv2d(inp, w, bias, [2, 2], [2, 2], [1, 1])
        gx = ops.conv2d_input_grad(list(inp.shape), w, y, [2, 2], [2, 2], [1, 1], 32)
        gw = ops.conv2d_weight_grad(inp, [64, 1, 5, 5], y, [2, 2], [2, 2], [1, 1], 32)
        yt = ops.conv_transpose2d(inp, w.view(32, 2, 5, 5)[:, :1].contiguous(), None, [2, 2], [1, 1],
                                  [1, 1], 32, [1, 1])
        yd = ops.conv2d(inp, wd, None, [1, 1], [1, 1], [1, 1], 2)
        return y, gx, gw, yt, yd

    static_out, eager = graph_replay_vs_eager(step, x)
    for a, b in zip(static_out[:4], eager[:4]):  # convx's own kernels: bitwise
        assert torch.equal(a, b)
    torch.testing.assert_close(static_out[4], eager[4])  # dense fallback: cuBLAS


def test_depthwise_forward_beyond_2_pow_31_elements():
    if torch.cuda.mem_get_info()[0] < 40e9:
        pytest.skip("needs >= 40 GB of free GPU memory")
    side = 46341  # side**2 > 2**31
    x = torch.empty(1, 1, side, side, device=DEV, dtype=torch.float16)
    x.uniform_(-1, 1)
    w = torch.randn(1, 1, 3, 3, device=DEV, dtype=torch.float16)
    y = torch.ops.convx.depthwise_conv2d(x, w, None, [1, 1], [1, 1], [1, 1])
    assert y.numel() > 2**31
    # The last two output rows (beyond element 2**31): from the last three input rows,
    # zero-padded at the bottom and the sides.
    tail = torch.nn.functional.pad(x[:, :, -3:, :].float(), (1, 1, 0, 1))
    ref = torch.nn.functional.conv2d(tail, w.float())
    torch.testing.assert_close(y[:, :, -2:, :].float(), ref, rtol=2e-3, atol=2e-3)
    head = torch.nn.functional.conv2d(torch.nn.functional.pad(x[:, :, :3, :].float(), (1, 1, 1, 0)), w.float())
    torch.testing.assert_close(y[:, :, :2, :].float(), head, rtol=2e-3, atol=2e-3)
    del x, y


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
@pytest.mark.parametrize("family,rank", [(f, 2) for f in helpers.FAMILIES])
def test_inputs_on_non_current_device(family, rank):
    dev1 = torch.device("cuda", 1)
    assert torch.cuda.current_device() == 0
    for case in cases(family, rank, 3, "cudadev1"):
        c = on(case, dev1)
        out = c.run_convx()
        assert out.device == dev1
        with torch.no_grad():
            ref = c.run_ref()
        torch.testing.assert_close(out, ref, rtol=1e-9, atol=1e-9)
        torch.cuda.synchronize(dev1)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("family", ["conv", "conv_transpose", "depthwise_conv"])
def test_autocast_cuda(family, dtype):
    """Under torch.autocast("cuda") convx runs in the autocast dtype like aten's convolution,
    and parameter gradients come back in the parameters' dtype (float32)."""
    import torch.nn.functional as F

    import convx

    gen = torch.Generator().manual_seed(11)
    x = torch.randn(2, 4, 9, 8, generator=gen).to(DEV)
    if family == "conv_transpose":
        w, b = torch.randn(4, 3, 3, 3, generator=gen), torch.randn(6, generator=gen)
        op = lambda x, w, b: convx.functional.conv_transpose2d(x, w, b, stride=2, groups=2)
        ref = lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, groups=2)
    elif family == "conv":
        w, b = torch.randn(6, 2, 3, 3, generator=gen), torch.randn(6, generator=gen)
        op = lambda x, w, b: convx.functional.conv2d(x, w, b, padding=1, groups=2)
        ref = lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=2)
    else:
        w, b = torch.randn(8, 1, 3, 3, generator=gen), torch.randn(8, generator=gen)
        op = lambda x, w, b: convx.functional.depthwise_conv2d(x, w, b, padding=1)
        ref = lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=4)
    w, b = w.to(DEV).requires_grad_(), b.to(DEV).requires_grad_()
    with torch.autocast("cuda", dtype=dtype):
        out, expected = op(x, w, b), ref(x, w, b)
    assert expected.dtype == dtype and out.dtype == dtype
    torch.testing.assert_close(out.float(), expected.float(), rtol=2e-2, atol=5e-2)
    gw, gb = torch.autograd.grad(out.float().sum(), (w, b))
    assert gw.dtype == torch.float32 and gb.dtype == torch.float32
    rw, rb = torch.autograd.grad(expected.float().sum(), (w, b))
    torch.testing.assert_close(gw, rw, rtol=3e-2, atol=0.3)
    torch.testing.assert_close(gb, rb, rtol=3e-2, atol=0.3)


# ---- the depthwise fast paths: every compile-time specialisation and every fallback ----
# Channels-last fast paths need channels in multiples of 16 bytes (fp32: 4, fp16: 8); the
# configurations with 3, 5 or 6 channels or a multiplier > 1 exercise the generic kernels there.
# rank, N, C, multiplier, spatial, kernel, stride, padding, dilation, bias
FAST_PATHS = [
    (2, 2, 8, 1, (13, 17), (3, 3), 1, 1, 1, True),     # k3 s1
    (2, 2, 8, 1, (14, 11), (3, 3), 2, 1, 1, False),    # k3 s2 (data-grad: 2x2 sub-filters)
    (2, 3, 4, 1, (15, 12), (5, 5), 1, 2, 1, True),     # k5 s1
    (2, 2, 4, 1, (17, 16), (5, 5), 2, 2, 1, False),    # k5 s2 (3x3 sub-filters)
    (2, 2, 8, 1, (19, 21), (7, 7), 1, 3, 1, True),     # k7 s1
    (2, 1, 4, 1, (20, 23), (7, 7), 2, 3, 1, False),    # k7 s2 (4x4 sub-filters)
    (2, 2, 4, 1, (9, 10), (2, 2), 1, 0, 1, True),      # k2
    (2, 2, 4, 1, (16, 16), (4, 4), 2, 1, 1, True),     # k4 s2 p1: learned upsampling's transposed conv
    (2, 2, 4, 1, (11, 9), (4, 4), 1, 1, 1, False),     # k4 s1
    (2, 1, 4, 1, (40, 37), (31, 31), 1, 15, 1, True),  # k31 (runtime rows, 31 taps unrolled)
    (2, 2, 3, 1, (23, 25), (13, 13), 1, 6, 1, False),  # generic filter
    (2, 2, 3, 1, (23, 25), (3, 5), (1, 2), (1, 2), 1, True),  # non-square filter, mixed strides
    (2, 2, 3, 1, (14, 15), (3, 3), 3, 1, 1, False),    # stride 3: generic tiled, 3x3 phases
    (2, 2, 3, 1, (14, 15), (3, 3), 5, 2, 1, False),    # stride 5: beyond the phase table
    (2, 2, 3, 2, (12, 13), (3, 3), 1, 1, 1, True),     # multiplier 2
    (2, 2, 3, 3, (12, 13), (5, 5), 2, 2, 1, False),    # multiplier 3, stride 2
    (2, 2, 4, 1, (12, 13), (3, 3), 1, 2, 2, True),     # dilation 2: generic kernels
    (2, 0, 4, 1, (12, 13), (3, 3), 1, 1, 1, True),     # batch 0
    (2, 1, 16, 1, (1, 300), (1, 7), 1, (0, 3), 1, True),  # one row, wide
    (1, 2, 8, 1, (50,), (2,), 1, 1, 1, True),          # 1-D k2..4, 15, 31
    (1, 2, 8, 1, (301,), (3,), 1, 2, 1, False),
    (1, 3, 16, 1, (77,), (4,), 1, 3, 1, True),
    (1, 2, 8, 1, (2100,), (4,), 1, 3, 1, False),       # several tiles along L
    (1, 2, 8, 1, (200,), (15,), 1, 14, 1, True),       # causal-style padding k-1
    (1, 2, 8, 1, (333,), (31,), 1, 15, 1, True),
    (1, 2, 8, 1, (64,), (3,), 2, 1, 1, False),         # 1-D stride 2: generic
    (1, 2, 8, 2, (64,), (4,), 1, 3, 1, True),          # 1-D multiplier 2
    (3, 2, 4, 1, (5, 9, 10), (3, 3, 3), 1, 1, 1, True),   # 3-D k3
    (3, 1, 8, 1, (6, 8, 9), (5, 3, 3), 1, (2, 1, 1), 1, False),  # 3-D k5x3x3
    (3, 2, 4, 1, (7, 9, 8), (3, 3, 3), 2, 1, 1, True),    # 3-D stride 2 (8 phases)
    # NC weight-grad (nc_wgrad_stream.cuh): more micro-tiles than threads, 2 chunks of planes;
    # planes stepped across depth; 1-D in 3 chunks; several chunks of small planes; no padding
    # with a multiplier; padding wider than the filter
    (2, 4, 2, 1, (70, 69), (3, 3), 1, 1, 1, False),
    (3, 7, 2, 1, (5, 9, 10), (3, 3, 3), 1, 1, 1, False),
    (1, 6, 2, 1, (2100,), (3,), 1, 1, 1, False),
    (2, 16, 4, 1, (28, 28), (5, 5), 1, 2, 1, False),
    (2, 3, 2, 2, (9, 11), (7, 7), 2, 0, 1, False),
    (2, 2, 2, 1, (6, 7), (5, 5), 1, 4, 1, False),
    # channels-last tiles (cl_wgrad.cu, cl_tiled.cuh): blocks with idle channel lanes, two
    # channel tiles, strips and row bands cut by the edges, no padding
    (2, 2, 144, 1, (13, 11), (3, 3), 1, 1, 1, True),
    (2, 1, 600, 1, (9, 10), (3, 3), 2, 1, 1, False),
    (2, 2, 96, 1, (11, 9), (7, 7), 1, 3, 1, True),
    (2, 2, 240, 1, (10, 9), (5, 5), 2, 0, 1, False),
    # nc_stream: 7x7 planes (bands of 4), widths multiple of 4 (vector stores) and not, heights
    # not a multiple of the band, transposed-conv phases on odd sizes, a one-row plane.
    (2, 3, 16, 1, (7, 7), (3, 3), 1, 1, 1, True),
    (2, 1, 4, 1, (24, 32), (3, 3), 1, 1, 1, False),
    (2, 1, 4, 1, (33, 40), (5, 5), 2, 2, 1, True),
    (2, 3, 4, 1, (14, 14), (7, 7), 1, 3, 1, False),
    (2, 3, 4, 1, (15, 13), (4, 4), 2, 1, 1, True),
    (2, 4, 4, 1, (1, 37), (3, 3), 1, 1, 1, True),
    # channels-last forward / data-grad tiles (cl_tiled.cuh): 8 and 16 channels so that fp16
    # takes the path too, odd sizes, strips and rows cut by the edges, 3-D phases, equal channel
    # tiles (960 fp32: 4 x 60 lanes) and unequal ones (268 fp32: 67 lanes).
    (2, 2, 16, 1, (15, 12), (5, 5), 1, 2, 1, True),
    (2, 1, 8, 1, (17, 16), (5, 5), 2, 2, 1, True),
    (2, 1, 8, 1, (20, 23), (7, 7), 2, 3, 1, True),
    (2, 2, 8, 1, (16, 15), (4, 4), 2, 1, 1, True),
    (2, 2, 8, 1, (9, 11), (2, 2), 1, 0, 1, False),
    (2, 1, 16, 1, (7, 7), (7, 7), 1, 3, 1, False),
    (3, 1, 8, 1, (7, 9, 8), (3, 3, 3), 2, 1, 1, True),
    (2, 1, 960, 1, (5, 6), (3, 3), 1, 1, 1, True),
    (2, 1, 268, 1, (6, 5), (5, 5), 1, 2, 1, True),
    # nc_stream 1-D rows (strips of 16, 16-byte loads at any misalignment): causal-style padding on
    # an odd length (each row misaligned differently), k15 / k31 rows, a 1x15 2-D filter, the
    # stride-2 data-grad's phases, a row shorter than one vector
    (1, 2, 4, 1, (2051,), (4,), 1, 3, 1, True),
    (1, 2, 4, 1, (517,), (3,), 1, 1, 1, False),
    (1, 2, 5, 1, (333,), (15,), 1, 14, 1, False),
    (1, 1, 4, 1, (1000,), (31,), 1, 15, 1, True),
    (2, 2, 3, 1, (5, 61), (1, 15), 1, (0, 7), 1, True),
    (1, 2, 4, 1, (67,), (4,), 2, 1, 1, True),
    (1, 2, 6, 1, (5,), (3,), 1, 1, 1, True),
    # nc_stream 16-bit 2-D tiles (8 x 4, 8 x 2 for 7-wide filters): rows of 56 (aligned) and 29
    (2, 3, 4, 1, (20, 56), (3, 3), 1, 1, 1, True),
    (2, 1, 4, 1, (13, 29), (7, 7), 1, 3, 1, False),
    # fp32 planes up to 8 wide on nc_stream_vec (8 x 2 tiles for 5x5; 3x3 7x7 planes above)
    (2, 2, 4, 1, (8, 8), (5, 5), 1, 2, 1, True),
    # depth-streaming NCDHW (nc_depth3d.cuh): k3 / k5x3x3 at depth stride 1, spatial stride 1 and
    # 2 (data-grad: 2x2 sub-filters in 4 phases), aligned 16-bit rows (16, 24) and odd widths,
    # depth segments (batch 1, deep) and depths under 2*KD, no depth padding, padding beyond the
    # filter, multiplier 2 (its data-grad declines to nc_stream)
    (3, 2, 3, 1, (13, 6, 16), (3, 3, 3), 1, 1, 1, True),
    (3, 1, 2, 1, (12, 7, 24), (5, 3, 3), 1, (2, 1, 1), 1, False),
    (3, 2, 2, 1, (9, 9, 11), (3, 3, 3), (1, 2, 2), 1, 1, True),
    (3, 1, 3, 1, (11, 8, 13), (5, 3, 3), (1, 2, 2), (2, 1, 1), 1, False),
    (3, 1, 2, 1, (4, 5, 9), (3, 3, 3), 1, (0, 1, 1), 1, True),
    (3, 1, 3, 1, (3, 5, 7), (5, 3, 3), 1, (3, 2, 0), 1, False),
    (3, 1, 2, 2, (10, 5, 8), (3, 3, 3), 1, 1, 1, True),
    (3, 1, 3, 1, (40, 4, 6), (3, 3, 3), 1, 1, 1, False),
]
FP_IDS = [f"r{c[0]}_k{'x'.join(map(str, c[5]))}_s{c[6] if isinstance(c[6], int) else 'x'.join(map(str, c[6]))}"
          f"_m{c[3]}_n{c[1]}_c{c[2]}" + ("_d2" if c[8] != 1 else "") for c in FAST_PATHS]


def _held(t, layout):
    """t (N, C, *spatial) in the layout: contiguous, or channels-last (for rank 1 the (N, L, C)
    tensor viewed as (N, C, L))."""
    if layout == "contiguous":
        return t.contiguous()
    return t.movedim(1, -1).contiguous().movedim(-1, 1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
@pytest.mark.parametrize("cfg", FAST_PATHS, ids=FP_IDS)
def test_depthwise_fast_paths(cfg, layout, dtype):
    """Forward, input-grad, weight-grad and (multiplier 1) the depthwise transposed convolution
    against aten in float64, on poisoned memory, in both layouts, layout preserved. float32 at
    full precision (allow_tf32 off; the TF32 31x31 path: test_depthwise_tc_rows_nc_tf32)."""
    with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        _fast_path(cfg, layout, dtype)


def _fast_path(cfg, layout, dtype):
    import torch.nn.functional as F

    rank, N, C, m, size, k, s, p, d, has_bias = cfg
    tup = lambda v: list(v) if isinstance(v, tuple) else [v] * rank  # noqa: E731
    st, pad, dil = tup(s), tup(p), tup(d)
    gen = torch.Generator().manual_seed(2 * FAST_PATHS.index(cfg) + (layout == "contiguous"))
    x = _held(torch.randn(N, C, *size, generator=gen), layout).to(DEV, dtype)
    w = torch.randn(C * m, 1, *k, generator=gen).to(DEV, dtype)
    b = torch.randn(C * m, generator=gen).to(DEV, dtype) if has_bias else None
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[rank]
    ops = torch.ops.convx
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=2e-2, atol=2e-2)

    def close(out, ref, what):
        scale = max(1.0, float(ref.abs().max())) if ref.numel() else 1.0
        assert not torch.isnan(out).any(), f"{cfg} {layout} {what}: NaN (unwritten element)"
        torch.testing.assert_close(out.double() / scale, ref / scale, **tol, msg=lambda msg: f"{cfg} {layout} {what}\n{msg}")

    xr = x.double().requires_grad_()
    wr = w.double().requires_grad_()
    ref = conv(xr, wr, None if b is None else b.double(), st, pad, dil, C)
    poison()
    with deterministic():
        y = getattr(ops, f"depthwise_conv{rank}d")(x, w, b, st, pad, dil)
    close(y, ref.detach(), "forward")
    if layout == "channels_last" and N > 0:
        assert y.stride(1) == 1, f"{cfg}: output not channels-last"
    gy = _held(torch.randn(ref.shape, generator=gen), layout).to(DEV, dtype)
    gx_ref, gw_ref = torch.autograd.grad(ref, (xr, wr), gy.double())
    poison()
    with deterministic():
        gx = getattr(ops, f"conv{rank}d_input_grad")(list(x.shape), w, gy, st, pad, dil, C)
        gw = getattr(ops, f"conv{rank}d_weight_grad")(x, list(w.shape), gy, st, pad, dil, C)
    close(gx, gx_ref, "input-grad")
    close(gw, gw_ref, "weight-grad")
    if m == 1:
        # Depthwise transposed convolution (with output_padding when the stride allows it).
        opad = [min(1, si - 1) for si in st]
        tr_ref = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[rank](
            gy.double(), w.double(), None if b is None else b.double(), st, pad, opad, C, dil)
        poison()
        with deterministic():
            tr = getattr(ops, f"conv_transpose{rank}d")(gy, w, b, st, pad, opad, C, dil)
        close(tr, tr_ref, "transposed")


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
@pytest.mark.parametrize("k", [3, 15, 31], ids=lambda k: f"k{k}")
def test_depthwise_weight_grad_bitwise_repeatable(layout, k):
    """The one-pass weight-grad (NC) and the channels-last one: same bits on every run."""
    gen = torch.Generator().manual_seed(5)
    x = _held(torch.randn(4, 32, 1500, generator=gen), layout).to(DEV, torch.bfloat16)
    gy = _held(torch.randn(4, 32, 1500, generator=gen), layout).to(DEV, torch.bfloat16)
    op = torch.ops.convx.conv1d_weight_grad
    with deterministic():
        a = op(x, [32, 1, k], gy, [1], [k // 2], [1], 32)
        poison()
        b = op(x, [32, 1, k], gy, [1], [k // 2], [1], 32)
    assert torch.equal(a, b)


@pytest.mark.parametrize("k", [3, 7], ids=lambda k: f"k{k}")
def test_depthwise_cl_weight_grad_2d_bitwise_repeatable(k):
    """The channels-last 2-D weight-grad over many blocks and chunks: same bits on every run."""
    gen = torch.Generator().manual_seed(6)
    x = torch.randn(8, 144, 28, 28, generator=gen).to(DEV, torch.float16, memory_format=torch.channels_last)
    gy = torch.randn(8, 144, 28, 28, generator=gen).to(DEV, torch.float16, memory_format=torch.channels_last)
    op = torch.ops.convx.conv2d_weight_grad
    with deterministic():
        a = op(x, [144, 1, k, k], gy, [1, 1], [k // 2, k // 2], [1, 1], 144)
        poison()
        b = op(x, [144, 1, k, k], gy, [1, 1], [k // 2, k // 2], [1, 1], 144)
    assert torch.equal(a, b)
    ref = torch.nn.grad.conv2d_weight(x.double(), (144, 1, k, k), gy.double(), 1, k // 2, 1, 144)
    torch.testing.assert_close(a.double(), ref, rtol=2e-2, atol=2e-2 * float(ref.abs().max()))


# Every 16-bit channels-last weight-grad tile of cl_wgrad.cu (ClwShape): 5x5 (2 channels per
# lane, strips of 7: exact and cut by the edge), 7x7 (two passes of 4 + 3 filter rows), the
# stride-2 ones, 3x3, 1-D k4 (8 channels per lane), 31x31 (runtime rows).
CLW_TILE_CASES = [  # (rank, N, C, size, k, stride, padding)
    (2, 2, 48, (28, 28), 5, 1, 2),
    (2, 3, 40, (13, 11), 5, 1, 2),
    (2, 2, 32, (14, 15), 7, 1, 3),
    (2, 2, 384, (7, 7), 7, 1, 3),  # 3 channel tiles of 64 lanes
    (2, 2, 24, (15, 16), 7, 2, 3),
    (2, 2, 16, (17, 12), 5, 2, 2),
    (2, 2, 64, (9, 10), 3, 1, 1),
    (2, 2, 64, (11, 9), 3, 2, 1),
    (1, 2, 64, (301,), 4, 1, 3),
    (2, 1, 16, (40, 37), 31, 1, 15),
]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_depthwise_cl_weight_grad_tiles(dtype):
    """The channels-last weight-grad against float64 on the same 16-bit data, on poisoned memory;
    same bits twice."""
    for i, (rank, N, C, size, k, s, p) in enumerate(CLW_TILE_CASES):
        gen = torch.Generator().manual_seed(40 + i)
        x = _held(torch.randn(N, C, *size, generator=gen), "channels_last").to(DEV, dtype)
        gy_shape = [N, C] + [(n + 2 * p - k) // s + 1 for n in size]
        gy = _held(torch.randn(gy_shape, generator=gen), "channels_last").to(DEV, dtype)
        op = getattr(torch.ops.convx, f"conv{rank}d_weight_grad")
        args = (x, [C, 1] + [k] * rank, gy, [s] * rank, [p] * rank, [1] * rank, C)
        poison()
        with deterministic():
            a = op(*args)
            poison()
            b = op(*args)
        assert torch.equal(a, b), f"case {i}: not bitwise repeatable"
        xr = x.double().requires_grad_()
        wr = torch.zeros(C, 1, *[k] * rank, dtype=torch.float64, device=DEV, requires_grad=True)
        conv = {1: torch.nn.functional.conv1d, 2: torch.nn.functional.conv2d}[rank]
        (ref,) = torch.autograd.grad(conv(xr, wr, None, s, p, 1, C), wr, gy.double())
        scale = max(1.0, float(ref.abs().max()))
        assert not torch.isnan(a).any(), f"case {i}: NaN (unwritten element)"
        torch.testing.assert_close(a.double() / scale, ref / scale, rtol=2e-2, atol=1e-2, msg=lambda m: f"case {i}: {m}")


# 16-bit channels-last 2-D 3x3 / 5x5 stride-1 weight-grads, where cl_wgrad.cu streams the rows
# (run_rows2d on cl_wgrad_depth3d) and around them: MobileNetV2's 7x7 planes at C 960, odd sizes
# with strips and columns cut by the edges, no padding, padding K - 1, tall planes (several depth
# segments per column), odd channels (other tiles), batch 0; then a misaligned input and a
# channel-sliced (non-contiguous) one.
ROWS2D_CASES = [  # (N, C, H, W, k, padding)
    (2, 960, 7, 7, 3, 1),
    (3, 40, 13, 11, 3, 1),
    (1, 16, 40, 9, 3, 0),
    (2, 32, 9, 10, 3, 2),
    (2, 18, 7, 15, 3, 1),
    (2, 240, 28, 28, 5, 2),
    (2, 24, 14, 13, 5, 0),
    (1, 16, 30, 17, 5, 4),
    (2, 7, 11, 14, 5, 2),
    (0, 16, 9, 9, 3, 1),
]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("placement", ["plain", "misaligned", "sliced"])
def test_depthwise_cl_wgrad_rows2d(dtype, placement):
    """Against float64 on the same 16-bit data, on poisoned memory; same bits twice."""
    op = torch.ops.convx.conv2d_weight_grad
    for i, (N, C, H, W, k, p) in enumerate(ROWS2D_CASES):
        gen = torch.Generator().manual_seed(60 + i)
        Ho, Wo = H + 2 * p - k + 1, W + 2 * p - k + 1
        xs = torch.randn(N, H, W, C, generator=gen).to(DEV, dtype)
        gs = torch.randn(N, Ho, Wo, C, generator=gen).to(DEV, dtype)
        if placement == "misaligned":  # one element past the 16-byte boundary
            xb = torch.empty(xs.numel() + 1, device=DEV, dtype=dtype)
            xb[1:].copy_(xs.flatten())
            xs = xb[1:].view(xs.shape)
        elif placement == "sliced":  # channels [0, C) of 2C
            xs = torch.cat([xs, xs], dim=-1)[..., :C]
        x, gy = xs.movedim(-1, 1), gs.movedim(-1, 1)
        args = (x, [C, 1, k, k], gy, [1, 1], [p, p], [1, 1], C)
        poison()
        with deterministic():
            a = op(*args)
            poison()
            b = op(*args)
        assert torch.equal(a, b), f"case {i}: not bitwise repeatable"
        ref = torch.nn.grad.conv2d_weight(x.double(), (C, 1, k, k), gy.double(), 1, p, 1, C)
        scale = max(1.0, float(ref.abs().max()))
        assert not torch.isnan(a).any(), f"case {i}: NaN (unwritten element)"
        torch.testing.assert_close(a.double() / scale, ref / scale, rtol=2e-2, atol=1e-2, msg=lambda m: f"case {i}: {m}")


# mb16 (session 13): 16-bit channels-last 2-D 3x3 / 5x5 stride-1 weight-grads staged in shared
# memory (cl_wgrad_s2d: channels a multiple of 8, 16-byte aligned, outputs > 28 wide for 3x3, > 14
# for 5x5): MobileNetV2 56x56-like C 144 (3 channel tiles) on fewer samples, a partial channel tile
# (C 40), two column blocks (W 60 > 56 for 3x3, W 30 > 28 for 5x5), odd planes, no padding,
# padding K - 1, EfficientNet-like 28x28 C 240, rows cut into segments (few samples), batch 0;
# misaligned / channel-sliced inputs fall back to the row-streaming kernels.
S2D_CASES = [  # (N, C, H, W, k, padding)
    (4, 144, 56, 56, 3, 1),
    (3, 40, 13, 33, 3, 1),
    (2, 48, 9, 60, 3, 0),
    (2, 16, 10, 31, 3, 2),
    (4, 240, 28, 28, 5, 2),
    (2, 24, 14, 30, 5, 0),
    (1, 8, 17, 15, 5, 4),
    (0, 16, 9, 40, 3, 1),
]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("placement", ["plain", "misaligned", "sliced"])
def test_depthwise_cl_wgrad_s2d(dtype, placement):
    """Against float64 on the same 16-bit data, on poisoned memory; same bits twice."""
    op = torch.ops.convx.conv2d_weight_grad
    for i, (N, C, H, W, k, p) in enumerate(S2D_CASES):
        gen = torch.Generator().manual_seed(160 + i)
        Ho, Wo = H + 2 * p - k + 1, W + 2 * p - k + 1
        xs = torch.randn(N, H, W, C, generator=gen).to(DEV, dtype)
        gs = torch.randn(N, Ho, Wo, C, generator=gen).to(DEV, dtype)
        if placement == "misaligned":  # one element past the 16-byte boundary
            xb = torch.empty(xs.numel() + 1, device=DEV, dtype=dtype)
            xb[1:].copy_(xs.flatten())
            xs = xb[1:].view(xs.shape)
        elif placement == "sliced":  # channels [0, C) of 2C
            xs = torch.cat([xs, xs], dim=-1)[..., :C]
        x, gy = xs.movedim(-1, 1), gs.movedim(-1, 1)
        args = (x, [C, 1, k, k], gy, [1, 1], [p, p], [1, 1], C)
        poison()
        with deterministic():
            a = op(*args)
            poison()
            b = op(*args)
        assert torch.equal(a, b), f"case {i}: not bitwise repeatable"
        ref = torch.nn.grad.conv2d_weight(x.double(), (C, 1, k, k), gy.double(), 1, p, 1, C)
        scale = max(1.0, float(ref.abs().max()))
        assert not torch.isnan(a).any(), f"case {i}: NaN (unwritten element)"
        torch.testing.assert_close(a.double() / scale, ref / scale, rtol=2e-2, atol=1e-2, msg=lambda m: f"case {i}: {m}")


# mb16 (session 13): 16-bit NCHW 3x3 / 5x5 stride-1 weight-grads with whole planes staged in shared
# memory (nc_wgrad_s2d: width padding (K - 1) / 2, outputs at least 28 wide): MobileNetV2 56x56
# (16-byte copies, several chunks per channel), EfficientNet 28x28 5x5 (8-byte copies, two samples a
# step, an odd sample count: a half step), 4-byte copies (width 30, 5x5; the 3x3 one falls back: too
# many copies a thread), height padding 0 and K - 1, many short planes per step, an odd width (falls
# back); then a misaligned input (2-byte offset: falls back).
NC_S2D_CASES = [  # (N, C, H, W, k, height padding)
    (16, 24, 56, 56, 3, 1),
    (9, 40, 28, 28, 5, 2),
    (5, 8, 11, 30, 3, 0),
    (7, 16, 13, 30, 5, 4),
    (64, 4, 7, 32, 3, 2),
    (3, 8, 9, 41, 3, 1),
    (0, 8, 8, 32, 3, 1),
]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("placement", ["plain", "misaligned"])
def test_depthwise_nc_wgrad_s2d(dtype, placement):
    """Against float64 on the same 16-bit data, on poisoned memory; same bits twice."""
    op = torch.ops.convx.conv2d_weight_grad
    for i, (N, C, H, W, k, ph) in enumerate(NC_S2D_CASES):
        gen = torch.Generator().manual_seed(170 + i)
        pw = (k - 1) // 2
        x = torch.randn(N, C, H, W, generator=gen).to(DEV, dtype)
        gy = torch.randn(N, C, H + 2 * ph - k + 1, W + 2 * pw - k + 1, generator=gen).to(DEV, dtype)
        if placement == "misaligned":  # one element past the 16-byte boundary
            xb = torch.empty(x.numel() + 1, device=DEV, dtype=dtype)
            xb[1:].copy_(x.flatten())
            x = xb[1:].view(x.shape)
        args = (x, [C, 1, k, k], gy, [1, 1], [ph, pw], [1, 1], C)
        poison()
        with deterministic():
            a = op(*args)
            poison()
            b = op(*args)
        assert torch.equal(a, b), f"case {i}: not bitwise repeatable"
        ref = torch.nn.grad.conv2d_weight(x.double(), (C, 1, k, k), gy.double(), 1, (ph, pw), 1, C)
        scale = max(1.0, float(ref.abs().max()))
        assert not torch.isnan(a).any(), f"case {i}: NaN (unwritten element)"
        torch.testing.assert_close(a.double() / scale, ref / scale, rtol=2e-2, atol=1e-2, msg=lambda m: f"case {i}: {m}")


# 16-bit NCHW 3x3 / 5x5 stride-1 weight-grads with one chunk of planes per channel, which
# nc_wgrad_stream writes as the weight-grad itself (no partials, no sum launch): MobileNetV2's 7x7
# planes at C 960, odd planes, no padding, padding K - 1, 64 samples in one block.
NC_ONE_CHUNK_CASES = [  # (N, C, H, W, k, padding)
    (8, 960, 7, 7, 3, 1),
    (3, 20, 9, 11, 3, 0),
    (2, 12, 13, 6, 5, 4),
    (4, 24, 14, 14, 5, 2),
    (64, 32, 7, 7, 3, 1),
]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_depthwise_nc_wgrad_one_chunk(dtype):
    """Against float64 on the same 16-bit data, on poisoned memory; same bits twice."""
    op = torch.ops.convx.conv2d_weight_grad
    for i, (N, C, H, W, k, p) in enumerate(NC_ONE_CHUNK_CASES):
        gen = torch.Generator().manual_seed(80 + i)
        x = torch.randn(N, C, H, W, generator=gen).to(DEV, dtype)
        gy = torch.randn(N, C, H + 2 * p - k + 1, W + 2 * p - k + 1, generator=gen).to(DEV, dtype)
        args = (x, [C, 1, k, k], gy, [1, 1], [p, p], [1, 1], C)
        poison()
        with deterministic():
            a = op(*args)
            poison()
            b = op(*args)
        assert torch.equal(a, b), f"case {i}: not bitwise repeatable"
        ref = torch.nn.grad.conv2d_weight(x.double(), (C, 1, k, k), gy.double(), 1, p, 1, C)
        scale = max(1.0, float(ref.abs().max()))
        assert not torch.isnan(a).any(), f"case {i}: NaN (unwritten element)"
        torch.testing.assert_close(a.double() / scale, ref / scale, rtol=2e-2, atol=1e-2, msg=lambda m: f"case {i}: {m}")


# The 16-bit channels-last forward / data-grad fast path (launch_cl_gather16: 3x3 read at stride
# 1, the forward and the stride-1 data-grad) and, around it, the filters and strides that keep the
# previous tile (2x2, 4x4, 5x5, 7x7; stride 2 and its data-grad phases), 8 channels (one lane) to 960
# (2 equal channel tiles of 60 lanes) and 536 (67 lanes: 3 tiles of 32, idle lanes), batch 1, odd
# sizes, strips and rows cut by the edges, no padding; then what it declines: channels not a
# multiple of 8 and a misaligned input (generic kernel), 3-D (the previous tile).
CL16_CASES = [  # (rank, N, C, size, k, stride, padding, bias)
    (2, 2, 16, (15, 12), 2, 1, 0, True),
    (2, 1, 8, (9, 11), 3, 1, 1, False),
    (2, 2, 24, (13, 17), 3, 1, 1, True),
    (2, 2, 960, (7, 7), 3, 1, 1, True),
    (2, 1, 536, (6, 5), 3, 1, 1, False),
    (2, 2, 8, (10, 9), 3, 1, 0, True),
    (2, 2, 16, (14, 11), 3, 2, 1, True),
    (2, 1, 8, (15, 13), 3, 2, 1, False),
    (2, 2, 8, (11, 9), 4, 1, 1, True),
    (2, 2, 16, (15, 12), 5, 1, 2, True),
    (2, 1, 8, (17, 16), 5, 2, 2, False),
    (2, 2, 16, (7, 7), 7, 1, 3, True),
    (2, 1, 8, (20, 23), 7, 2, 3, True),
    (2, 2, 12, (9, 9), 3, 1, 1, True),      # declined: 12 channels
    (3, 1, 8, (5, 9, 10), 3, 1, 1, True),   # declined: 3-D
]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_depthwise_cl16_fast_path(dtype):
    """Forward, input-grad and the depthwise transposed convolution (output_padding where the
    stride allows it) in channels-last 16-bit against float64 on the same 16-bit data, on
    poisoned memory; the forward also on an input one element past an aligned address."""
    import torch.nn.functional as F

    tol = dict(rtol=4e-3, atol=4e-3) if dtype == torch.float16 else dict(rtol=2e-2, atol=2e-2)
    ops = torch.ops.convx
    for i, (rank, N, C, size, k, s, p, has_bias) in enumerate(CL16_CASES):
        gen = torch.Generator().manual_seed(70 + i)
        conv = {2: F.conv2d, 3: F.conv3d}[rank]
        convt = {2: F.conv_transpose2d, 3: F.conv_transpose3d}[rank]
        st, pad, dil = [s] * rank, [p] * rank, [1] * rank
        x = _held(torch.randn(N, C, *size, generator=gen), "channels_last").to(DEV, dtype)
        w = torch.randn(C, 1, *[k] * rank, generator=gen).to(DEV, dtype)
        b = torch.randn(C, generator=gen).to(DEV, dtype) if has_bias else None
        bd = None if b is None else b.double()

        def close(out, ref, what):
            scale = max(1.0, float(ref.abs().max()))
            assert not torch.isnan(out).any(), f"case {i} {what}: NaN (unwritten element)"
            assert out.stride(1) == 1, f"case {i} {what}: not channels-last"
            torch.testing.assert_close(out.double() / scale, ref / scale, **tol, msg=lambda m: f"case {i} {what}: {m}")

        ref = conv(x.double(), w.double(), bd, st, pad, dil, C)
        poison()
        with deterministic():
            y = getattr(ops, f"depthwise_conv{rank}d")(x, w, b, st, pad, dil)
        close(y, ref, "forward")
        # The same input one element past an aligned address (a channels-last view of it).
        spatial = list(size)
        flat = torch.empty(x.numel() + 1, device=DEV, dtype=dtype)
        xm = flat[1:].view(N, *spatial, C).movedim(-1, 1)
        xm.copy_(x)
        poison()
        with deterministic():
            ym = getattr(ops, f"depthwise_conv{rank}d")(xm, w, b, st, pad, dil)
        close(ym, ref, "forward, misaligned input")
        gy = _held(torch.randn(ref.shape, generator=gen), "channels_last").to(DEV, dtype)
        gx_ref = torch.nn.grad.conv2d_input if rank == 2 else torch.nn.grad.conv3d_input
        poison()
        with deterministic():
            gx = getattr(ops, f"conv{rank}d_input_grad")(list(x.shape), w, gy, st, pad, dil, C)
        close(gx, gx_ref(list(x.shape), w.double(), gy.double(), st, pad, dil, C), "input-grad")
        opad = [min(1, s - 1)] * rank
        tr_ref = convt(gy.double(), w.double(), bd, st, pad, opad, C, dil)
        poison()
        with deterministic():
            tr = getattr(ops, f"conv_transpose{rank}d")(gy, w, b, st, pad, opad, C, dil)
        close(tr, tr_ref, "transposed")


# Channels-last 2-D forward / stride-1 input-grad routing (session 11): cl_ring.cuh (fp32 3x3 at
# stride 1; fp16 / bf16 outputs at least 28 wide), convx's cuDNN path (forward of fp32 / fp16 3x3
# at stride 2 and of 3x3 on planes up to 7 wide, fp16 5x5 forward and input-grad), cl_gather
# (the rest). (N, C, size, k, stride, padding, bias): odd sizes, several rows per step, stride 2
# with and without padding, padding beyond the filter (negative data-grad padding), channel
# chunks (C 264: 66 fp32 vectors in 2 chunks of 33), 7x7 filters on 960 channels (chunks of 60
# lanes), MobileNetV2's 7x7 planes, the bench's shapes (56x56 on 144 channels, 112x112 at
# stride 2 on 96, 28x28 5x5 on 240, 56x56 7x7 on 96).
CL_RING_CASES = [
    (2, 16, (13, 17), 3, 1, 1, True),
    (2, 16, (9, 40), 3, 1, 1, True),
    (2, 16, (14, 11), 3, 2, 1, True),
    (2, 16, (14, 60), 3, 2, 1, True),
    (1, 8, (9, 10), 3, 2, 0, False),
    (2, 8, (15, 12), 5, 1, 2, True),
    (2, 8, (15, 30), 5, 1, 2, True),
    (1, 16, (19, 21), 7, 1, 3, False),
    (1, 16, (19, 33), 7, 1, 3, False),
    (1, 8, (6, 9), 3, 1, 4, False),
    (1, 8, (6, 5), 5, 1, 0, True),
    (1, 8, (6, 33), 5, 1, 0, True),
    (1, 264, (5, 40), 3, 1, 1, True),
    (2, 960, (7, 7), 3, 1, 1, True),
    (1, 960, (4, 9), 7, 1, 3, False),
    (1, 960, (4, 30), 7, 1, 3, False),
    (2, 144, (56, 56), 3, 1, 1, False),
    (2, 96, (112, 112), 3, 2, 1, True),
    (2, 240, (28, 28), 5, 1, 2, False),
    (2, 96, (56, 56), 7, 1, 3, True),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"])
def test_depthwise_cl_ring(dtype):
    """Channels-last 2-D forward and input-grad on the routes of session 11 (the shared-memory
    ring, convx's cuDNN path, cl_gather) against float64 on the same dtype-rounded data, on
    poisoned memory; the forward also on an input one element past an aligned address (declines
    to the generic kernel, or cuDNN)."""
    import torch.nn.functional as F

    tol = {torch.float32: dict(rtol=2e-5, atol=2e-5), torch.float16: dict(rtol=4e-3, atol=4e-3),
           torch.bfloat16: dict(rtol=2e-2, atol=2e-2)}[dtype]
    ops = torch.ops.convx
    for i, (N, C, size, k, s, p, has_bias) in enumerate(CL_RING_CASES):
        if C % (16 // torch.tensor([], dtype=dtype).element_size()) != 0:
            continue
        gen = torch.Generator().manual_seed(90 + i)
        x = _held(torch.randn(N, C, *size, generator=gen), "channels_last").to(DEV, dtype)
        w = torch.randn(C, 1, k, k, generator=gen).to(DEV, dtype)
        b = torch.randn(C, generator=gen).to(DEV, dtype) if has_bias else None
        bd = None if b is None else b.double()
        ref = F.conv2d(x.double(), w.double(), bd, s, p, 1, C)
        gy = _held(torch.randn(ref.shape, generator=gen), "channels_last").to(DEV, dtype)
        gx_ref = torch.nn.grad.conv2d_input(list(x.shape), w.double(), gy.double(), s, p, 1, C)

        def close(out, r, what):
            scale = max(1.0, float(r.abs().max()))
            assert not torch.isnan(out).any(), f"case {i} {what}: NaN (unwritten element)"
            assert out.stride(1) == 1, f"case {i} {what}: not channels-last"
            torch.testing.assert_close(out.double() / scale, r / scale, **tol, msg=lambda m: f"case {i} {what}: {m}")

        poison()
        with deterministic():
            y = ops.depthwise_conv2d(x, w, b, [s, s], [p, p], [1, 1])
        close(y, ref, "forward")
        poison()
        with deterministic():
            gx = ops.conv2d_input_grad(list(x.shape), w, gy, [s, s], [p, p], [1, 1], C)
        close(gx, gx_ref, "input-grad")
        flat = torch.empty(x.numel() + 1, device=DEV, dtype=dtype)
        xm = flat[1:].view(N, *size, C).movedim(-1, 1)
        xm.copy_(x)
        poison()
        with deterministic():
            ym = ops.depthwise_conv2d(xm, w, b, [s, s], [p, p], [1, 1])
        close(ym, ref, "forward, misaligned input")


# Channels-last 1-D rows (cl_row1d.cuh): (N, C, L, k, padding, bias); padding "causal" = k - 1 on
# both sides, first L outputs kept (as the bench and sequence models do). 2-4, 15 and 31 taps;
# odd lengths, a row shorter than one strip, 'same' padding, padding beyond the filter (the
# data-grad's padding is then negative), channel vectors below a warp and in chunks with idle
# lanes (C 296), batch 0; C 12 is not a multiple of the 16-bit vector (8) and C 6 of any vector:
# those decline to the other kernels.
NLC_CASES = [
    (2, 64, 2051, 4, "causal", True),
    (3, 48, 517, 3, "causal", False),
    (2, 296, 77, 2, 1, True),
    (2, 32, 333, 15, "causal", True),
    (2, 16, 1000, 31, 15, False),
    (1, 16, 60, 15, 20, True),
    (2, 16, 5, 3, 1, True),
    (2, 12, 99, 4, "causal", True),
    (2, 6, 50, 31, 15, True),
    (0, 16, 40, 4, "causal", True),
    # session 10: short_k3-like 514-wide rows (16 of them), one row, 2 and 4 taps
    (16, 64, 512, 3, "causal", True),
    (1, 24, 300, 2, 1, False),
    (4, 40, 1001, 4, "causal", False),
    # session 11: the 16-bit 2-4-tap weight-grad tile (4 channels per lane) over 6 channel tiles of
    # 64 lanes (short_k3's 1536 channels); Conformer's 256 channels of 31 taps (2 tiles of pairs)
    (2, 1536, 130, 3, "causal", True),
    (2, 256, 400, 31, 15, False),
    # session 12: fp32 31 taps on the one-channel weight-grad tile (any channel count: 5, 2 strips
    # of 32 outputs + a partial one); cl_row1d's flat grid over rows with a partial last strip
    (3, 5, 77, 31, 15, True),
]


@pytest.mark.parametrize("misaligned", [False, True], ids=["aligned", "off1"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"])
def test_depthwise_nlc_rows(dtype, misaligned):
    """Forward and input-grad of (N, L, C)-held rows (x.transpose(1, 2)) against float64 on the
    same rounded data, on poisoned memory, layout kept; weight-grad and the depthwise transposed
    conv too. `off1`: input and gradient one element past an aligned address (declines to the
    other kernels, which must agree)."""
    import torch.nn.functional as F

    tol = {torch.float32: 1e-4, torch.float16: 4e-3, torch.bfloat16: 2e-2}[dtype]
    ops = torch.ops.convx

    def held(t):  # (N, C, L) values held as an (N, L, C) tensor, viewed as (N, C, L)
        nlc = t.transpose(1, 2)
        if misaligned:
            flat = torch.empty(nlc.numel() + 1, device=DEV, dtype=dtype)[1:]
            return flat.view(nlc.shape).copy_(nlc).transpose(1, 2)
        return nlc.to(DEV, dtype).contiguous().transpose(1, 2)

    def close(out, ref, what):
        scale = max(1.0, float(ref.abs().max())) if ref.numel() else 1.0
        assert not torch.isnan(out).any(), f"{what}: NaN (unwritten element)"
        torch.testing.assert_close(out.double() / scale, ref / scale, rtol=tol, atol=tol, msg=lambda m: f"{what}\n{m}")

    for i, (N, C, L, k, p, has_bias) in enumerate(NLC_CASES):
        gen = torch.Generator().manual_seed(90 + i)
        causal = p == "causal"
        pad = k - 1 if causal else p
        x = held(torch.randn(N, C, L, generator=gen))
        w = torch.randn(C, 1, k, generator=gen).to(DEV, dtype)
        b = torch.randn(C, generator=gen).to(DEV, dtype) if has_bias else None
        bd = None if b is None else b.double()
        xr, wr = x.double().requires_grad_(), w.double().requires_grad_()
        ref = F.conv1d(xr, wr, bd, 1, pad, 1, C)
        gy = held(torch.randn(ref.shape, generator=gen))
        gx_ref, gw_ref = torch.autograd.grad(ref, (xr, wr), gy.double())
        what = f"case {i} {dtype} {'off1' if misaligned else 'aligned'}"
        poison()
        with deterministic():
            y = ops.depthwise_conv1d(x, w, b, [1], [pad], [1])
            gx = ops.conv1d_input_grad(list(x.shape), w, gy, [1], [pad], [1], C)
            gw = ops.conv1d_weight_grad(x, list(w.shape), gy, [1], [pad], [1], C)
        if causal:
            close(y[..., :L], ref.detach()[..., :L], what + " forward (first L)")
        close(y, ref.detach(), what + " forward")
        close(gx, gx_ref, what + " input-grad")
        close(gw, gw_ref, what + " weight-grad")
        if N > 0 and C > 1:
            assert y.stride(1) == 1 and gx.stride(1) == 1, f"{what}: not (N, L, C)"
        tr_ref = F.conv_transpose1d(gy.double(), w.double(), bd, 1, pad, 0, C)
        poison()
        with deterministic():
            tr = ops.conv_transpose1d(gy, w, b, [1], [pad], [0], C, [1])
        close(tr, tr_ref, what + " transposed")


# Whole-plane NCHW kernels (nc_small_planes.cuh up to 14x14 outputs, nc_plane.cuh above): (N, C,
# m, size, k, stride, padding, bias). Several groups with a partial last one (120 planes in groups
# of 36; batch 1 with 37), 7x7 planes under 3x3 / 5x5 / 7x7, stride 2 onto 7x7 and 8x8, even
# filters, odd sizes, a data-grad whose padding is negative (forward padding 3 on a 3x3 filter);
# 28x28 and 56x56 planes (nc_plane, 7x7 there ahead of the tensor cores), 90x77 under 7x7 (16-bit
# fills a block; fp32 declines); planes too large for a block (fp32 112x112 at stride 1 and 2:
# nc_stream) and multiplier 2 decline. 16-bit 3x3 above 14x14 padded by one, on rows of whole
# 16-byte vectors: nc_plane_cp (cp.async tiles in T; 112x112 fits): 56x56, 112x112 at stride 2,
# stride 2 from width 40 (outputs end mid-strip: staged); 40-byte rows (width 20), padding 0 and 2,
# width 31, 5x5 and fp32 decline (nc_plane).
NC_SMALL = [
    (3, 40, 1, (7, 7), 3, 1, 1, True),
    (1, 37, 1, (7, 7), 7, 1, 3, False),
    (2, 20, 1, (7, 7), 5, 1, 2, True),
    (2, 20, 1, (14, 13), 3, 2, 1, True),
    (2, 30, 1, (15, 15), 7, 2, 3, False),
    (2, 12, 1, (5, 5), 3, 1, 3, True),
    (2, 12, 1, (8, 8), 2, 1, 0, True),
    (2, 12, 1, (9, 10), 4, 1, 1, False),
    (2, 6, 1, (28, 28), 5, 1, 2, True),
    (1, 2, 1, (56, 56), 7, 1, 3, True),
    (1, 4, 1, (112, 112), 3, 1, 1, False),
    (1, 3, 1, (111, 112), 3, 2, 1, True),
    (2, 2, 1, (90, 77), 7, 1, 3, True),
    (2, 4, 2, (7, 7), 3, 1, 1, True),
    (2, 5, 1, (56, 56), 3, 1, 1, True),
    (1, 3, 1, (112, 112), 3, 2, 1, False),
    (2, 5, 1, (30, 28), 5, 2, 2, True),
    (2, 5, 1, (19, 32), 5, 1, 2, True),
    (2, 3, 1, (24, 40), 3, 2, 1, False),
    (2, 7, 1, (21, 20), 3, 1, 1, True),
    (2, 7, 1, (20, 36), 3, 1, 0, False),
    (2, 7, 1, (17, 32), 3, 1, 2, True),
    (3, 9, 1, (29, 31), 3, 1, 1, True),
]


@pytest.mark.parametrize("offset", [0, 1], ids=["aligned", "off1"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("cfg", NC_SMALL, ids=[f"n{c[0]}_c{c[1]}_m{c[2]}_{c[3][0]}x{c[3][1]}_k{c[4]}_s{c[5]}_p{c[6]}" for c in NC_SMALL])
def test_depthwise_nc_small_planes(cfg, dtype, offset):
    """Forward and input-grad of NCHW depthwise on small planes against float64 on the same
    rounded data, poisoned outputs; `offset` starts input and gradient one element past the
    allocation (the block spans' 16-byte vectors then start mid-vector)."""
    import torch.nn.functional as F

    N, C, m, size, k, s, p, has_bias = cfg
    gen = torch.Generator().manual_seed(NC_SMALL.index(cfg))

    def held(t):  # t on the device, `offset` elements into its storage, contiguous
        buf = torch.empty(t.numel() + offset, device=DEV, dtype=dtype)
        out = buf[offset:].view(t.shape)
        out.copy_(t)
        return out

    x = held(torch.randn(N, C, *size, generator=gen))
    w = torch.randn(C * m, 1, k, k, generator=gen).to(DEV, dtype)
    b = torch.randn(C * m, generator=gen).to(DEV, dtype) if has_bias else None
    xr, wr = x.double().requires_grad_(), w.double().requires_grad_()
    ref = F.conv2d(xr, wr, None if b is None else b.double(), s, p, 1, C)
    gy = held(torch.randn(ref.shape, generator=gen))
    gx_ref = torch.autograd.grad(ref, xr, gy.double())[0]
    tol = LOW[dtype] if dtype != torch.float32 else 1e-4

    def close(out, want, what):
        want = want.detach()
        scale = max(1.0, float(want.abs().max()))
        assert not torch.isnan(out).any(), f"{cfg} {what}: NaN (unwritten element)"
        torch.testing.assert_close(out.double() / scale, want / scale, rtol=tol, atol=tol,
                                   msg=lambda msg: f"{cfg} {what}\n{msg}")

    # fp32 exact: allow_tf32 off (ConvNeXt's 56 x 56 would take tc7_nc's TF32: test_cuda_tc7.py)
    poison()
    with deterministic(), torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        y = torch.ops.convx.depthwise_conv2d(x, w, b, [s, s], [p, p], [1, 1])
    close(y, ref, "forward")
    poison()
    with deterministic(), torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        gx = torch.ops.convx.conv2d_input_grad(list(x.shape), w, gy, [s, s], [p, p], [1, 1], C)
    close(gx, gx_ref, "input-grad")


# NCHW stride-2 data-grad writing whole output rows (nc_stride2_dgrad.cuh), through the depthwise
# transposed conv and the conv's input-grad: (N, C, transposed input size, k, padding,
# output_padding, bias). Taken: k4 p1 (learned upsampling) with strips per row that do not divide
# a warp (lanes 0 and 31 load their halo), several blocks and idle lanes; k3 p1 with output
# padding (0, 1) (odd output height 21, even width) and (1, 1) (MobileNetV2's stride-2
# data-grad); k2 p0. Declined to nc_stream: an odd output width (k3 op 0), k4 op 1, k4 p0.
S2_DGRAD = [
    (2, 8, (8, 8), 4, 1, (0, 0), True),
    (1, 3, (7, 40), 4, 1, (0, 0), False),
    (3, 16, (16, 64), 4, 1, (0, 0), True),
    (2, 5, (11, 24), 3, 1, (0, 1), True),
    (2, 6, (28, 56), 3, 1, (1, 1), False),
    (2, 4, (7, 24), 2, 0, (0, 0), True),
    (2, 4, (9, 12), 3, 1, (0, 0), True),
    (2, 4, (8, 8), 4, 1, (1, 1), False),
    (2, 4, (8, 8), 4, 0, (0, 0), True),
]


@pytest.mark.parametrize("offset", [0, 1], ids=["aligned", "off1"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("cfg", S2_DGRAD, ids=[f"n{c[0]}_c{c[1]}_{c[2][0]}x{c[2][1]}_k{c[3]}_p{c[4]}_op{c[5][0]}{c[5][1]}" for c in S2_DGRAD])
def test_depthwise_stride2_dgrad(cfg, dtype, offset):
    """The depthwise transposed conv (stride 2, groups = C) and the matching conv input-grad
    against float64 on the same rounded data, NaN-poisoned outputs; `offset` starts the input
    one element past the allocation (misaligned rows: the kernel declines to nc_stream)."""
    import torch.nn.functional as F

    N, C, size, k, p, op, has_bias = cfg
    gen = torch.Generator().manual_seed(100 + S2_DGRAD.index(cfg))

    def held(t):  # t on the device, `offset` elements into its storage, contiguous
        buf = torch.empty(t.numel() + offset, device=DEV, dtype=dtype)
        out = buf[offset:].view(t.shape)
        out.copy_(t)
        return out

    x = held(torch.randn(N, C, *size, generator=gen))
    w = torch.randn(C, 1, k, k, generator=gen).to(DEV, dtype)
    b = torch.randn(C, generator=gen).to(DEV, dtype) if has_bias else None
    tol = LOW[dtype] if dtype != torch.float32 else 1e-4

    def close(out, want, what):
        scale = max(1.0, float(want.abs().max()))
        assert not torch.isnan(out).any(), f"{cfg} {what}: NaN (unwritten element)"
        torch.testing.assert_close(out.double() / scale, want / scale, rtol=tol, atol=tol,
                                   msg=lambda msg: f"{cfg} {what}\n{msg}")

    ref = F.conv_transpose2d(x.double(), w.double(), None if b is None else b.double(), 2, p, list(op), C)
    poison()
    with deterministic():
        y = torch.ops.convx.conv_transpose2d(x, w, b, [2, 2], [p, p], list(op), C, [1, 1])
    close(y, ref, "transposed")
    poison()
    with deterministic():
        gx = torch.ops.convx.conv2d_input_grad(list(ref.shape), w, x, [2, 2], [p, p], [1, 1], C)
    ref_gx = F.conv_transpose2d(x.double(), w.double(), None, 2, p, list(op), C)
    close(gx, ref_gx, "input-grad")


# Channels-last stride-2 data-grad writing both column phases of an output row
# (cl_stride2_dgrad.cuh), through the depthwise transposed conv and the conv's input-grad:
# (N, C, transposed input size, k, padding, output_padding, bias). Taken: k4 p1 and k3 p1 (sub-filter
# pads (1, 0)) with odd and even output sizes, several channel chunks with idle lanes (C 264: 66
# vectors of 4 channels in chunks of 32 lanes), strips and bands cut by the plane's end; C 12 in
# 16 bits (not a multiple of 8: the generic kernel) and the pads (1, 1) / (0, 0) of k4 p0 / k2 p0
# (cl_gather) decline.
CL_S2_DGRAD = [
    (2, 8, (8, 8), 4, 1, (0, 0), True),
    (1, 264, (7, 9), 4, 1, (0, 0), True),
    (3, 16, (16, 64), 4, 1, (0, 0), False),
    (2, 40, (11, 24), 3, 1, (0, 1), True),
    (2, 8, (28, 56), 3, 1, (1, 1), False),
    (2, 16, (9, 12), 3, 1, (0, 0), True),
    (2, 12, (6, 10), 4, 1, (0, 0), True),
    (2, 8, (8, 8), 4, 0, (0, 0), True),
    (2, 8, (7, 24), 2, 0, (0, 0), False),
]


@pytest.mark.parametrize("offset", [0, 1], ids=["aligned", "off1"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("cfg", CL_S2_DGRAD,
                         ids=[f"n{c[0]}_c{c[1]}_{c[2][0]}x{c[2][1]}_k{c[3]}_p{c[4]}_op{c[5][0]}{c[5][1]}" for c in CL_S2_DGRAD])
def test_depthwise_cl_stride2_dgrad(cfg, dtype, offset):
    """The channels-last depthwise transposed conv (stride 2, groups = C) and the matching conv
    input-grad against float64 on the same rounded data, NaN-poisoned outputs, channels-last
    output; `offset` starts the input one element past the allocation (misaligned: declined to the
    generic kernel)."""
    import torch.nn.functional as F

    N, C, size, k, p, op, has_bias = cfg
    gen = torch.Generator().manual_seed(300 + CL_S2_DGRAD.index(cfg))

    def held(t):  # channels-last on the device, `offset` elements into its storage
        t = t.movedim(1, -1).contiguous()
        buf = torch.empty(t.numel() + offset, device=DEV, dtype=dtype)
        return buf[offset:].view(t.shape).copy_(t).movedim(-1, 1)

    x = held(torch.randn(N, C, *size, generator=gen))
    w = torch.randn(C, 1, k, k, generator=gen).to(DEV, dtype)
    b = torch.randn(C, generator=gen).to(DEV, dtype) if has_bias else None
    tol = LOW[dtype] if dtype != torch.float32 else 1e-4

    def close(out, want, what):
        scale = max(1.0, float(want.abs().max()))
        assert not torch.isnan(out).any(), f"{cfg} {what}: NaN (unwritten element)"
        assert what != "transposed" or out.stride(1) == 1 or out.numel() == 0, f"{cfg} {what}: output not channels-last"
        torch.testing.assert_close(out.double() / scale, want / scale, rtol=tol, atol=tol,
                                   msg=lambda msg: f"{cfg} {what}\n{msg}")

    ref = F.conv_transpose2d(x.double(), w.double(), None if b is None else b.double(), 2, p, list(op), C)
    poison()
    with deterministic():
        y = torch.ops.convx.conv_transpose2d(x, w, b, [2, 2], [p, p], list(op), C, [1, 1])
    close(y, ref, "transposed")
    poison()
    with deterministic():
        gx = torch.ops.convx.conv2d_input_grad(list(ref.shape), w, x, [2, 2], [p, p], [1, 1], C)
    ref_gx = F.conv_transpose2d(x.double(), w.double(), None, 2, p, list(op), C)
    close(gx, ref_gx, "input-grad")


# NCL 15- and 31-tap rows: the shared-memory kernels of row1d.cuh (31-tap forward / data-grad,
# 15- and 31-tap weight-grad; the 15-tap forward keeps nc_stream): causal-style padding on odd
# lengths (several warp segments per row, scalar stores), 'same' padding on aligned rows (vector
# stores), the forward's channel multiplier (its data-grad declines to nc_stream), padding beyond
# the filter, rows shorter than the filter, batch 1, more items than one wave of warps (the
# grid-stride loop with prefetch), and stride 2 (declined: nc_stream / generic).
ROW1D_CASES = [  # (N, C, multiplier, L, k, stride, padding, bias)
    (2, 3, 1, 1100, 15, 1, 14, True),
    (1, 4, 1, 1030, 31, 1, 30, False),
    (2, 8, 1, 1000, 31, 1, 15, True),
    (2, 3, 2, 90, 15, 1, 7, True),
    (1, 2, 1, 40, 15, 1, 20, False),
    (2, 2, 1, 9, 31, 1, 15, True),
    (8, 128, 1, 4000, 31, 1, 15, False),
    (8, 128, 1, 4096, 15, 1, 14, True),
    (1, 2, 1, 81, 15, 2, 7, True),
]


def _check_ncl_rows(cases, seed, dtype, misaligned, transposed):
    """Forward, input-grad and weight-grad of NCL depthwise rows (and, with `transposed`, the
    depthwise transposed conv of the multiplier-1 stride-1 cases) against float64 on the same
    rounded operands, on poisoned memory; `misaligned`: input and gradient start one element past
    a 16-byte boundary. cases: (N, C, multiplier, L, k, stride, padding, bias)."""
    import torch.nn.functional as F

    tol = {torch.float32: 1e-4, torch.float16: 2e-2, torch.bfloat16: 2e-2}[dtype]

    def place(t):
        if not misaligned:
            return t.to(DEV, dtype)
        flat = torch.empty(t.numel() + 1, device=DEV, dtype=dtype)[1:]
        return flat.view(t.shape).copy_(t)

    def close(out, ref, what):
        scale = max(1.0, float(ref.abs().max())) if ref.numel() else 1.0
        assert not torch.isnan(out).any(), f"{what}: NaN (unwritten element)"
        torch.testing.assert_close(out.double() / scale, ref / scale, rtol=tol, atol=tol, msg=lambda m: f"{what}\n{m}")

    ops = torch.ops.convx
    for i, (N, C, m, L, k, s, p, has_bias) in enumerate(cases):
        gen = torch.Generator().manual_seed(seed + i)
        x = place(torch.randn(N, C, L, generator=gen))
        w = torch.randn(C * m, 1, k, generator=gen).to(DEV, dtype)
        b = torch.randn(C * m, generator=gen).to(DEV, dtype) if has_bias else None
        bd = None if b is None else b.double()
        xr, wr = x.double().requires_grad_(), w.double().requires_grad_()
        ref = F.conv1d(xr, wr, bd, s, p, 1, C)
        gy = place(torch.randn(ref.shape, generator=gen))
        gx_ref, gw_ref = torch.autograd.grad(ref, (xr, wr), gy.double())
        what = f"case {i} {dtype}"
        poison()
        with deterministic():
            y = ops.depthwise_conv1d(x, w, b, [s], [p], [1])
            gx = ops.conv1d_input_grad(list(x.shape), w, gy, [s], [p], [1], C)
            gw = ops.conv1d_weight_grad(x, list(w.shape), gy, [s], [p], [1], C)
        close(y, ref.detach(), what + " forward")
        close(gx, gx_ref, what + " input-grad")
        close(gw, gw_ref, what + " weight-grad")
        if transposed and m == 1 and s == 1:
            tr_ref = F.conv_transpose1d(gy.double(), w.double(), bd, 1, p, 0, C)
            poison()
            with deterministic():
                tr = ops.conv_transpose1d(gy, w, b, [1], [p], [0], C, [1])
            close(tr, tr_ref, what + " transposed")


@pytest.mark.parametrize("misaligned", [False, True], ids=["aligned", "off1"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"])
def test_depthwise_row1d(dtype, misaligned):
    """Forward, input-grad, weight-grad and depthwise transposed conv of 15/31-tap NCL rows against
    float64 on the same rounded operands, on poisoned memory; `off1`: input and gradient start one
    element past a 16-byte boundary."""
    _check_ncl_rows(ROW1D_CASES, 70, dtype, misaligned, transposed=True)


# NCL 2-, 3-, 4- and 15-tap rows: the warp-segment kernel of row_warp.cuh (forward and stride-1
# data-grad): causal padding on odd lengths (every input / output row misalignment), 'same'
# padding, Mamba-like aligned rows, padding beyond the filter (negative data-grad padding), rows
# shorter than a vector, no padding, the forward's channel multiplier (its data-grad declines),
# stride 2 (declined), and more rows than one wave of warps.
ROW_WARP_CASES = [  # (N, C, multiplier, L, k, stride, padding, bias)
    (2, 8, 1, 1027, 4, 1, 3, True),
    (1, 16, 1, 301, 3, 1, 2, False),
    (2, 6, 1, 45, 2, 1, 1, True),
    (1, 4, 1, 20, 4, 1, 6, True),
    (2, 3, 1, 3, 3, 1, 1, False),
    (1, 5, 1, 64, 2, 1, 0, True),
    (2, 3, 2, 129, 4, 1, 3, True),
    (1, 16, 1, 600, 15, 1, 14, True),
    (2, 4, 1, 333, 15, 1, 7, False),
    (1, 4, 1, 97, 4, 2, 3, True),
    (4, 256, 1, 2048, 4, 1, 3, True),
    (2, 128, 1, 4096, 15, 1, 14, False),
    # session 10: short_k3's 514-wide causal k3 rows (the tail past a row's last segment), a tail
    # of up to 32 outputs (535 -> 537), a weight-grad of several chunks per channel (16 rows of
    # 602), odd lengths with a multiplier, batch 0
    (4, 24, 1, 512, 3, 1, 2, True),
    (2, 4, 1, 535, 3, 1, 2, True),
    (16, 8, 1, 600, 3, 1, 2, False),
    (3, 5, 2, 517, 2, 1, 1, True),
    (0, 8, 1, 40, 3, 1, 2, True),
    # session 11: 1040 channels (one chunk per channel: 1040 blocks each writing its channel's
    # weight-grad)
    (2, 1040, 1, 515, 3, 1, 2, True),
]


@pytest.mark.parametrize("misaligned", [False, True], ids=["aligned", "off1"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"])
def test_depthwise_row_warp(dtype, misaligned):
    """Forward, input-grad and weight-grad of 2/3/4/15-tap NCL rows against float64 on the same
    rounded operands, on poisoned memory; `off1`: input and gradient start one element past a
    16-byte boundary (odd lengths give every output row misalignment)."""
    _check_ncl_rows(ROW_WARP_CASES, 170, dtype, misaligned, transposed=False)


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"])
def test_depthwise_short_rows_filter_views(dtype, layout):
    """row_warp and cl_row1d read the layer's own filter (no preparation launch): a filter one
    element past an aligned address (a view into a larger tensor: row_warp reads it as it is,
    cl_row1d's vector loads take an aligned copy), forward and input-grad (the rotated filter) of
    2-, 3-, 4- and 15-tap rows against float64 on the same rounded operands, poisoned memory."""
    import torch.nn.functional as F

    tol = {torch.float32: 1e-4, torch.float16: 4e-3, torch.bfloat16: 2e-2}[dtype]
    ops = torch.ops.convx
    for i, (N, C, L, k) in enumerate([(2, 16, 515, 3), (2, 32, 300, 2), (1, 8, 1001, 4), (2, 16, 257, 15)]):
        gen = torch.Generator().manual_seed(240 + i)
        x = _held(torch.randn(N, C, L, generator=gen), layout).to(DEV, dtype)
        flat = torch.empty(C * k + 1, device=DEV, dtype=dtype)[1:]
        w = flat.view(C, 1, k).copy_(torch.randn(C, 1, k, generator=gen))
        xr, wr = x.double().requires_grad_(), w.double()
        ref = F.conv1d(xr, wr, None, 1, k - 1, 1, C)
        gy = _held(torch.randn(ref.shape, generator=gen), layout).to(DEV, dtype)
        (gx_ref,) = torch.autograd.grad(ref, (xr,), gy.double())
        poison()
        y = ops.depthwise_conv1d(x, w, None, [1], [k - 1], [1])
        gx = ops.conv1d_input_grad(list(x.shape), w, gy, [1], [k - 1], [1], C)
        for out, r, what in ((y, ref.detach(), "forward"), (gx, gx_ref, "input-grad")):
            scale = max(1.0, float(r.abs().max()))
            assert not torch.isnan(out).any(), f"case {i} {what}: NaN"
            torch.testing.assert_close(out.double() / scale, r / scale, rtol=tol, atol=tol)


# Tensor-core 16-bit rows (tc_row1d.cuh), forward and stride-1 data-grad: (N, C, L, k, padding,
# bias); "causal" = k - 1 on both sides. Conformer's k31 'same' (rows of 4 tiles, the last
# partial), k15 causal on odd lengths (every row misaligned differently) and on long rows, rows
# shorter than a block of 16 and than the filter, padding beyond the filter (negative data-grad
# padding), 9, 21 and 47 taps (2, 3 and 4 k-steps), 40 channels (channels-last: a partial group of
# 32), 12 channels (channels-last: not a multiple of 8, declines), batch 0, rows of 3 tiles
# (channels-last: runs of 2 tiles per block, the last of 1).
TC_ROW_CASES = [
    (2, 64, 1000, 31, 15, True),
    (2, 64, 1029, 15, "causal", False),
    (1, 40, 9, 31, 15, True),
    (2, 24, 77, 9, 4, True),
    (1, 16, 300, 47, 23, False),
    (1, 8, 60, 15, 20, True),
    (2, 48, 4096, 15, "causal", True),
    (1, 16, 517, 21, 10, False),
    (2, 12, 99, 15, 7, True),
    (0, 16, 40, 31, 15, True),
    (3, 40, 700, 31, 15, False),
]


@pytest.mark.parametrize("layout", ["ncl", "ncl_off1", "nlc"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_depthwise_tc_rows(dtype, layout):
    """Forward (operator and autograd), input-grad, and the depthwise transposed conv of 16-bit
    long-filter rows (tensor-core kernels) against float64 on the same 16-bit data, on poisoned
    memory, layout kept. `ncl_off1`: input and gradient one element past a 16-byte boundary."""
    import torch.nn.functional as F

    tol = {torch.float16: 4e-3, torch.bfloat16: 2e-2}[dtype]
    ops = torch.ops.convx

    def held(t):
        if layout == "nlc":
            return t.transpose(1, 2).to(DEV, dtype).contiguous().transpose(1, 2)
        if layout == "ncl_off1":
            flat = torch.empty(t.numel() + 1, device=DEV, dtype=dtype)[1:]
            return flat.view(t.shape).copy_(t)
        return t.to(DEV, dtype)

    def close(out, ref, what):
        scale = max(1.0, float(ref.abs().max())) if ref.numel() else 1.0
        assert not torch.isnan(out).any(), f"{what}: NaN (unwritten element)"
        torch.testing.assert_close(out.double() / scale, ref / scale, rtol=tol, atol=tol, msg=lambda m: f"{what}\n{m}")

    for i, (N, C, L, k, p, has_bias) in enumerate(TC_ROW_CASES):
        gen = torch.Generator().manual_seed(230 + i)
        pad = k - 1 if p == "causal" else p
        x = held(torch.randn(N, C, L, generator=gen))
        w = torch.randn(C, 1, k, generator=gen).to(DEV, dtype)
        b = torch.randn(C, generator=gen).to(DEV, dtype) if has_bias else None
        bd = None if b is None else b.double()
        xr = x.double().requires_grad_()
        ref = F.conv1d(xr, w.double(), bd, 1, pad, 1, C)
        gy = held(torch.randn(ref.shape, generator=gen))
        (gx_ref,) = torch.autograd.grad(ref, (xr,), gy.double())
        what = f"case {i} {dtype} {layout}"
        poison()
        y = ops.depthwise_conv1d(x, w, b, [1], [pad], [1])
        gx = ops.conv1d_input_grad(list(x.shape), w, gy, [1], [pad], [1], C)
        close(y, ref.detach(), what + " forward")
        close(gx, gx_ref, what + " input-grad")
        if layout == "nlc" and N > 0:
            assert y.stride(1) == 1 and gx.stride(1) == 1, f"{what}: not (N, L, C)"
        xa = x.detach().clone().requires_grad_()
        poison()
        ya = ops.depthwise_conv1d(xa, w, b, [1], [pad], [1])
        ya.backward(gy)
        close(ya.detach(), ref.detach(), what + " autograd forward")
        close(xa.grad, gx_ref, what + " autograd input-grad")
        tr_ref = F.conv_transpose1d(gy.double(), w.double(), bd, 1, pad, 0, C)
        poison()
        tr = ops.conv_transpose1d(gy, w, b, [1], [pad], [0], C, [1])
        close(tr, tr_ref, what + " transposed")


TOL16 = {torch.float16: 4e-3, torch.bfloat16: 2e-2}  # the 16-bit tests' tolerances against float64


def held16(t, dtype, layout):
    """t on the GPU in dtype: `off1` one element past a 16-byte boundary, `strided` every other
    element of a wider last dim, `channels_last` in channels_last_3d memory, else contiguous."""
    if layout == "off1":
        flat = torch.empty(t.numel() + 1, device=DEV, dtype=dtype)[1:]
        return flat.view(t.shape).copy_(t)
    if layout == "strided":
        return to_dev(t.unsqueeze(-1).expand(*t.shape, 2).flatten(-2)[..., ::2], dtype=dtype)
    if layout == "channels_last":
        return t.to(DEV, dtype).contiguous(memory_format=torch.channels_last_3d)
    return t.to(DEV, dtype)


def close16(out, ref, what, tol):
    """out (16-bit, no NaN: every element written) against the float64 ref, relative to its max."""
    scale = max(1.0, float(ref.abs().max())) if ref.numel() else 1.0
    assert not torch.isnan(out).any(), f"{what}: NaN (unwritten element)"
    torch.testing.assert_close(out.double() / scale, ref / scale, rtol=tol, atol=tol, msg=lambda m: f"{what}\n{m}")


# Tensor-core 16-bit NC(D)HW rows (tc_rows_nc.cuh), forward and stride-1 data-grad, the filters
# its launcher takes: (N, C, spatial, kernel, padding, bias). X3D's 5x3x3 (its padding, a depth
# longer than the filter, odd widths: single-element staging; no padding; padding beyond the
# filter: negative data-grad padding), 5x3x5 and 5x3x7, 2-D 7x7 / 7x5 / 7x8 on planes of 56 and
# more (widths giving 16-byte, 4-byte and single-element staging, several chunks per row at W
# 150, 'same' with an even width: the functional layer's extra end padding, asymmetric) and
# 31x31 (RepLKNet), batch 0 and 1, and two with several samples per block (few channels x many
# samples: a block walks 2 or more columns).
TC_NC_CASES = [
    (2, 8, (7, 19, 56), (5, 3, 3), (2, 1, 1), True),
    (1, 16, (16, 30, 56), (5, 3, 3), (2, 1, 1), False),
    (1, 3, (23, 5, 21), (5, 3, 3), (0, 0, 0), True),
    (1, 2, (3, 9, 14), (5, 3, 3), (3, 2, 4), True),
    (1, 6, (5, 17, 28), (5, 3, 5), (2, 1, 2), True),
    (1, 4, (4, 20, 40), (5, 3, 7), (2, 1, 3), True),
    (0, 4, (4, 8, 8), (5, 3, 3), (2, 1, 1), True),
    (1200, 4, (5, 16, 16), (5, 3, 3), (2, 1, 1), True),
    (2, 4, (56, 56), (7, 7), (3, 3), True),
    (1, 3, (60, 150), (7, 5), (3, 2), True),
    (1, 2, (57, 61), (7, 7), (0, 6), False),
    (1, 4, (56, 57), (7, 8), "same", True),
    (0, 4, (56, 56), (7, 7), (3, 3), True),
    (1, 4, (40, 45), (31, 31), (15, 15), True),
    (1, 5, (17, 9), (31, 31), (15, 15), False),
    (64, 128, (14, 14), (31, 31), (15, 15), False),
]


@pytest.mark.parametrize("layout", ["contiguous", "off1", "strided"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_depthwise_tc_rows_nc(dtype, layout):
    """Forward (operator and autograd), input-grad and the depthwise transposed conv of 16-bit
    2-D / 3-D depthwise filters in NC(D)HW (tensor-core kernel) against float64 on the same 16-bit
    data, on poisoned memory. `off1`: input and gradient one element past a 16-byte boundary;
    `strided`: a non-contiguous input (every other element of a wider last dim)."""
    import torch.nn.functional as F

    import convx

    ops = torch.ops.convx
    held = functools.partial(held16, dtype=dtype, layout=layout)
    close = functools.partial(close16, tol=TOL16[dtype])

    for i, (N, C, sp, k, p, has_bias) in enumerate(TC_NC_CASES):
        n = len(sp)
        conv = {2: F.conv2d, 3: F.conv3d}[n]
        conv_t = {2: F.conv_transpose2d, 3: F.conv_transpose3d}[n]
        gen = torch.Generator().manual_seed(410 + i)
        x = held(torch.randn(N, C, *sp, generator=gen))
        if layout == "strided" and N > 0:
            assert not x.is_contiguous()
        w = torch.randn(C, 1, *k, generator=gen).to(DEV, dtype)
        b = torch.randn(C, generator=gen).to(DEV, dtype) if has_bias else None
        bd = None if b is None else b.double()
        xr = x.double().requires_grad_()
        ref = conv(xr, w.double(), bd, 1, p, 1, C)
        gy = held(torch.randn(ref.shape, generator=gen))
        (gx_ref,) = torch.autograd.grad(ref, (xr,), gy.double())
        what = f"case {i} {dtype} {layout}"
        dw = getattr(convx.functional, f"depthwise_conv{n}d")
        if p == "same":
            poison()
            y = dw(x, w, b, padding="same")
            close(y, ref.detach(), what + " forward 'same'")
            xa = x.detach().clone().requires_grad_()
            poison()
            ya = dw(xa, w, b, padding="same")
            ya.backward(gy)
            close(xa.grad, gx_ref, what + " autograd input-grad 'same'")
            continue
        one, pad = [1] * n, list(p)
        poison()
        y = getattr(ops, f"depthwise_conv{n}d")(x, w, b, one, pad, one)
        gx = getattr(ops, f"conv{n}d_input_grad")(list(x.shape), w, gy, one, pad, one, C)
        close(y, ref.detach(), what + " forward")
        close(gx, gx_ref, what + " input-grad")
        xa = x.detach().clone().requires_grad_()
        poison()
        ya = getattr(ops, f"depthwise_conv{n}d")(xa, w, b, one, pad, one)
        ya.backward(gy)
        close(ya.detach(), ref.detach(), what + " autograd forward")
        close(xa.grad, gx_ref, what + " autograd input-grad")
        tr_ref = conv_t(gy.double(), w.double(), bd, 1, pad, 0, C)
        poison()
        tr = getattr(ops, f"conv_transpose{n}d")(gy, w, b, one, pad, [0] * n, C, one)
        close(tr, tr_ref, what + " transposed")


# float32 31 x 26-33 filters on tensor cores as TF32 (tc_rows_nc.cuh), taken in NC* and
# channels-last layouts on planes of at least 56 x 56 while torch.backends.cudnn.allow_tf32 is true: (N, C, spatial,
# kernel, padding, bias). RepLKNet's 31x31 on 56x56 planes; the others (rows shorter than the
# filter, several samples per block, widths 26 and 33 with asymmetric padding, an odd width,
# batch 0) stay on the exact kernels under both flag values (the CPU harness runs the TF32
# kernel on them).
TC_TF32_CASES = [
    (2, 16, (56, 56), (31, 31), (15, 15), True),
    (1, 5, (17, 9), (31, 31), (15, 15), False),
    (64, 128, (14, 14), (31, 31), (15, 15), False),
    (2, 3, (30, 56), (31, 26), (15, 12), True),
    (1, 2, (33, 45), (31, 33), (15, 16), True),
    (1, 4, (40, 37), (31, 31), (3, 0), True),
    (0, 4, (20, 20), (31, 31), (15, 15), True),
]


@pytest.mark.parametrize("tf32", [True, False], ids=["tf32", "exact"])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "off1", "strided"])
def test_depthwise_tc_rows_nc_tf32(layout, tf32):
    """float32 31x31-class depthwise filters under both values of allow_tf32: forward (operator and
    autograd), input-grad and the depthwise transposed conv against float64 on the same float32
    data, on poisoned memory, layout kept. NC* 56x56 with the flag on: within 1e-3 of the output
    scale (TF32: 10 mantissa bits) and not within 1e-5 (the tensor-core path did run), NC* and
    channels-last alike. Flag off and smaller planes (no TF32 kernel): within 2e-5 (the exact
    CUDA-core kernels).
    The weight-grad stays exact either way."""
    import torch.nn.functional as F

    ops = torch.ops.convx

    def held(t):
        if layout == "off1":
            flat = torch.empty(t.numel() + 1, device=DEV)[1:]
            return flat.view(t.shape).copy_(t)
        if layout == "strided":
            return to_dev(t.unsqueeze(-1).expand(*t.shape, 2).flatten(-2)[..., ::2], dtype=torch.float32)
        if layout == "channels_last":
            return _held(t, layout).to(DEV)
        return t.to(DEV)

    def err(out, ref, what):
        scale = max(1.0, float(ref.abs().max())) if ref.numel() else 1.0
        assert not torch.isnan(out).any(), f"{what}: NaN (unwritten element)"
        e = float((out.double() - ref).abs().max()) / scale if ref.numel() else 0.0
        assert e <= tol, f"{what}: error {e:.2e} of the output scale, above {tol:.0e}"
        return e

    with torch.backends.cudnn.flags(enabled=True, allow_tf32=tf32):
        for i, (N, C, sp, k, p, has_bias) in enumerate(TC_TF32_CASES):
            gen = torch.Generator().manual_seed(470 + i)
            x = held(torch.randn(N, C, *sp, generator=gen))
            w = torch.randn(C, 1, *k, generator=gen).to(DEV)
            b = torch.randn(C, generator=gen).to(DEV) if has_bias else None
            bd = None if b is None else b.double()
            xr, wr = x.double().requires_grad_(), w.double().requires_grad_()
            ref = F.conv2d(xr, wr, bd, 1, p, 1, C)
            gy = held(torch.randn(ref.shape, generator=gen))
            gx_ref, gw_ref = torch.autograd.grad(ref, (xr, wr), gy.double())
            what = f"case {i} {layout} tf32={tf32}"
            tc = tf32 and min(sp) >= 56
            tol = 1e-3 if tc else 2e-5
            one, pad = [1, 1], list(p)
            poison()
            y = ops.depthwise_conv2d(x, w, b, one, pad, one)
            e = err(y, ref.detach(), what + " forward")
            if tc:
                assert e > 1e-5, f"{what}: error {e:.1e}: the TF32 path did not run"
            if layout == "channels_last" and N > 0:
                assert y.stride(1) == 1, f"{what}: output not channels-last"
            poison()
            gx = ops.conv2d_input_grad(list(x.shape), w, gy, one, pad, one, C)
            err(gx, gx_ref, what + " input-grad")
            poison()
            gw = ops.conv2d_weight_grad(x, list(w.shape), gy, one, pad, one, C)
            scale = max(1.0, float(gw_ref.abs().max()))
            assert float((gw.double() - gw_ref).abs().max()) / scale <= 2e-5, f"{what} weight-grad"
            xa = x.detach().clone().requires_grad_()
            poison()
            ya = ops.depthwise_conv2d(xa, w, b, one, pad, one)
            ya.backward(gy)
            err(ya.detach(), ref.detach(), what + " autograd forward")
            err(xa.grad, gx_ref, what + " autograd input-grad")
            tr_ref = F.conv_transpose2d(gy.double(), w.double(), bd, 1, pad, 0, C)
            poison()
            tr = ops.conv_transpose2d(gy, w, b, one, pad, [0, 0], C, one)
            err(tr, tr_ref, what + " transposed")


# 16-bit 5x3x3 on CUDA cores with the filter in registers (depth3d_regs.cuh; NDHWC weight-grad:
# cl_wgrad_d3s, cl_wgrad_d3r for channels not a multiple of 8 and `off1`), forward, stride-1 data-grad and weight-grad, NCDHW and NDHWC: (N, C, (D, H, W), padding, bias). X3D's padding at X3D's size (two
# samples) and small, C 40 (NDHWC warps across strips), padding 0 / 3 in depth and height (the
# data-grad's padding 2 / 1 / 0, heights changing), a depth giving several segments, one strip
# per row, batch 0; widths not a multiple of 8 and width padding 0 go to the other kernels.
D3R_CASES = [
    (2, 192, (16, 56, 56), (2, 1, 1), True),
    (2, 8, (7, 19, 56), (2, 1, 1), True),
    (1, 40, (5, 6, 24), (2, 1, 1), False),
    (1, 8, (5, 5, 8), (0, 0, 1), True),
    (1, 16, (45, 3, 16), (2, 1, 1), True),
    (1, 2, (6, 6, 8), (3, 2, 1), True),
    (0, 4, (4, 8, 8), (2, 1, 1), True),
    (1, 2, (5, 5, 12), (2, 1, 1), True),
    (1, 2, (5, 5, 16), (2, 1, 0), True),
    (1, 8, (5, 4, 96), (2, 1, 1), True),  # NDHWC wider than depth3d_cl_mma takes (80)
]


@pytest.mark.parametrize("layout", ["contiguous", "off1", "channels_last"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_depthwise_depth3d_regs(dtype, layout):
    """Forward (operator and autograd), input-grad, weight-grad (bitwise repeatable) and the
    depthwise transposed conv of 16-bit 5x3x3 depthwise filters in NCDHW and NDHWC against
    float64 on the same 16-bit data, on poisoned memory. `off1`: input and gradient one element
    past a 16-byte boundary (the kernels decline them)."""
    import torch.nn.functional as F

    ops = torch.ops.convx
    held = functools.partial(held16, dtype=dtype, layout=layout)
    close = functools.partial(close16, tol=TOL16[dtype])

    for i, (N, C, sp, pad, has_bias) in enumerate(D3R_CASES):
        gen = torch.Generator().manual_seed(520 + i)
        x = held(torch.randn(N, C, *sp, generator=gen))
        w = torch.randn(C, 1, 5, 3, 3, generator=gen).to(DEV, dtype)
        b = torch.randn(C, generator=gen).to(DEV, dtype) if has_bias else None
        bd = None if b is None else b.double()
        xr, wr = x.double().requires_grad_(), w.double().requires_grad_()
        ref = F.conv3d(xr, wr, bd, 1, pad, 1, C)
        gy = held(torch.randn(ref.shape, generator=gen))
        gx_ref, gw_ref = torch.autograd.grad(ref, (xr, wr), gy.double())
        what = f"case {i} {dtype} {layout}"
        one, pad = [1] * 3, list(pad)
        poison()
        y = ops.depthwise_conv3d(x, w, b, one, pad, one)
        close(y, ref.detach(), what + " forward")
        poison()
        gx = ops.conv3d_input_grad(list(x.shape), w, gy, one, pad, one, C)
        close(gx, gx_ref, what + " input-grad")
        poison()
        gw = ops.conv3d_weight_grad(x, list(w.shape), gy, one, pad, one, C)
        close(gw, gw_ref, what + " weight-grad")
        assert torch.equal(gw, ops.conv3d_weight_grad(x, list(w.shape), gy, one, pad, one, C)), what + " repeatable"
        xa = x.detach().clone().requires_grad_()
        poison()
        ya = ops.depthwise_conv3d(xa, w, b, one, pad, one)
        ya.backward(gy)
        close(ya.detach(), ref.detach(), what + " autograd forward")
        close(xa.grad, gx_ref, what + " autograd input-grad")
        tr_ref = F.conv_transpose3d(gy.double(), w.double(), bd, 1, pad, 0, C)
        poison()
        tr = ops.conv_transpose3d(gy, w, b, one, pad, [0] * 3, C, one)
        close(tr, tr_ref, what + " transposed")


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_depthwise_depth3d_regs_nonfinite(layout):
    """16-bit 5x3x3 forward / input-grad (depth3d_nc_units / depth3d_cl_smem) with inf / NaN
    inputs: each must reach exactly the outputs whose taps read it (the NaN / inf pattern of the
    float64 reference on the same bf16 data); the kernels' products for output depths outside a
    thread's column go to slots that are never stored."""
    import torch.nn.functional as F

    C, pad = 16, [2, 1, 1]
    gen = torch.Generator().manual_seed(77)
    x = torch.randn(2, C, 9, 7, 24, generator=gen)
    x[0, 3, 4, 2, 0] = float("inf")
    x[0, 5, 0, 6, 23] = float("-inf")
    x[1, 9, 8, 3, 7] = float("nan")
    x[1, 9, 8, 3, 8] = float("inf")
    w = torch.randn(C, 1, 5, 3, 3, generator=gen).to(DEV, torch.bfloat16)
    x = x.to(DEV, torch.bfloat16)
    if layout == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last_3d)
    ref = F.conv3d(x.double(), w.double(), None, 1, pad, 1, C)
    y = torch.ops.convx.depthwise_conv3d(x, w, None, [1] * 3, pad, [1] * 3)
    gx = torch.ops.convx.conv3d_input_grad(list(x.shape), w, x, [1] * 3, pad, [1] * 3, C)
    gx_ref = torch.ops.aten.convolution_backward(x.double(), x.double(), w.double(), None, [1] * 3, pad, [1] * 3,
                                                 False, [0] * 3, C, [True, False, False])[0]
    for got, want, what in ((y, ref, "forward"), (gx, gx_ref, "input-grad")):
        assert torch.equal(got.isnan().cpu(), want.isnan().cpu()), what + " NaN pattern"
        assert torch.equal(got.isinf().cpu(), want.isinf().cpu()), what + " inf pattern"
        fin = want.isfinite()
        assert torch.allclose(got.double()[fin], want[fin], rtol=2e-2, atol=2e-1), what


@pytest.mark.parametrize("layout", ["ncl", "nlc"])
def test_depthwise_tc_rows_beyond_2_pow_31_elements(layout):
    """A bf16 k31 'same' row tensor of more than 2**31 elements on the tensor-core kernels: the
    last channels' last outputs (beyond element 2**31) against float64."""
    import torch.nn.functional as F

    if torch.cuda.mem_get_info()[0] < 20e9:
        pytest.skip("needs >= 20 GB of free GPU memory")
    C, L, k = 1024, (1 << 21) + 100, 31
    if layout == "nlc":
        x = torch.empty(1, L, C, device=DEV, dtype=torch.bfloat16).transpose(1, 2)
    else:
        x = torch.empty(1, C, L, device=DEV, dtype=torch.bfloat16)
    x.uniform_(-1, 1)
    w = torch.randn(C, 1, k, device=DEV, dtype=torch.bfloat16)
    y = torch.ops.convx.depthwise_conv1d(x, w, None, [1], [15], [1])
    assert y.numel() > 2**31
    xs = F.pad(x[:, -8:, -200:].double(), (0, 15))  # the right edge's zero padding
    ref = F.conv1d(xs, w[-8:].double(), None, 1, 0, 1, 8)  # positions L - 185 ... L - 1
    torch.testing.assert_close(y[:, -8:, -185:].double(), ref, rtol=2e-2, atol=2e-2)
    del x, y
# The tensor-core weight-grad of 15- and 31-tap rows (tc_wgrad1d.cuh), NCL and (N, L, C):
# Conformer-like 'same' 31 taps, odd lengths (staged windows start mid-vector), causal 15 taps
# (output L + 14), rows shorter than 16, no padding, padding beyond the filter, a channel count of
# 8 mod 16 ((N, L, C): a half-empty channel group), channels not a multiple of 8 ((N, L, C):
# declined), many short rows (NCL in chunks), the bench rows' sizes (NCL: one chunk; (N, L, C): 4),
# (N, L, C) in 16 chunks, many samples of 8 channels (NCL 6 chunks, (N, L, C) 100: the last
# block's ordered sum over many partials). (N, L, C) 15-tap rows go to cl_wgrad_partial's
# two-channel tile.
TC_WGRAD_CASES = [  # (N, C, L, k, padding)
    (3, 16, 1000, 31, 15),
    (2, 8, 333, 31, 15),
    (20, 8, 70, 15, 14),
    (2, 24, 9, 15, 7),
    (2, 8, 5, 31, 15),
    (1, 16, 600, 15, 0),
    (2, 8, 300, 31, 40),
    (2, 3, 77, 31, 15),
    (66, 2, 20, 15, 7),
    (4, 512, 1000, 31, 15),
    (2, 2048, 4096, 15, 14),
    (8, 64, 2000, 31, 15),
    (200, 8, 300, 31, 15),
]


@pytest.mark.parametrize("placement", ["ncl", "nlc", "ncl_off1", "nlc_off1"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_depthwise_tc_wgrad1d(dtype, placement):
    """Weight-grad of 15/31-tap 16-bit rows against float64 on the same rounded data, on poisoned
    memory, bitwise repeatable; `off1`: input and gradient one element past an aligned address
    (NCL: windows staged from mid-vector; (N, L, C): declined to cl_wgrad_partial)."""
    import torch.nn.functional as F

    tol = {torch.float16: 4e-3, torch.bfloat16: 2e-2}[dtype]
    nlc, off1 = placement.startswith("nlc"), placement.endswith("off1")

    def held(t):
        t = t.transpose(1, 2) if nlc else t
        if off1:
            flat = torch.empty(t.numel() + 1, device=DEV, dtype=dtype)[1:]
            t = flat.view(t.shape).copy_(t)
        else:
            t = t.to(DEV, dtype).contiguous()
        return t.transpose(1, 2) if nlc else t

    for i, (N, C, L, k, p) in enumerate(TC_WGRAD_CASES):
        gen = torch.Generator().manual_seed(210 + i)
        x = held(torch.randn(N, C, L, generator=gen))
        w = torch.randn(C, 1, k, generator=gen).to(DEV, dtype)
        xr, wr = x.double(), w.double().requires_grad_()
        ref = F.conv1d(xr, wr, None, 1, p, 1, C)
        gy = held(torch.randn(ref.shape, generator=gen))
        (gw_ref,) = torch.autograd.grad(ref, (wr,), gy.double())
        what = f"case {i} {dtype} {placement}"
        op = torch.ops.convx.conv1d_weight_grad
        poison()
        with deterministic():
            gw = op(x, list(w.shape), gy, [1], [p], [1], C)
            poison()
            gw2 = op(x, list(w.shape), gy, [1], [p], [1], C)
        scale = max(1.0, float(gw_ref.abs().max()))
        assert not torch.isnan(gw).any(), f"{what}: NaN (unwritten element)"
        torch.testing.assert_close(gw.double() / scale, gw_ref / scale, rtol=tol, atol=tol, msg=lambda m: f"{what}\n{m}")
        assert torch.equal(gw, gw2), f"{what}: not bitwise repeatable"


# The depth-streaming kernels (NCDHW: nc_depth3d.cuh; NDHWC weight-grad: cl_wgrad_depth3d) in bf16
# too, at X3D-like sizes (width 56: aligned 16-byte rows; batch 1 cut into depth segments),
# spatial strides 1 and 2; NDHWC also with several channel tiles (C 32, 40, 192) and odd channels.
DEPTH3D_CASES = [  # (N, C, size, k, stride, padding)
    (2, 8, (8, 14, 56), (3, 3, 3), (1, 1, 1), (1, 1, 1)),
    (1, 6, (16, 9, 20), (5, 3, 3), (1, 1, 1), (2, 1, 1)),
    (2, 4, (6, 15, 17), (3, 3, 3), (1, 2, 2), (1, 1, 1)),
    (1, 4, (9, 12, 56), (5, 3, 3), (1, 2, 2), (2, 1, 1)),
    (2, 4, (7, 9, 10), (3, 3, 3), (2, 1, 1), (1, 1, 1)),  # depth stride 2: declines to the old path
    (2, 40, (7, 6, 13), (3, 3, 3), (1, 1, 1), (1, 1, 1)),
    (2, 32, (5, 4, 21), (3, 3, 3), (1, 1, 1), (1, 1, 1)),  # NDHWC lane groups with idle lanes
    (1, 192, (10, 7, 9), (5, 3, 3), (1, 1, 1), (2, 1, 1)),
    (2, 5, (6, 5, 7), (3, 3, 3), (1, 1, 1), (1, 1, 1)),  # odd channels: NDHWC takes the generic kernels
]


@pytest.mark.parametrize("placement", ["ncdhw", "ndhwc", "ndhwc_off1"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"])
def test_depthwise_depth3d(dtype, placement):
    """Forward, input-grad and weight-grad of KD x 3 x 3 filters against float64 on the same
    rounded data, on poisoned memory; the weight-grad bitwise repeatable (the depth-streaming
    kernels, nc_depth3d.cuh and cl_wgrad_depth3d; depth stride 2 keeps the previous ones).
    `ndhwc_off1`: input and gradient channels-last, one element past an aligned address."""
    import torch.nn.functional as F

    def place(t):
        if placement == "ncdhw":
            return t.to(DEV, dtype)
        cl = t.permute(0, 2, 3, 4, 1)
        if placement == "ndhwc":
            return cl.contiguous().to(DEV, dtype).permute(0, 4, 1, 2, 3)
        flat = torch.empty(t.numel() + 1, device=DEV, dtype=dtype)[1:]
        return flat.view(cl.shape).copy_(cl).permute(0, 4, 1, 2, 3)

    tol = {torch.float32: 1e-4, torch.float16: 4e-3, torch.bfloat16: 3e-2}[dtype]
    for i, (N, C, size, k, s, p) in enumerate(DEPTH3D_CASES):
        gen = torch.Generator().manual_seed(70 + i)
        x = place(torch.randn(N, C, *size, generator=gen))
        w = torch.randn(C, 1, *k, generator=gen).to(DEV, dtype)
        b = torch.randn(C, generator=gen).to(DEV, dtype)
        xr, wr = x.double().requires_grad_(), w.double().requires_grad_()
        ref = F.conv3d(xr, wr, b.double(), s, p, 1, C)
        gy = place(torch.randn(ref.shape, generator=gen))
        gx_ref, gw_ref = torch.autograd.grad(ref, (xr, wr), gy.double())
        ops = torch.ops.convx
        poison()
        with deterministic():
            y = ops.depthwise_conv3d(x, w, b, s, p, [1, 1, 1])
            gx = ops.conv3d_input_grad(list(x.shape), w, gy, s, p, [1, 1, 1], C)
            gw = ops.conv3d_weight_grad(x, list(w.shape), gy, s, p, [1, 1, 1], C)
            poison()
            gw2 = ops.conv3d_weight_grad(x, list(w.shape), gy, s, p, [1, 1, 1], C)
        assert torch.equal(gw, gw2), f"case {i}: weight-grad not bitwise repeatable"
        for what, out, r in (("forward", y, ref.detach()), ("input-grad", gx, gx_ref), ("weight-grad", gw, gw_ref)):
            assert not torch.isnan(out).any(), f"case {i} {what}: NaN (unwritten element)"
            if placement != "ncdhw" and what != "weight-grad":
                assert out.is_contiguous(memory_format=torch.channels_last_3d), f"case {i} {what}: layout"
            scale = max(1.0, float(r.abs().max()))
            torch.testing.assert_close(out.double() / scale, r / scale, rtol=tol, atol=tol,
                                       msg=lambda m: f"case {i} {what}: {m}")


# The tensor-core weight-grad of KD x 3 x 3 filters in fp16 / bf16 (tc_wgrad3d.cuh): X3D's
# k5x3x3 'same' at 56-wide rows (NCDHW 16-byte staging, 2 depth tiles, 7 row tiles), 192
# channels in chunks, k3, no padding on odd widths (NCDHW value staging), padding k - 1 (output
# wider than the input), two column tiles (width 72), odd sizes everywhere, batch 1 and 0;
# NDHWC k3, channels not a multiple of 8 (NDHWC), depth stride 2 and padding beyond k - 1 keep the
# CUDA-core kernels.
TC_WGRAD3D_CASES = [  # (N, C, size, KD, stride, padding)
    (2, 8, (16, 56, 56), 5, (1, 1, 1), (2, 1, 1)),
    (1, 192, (16, 14, 56), 5, (1, 1, 1), (2, 1, 1)),
    (2, 4, (4, 5, 24), 3, (1, 1, 1), (1, 1, 1)),
    (1, 8, (7, 6, 19), 5, (1, 1, 1), (0, 0, 0)),
    (1, 2, (3, 4, 8), 3, (1, 1, 1), (2, 2, 2)),
    (1, 8, (5, 3, 72), 5, (1, 1, 1), (4, 2, 1)),
    (3, 8, (2, 9, 7), 3, (1, 1, 1), (1, 0, 1)),
    (1, 3, (6, 7, 16), 5, (1, 1, 1), (2, 1, 1)),
    (4, 16, (17, 23, 33), 3, (1, 1, 1), (1, 1, 1)),
    (0, 8, (4, 6, 8), 5, (1, 1, 1), (2, 1, 1)),
    (2, 4, (7, 9, 10), 3, (2, 1, 1), (1, 1, 1)),
    (1, 4, (6, 8, 16), 3, (1, 1, 1), (1, 3, 1)),
]


@pytest.mark.parametrize("placement", ["ncdhw", "ncdhw_off1", "strided", "ndhwc"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_depthwise_tc_wgrad3d(dtype, placement):
    """Weight-grad of KD x 3 x 3 16-bit filters against float64 on the same rounded data, on
    poisoned memory, bitwise repeatable. `ncdhw_off1`: input and gradient one element past an
    aligned address (staged value by value); `strided`: every other element of a wider last dim
    (the op makes them dense); `ndhwc`: channels_last_3d."""
    import torch.nn.functional as F

    tol = {torch.float16: 4e-3, torch.bfloat16: 2e-2}[dtype]

    def place(t):
        if placement == "ncdhw":
            return t.to(DEV, dtype)
        if placement == "ncdhw_off1":
            flat = torch.empty(t.numel() + 1, device=DEV, dtype=dtype)[1:]
            return flat.view(t.shape).copy_(t)
        if placement == "strided":
            wide = torch.empty(*t.shape[:-1], 2 * t.shape[-1], device=DEV, dtype=dtype)[..., ::2]
            return wide.copy_(t)
        return t.to(DEV, dtype).contiguous(memory_format=torch.channels_last_3d)

    for i, (N, C, size, kd, s, p) in enumerate(TC_WGRAD3D_CASES):
        gen = torch.Generator().manual_seed(310 + i)
        x = place(torch.randn(N, C, *size, generator=gen))
        w = torch.randn(C, 1, kd, 3, 3, generator=gen).to(DEV, dtype)
        xr, wr = x.double(), w.double().requires_grad_()
        ref = F.conv3d(xr, wr, None, s, p, 1, C)
        gy = place(torch.randn(ref.shape, generator=gen))
        (gw_ref,) = torch.autograd.grad(ref, (wr,), gy.double())
        what = f"case {i} {dtype} {placement}"
        op = torch.ops.convx.conv3d_weight_grad
        poison()
        with deterministic():
            gw = op(x, list(w.shape), gy, s, p, [1, 1, 1], C)
            poison()
            gw2 = op(x, list(w.shape), gy, s, p, [1, 1, 1], C)
        scale = max(1.0, float(gw_ref.abs().max()))
        assert not torch.isnan(gw).any(), f"{what}: NaN (unwritten element)"
        torch.testing.assert_close(gw.double() / scale, gw_ref / scale, rtol=tol, atol=tol, msg=lambda m: f"{what}\n{m}")
        assert torch.equal(gw, gw2), f"{what}: not bitwise repeatable"


# The tensor-core weight-grads of 7 x 7 filters in fp16 / bf16 (tc_wgrad2d.cuh), NCHW for rows
# wider than 32 and NHWC for rows at least 14 wide, and the CUDA-core kernels around them: ConvNeXt's
# 7 x 7 'same' on 56-wide rows (NCHW 16-byte staging; NHWC 4 row tiles of 14), 96 channels in
# chunks (NHWC 3 row tiles); the rest on the CUDA-core kernels: 5 x 5, 3 x 3, 7 x 7 with padding 6
# on 19-wide rows and 4 channels, batch 0, stride 2, padding beyond K - 1.
# (On the H100 in session 11 these cases also ran with every 3 x 3 / 5 x 5 / 7 x 7 shape routed to
# the tensor-core kernels: wg2d_call2_test.log.)
TC_WGRAD2D_CASES = [  # (N, C, size, K, stride, padding)
    (2, 8, (56, 56), 7, 1, (3, 3)),
    (1, 96, (40, 56), 7, 1, (3, 3)),
    (2, 16, (28, 28), 5, 1, (2, 2)),
    (2, 8, (56, 56), 3, 1, (1, 1)),
    (1, 4, (13, 12), 3, 1, (1, 1)),
    (1, 4, (9, 70), 3, 1, (0, 0)),
    (1, 4, (11, 19), 7, 1, (6, 6)),
    (1, 4, (5, 21), 5, 1, (0, 4)),
    (3, 4, (7, 7), 3, 1, (1, 1)),
    (2, 4, (65, 33), 5, 1, (2, 2)),
    (0, 8, (8, 8), 3, 1, (1, 1)),
    (2, 4, (9, 16), 3, 2, (1, 1)),
    (1, 4, (9, 16), 3, 1, (3, 1)),
]


@pytest.mark.parametrize("placement", ["nchw", "nchw_off1", "strided", "nhwc"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_depthwise_tc_wgrad2d(dtype, placement):
    """Weight-grad of K x K 16-bit filters against float64 on the same rounded data, on poisoned
    memory, bitwise repeatable. `nchw_off1`: input and gradient one element past an aligned
    address (staged value by value); `strided`: every other element of a wider last dim (the op
    makes them dense); `nhwc`: channels_last (the channels-last kernels)."""
    import torch.nn.functional as F

    tol = {torch.float16: 4e-3, torch.bfloat16: 2e-2}[dtype]

    def place(t):
        if placement == "nchw":
            return t.to(DEV, dtype)
        if placement == "nchw_off1":
            flat = torch.empty(t.numel() + 1, device=DEV, dtype=dtype)[1:]
            return flat.view(t.shape).copy_(t)
        if placement == "strided":
            wide = torch.empty(*t.shape[:-1], 2 * t.shape[-1], device=DEV, dtype=dtype)[..., ::2]
            return wide.copy_(t)
        return t.to(DEV, dtype).contiguous(memory_format=torch.channels_last)

    for i, (N, C, size, k, s, p) in enumerate(TC_WGRAD2D_CASES):
        gen = torch.Generator().manual_seed(410 + i)
        x = place(torch.randn(N, C, *size, generator=gen))
        w = torch.randn(C, 1, k, k, generator=gen).to(DEV, dtype)
        xr, wr = x.double(), w.double().requires_grad_()
        ref = F.conv2d(xr, wr, None, s, p, 1, C)
        gy = place(torch.randn(ref.shape, generator=gen))
        (gw_ref,) = torch.autograd.grad(ref, (wr,), gy.double())
        what = f"case {i} k{k} {dtype} {placement}"
        op = torch.ops.convx.conv2d_weight_grad
        poison()
        with deterministic():
            gw = op(x, list(w.shape), gy, [s, s], list(p), [1, 1], C)
            poison()
            gw2 = op(x, list(w.shape), gy, [s, s], list(p), [1, 1], C)
        scale = max(1.0, float(gw_ref.abs().max()))
        assert not torch.isnan(gw).any(), f"{what}: NaN (unwritten element)"
        torch.testing.assert_close(gw.double() / scale, gw_ref / scale, rtol=tol, atol=tol, msg=lambda m: f"{what}\n{m}")
        assert torch.equal(gw, gw2), f"{what}: not bitwise repeatable"


WALK_WGRAD2D_CASES = [  # (N, C, size, padding): 7 x 7 at stride 1
    (2, 96, (56, 56), (3, 3)),
    (3, 40, (14, 14), (3, 3)),
    (2, 40, (17, 22), (3, 3)),
    (1, 3, (12, 10), (0, 0)),
    (1, 2, (9, 11), (6, 6)),
    (2, 2, (8, 13), (1, 5)),
    (1, 2, (3, 4), (3, 3)),
    (0, 8, (8, 8), (3, 3)),
]
# 5 x 5 (EfficientNet's 28 x 28 'same' plane; the same kinds of edge cases, paddings 0 to 4)
WALK5_CASES = [
    (2, 40, (28, 28), (2, 2)),
    (3, 40, (14, 14), (2, 2)),
    (2, 40, (17, 22), (2, 2)),
    (1, 3, (12, 10), (0, 0)),
    (1, 2, (9, 11), (4, 4)),
    (2, 2, (8, 13), (1, 3)),
    (1, 2, (3, 4), (2, 2)),
    (0, 8, (8, 8), (2, 2)),
]
WALK_CASES = {7: WALK_WGRAD2D_CASES, 5: WALK5_CASES}


def _check_wgrad(cases, k, dtype, placement, seed):
    """conv2d_weight_grad of k x k filters at stride 1 on `cases` against float64 on the same
    rounded data, on poisoned memory, bitwise repeatable."""
    import torch.nn.functional as F

    tol = {torch.float32: 1e-5, torch.float16: 4e-3, torch.bfloat16: 2e-2}[dtype]

    def place(t):
        if placement == "nchw":
            return t.to(DEV, dtype)
        if placement == "nchw_off1":
            flat = torch.empty(t.numel() + 1, device=DEV, dtype=dtype)[1:]
            return flat.view(t.shape).copy_(t)
        if placement == "strided":
            wide = torch.empty(*t.shape[:-1], 2 * t.shape[-1], device=DEV, dtype=dtype)[..., ::2]
            return wide.copy_(t)
        if placement == "nhwc_off1":  # channels-last one element past a 16-byte boundary
            flat = torch.empty(t.numel() + 1, device=DEV, dtype=dtype)[1:]
            return flat.view(t.shape[0], *t.shape[2:], t.shape[1]).permute(0, 3, 1, 2).copy_(t)
        return t.to(DEV, dtype).contiguous(memory_format=torch.channels_last)

    for i, (N, C, size, p) in enumerate(cases):
        gen = torch.Generator().manual_seed(seed + i)
        x = place(torch.randn(N, C, *size, generator=gen))
        w = torch.randn(C, 1, k, k, generator=gen).to(DEV, dtype)
        xr, wr = x.double(), w.double().requires_grad_()
        ref = F.conv2d(xr, wr, None, 1, p, 1, C)
        gy = place(torch.randn(ref.shape, generator=gen))
        (gw_ref,) = torch.autograd.grad(ref, (wr,), gy.double())
        what = f"case {i} k{k} {dtype} {placement}"
        op = torch.ops.convx.conv2d_weight_grad
        poison()
        with deterministic():
            gw = op(x, list(w.shape), gy, [1, 1], list(p), [1, 1], C)
            poison()
            gw2 = op(x, list(w.shape), gy, [1, 1], list(p), [1, 1], C)
        scale = max(1.0, float(gw_ref.abs().max()))
        assert not torch.isnan(gw).any(), f"{what}: NaN (unwritten element)"
        torch.testing.assert_close(gw.double() / scale, gw_ref / scale, rtol=tol, atol=tol, msg=lambda m: f"{what}\n{m}")
        assert torch.equal(gw, gw2), f"{what}: not bitwise repeatable"


@pytest.mark.parametrize("placement", ["nchw", "nchw_off1", "strided", "nhwc"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("k", [7, 5], ids=["k7", "k5"])
def test_depthwise_walk_wgrad2d(dtype, placement, k):
    """Weight-grad of 7 x 7 and 5 x 5 filters at stride 1 (walk2d.cuh where routed) against float64 on
    the same rounded data, on poisoned memory, bitwise repeatable; odd sizes, padding 0 to 6,
    a plane smaller than the filter, batch 0, a partial 32-channel group (NHWC)."""
    _check_wgrad(WALK_CASES[k], k, dtype, placement, 530)


# w7 (session 13): cl_band_wgrad2d (NHWC: channels a multiple of 32 bytes, 16-byte aligned
# tensors; the other cases exercise its declines)
CL_BAND_WGRAD2D_CASES = [  # (N, C, size, padding): 7 x 7 at stride 1
    (4, 96, (56, 56), (3, 3)),  # ConvNeXt-56: bands of 8 rows, several chunks per channel group
    (5, 64, (14, 14), (3, 3)),  # one band of the whole plane
    (2, 32, (17, 22), (3, 3)),  # bands cut by the plane's end; 16-bit: two 16-channel groups
    (1, 16, (20, 15), (6, 6)),  # padding 6: rows / columns of zeros at both ends
    (2, 16, (30, 18), (0, 1)),  # output smaller than the input
    (2, 40, (17, 22), (3, 3)),  # 16-bit: 40 channels, declined
    (1, 2, (9, 11), (6, 6)),  # declined
    (0, 8, (8, 8), (3, 3)),
]


@pytest.mark.parametrize("placement", ["nhwc", "nhwc_off1"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"])
def test_depthwise_cl_band_wgrad2d(dtype, placement):
    """Channels-last weight-grad of 7 x 7 filters at stride 1 from staged bands (cl_band_wgrad2d.cuh
    where routed): float64 references, poisoned memory, bitwise repeatable; odd sizes, padding 0 to
    6, misaligned and channel counts it declines, batch 0."""
    _check_wgrad(CL_BAND_WGRAD2D_CASES, 7, dtype, placement, 730)


@pytest.mark.parametrize("placement", ["nchw", "nchw_off1", "strided", "nhwc"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("k", [7, 5], ids=["k7", "k5"])
def test_depthwise_walk_conv2d(dtype, placement, k):
    """Forward (with bias) and input-grad of 7 x 7 and 5 x 5 filters at stride 1 (walk2d.cuh's walk_conv2d
    where routed) against float64 on the same rounded data, on poisoned memory; the cases of
    WALK_CASES (odd sizes, padding 0 to 6, batch 0, a partial 32-channel group)."""
    import torch.nn.functional as F

    tol = {torch.float32: 1e-5, torch.float16: 4e-3, torch.bfloat16: 2e-2}[dtype]

    def place(t):
        if placement == "nchw":
            return t.to(DEV, dtype)
        if placement == "nchw_off1":
            flat = torch.empty(t.numel() + 1, device=DEV, dtype=dtype)[1:]
            return flat.view(t.shape).copy_(t)
        if placement == "strided":
            wide = torch.empty(*t.shape[:-1], 2 * t.shape[-1], device=DEV, dtype=dtype)[..., ::2]
            return wide.copy_(t)
        return t.to(DEV, dtype).contiguous(memory_format=torch.channels_last)

    ops = torch.ops.convx
    for i, (N, C, size, p) in enumerate(WALK_CASES[k]):
        gen = torch.Generator().manual_seed(560 + i)
        x = place(torch.randn(N, C, *size, generator=gen))
        w = torch.randn(C, 1, k, k, generator=gen).to(DEV, dtype)
        b = torch.randn(C, generator=gen).to(DEV, dtype)
        ref = F.conv2d(x.double(), w.double(), b.double(), 1, p, 1, C)
        gy = place(torch.randn(ref.shape, generator=gen))
        gx_ref = torch.nn.grad.conv2d_input(x.shape, w.double(), gy.double(), 1, p, 1, C)
        what = f"case {i} k{k} {dtype} {placement}"
        poison()
        # fp32 exact: allow_tf32 off (ConvNeXt's 56 x 56 would take tc7_nc's TF32: test_cuda_tc7.py)
        with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
            y = ops.depthwise_conv2d(x, w, b, [1, 1], list(p), [1, 1])
            poison()
            gx = ops.conv2d_input_grad(list(x.shape), w, gy, [1, 1], list(p), [1, 1], C)
        for name, out, r in (("forward", y, ref), ("input-grad", gx, gx_ref)):
            scale = max(1.0, float(r.abs().max())) if r.numel() else 1.0
            assert not torch.isnan(out).any(), f"{what} {name}: NaN (unwritten element)"
            torch.testing.assert_close(out.double() / scale, r / scale, rtol=tol, atol=tol,
                                       msg=lambda m: f"{what} {name}\n{m}")


# eff5 (session 13): NCHW 5 x 5 at stride 1 with padding 2 -- forward and input-grad on
# nc_plane_cp (fp32 and 16-bit, 8-byte copies, outputs up to 28 wide; else nc_plane), the fp32
# weight-grad on nc_wgrad_cp (rows of whole vectors at least 28 wide; else walk_wgrad2d from 14):
# (N, C, size). EfficientNet's 28 x 28 plane (partial last group and unit), an odd height on
# 24-wide rows, 20-wide rows (16-bit outputs end mid-strip: staged), 56 x 56 (forward: nc_plane;
# weight-grad: one plane per group), 22-wide rows (16-bit: 44-byte rows go to nc_plane), batch 0.
NC_CP5 = [(11, 24, (28, 28)), (3, 5, (17, 24)), (2, 3, (30, 20)), (1, 2, (56, 56)), (2, 3, (16, 22)), (0, 4, (28, 28))]


@pytest.mark.parametrize("offset", [0, 1], ids=["aligned", "off1"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("cfg", NC_CP5, ids=[f"n{c[0]}_c{c[1]}_{c[2][0]}x{c[2][1]}" for c in NC_CP5])
def test_depthwise_nc_plane_cp_k5(cfg, dtype, offset):
    """Forward (bias), input-grad and weight-grad of NCHW 5 x 5 'same' depthwise against float64
    on the same rounded data, on poisoned memory; the weight-grad bitwise repeatable; `offset`
    starts input and gradient one element past the allocation."""
    import torch.nn.functional as F

    N, C, size = cfg
    gen = torch.Generator().manual_seed(NC_CP5.index(cfg))

    def held(t):  # t on the device, `offset` elements into its storage, contiguous
        buf = torch.empty(t.numel() + offset, device=DEV, dtype=dtype)
        out = buf[offset:].view(t.shape)
        out.copy_(t)
        return out

    x = held(torch.randn(N, C, *size, generator=gen))
    w = torch.randn(C, 1, 5, 5, generator=gen).to(DEV, dtype)
    b = torch.randn(C, generator=gen).to(DEV, dtype)
    xr, wr = x.double().requires_grad_(), w.double().requires_grad_()
    ref = F.conv2d(xr, wr, b.double(), 1, 2, 1, C)
    gy = held(torch.randn(ref.shape, generator=gen))
    gx_ref, gw_ref = torch.autograd.grad(ref, (xr, wr), gy.double()) if N else (xr * 0, wr * 0)
    tol = LOW[dtype] if dtype != torch.float32 else 1e-5
    ops = torch.ops.convx

    def close(out, want, what):
        want = want.detach()
        scale = max(1.0, float(want.abs().max())) if want.numel() else 1.0
        assert not torch.isnan(out).any(), f"{cfg} {what}: NaN (unwritten element)"
        torch.testing.assert_close(out.double() / scale, want / scale, rtol=tol, atol=tol,
                                   msg=lambda msg: f"{cfg} {what}\n{msg}")

    poison()
    with deterministic():
        y = ops.depthwise_conv2d(x, w, b, [1, 1], [2, 2], [1, 1])
    close(y, ref, "forward")
    poison()
    with deterministic():
        gx = ops.conv2d_input_grad(list(x.shape), w, gy, [1, 1], [2, 2], [1, 1], C)
    close(gx, gx_ref, "input-grad")
    poison()
    with deterministic():
        gw = ops.conv2d_weight_grad(x, list(w.shape), gy, [1, 1], [2, 2], [1, 1], C)
        poison()
        gw2 = ops.conv2d_weight_grad(x, list(w.shape), gy, [1, 1], [2, 2], [1, 1], C)
    close(gw, gw_ref, "weight-grad")
    assert torch.equal(gw, gw2), f"{cfg}: weight-grad not bitwise repeatable"
# Session 13 (tc7c): channels-last 7 x 7, fp16 / bf16, on tensor cores (tc_cl2d.cuh, outputs at least
# 14 wide): (N, C, (H, W), (padH, padW), KW). ConvNeXt's 56 x 56 and 14 x 14 (7 and 2 warps), two
# column chunks (75 wide), heights not a multiple of 16, padding beyond the filter's reach; declined
# to the other kernels: 3 x 3 outputs (9 x 9 unpadded), 7 x 5, a channel count not a multiple of 8;
# batch 0.
TC_CL2D_CASES = [
    (2, 96, (56, 56), (3, 3), 7),
    (3, 384, (14, 14), (3, 3), 7),
    (1, 24, (21, 75), (3, 3), 7),
    (2, 16, (9, 9), (0, 0), 7),
    (2, 8, (5, 16), (5, 4), 7),
    (1, 32, (17, 20), (3, 2), 5),
    (1, 12, (20, 30), (3, 3), 7),
    (0, 16, (14, 14), (3, 3), 7),
]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_depthwise_tc_cl2d(dtype):
    """Forward (with bias) and input-grad of channels-last 7 x KW filters at stride 1 (tc_cl2d.cuh
    where routed) against float64 on the same rounded data, on poisoned memory (TC_CL2D_CASES)."""
    import torch.nn.functional as F

    tol = {torch.float16: 4e-3, torch.bfloat16: 2e-2}[dtype]
    ops = torch.ops.convx
    for i, (N, C, size, p, kw) in enumerate(TC_CL2D_CASES):
        gen = torch.Generator().manual_seed(1300 + i)
        x = torch.randn(N, C, *size, generator=gen).to(DEV, dtype).contiguous(memory_format=torch.channels_last)
        w = torch.randn(C, 1, 7, kw, generator=gen).to(DEV, dtype)
        b = torch.randn(C, generator=gen).to(DEV, dtype)
        ref = F.conv2d(x.double(), w.double(), b.double(), 1, p, 1, C)
        gy = torch.randn(ref.shape, generator=gen).to(DEV, dtype).contiguous(memory_format=torch.channels_last)
        gx_ref = torch.nn.grad.conv2d_input(x.shape, w.double(), gy.double(), 1, p, 1, C)
        what = f"case {i} {dtype}"
        poison()
        y = ops.depthwise_conv2d(x, w, b, [1, 1], list(p), [1, 1])
        poison()
        gx = ops.conv2d_input_grad(list(x.shape), w, gy, [1, 1], list(p), [1, 1], C)
        for name, out, r in (("forward", y, ref), ("input-grad", gx, gx_ref)):
            if N > 0:
                assert out.stride(1) == 1, f"{what} {name}: not channels-last"
            scale = max(1.0, float(r.abs().max())) if r.numel() else 1.0
            assert not torch.isnan(out).any(), f"{what} {name}: NaN (unwritten element)"
            torch.testing.assert_close(out.double() / scale, r / scale, rtol=tol, atol=tol,
                                       msg=lambda m: f"{what} {name}\n{m}")


def test_depthwise_tc_wgrad2d_beyond_2_pow_31_elements():
    """The tensor-core 2-D weight-grad on NCHW tensors of more than 2^31 elements (64-bit plane
    offsets): the first and last channels' weight-grads against aten in float32."""
    if torch.cuda.mem_get_info()[0] < 20e9:
        pytest.skip("needs >= 20 GB of free GPU memory")
    x = torch.empty(2, 1100, 1000, 1000, device=DEV, dtype=torch.bfloat16).uniform_(-1, 1)
    gy = torch.empty_like(x).uniform_(-1, 1)
    assert x.numel() > 2**31
    gw = torch.ops.convx.conv2d_weight_grad(x, [1100, 1, 7, 7], gy, [1, 1], [3, 3], [1, 1], 1100)
    for c in (0, 1099):
        ref = torch.nn.grad.conv2d_weight(x[:, c : c + 1].float(), (1, 1, 7, 7), gy[:, c : c + 1].float(), 1, 3)
        scale = float(ref.abs().max())
        torch.testing.assert_close(gw[c : c + 1].float() / scale, ref / scale, rtol=2e-2, atol=2e-2)
    del x, gy


def test_depthwise_tc_wgrad3d_beyond_2_pow_31_elements():
    """The tensor-core 3-D weight-grad on NCDHW tensors of more than 2^31 elements (64-bit channel
    offsets): the first and last channels' weight-grads against aten in float32."""
    if torch.cuda.mem_get_info()[0] < 20e9:
        pytest.skip("needs >= 20 GB of free GPU memory")
    x = torch.empty(1, 1100, 16, 256, 480, device=DEV, dtype=torch.bfloat16).uniform_(-1, 1)
    gy = torch.empty_like(x).uniform_(-1, 1)
    assert x.numel() > 2**31
    gw = torch.ops.convx.conv3d_weight_grad(x, [1100, 1, 5, 3, 3], gy, [1, 1, 1], [2, 1, 1], [1, 1, 1], 1100)
    for c in (0, 1099):
        ref = torch.nn.grad.conv3d_weight(x[:, c : c + 1].float(), (1, 1, 5, 3, 3), gy[:, c : c + 1].float(), 1, (2, 1, 1))
        scale = float(ref.abs().max())
        torch.testing.assert_close(gw[c : c + 1].float() / scale, ref / scale, rtol=2e-2, atol=2e-2)
    del x, gy


def test_depthwise_depth3d_channels_last_beyond_2_pow_31_elements():
    """The channels-last depth-streaming forward (cl_depth3d.cuh) on an NDHWC tensor of more than
    2^31 elements (64-bit offsets): the first and last two output depth planes against aten."""
    import torch.nn.functional as F

    if torch.cuda.mem_get_info()[0] < 20e9:
        pytest.skip("needs >= 20 GB of free GPU memory")
    x = torch.empty(1, 2100, 1024, 128, 8, device=DEV, dtype=torch.float16).permute(0, 4, 1, 2, 3)
    x.uniform_(-1, 1)
    w = torch.randn(8, 1, 3, 3, 3, device=DEV, dtype=torch.float16)
    y = torch.ops.convx.depthwise_conv3d(x, w, None, [1, 1, 1], [1, 1, 1], [1, 1, 1])
    assert y.numel() > 2**31 and y.is_contiguous(memory_format=torch.channels_last_3d)
    tail = F.conv3d(F.pad(x[:, :, -3:].float(), (1, 1, 1, 1, 0, 1)), w.float(), groups=8)
    torch.testing.assert_close(y[:, :, -2:].float(), tail, rtol=2e-3, atol=2e-3)
    head = F.conv3d(F.pad(x[:, :, :3].float(), (1, 1, 1, 1, 1, 0)), w.float(), groups=8)
    torch.testing.assert_close(y[:, :, :2].float(), head, rtol=2e-3, atol=2e-3)
    del x, y


def test_depthwise_depth3d_beyond_2_pow_31_elements():
    """The depth-streaming forward on an NCDHW tensor of more than 2^31 elements (64-bit plane
    offsets): the first and last two output depth planes against aten in float32."""
    import torch.nn.functional as F

    if torch.cuda.mem_get_info()[0] < 20e9:
        pytest.skip("needs >= 20 GB of free GPU memory")
    x = torch.empty(1, 1, 2100, 1024, 1000, device=DEV, dtype=torch.float16)
    x.uniform_(-1, 1)
    w = torch.randn(1, 1, 3, 3, 3, device=DEV, dtype=torch.float16)
    y = torch.ops.convx.depthwise_conv3d(x, w, None, [1, 1, 1], [1, 1, 1], [1, 1, 1])
    assert y.numel() > 2**31
    tail = F.conv3d(F.pad(x[:, :, -3:].float(), (1, 1, 1, 1, 0, 1)), w.float())
    torch.testing.assert_close(y[:, :, -2:].float(), tail, rtol=2e-3, atol=2e-3)
    head = F.conv3d(F.pad(x[:, :, :3].float(), (1, 1, 1, 1, 1, 0)), w.float())
    torch.testing.assert_close(y[:, :, :2].float(), head, rtol=2e-3, atol=2e-3)
    del x, y
