"""The dense CUDA path (cuDNN, the stride == kernel GEMM, the im2col fallback) against aten.

Skipped without a GPU. Which path served a call is read from the CUDA kernels the profiler
saw: the im2col fallback launches convx's ``im2col_kernel`` / ``col2im_kernel``, cuDNN and
cuBLAS never do. ``CONVX_CUDA_DENSE`` (read on every call) forces a path: ``cudnn``,
``patch_gemm`` or ``im2col``.
"""

import contextlib
import os
import threading

import pytest
import torch

if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import helpers  # noqa: E402
from helpers import abs_bound, cases  # noqa: E402
from test_cuda import DEV, LOW, check_low, graph_replay_vs_eager, on, poison, run_poisoned  # noqa: E402

DENSE = ("conv", "conv_transpose", "conv_input_grad", "conv_weight_grad")
DENSE_OPS = [(f, r) for r in helpers.RANKS for f in DENSE]
IM2COL_KERNELS = ("im2col_kernel", "col2im_kernel")


def ids(ops):
    return [helpers.op_name(f, r) for f, r in ops]


@contextlib.contextmanager
def env_var(name, value):
    """Sets (or, with None, removes) one environment variable for the block; convx reads its
    path knobs on every call."""
    prev = os.environ.get(name)
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
    try:
        yield
    finally:
        if prev is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = prev


def dense_path(value):
    return env_var("CONVX_CUDA_DENSE", value)


def kernels_of(fn):
    """(result, names of the CUDA kernels fn launched)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        out = fn()
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return out, names


def used_im2col(names):
    return any(k in n for n in names for k in IM2COL_KERNELS)


def dense_cases(family, rank, count, *labels, **kw):
    """Random cases whose weight is not depthwise-shaped (those route to the depthwise kernels)."""
    out = []
    gen = helpers.generator(family, rank, *labels)
    while len(out) < count:
        c = helpers.random_case(family, rank, gen, **kw)
        w = c.tensors.get("weight")
        wdim1 = w.shape[1] if w is not None else c.sizes[1]
        if wdim1 != 1:
            out.append(c)
    return out


@pytest.mark.parametrize("path", ["default", "cudnn", "im2col"])
@pytest.mark.parametrize("family,rank", DENSE_OPS, ids=ids(DENSE_OPS))
def test_float64_matches_aten(family, rank, path):
    with dense_path(None if path == "default" else path):
        for case in dense_cases(family, rank, 16, "dense64"):
            c = on(case)
            out = run_poisoned(c)
            with torch.no_grad():
                ref = c.run_ref()
            assert out.shape == ref.shape, case
            torch.testing.assert_close(out, ref, rtol=1e-9, atol=1e-9, msg=lambda m: f"{case}\n{m}")


@pytest.mark.parametrize("dtype", list(LOW), ids=lambda d: str(d)[6:])
@pytest.mark.parametrize("family,rank", DENSE_OPS, ids=ids(DENSE_OPS))
def test_low_precision_vs_float64(family, rank, dtype):
    # float32 at full precision: TF32 (PyTorch's default for cuDNN) is checked separately.
    with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        for case in dense_cases(family, rank, 8, "denselow", str(dtype)):
            check_low(case, dtype)


@pytest.mark.parametrize("family,rank", [(f, 2) for f in DENSE], ids=ids([(f, 2) for f in DENSE]))
def test_tf32_flag(family, rank):
    """With TF32 allowed, float32 stays within TF32's rounding (10-bit mantissa)."""
    for case in dense_cases(family, rank, 4, "tf32"):
        rounded = case.with_tensors(case.map_tensors(lambda t: t.float().double()))
        with torch.backends.cudnn.flags(enabled=True, allow_tf32=True):
            out = run_poisoned(on(case, dtype=torch.float32))
        with torch.no_grad():
            ref, bound = rounded.run_ref(), abs_bound(rounded)
        assert bool(((out.double().cpu() - ref).abs() <= 2e-3 * bound + 1e-6).all()), case


@pytest.mark.parametrize("family,rank", DENSE_OPS, ids=ids(DENSE_OPS))
def test_cudnn_serves_the_call_and_im2col_on_request(family, rank):
    """Big enough to need real columns (kernel 3): cuDNN never launches im2col/col2im;
    CONVX_CUDA_DENSE=im2col and torch.backends.cudnn.enabled=False do, with the same result."""
    gen = torch.Generator().manual_seed(5)
    sp = {1: [40], 2: [12, 11], 3: [6, 7, 5]}[rank]
    k = [3] * rank
    x = torch.randn([2, 6] + sp, generator=gen, dtype=torch.float64).to(DEV)
    w = torch.randn([8, 3] + k, generator=gen, dtype=torch.float64).to(DEV)  # groups 2
    b = torch.randn(8, generator=gen, dtype=torch.float64).to(DEV)
    ops, s, p, d = torch.ops.convx, [2] * rank, [1] * rank, [1] * rank
    y_ref = helpers.CONV_F[rank](x, w, b, s, p, d, 2)
    gy = torch.randn(y_ref.shape, generator=gen, dtype=torch.float64).to(DEV)
    call = {
        "conv": lambda: getattr(ops, f"conv{rank}d")(x, w, b, s, p, d, 2),
        "conv_transpose": lambda: getattr(ops, f"conv_transpose{rank}d")(gy, w, b[:6], s, p, [1] * rank, 2, d),
        "conv_input_grad": lambda: getattr(ops, f"conv{rank}d_input_grad")(list(x.shape), w, gy, s, p, d, 2),
        "conv_weight_grad": lambda: getattr(ops, f"conv{rank}d_weight_grad")(x, list(w.shape), gy, s, p, d, 2),
    }[family]
    out, names = kernels_of(call)
    assert names and not used_im2col(names), names
    with dense_path("im2col"):
        out2, names2 = kernels_of(call)
    assert used_im2col(names2), names2
    torch.testing.assert_close(out, out2, rtol=1e-9, atol=1e-9)
    with torch.backends.cudnn.flags(enabled=False):  # cuDNN turned off: as aten, do not use it
        out3, names3 = kernels_of(call)
    assert used_im2col(names3), names3
    torch.testing.assert_close(out, out3, rtol=1e-9, atol=1e-9)


def test_fallback_when_cudnn_has_no_plan():
    """conv_transpose with output_padding >= stride (allowed when dilation > stride) describes
    a backward-data whose forward output size disagrees with the given one: cuDNN refuses it,
    convx falls back to im2col and still matches aten."""
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(2, 4, 9, 8, generator=gen, dtype=torch.float64).to(DEV)
    w = torch.randn(4, 3, 3, 3, generator=gen, dtype=torch.float64).to(DEV)
    args = ([1, 1], [1, 1], [2, 2], 1, [3, 3])  # stride 1, padding 1, output_padding 2, dilation 3
    out, names = kernels_of(lambda: torch.ops.convx.conv_transpose2d(x, w, None, *args))
    ref = torch.nn.functional.conv_transpose2d(x, w, None, *args)
    torch.testing.assert_close(out, ref, rtol=1e-9, atol=1e-9)
    assert used_im2col(names), names


@pytest.mark.parametrize("bias_mode", ["auto", "fused", "separate"])
@pytest.mark.parametrize("family", ["conv", "conv_transpose"])
def test_bias_fused_or_separate(family, bias_mode):
    """CONVX_CUDNN_BIAS: the bias fused into the cuDNN graph, added after it, or chosen by the
    measured rule (auto): all right, in both layouts and the low-precision types; a bad value
    is a clear error."""
    with env_var("CONVX_CUDNN_BIAS", bias_mode), torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        for case in dense_cases(family, 2, 4, "bias", bias=True):
            for dtype in (torch.float32, torch.float16):
                check_low(case, dtype)
    x = torch.randn(1, 2, 5, 5, device=DEV)
    w = torch.randn(3, 2, 3, 3, device=DEV)
    with env_var("CONVX_CUDNN_BIAS", "sometimes"), pytest.raises(RuntimeError, match="CONVX_CUDNN_BIAS must be"):
        torch.ops.convx.conv2d(x, w, torch.randn(3, device=DEV), [1, 1], [0, 0], [1, 1], 1)


def stride_equals_kernel_cases(family, rank, gen):
    """Cases of `family` whose stride equals the kernel (the patch GEMM's, and some it declines:
    two groups): both layouts and strided views (every other element of the last dim: no unit
    stride for cuBLAS), bias or not, odd sizes, unbatched, batch 1 and 3, trailing fine pixels
    beyond c * k that the forward skips, and wide cases (16 / 24 channels, fine rows of 8k
    values) that take the gather's and scatter's 16-byte vector paths (NC*: the packed stores
    for k = 2 and 4)."""
    out = []
    for k, groups, layout, bias, batch, extra, wide in [
            (2, 1, "contiguous", True, 3, 0, False), (2, 1, "channels_last", True, 2, 0, False),
            (3, 1, "channels_last", False, 1, 1, False), (2, 2, "contiguous", True, 2, 0, False),
            (2, 1, "contiguous", False, None, 1, False), (4, 1, "channels_last", True, 2, 0, False),
            (2, 1, "strided", True, 2, 0, False), (2, 1, "channels_last", True, 3, 1, False),
            (2, 1, "channels_last", True, 2, 0, True), (2, 1, "contiguous", True, 2, 0, True),
            (3, 1, "contiguous", False, 1, 1, True), (4, 1, "contiguous", True, 2, 0, True)]:
        coarse = {1: [13], 2: [5, 7], 3: [3, 4, 5]}[rank]
        if wide:
            coarse = coarse[:-1] + [8]
        lead = [] if batch is None else [batch]
        fine = [c * k + extra for c in coarse]
        ci, co = (16, 24) if wide else (6, 10)
        common = ([k] * rank, [0] * rank, [1] * rank, groups)
        w = torch.randn([co, ci // groups] + [k] * rank, generator=gen, dtype=torch.float64)
        b = torch.randn(co, generator=gen, dtype=torch.float64) if bias else None
        x = helpers.make_tensor(lead + [ci] + fine, layout, gen, channel_dim=len(lead))
        dy = helpers.make_tensor(lead + [co] + coarse, layout, gen, channel_dim=len(lead))
        if family == "conv":
            out.append(helpers.Case("conv", rank, {"input": x, "weight": w, "bias": b}, *common))
        elif family == "conv_transpose":  # weight [C_in, C_out / groups, k...]: 10 -> 6 * groups
            wt = torch.randn([co, ci // groups] + [k] * rank, generator=gen, dtype=torch.float64)
            bt = torch.randn(ci, generator=gen, dtype=torch.float64) if bias else None
            out.append(helpers.Case("conv_transpose", rank, {"input": dy, "weight": wt, "bias": bt},
                                    *common, [0] * rank))
        elif family == "conv_input_grad":
            out.append(helpers.Case("conv_input_grad", rank, {"weight": w, "grad_output": dy}, *common,
                                    sizes=list(x.shape)))
        else:
            out.append(helpers.Case("conv_weight_grad", rank, {"input": x, "grad_output": dy}, *common,
                                    sizes=list(w.shape)))
    return out


# The paths by CONVX_CUDA_DENSE (None: the default choice).
PATCH_PATHS = {"default": None, "cudnn": "cudnn", "patch_gemm": "patch_gemm"}


@pytest.mark.parametrize("path", list(PATCH_PATHS))
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=lambda d: str(d)[6:])
@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("family", DENSE)
def test_stride_equals_kernel(family, rank, dtype, path):
    """Stride == kernel, by the patch GEMM (half types, and float32 with TF32 allowed: by default
    for the data-grad and for NC* forwards and weight-grads, on request for all three directions
    in every layout) and by cuDNN (forced), on poisoned outputs against float64, outside
    deterministic mode (which would send every call to cuDNN). float32 runs with TF32 allowed
    (the GEMM's case; TF32 keeps fp16's 10-bit mantissa, so fp16's tolerance) and without it
    (cuDNN, float32's tolerance)."""
    gen = torch.Generator().manual_seed(rank)
    for tf32 in ([True, False] if dtype == torch.float32 else [False]):
        with dense_path(PATCH_PATHS[path]), \
                torch.backends.cudnn.flags(enabled=True, deterministic=False, allow_tf32=tf32):
            for case in stride_equals_kernel_cases(family, rank, gen):
                check_low(case, dtype, tol=LOW[torch.float16] if tf32 else None, deterministic_mode=False)


def test_patch_gemm_steps_aside_in_deterministic_mode():
    """Under torch.use_deterministic_algorithms the patch GEMM steps aside (cuBLAS is
    deterministic only under a fixed workspace configuration), even when forced: no gather or
    scatter kernel runs, and cuDNN's result is right."""
    x = torch.randn(2, 16, 16, 12, device=DEV, dtype=torch.float16)
    w = torch.randn(24, 16, 2, 2, device=DEV, dtype=torch.float16)
    ops, st, pd, dl = torch.ops.convx, [2, 2], [0, 0], [1, 1]
    y = torch.nn.functional.conv2d(x.double(), w.double(), stride=2)
    yt = torch.nn.functional.conv_transpose2d(y, w.double(), stride=2)
    prev = torch.are_deterministic_algorithms_enabled()
    try:
        torch.use_deterministic_algorithms(True)
        with dense_path("patch_gemm"):
            out, names = kernels_of(lambda: ops.conv2d(x, w, None, st, pd, dl, 1))
            out_t, names_t = kernels_of(lambda: ops.conv_transpose2d(y.half(), w, None, st, pd, [0, 0], 1, dl))
    finally:
        torch.use_deterministic_algorithms(prev)
    own = [n for n in names + names_t if "convx" in n and ("gather_" in n or "scatter_" in n)]
    assert not own, own
    torch.testing.assert_close(out.double(), y, rtol=0, atol=1e-2 * float(y.abs().max()))
    torch.testing.assert_close(out_t.double(), yt, rtol=0, atol=1e-2 * float(yt.abs().max()))


@pytest.mark.parametrize("k", [2, 4])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_patch_gemm_default_by_layout(layout, k):
    """Which path the forward and weight-grad take by default: the patch GEMM on NC* fine tensors
    (convx's gather_nc runs) and on channels-last ones with windows of 16 taps or more (gather_cl),
    cuDNN on channels-last k2 s2 (no gather), where cuDNN's implicit-GEMM kernels measured faster;
    forced (CONVX_CUDA_DENSE=patch_gemm) channels-last gathers. The results agree."""
    mf = torch.channels_last if layout == "channels_last" else torch.contiguous_format
    x = torch.randn(2, 16, 32, 8, device=DEV, dtype=torch.float16).to(memory_format=mf)
    w = torch.randn(24, 16, k, k, device=DEV, dtype=torch.float16)
    gy = torch.randn(2, 24, 32 // k, 8 // k, device=DEV, dtype=torch.float16).to(memory_format=mf)
    ops, st, pd, dl = torch.ops.convx, [k, k], [0, 0], [1, 1]
    calls = (lambda: ops.conv2d(x, w, None, st, pd, dl, 1),
             lambda: ops.conv2d_weight_grad(x, list(w.shape), gy, st, pd, dl, 1))
    with torch.backends.cudnn.flags(enabled=True, deterministic=False):
        for call in calls:
            out, names = kernels_of(call)
            with dense_path("patch_gemm"):
                out_p, names_p = kernels_of(call)
            with dense_path("cudnn"):
                out_c, names_c = kernels_of(call)
            gathered = [n for n in names if "gather_" in n]
            assert not [n for n in names_c if "gather_" in n], names_c
            if layout == "channels_last" and k == 2:
                assert not gathered, names
                assert any("gather_cl" in n for n in names_p), names_p
            elif layout == "channels_last":
                assert any("gather_cl" in n for n in names), names
            else:
                assert any("gather_nc" in n for n in names), names
                assert any("gather_nc" in n for n in names_p), names_p
            torch.testing.assert_close(out, out_c, rtol=2e-3, atol=2e-3 * float(out_c.abs().max()))
            torch.testing.assert_close(out_p, out_c, rtol=2e-3, atol=2e-3 * float(out_c.abs().max()))


@pytest.mark.parametrize("path", ["default", "patch_gemm"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=lambda d: str(d)[6:])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_patch_gemm_operands_without_unit_stride(rank, dtype, path):
    """Regression (H100, session 6): conv_transpose1d in float16 on a strided input (every other
    element of the last dim) failed an internal assert of the patch GEMM ("operand without a unit
    stride") on the default data-grad path: the coarse operand reached cuBLAS as a view with no
    unit stride. Now such operands are copied. Checked for every direction on strided views and
    on broadcast (zero-stride) coarse gradients, as `y.sum().backward()` and a sum over channels
    produce them, against float64."""
    gen = torch.Generator().manual_seed(11 + rank)
    coarse, k, ci, co = {1: [13], 2: [5, 7], 3: [3, 4, 5]}[rank], [2] * rank, 6, 10
    fine = [c * 2 for c in coarse]
    ops, st, pd, dl, op = torch.ops.convx, k, [0] * rank, [1] * rank, [0] * rank
    # (base, view): the view is taken after the cast and the move to the device (a cast of the
    # view itself would return a dense tensor).
    every_other = (lambda t: t[..., ::2])  # noqa: E731
    coarse_views = {
        "strided": (torch.randn([2, co] + coarse[:-1] + [2 * coarse[-1]], generator=gen, dtype=torch.float64),
                    every_other),
        "broadcast": (torch.randn(1, generator=gen, dtype=torch.float64), lambda t: t.expand([2, co] + coarse)),
        "broadcast_channels": (torch.randn([2, 1] + coarse, generator=gen, dtype=torch.float64),
                               lambda t: t.expand([2, co] + coarse)),
    }
    x = torch.randn([2, ci] + fine[:-1] + [2 * fine[-1]], generator=gen, dtype=torch.float64)
    w = torch.randn([co, ci] + k, generator=gen, dtype=torch.float64)
    b = torch.randn(ci, generator=gen, dtype=torch.float64)
    conv_t, conv = helpers.CONV_T_F[rank], helpers.CONV_F[rank]
    wgrad = getattr(torch.nn.grad, f"conv{rank}d_weight")

    def run(dy, x, w, b, convx):
        """The four calls on (dy, x, w, b): convx's ops, or aten's reference (float64)."""
        if convx:
            return {"conv_transpose": getattr(ops, f"conv_transpose{rank}d")(dy, w, b, st, pd, op, 1, dl),
                    "conv_input_grad": getattr(ops, f"conv{rank}d_input_grad")([2, ci] + fine, w, dy, st, pd, dl, 1),
                    "conv_weight_grad": getattr(ops, f"conv{rank}d_weight_grad")(x, [co, ci] + k, dy, st, pd, dl, 1),
                    "conv": getattr(ops, f"conv{rank}d")(x, w, None, st, pd, dl, 1)}
        return {"conv_transpose": conv_t(dy, w, b, stride=st), "conv_input_grad": conv_t(dy, w, None, stride=st),
                "conv_weight_grad": wgrad(x, [co, ci] + k, dy, stride=st), "conv": conv(x, w, None, stride=st)}

    with dense_path(None if path == "default" else path), \
            torch.backends.cudnn.flags(enabled=True, deterministic=False, allow_tf32=dtype == torch.float32):
        for name, (dy, dy_view) in coarse_views.items():
            def operands(cast):
                return dy_view(cast(dy)), every_other(cast(x)), cast(w), cast(b)
            dev = operands(lambda t: t.to(dtype).to(DEV))
            assert not dev[0].is_contiguous() and dev[1].stride(-1) == 2, name  # the views reach convx
            poison()
            out = run(*dev, convx=True)
            ref = run(*operands(lambda t: t.to(dtype).double()), convx=False)
            bound = run(*operands(lambda t: t.to(dtype).double().abs()), convx=False)
            for fam in out:
                assert out[fam].dtype == dtype and out[fam].shape == ref[fam].shape, (name, fam)
                err = (out[fam].double().cpu() - ref[fam]).abs()
                assert bool((err <= LOW[torch.float16] * bound[fam] + 1e-6).all()), (name, fam, float(err.max()))


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_patch_gemm_graph_replay_equals_eager(layout):
    """The stride == kernel GEMM in all three directions inside a captured CUDA graph."""
    mf = torch.channels_last if layout == "channels_last" else torch.contiguous_format
    x = torch.randn(2, 16, 8, 6, device=DEV, dtype=torch.bfloat16).to(memory_format=mf)
    wt = torch.randn(16, 8, 2, 2, device=DEV, dtype=torch.bfloat16)
    b = torch.randn(8, device=DEV, dtype=torch.bfloat16)
    ops = torch.ops.convx

    def step(inp):
        y = ops.conv_transpose2d(inp, wt, b, [2, 2], [0, 0], [0, 0], 1, [1, 1])
        return (y, ops.conv2d(y, wt, None, [2, 2], [0, 0], [1, 1], 1),
                ops.conv2d_weight_grad(y, list(wt.shape), inp, [2, 2], [0, 0], [1, 1], 1))

    with dense_path("patch_gemm"), torch.backends.cudnn.flags(enabled=True, deterministic=False):
        static_out, eager = graph_replay_vs_eager(step, x)
    for a, e in zip(static_out, eager):
        assert torch.equal(a, e)


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_cuda_graph_replay_equals_eager(layout):
    mf = torch.channels_last_3d if layout == "channels_last" else torch.contiguous_format
    x = torch.randn(2, 8, 6, 10, 10, device=DEV).to(memory_format=mf)
    w = torch.randn(12, 4, 3, 3, 3, device=DEV)
    wt = torch.randn(8, 6, 2, 2, 2, device=DEV, dtype=torch.bfloat16)
    bias = torch.randn(12, device=DEV)
    ops = torch.ops.convx

    def step(inp):
        y = ops.conv3d(inp, w, bias, [1, 2, 2], [1, 1, 1], [1, 1, 1], 2)
        gx = ops.conv3d_input_grad(list(inp.shape), w, y, [1, 2, 2], [1, 1, 1], [1, 1, 1], 2)
        gw = ops.conv3d_weight_grad(inp, list(w.shape), y, [1, 2, 2], [1, 1, 1], [1, 1, 1], 2)
        yt = ops.conv_transpose3d(inp, w.view(8, 6, 3, 3, 3)[:, :, :2, :2, :2].contiguous(), bias[:12],
                                  [2, 2, 2], [0, 0, 0], [0, 0, 0], 2, [1, 1, 1])
        yg = ops.conv_transpose3d(inp.bfloat16(), wt, bias[:6].bfloat16(), [2, 2, 2], [0, 0, 0],
                                  [0, 0, 0], 1, [1, 1, 1])
        return y, gx, gw, yt, yg

    with torch.backends.cudnn.flags(enabled=True, deterministic=True, allow_tf32=False):
        static_out, eager = graph_replay_vs_eager(step, x)
    for a, b in zip(static_out, eager):
        assert torch.equal(a, b)


def test_threads_with_different_shapes_equal_serial():
    """8 threads, each on its own stream with its own shapes (so its own plans), at once."""
    ops = torch.ops.convx
    gen = torch.Generator().manual_seed(3)
    work = []
    for t in range(8):
        c, h = 4 + 2 * t, 9 + t
        x = torch.randn(2, c, h, h + 1, generator=gen).to(DEV)
        w = torch.randn(c + 2, c, 3, 3, generator=gen).to(DEV)
        wt = torch.randn(c, 5, 2, 2, generator=gen).to(DEV)
        work.append((x, w, wt))

    def calls(x, w, wt):
        y = ops.conv2d(x, w, None, [1, 1], [1, 1], [1, 1], 1)
        return [y, ops.conv2d_input_grad(list(x.shape), w, y, [1, 1], [1, 1], [1, 1], 1),
                ops.conv2d_weight_grad(x, list(w.shape), y, [1, 1], [1, 1], [1, 1], 1),
                ops.conv_transpose2d(x, wt, None, [2, 2], [0, 0], [0, 0], 1, [1, 1])]

    with torch.backends.cudnn.flags(enabled=True, deterministic=True, allow_tf32=False):
        serial = [calls(*args) for args in work]
        results = [None] * 8
        errors = []
        barrier = threading.Barrier(8)

        def worker(i):
            try:
                s = torch.cuda.Stream()
                with torch.cuda.stream(s):
                    barrier.wait()
                    out = None
                    for _ in range(5):
                        out = calls(*work[i])
                    s.synchronize()
                results[i] = out
            except Exception as e:  # noqa: BLE001  (reported below)
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors
    for a, b in zip(results, serial):
        for u, v in zip(a, b):
            assert torch.equal(u, v)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_deterministic_weight_grad(dtype):
    x = torch.randn(16, 64, 28, 28, device=DEV, dtype=dtype)
    gy = torch.randn(16, 128, 28, 28, device=DEV, dtype=dtype)
    op = torch.ops.convx.conv2d_weight_grad
    with torch.backends.cudnn.flags(enabled=True, deterministic=True):
        a = op(x, [128, 64, 3, 3], gy, [1, 1], [1, 1], [1, 1], 1)
        poison()
        b = op(x, [128, 64, 3, 3], gy, [1, 1], [1, 1], [1, 1], 1)
    assert torch.equal(a, b)
    ref = torch.nn.grad.conv2d_weight(x.double(), [128, 64, 3, 3], gy.double(), 1, 1)
    torch.testing.assert_close(a.double(), ref, rtol=0, atol=3e-2 * float(ref.abs().max()))


@pytest.mark.parametrize("family,rank", [(f, r) for r in (1, 2, 3) for f in DENSE])
def test_benchmark_flag(family, rank):
    """torch.backends.cudnn.benchmark: plans are autotuned (timed once), results still right."""
    with torch.backends.cudnn.flags(enabled=True, benchmark=True, allow_tf32=False):
        for case in dense_cases(family, rank, 3, "bench"):
            c = on(case, dtype=torch.float32)
            with torch.no_grad():
                out = c.run_convx()
                out2 = c.run_convx()  # the cached plan
            ref = on(case).run_ref()
            torch.testing.assert_close(out.double(), ref, rtol=1e-4, atol=1e-4 * (float(ref.abs().max()) if ref.numel() else 0.0) + 1e-5)
            torch.testing.assert_close(out, out2)


def test_first_order_grads_through_cudnn():
    """Autograd of conv/conv_transpose runs the dense CUDA kernels end to end."""
    for family in ("conv", "conv_transpose"):
        for rank in (1, 2, 3):
            for case in dense_cases(family, rank, 3, "densegrad"):
                c = on(case)
                a, b = helpers.requires_grad_copy(c), helpers.requires_grad_copy(c)
                out, ref = a.run_convx(), b.run_ref()
                ct = torch.randn(ref.shape, dtype=ref.dtype, device=DEV)
                names = a.differentiable()
                ga = helpers.grads(out, [a.tensors[n] for n in names], ct)
                gb = helpers.grads(ref, [b.tensors[n] for n in names], ct)
                for x, y in zip(ga, gb):
                    if y is not None:
                        torch.testing.assert_close(x, y, rtol=1e-9, atol=1e-9)


# ---- convx::_conv_and_weight_grad (the conv_transpose backward's dx, dw and db at once) ----

from test_conv_and_weight_grad import CONV_T, CONV_T_ATEN, joint_cases, transpose_setup  # noqa: E402
from test_cuda import deterministic  # noqa: E402


def run_joint(case, t, deterministic_mode):
    """The joint operator (with input_sum: its channel sum runs on a side stream) and the public
    operators on the same operands, each on NaN-poisoned memory, inside or outside
    torch.use_deterministic_algorithms (the patch GEMM steps aside in it, so both are run).
    Returns ((y, gw), (y, gw) of the public operators, (sum, _bias_grad of input))."""
    mode = deterministic if deterministic_mode else contextlib.nullcontext
    poison()
    with torch.no_grad(), mode():
        y, gw, db = case.run(t, input_sum=True)
    poison()
    with torch.no_grad(), mode():
        separate = case.separate(t)
        db_sep = torch.ops.convx._bias_grad(t["input"], case.rank)
    return (y, gw), separate, (db, db_sep)


def check_sum(case, sums, rounded, tol):
    """The joint operator's channel sum: NaN-free, bitwise _bias_grad's (the same kernel or
    at::sum), within tol of float64 on the rounded operands."""
    db, db_sep = sums
    assert db.dtype == db_sep.dtype and torch.equal(db, db_sep), case
    ref = case.channel_sum(rounded)
    bound = case.channel_sum({"input": rounded["input"].abs()})
    assert_within(db, ref, bound, tol, f"{case} db")


def assert_within(out, ref, bound, tol, what):
    assert out.shape == ref.shape, what
    assert not torch.isnan(out).any(), f"{what}: NaN (an element left unwritten)"
    err = (out.double().cpu() - ref).abs()
    lim = tol * bound + 1e-6
    assert bool((err <= lim).all()), f"{what}: max excess {float((err - lim).max())}"


@pytest.mark.parametrize("deterministic_mode", [False, True], ids=["nondet", "det"])
@pytest.mark.parametrize("path", list(PATCH_PATHS))
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_conv_and_weight_grad_float64(rank, path, deterministic_mode):
    """float64 (cuDNN / im2col: the patch GEMM takes no float64) on random and stride == kernel
    cases in every layout: the two results against aten and against the two public operators."""
    with dense_path(PATCH_PATHS[path]):
        for case in joint_cases(rank, "cuda64"):
            t = case.tensors(DEV)
            (y, gw), (y_sep, gw_sep), sums = run_joint(case, t, deterministic_mode)
            ref = case.reference(case.tensors())
            bound = case.bound(case.tensors())
            check_sum(case, sums, case.tensors(), 1e-9)
            for out, sep, r, b, name in zip((y, gw), (y_sep, gw_sep), ref, bound, ("y", "gw")):
                assert out.stride() == sep.stride(), (case, name)
                assert_within(out, r, b, 1e-9, f"{case} {name}")
                assert_within(sep, r, b, 1e-9, f"{case} {name} (separate)")


@pytest.mark.parametrize("deterministic_mode", [False, True], ids=["nondet", "det"])
@pytest.mark.parametrize("path", list(PATCH_PATHS))
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "tf32"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_conv_and_weight_grad_low_precision(rank, dtype, path, deterministic_mode):
    """The shared-gather patch GEMM (half types, float32 with TF32; by default for NC* inputs,
    forced for channels-last ones) and the paths it falls back to, on poisoned outputs against
    float64 of the rounded operands, outside and inside deterministic mode."""
    tf32 = dtype == "tf32"
    dt = torch.float32 if tf32 else getattr(torch, dtype)
    tol = LOW[torch.float16] if tf32 else LOW[dt]
    with dense_path(PATCH_PATHS[path]), \
            torch.backends.cudnn.flags(enabled=True, deterministic=False, allow_tf32=tf32):
        for case in joint_cases(rank, "cudalow", random_count=4):
            t = case.tensors(DEV, dt)
            (y, gw), (y_sep, gw_sep), sums = run_joint(case, t, deterministic_mode)
            rounded = case.tensors("cpu", dt, fn=lambda b: b.double())
            ref, bound = case.reference(rounded), case.bound(rounded)
            check_sum(case, sums, rounded, tol)
            for out, sep, r, b, name in zip((y, gw), (y_sep, gw_sep), ref, bound, ("y", "gw")):
                assert out.dtype == dt and out.stride() == sep.stride(), (case, name)
                assert_within(out, r, b, tol, f"{case} {name}")
                assert_within(sep, r, b, tol, f"{case} {name} (separate)")


def gathers(names):
    return [n for n in names if "convx" in n and "gather_" in n]


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=lambda d: str(d)[6:])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_conv_and_weight_grad_gathers_once(layout, dtype):
    """The point of the joint operator: where the patch GEMM serves both directions, the input's
    patches are gathered once (one gather kernel), where the two public operators gather twice.
    Channels-last k2 s2 goes to cuDNN by default (no gather) and shares one gather when forced."""
    mf = torch.channels_last if layout == "channels_last" else torch.contiguous_format
    x = torch.randn(3, 16, 32, 24, device=DEV, dtype=dtype).to(memory_format=mf)
    w = torch.randn(24, 16, 2, 2, device=DEV, dtype=dtype)
    gy = torch.randn(3, 24, 16, 12, device=DEV, dtype=dtype).to(memory_format=mf)
    args = (x, w, gy, 2, [2, 2], [0, 0], [1, 1], 1)
    joint = lambda: torch.ops.convx._conv_and_weight_grad(*args)[:2]  # noqa: E731
    sep = lambda: (torch.ops.convx.conv2d(x, w, None, [2, 2], [0, 0], [1, 1], 1),  # noqa: E731
                   torch.ops.convx.conv2d_weight_grad(x, list(w.shape), gy, [2, 2], [0, 0], [1, 1], 1))
    ref = (torch.nn.functional.conv2d(x.double(), w.double(), stride=2),
           torch.nn.grad.conv2d_weight(x.double(), list(w.shape), gy.double(), stride=2))
    with torch.backends.cudnn.flags(enabled=True, deterministic=False, allow_tf32=True):
        for path in (None, "patch_gemm"):
            with dense_path(path):
                out, names = kernels_of(joint)
                out_s, names_s = kernels_of(sep)
            if layout == "channels_last" and path is None:
                assert not gathers(names) and not gathers(names_s), (names, names_s)
            else:
                assert len(gathers(names)) == 1, names
                assert len(gathers(names_s)) == 2, names_s
            for o, s, r in zip(out, out_s, ref):
                scale = 4e-3 * float(r.abs().max())
                torch.testing.assert_close(o.double(), r, rtol=0, atol=scale)
                torch.testing.assert_close(s.double(), r, rtol=0, atol=scale)


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
@pytest.mark.parametrize("output_padding,dilation", [(0, 1), (1, 1), (2, 3)])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_conv_transpose_backward_uses_the_joint_op(rank, output_padding, dilation, layout):
    """The closure on the GPU: conv_transpose's dx, dw (and db) in float32 with TF32 (the patch
    GEMM's case when output_padding < stride) against aten's float64, with the joint operator
    called once; under create_graph the two differentiable operators, same results."""
    gen = torch.Generator().manual_seed(31 + rank)
    x, w, b, kw = transpose_setup(rank, output_padding, dilation, gen, batch=3)
    if layout == "channels_last":
        x = x.movedim(1, -1).contiguous().movedim(-1, 1)
    ins = [t.to(DEV, torch.float32).requires_grad_() for t in (x, w, b)]
    ins_ref = [t.clone().requires_grad_() for t in (x, w, b)]
    y_ref = CONV_T_ATEN[rank](*ins_ref, **kw)
    v = torch.randn(y_ref.shape, generator=gen, dtype=torch.float64)
    want = torch.autograd.grad(y_ref, ins_ref, v)
    abs_ins = [t.detach().abs().requires_grad_() for t in ins_ref]  # the gradients of |terms|
    bound = torch.autograd.grad(CONV_T_ATEN[rank](*abs_ins, **kw), abs_ins, v.abs())
    with torch.backends.cudnn.flags(enabled=True, deterministic=False, allow_tf32=True):
        y = CONV_T[rank](*ins, **kw)
        for create_graph in (False, True):
            poison()
            with helpers.CountConvx() as counter:
                got = torch.autograd.grad(y, ins, v.float().to(DEV), retain_graph=True, create_graph=create_graph)
            assert counter.calls["_conv_and_weight_grad"] == (0 if create_graph else 1), dict(counter.calls)
            # db: the joint operator's side-stream sum; under create_graph _bias_grad (v needs no grad)
            assert counter.calls["_bias_grad"] == (1 if create_graph else 0), dict(counter.calls)
            for g, r, bd in zip(got, want, bound):
                assert_within(g.detach(), r, bd, LOW[torch.float16], f"r{rank} op={output_padding} {layout}")


def big_joint_operands(dtype, layout):
    """A UNet-like k2 s2 backward large enough that the side-stream sum and the GEMMs overlap."""
    mf = {"contiguous": torch.contiguous_format, "channels_last": torch.channels_last}[layout]
    gy = torch.randn(8, 64, 128, 128, device=DEV, dtype=dtype).to(memory_format=mf)
    w = torch.randn(32, 64, 2, 2, device=DEV, dtype=dtype)
    x = torch.randn(8, 32, 64, 64, device=DEV, dtype=dtype).to(memory_format=mf)
    return gy, w, x


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=lambda d: str(d)[6:])
def test_conv_and_weight_grad_sum_on_a_caller_stream(dtype, layout):
    """Called from a non-default stream: the side stream forks from and joins that stream, so
    the three results, read on it right after the call, equal the default-stream call's."""
    gy, w, x = big_joint_operands(dtype, layout)
    args = (gy, w, x, 2, [2, 2], [0, 0], [1, 1], 1, True)
    with torch.no_grad():
        want = torch.ops.convx._conv_and_weight_grad(*args)
        torch.cuda.synchronize()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            poison()
            gy2 = gy * 1  # made on s: the op's input is still being written when it is called
            got = torch.ops.convx._conv_and_weight_grad(gy2, *args[1:])
            copies = [t.clone() for t in got]  # read on s, ordered after the join
        torch.cuda.synchronize()
    for i, (g, c, r) in enumerate(zip(got, copies, want)):
        assert torch.equal(g, c) and not torch.isnan(g).any()
        if i == 2:  # the sum: one deterministic kernel
            assert torch.equal(g, r)
        else:  # the GEMMs' library may split-K in another order
            torch.testing.assert_close(g, r, rtol=1e-2, atol=1e-2 * float(r.abs().max()))


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_conv_and_weight_grad_sum_survives_freeing_its_input(layout):
    """grad_output freed right after the call and its block at once reused (overwritten with
    NaN) on the current stream: the join before the op returns orders the overwrite after the
    side-stream sum, which therefore still sums the original values. Repeated, since a missing
    join would be a race, made likely: a 256 MB gradient (a long sum) and few output channels
    (short convolutions, so the overwrite is queued early)."""
    mf = {"contiguous": torch.contiguous_format, "channels_last": torch.channels_last}[layout]
    gy = torch.randn(16, 64, 256, 256, device=DEV).to(memory_format=mf)
    w = torch.randn(4, 64, 2, 2, device=DEV)
    x = torch.randn(16, 4, 128, 128, device=DEV).to(memory_format=mf)
    want = torch.ops.convx._bias_grad(gy, 2)
    torch.cuda.synchronize()
    for _ in range(20):
        g = gy.clone()
        with torch.no_grad():
            _, _, db = torch.ops.convx._conv_and_weight_grad(g, w, x, 2, [2, 2], [0, 0], [1, 1], 1, True)
        del g
        junk = torch.empty_like(gy).fill_(float("nan"))  # likely in the freed block
        torch.cuda.synchronize()
        assert torch.equal(db, want)
        del junk


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_conv_and_weight_grad_sum_in_a_cuda_graph(layout):
    """The side stream's fork and join are captured into a CUDA graph (the pool stream joins the
    capture through the event); replayed with new data, the three results equal eager ones."""
    mf = {"contiguous": torch.contiguous_format, "channels_last": torch.channels_last}[layout]
    gy = torch.randn(4, 32, 32, 32, device=DEV).to(memory_format=mf)
    w = torch.randn(16, 32, 2, 2, device=DEV)
    x = torch.randn(4, 16, 16, 16, device=DEV).to(memory_format=mf)

    def step(inp):
        return torch.ops.convx._conv_and_weight_grad(inp, w, x, 2, [2, 2], [0, 0], [1, 1], 1, True)

    with torch.no_grad(), torch.backends.cudnn.flags(enabled=True, deterministic=True, allow_tf32=False):
        static_out, eager = graph_replay_vs_eager(step, gy)
    for i, (s, e) in enumerate(zip(static_out, eager)):
        if i == 2:
            assert torch.equal(s, e)
        else:
            torch.testing.assert_close(s, e, rtol=1e-5, atol=1e-5 * float(e.abs().max()))


# ---- the few-channel gather (ops/conv/cuda/few_channel_gather.cu): rank-2 data-grads whose
# result has at most 4 channels per group ----
FEW_KERNEL = "few_channel::gather"


def gathered(names):
    """Whether the few-channel gather was among the kernels; true as well when the profiler saw
    no kernel at all (under compute-sanitizer, which leaves CUPTI to itself: session 9's
    memcheck run, bench/results/h100/session9/fewch2_sanitizer.log), so that the memcheck runs the
    whole test."""
    return not names or any(FEW_KERNEL in n for n in names)


def few_channel_cases(gen, count):
    """Random rank-2 transposed convolutions and input-grads with 1-4 result channels per group:
    1-3 groups, 1-70 summed channels per group (70: two channel passes), kernels 1-5, strides
    1-3, dilation 1-2, padding, output padding, odd sizes, contiguous / channels-last / strided
    operands, bias or not, unbatched or batch 1-3."""
    out = []
    r = lambda lo, hi: int(torch.randint(lo, hi + 1, (1,), generator=gen))  # noqa: E731
    pick = lambda seq: seq[r(0, len(seq) - 1)]  # noqa: E731
    while len(out) < count:
        g, cog, cig = pick([1, 1, 1, 2, 3]), r(1, 4), pick([1, 2, 3, 5, 8, 13, 16, 33, 64, 70])
        k, s, d = [r(1, 5), r(1, 5)], [r(1, 3), r(1, 3)], [pick([1, 1, 2]), 1]
        p = [r(0, d[i] * (k[i] - 1)) for i in range(2)]
        op = [r(0, max(s[i], d[i]) - 1) for i in range(2)]
        lead = pick([[], [1], [2], [3]])
        layout, wlayout = pick(["contiguous", "channels_last", "strided"]), pick(["contiguous", "channels_last"])
        family = pick(["conv_transpose", "conv_input_grad"])
        if family == "conv_transpose":
            hw = [r(1, 12), r(1, 12)]
            out_hw = [helpers.conv_t_out_size(hw[i], k[i], s[i], p[i], d[i], op[i]) for i in range(2)]
            if min(out_hw) < 1:
                continue
            x = helpers.make_tensor(lead + [g * cig] + hw, layout, gen, channel_dim=len(lead))
            w = helpers.make_tensor([g * cig, cog] + k, wlayout, gen)
            b = torch.randn(g * cog, generator=gen, dtype=torch.float64) if r(0, 1) else None
            out.append(helpers.Case("conv_transpose", 2, {"input": x, "weight": w, "bias": b}, s, p, d, g, op))
        else:  # the input-grad of a convolution with cog input channels per group
            in_hw = [r(3, 20), r(3, 20)]
            hw = [helpers.conv_out_size(in_hw[i], k[i], s[i], p[i] // 2, d[i]) for i in range(2)]
            if min(hw) < 1:
                continue
            w = helpers.make_tensor([g * cig, cog] + k, wlayout, gen)
            gy = helpers.make_tensor(lead + [g * cig] + hw, layout, gen, channel_dim=len(lead))
            out.append(helpers.Case("conv_input_grad", 2, {"weight": w, "grad_output": gy}, s,
                                    [q // 2 for q in p], d, g, sizes=lead + [g * cog] + in_hw))
    return out


@pytest.mark.parametrize("path", ["default", "few_channel"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=lambda d: str(d)[6:])
def test_few_channel_gather_vs_float64(dtype, path):
    """Random few-channel data-grads in each dtype on poisoned memory against float64; forced,
    the gather serves every one that is not depthwise-shaped (one result channel per group:
    those go to the depthwise kernels unless their multiplier is wide)."""
    gen = torch.Generator().manual_seed(11)
    with dense_path(None if path == "default" else path), torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        for case in few_channel_cases(gen, 40):
            check_low(case, dtype)
            if path == "few_channel" and case.tensors["weight"].shape[1] > 1:  # 1: depthwise-shaped
                _, names = kernels_of(lambda: on(case, dtype=dtype).run_convx())
                assert gathered(names), (case, names)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=lambda d: str(d)[6:])
def test_few_channel_gather_serves_the_autoencoder_head(dtype, layout, bias):
    """Issue #5's autoencoder forward (conv_transpose2d 64 -> 3, 14² -> 32², k5 s2 op1, batch
    128) runs on the gather by default, in the input's layout, within the dtype's rounding of
    float64; with CONVX_CUDA_DENSE=cudnn or cuDNN turned off it does not."""
    gen = torch.Generator().manual_seed(12)
    x = torch.randn(128, 64, 14, 14, generator=gen, dtype=torch.float64)
    w = torch.randn(64, 3, 5, 5, generator=gen, dtype=torch.float64) / 40
    b = torch.randn(3, generator=gen, dtype=torch.float64) if bias else None
    ref = torch.nn.functional.conv_transpose2d(x.to(dtype).double(), w.to(dtype).double(),
                                               None if b is None else b.to(dtype).double(), 2, 0, 1)
    mf = torch.channels_last if layout == "channels_last" else torch.contiguous_format
    xd, wd = x.to(DEV, dtype).to(memory_format=mf), w.to(DEV, dtype)
    bd = None if b is None else b.to(DEV, dtype)
    call = lambda: torch.ops.convx.conv_transpose2d(xd, wd, bd, [2, 2], [0, 0], [1, 1], 1, [1, 1])  # noqa: E731
    poison()
    y, names = kernels_of(call)
    assert gathered(names), names
    assert y.is_contiguous(memory_format=mf)
    aten = torch.nn.functional.conv_transpose2d(xd, wd, bd, 2, 0, 1)
    assert y.stride() == aten.stride()
    tol = LOW[dtype] * float(ref.abs().max()) * 4
    torch.testing.assert_close(y.double().cpu(), ref, rtol=0, atol=tol)
    with dense_path("cudnn"):
        _, names = kernels_of(call)
    assert not any(FEW_KERNEL in n for n in names), names
    with torch.backends.cudnn.flags(enabled=False):
        _, names = kernels_of(call)
    assert not any(FEW_KERNEL in n for n in names), names


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=lambda d: str(d)[6:])
def test_few_channel_gather_misaligned_and_empty(dtype):
    """Channels-last input one element past an aligned start (no vector loads), an NCHW input
    with a storage offset, an output written into by the front, and batch 0."""
    gen = torch.Generator().manual_seed(13)
    ops = torch.ops.convx
    x64 = torch.randn(3, 24, 7, 9, generator=gen, dtype=torch.float64)
    w64 = torch.randn(24, 3, 3, 3, generator=gen, dtype=torch.float64) / 9
    b64 = torch.randn(3, generator=gen, dtype=torch.float64)
    args = ([2, 2], [1, 1], [1, 1], 1, [1, 1])
    ref = torch.nn.functional.conv_transpose2d(x64.to(dtype).double(), w64.to(dtype).double(),
                                               b64.to(dtype).double(), *args)
    buf = torch.empty(x64.numel() + 1, device=DEV, dtype=dtype)
    cl = buf[1:].view(3, 7, 9, 24).permute(0, 3, 1, 2)
    cl.copy_(x64.to(dtype))
    buf2 = torch.empty(x64.numel() + 3, device=DEV, dtype=dtype)
    nc = buf2[3:].view(3, 24, 7, 9)
    nc.copy_(x64.to(dtype))
    wd, bd = w64.to(DEV, dtype), b64.to(DEV, dtype)
    with dense_path("few_channel"):
        for xin in (cl, nc):
            poison()
            y, names = kernels_of(lambda: ops.conv_transpose2d(xin, wd, bd, *args))
            assert gathered(names), names
            torch.testing.assert_close(y.double().cpu(), ref, rtol=0, atol=LOW[dtype] * 20)
        empty = ops.conv_transpose2d(cl[:0], wd, bd, *args)
    assert empty.shape == (0, 3) + tuple(ref.shape[2:])


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_few_channel_gather_in_a_stem_backward(layout):
    """The input gradient of an RGB stem (conv2d 3 -> 16, k7 s2 p3) is a few-channel data-grad:
    autograd through convx (the gather by default) matches aten in float32 without TF32."""
    gen = torch.Generator().manual_seed(14)
    mf = torch.channels_last if layout == "channels_last" else torch.contiguous_format
    x = torch.randn(2, 3, 29, 30, generator=gen).to(DEV).to(memory_format=mf).requires_grad_()
    w = (torch.randn(16, 3, 7, 7, generator=gen) / 12).to(DEV).requires_grad_()
    gy = torch.randn(2, 16, 15, 15, generator=gen).to(DEV)
    with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        y = torch.ops.convx.conv2d(x, w, None, [2, 2], [3, 3], [1, 1], 1)
        (gx,), names = kernels_of(lambda: torch.autograd.grad(y, (x,), gy))
        y_ref = torch.nn.functional.conv2d(x.double(), w.double(), None, 2, 3)
        (gx_ref,) = torch.autograd.grad(y_ref, (x,), gy.double())
    assert gathered(names), names
    torch.testing.assert_close(gx.double(), gx_ref.double(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("groups,c_out,c_in", [(1, 3, 64), (1, 1, 64), (2, 8, 64), (1, 3, 8)])
def test_few_channel_gather_default_rule(groups, c_out, c_in):
    """By default the gather serves one group with 2-4 result channels and >= 16 summed ones
    (where the H100 measured it ahead of cuDNN); forced, it serves all four shapes (one result
    channel: the depthwise data-grad hands multiplier 64 to the dense path), with the default
    path's result."""
    gen = torch.Generator().manual_seed(15)
    x = torch.randn(2, c_in, 6, 7, generator=gen).to(DEV)
    w = torch.randn(c_in, c_out // groups, 3, 3, generator=gen).to(DEV)
    call = lambda: torch.ops.convx.conv_transpose2d(x, w, None, [2, 2], [1, 1], [1, 1], groups, [1, 1])  # noqa: E731
    with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        y, names = kernels_of(call)
        with dense_path("few_channel"):
            y2, names2 = kernels_of(call)
    expected = groups == 1 and c_out >= 2 and c_in >= 16
    assert (any(FEW_KERNEL in n for n in names) == expected) or not names, names
    assert gathered(names2), names2  # (1, 1, 64): the multiplier-64 hand-off
    torch.testing.assert_close(y, y2, rtol=1e-5, atol=1e-5)
