"""The CPU kernels' specialisations, each reached on purpose and checked against aten in float64.

Depthwise (ops/depthwise_conv/cpu_kernels.cpp, compiled per ISA): NCHW shared-row loops for
3/5/7 at H-stride 1 and 2, the generic plane loop (other kernels, strides, dilation), the
channels-last shared-pixel loops for 3/5/7 at W-stride 1 and 2 and the generic pixel loop,
the channels-last strided data grad, vector tails (widths and channel counts that are not a
multiple of 16), channel multiplier > 1 (channels-last: the plain loops), fp16/bf16 (float
copies). Every ISA build runs: the ISA is picked once per process, so each runs in a
subprocess with ATEN_CPU_CAPABILITY set.

Dense (ops/conv/gemm.cpp + cpu.cpp): the channels-last pixel-row path (groups 1) and the
pointwise shortcut.
"""

import itertools
import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

X = torch.ops.convx


def rel_err(a, ref):
    return ((a.double() - ref).abs().max() / (1 + ref.abs().max())).item()


def depthwise_case(C, m, H, W, k, s, d, p, cl, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    kh, kw = k
    x = torch.randn(2, C, H, W, generator=g).to(dtype)
    w = torch.randn(C * m, 1, kh, kw, generator=g).to(dtype)
    b = torch.randn(C * m, generator=g).to(dtype)
    if cl:
        x = x.contiguous(memory_format=torch.channels_last)
    x.requires_grad_()
    w.requires_grad_()
    y = X.depthwise_conv2d(x, w, b, list(s), list(p), list(d))
    ref = F.conv2d(x.double(), w.double(), b.double(), s, p, d, C)
    gy = torch.randn(ref.shape, generator=g, dtype=torch.float64)
    if cl:  # so that the data grad runs the channels-last kernels too
        gy = gy.contiguous(memory_format=torch.channels_last)
    gx, gw = torch.autograd.grad(y, (x, w), gy.to(dtype))
    gx_ref, gw_ref = torch.autograd.grad(ref, (x, w), gy)
    assert y.dtype == dtype
    if cl:
        assert y.is_contiguous(memory_format=torch.channels_last)
        assert gx.is_contiguous(memory_format=torch.channels_last)
    return rel_err(y, ref), rel_err(gx, gx_ref), rel_err(gw, gw_ref)


# (kernel, stride, dilation): the specialised 3/5/7 at strides 1 and 2, mixed strides, and the
# generic loops (even kernel, rectangular kernel, stride 3, dilation 2).
GEOMETRIES = [((3, 3), (1, 1), (1, 1)), ((5, 5), (1, 1), (1, 1)), ((7, 7), (1, 1), (1, 1)),
              ((3, 3), (2, 2), (1, 1)), ((5, 5), (2, 2), (1, 1)), ((7, 7), (2, 2), (1, 1)),
              ((3, 3), (2, 1), (1, 1)), ((3, 3), (1, 2), (1, 1)), ((4, 4), (1, 1), (1, 1)),
              ((3, 5), (1, 1), (1, 1)), ((3, 3), (3, 3), (1, 1)), ((3, 3), (1, 1), (2, 2)),
              ((5, 5), (2, 2), (2, 1))]


@pytest.mark.parametrize("cl", [False, True], ids=["nchw", "channels_last"])
@pytest.mark.parametrize("k,s,d", GEOMETRIES, ids=lambda v: "x".join(map(str, v)))
def test_depthwise_specialisations_float64(k, s, d, cl):
    # W = 37: two full AVX-512 vectors and a tail of 5; C = 21 (channels-last): one vector + 5.
    p = (k[0] // 2 * d[0], k[1] // 2 * d[1])
    for m in (1, 2):
        errs = depthwise_case(21, m, 13, 37, k, s, d, p, cl, torch.float64, seed=hash((k, s, d, m)) % 1000)
        assert max(errs) < 1e-10, (m, errs)


@pytest.mark.parametrize("k,s", [(3, 1), (5, 1), (7, 1), (3, 2), (5, 2), (7, 2)])
def test_depthwise_channels_last_row_widths(k, s):
    # The channels-last forward tiles a row in blocks of 4 from its first pixel: blocks wholly
    # inside take the 8/4-pixel loops, the others (row ends, narrow rows) the edge loop. Every
    # width from 1 to 21 (output rows of 1 to 21 pixels), padded and unpadded.
    for w in range(1, 22):
        for p in (k // 2, 0):
            if w + 2 * p < k:
                continue
            errs = depthwise_case(19, 1, 9, w, (k, k), (s, s), (1, 1), (p, p), True, torch.float64,
                                  seed=w * 10 + p)
            assert max(errs) < 1e-10, (w, p, errs)


@pytest.mark.parametrize("cl", [False, True], ids=["nchw", "channels_last"])
def test_depthwise_unpadded_and_overpadded(cl):
    # No padding (taps never leave the row) and padding beyond the kernel reach (data grad crops).
    for p in ((0, 0), (3, 4)):
        errs = depthwise_case(17, 1, 9, 19, (3, 3), (1, 1), (1, 1), p, cl, torch.float64, seed=7)
        assert max(errs) < 1e-10, (p, errs)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("cl", [False, True], ids=["nchw", "channels_last"])
def test_depthwise_low_precision(dtype, cl):
    tol = {torch.float32: 1e-4, torch.float16: 5e-3, torch.bfloat16: 3e-2}[dtype]
    for k, s in (((5, 5), (1, 1)), ((3, 3), (2, 2)), ((7, 7), (1, 1))):
        errs = depthwise_case(20, 1, 11, 23, k, s, (1, 1), (k[0] // 2, k[1] // 2), cl, dtype, seed=3)
        assert max(errs) < tol, (k, s, errs)


def test_depthwise_1d_uses_the_planar_loops():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(3, 6, 41, generator=g, dtype=torch.float64)
    w = torch.randn(12, 1, 5, generator=g, dtype=torch.float64)
    y = X.depthwise_conv1d(x, w, None, [2], [2], [1])
    torch.testing.assert_close(y, F.conv1d(x, w, None, 2, 2, 1, 6))


# 5x5: the per-tap loop; 3x3 at stride 1 and 2: the channels-last loop with all 9 tap sums in
# registers.
@pytest.mark.parametrize("k,s", [(5, 1), (3, 1), (3, 2)])
def test_depthwise_weight_grad_does_not_depend_on_threads(k, s):
    g = torch.Generator().manual_seed(11)
    x = torch.randn(4, 32, 20, 20, generator=g)
    o = (20 + 2 * (k // 2) - k) // s + 1
    gy = torch.randn(4, 32, o, o, generator=g)
    before = torch.get_num_threads()
    results = []
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            for mf in (torch.contiguous_format, torch.channels_last):
                results.append(X.conv2d_weight_grad(x.contiguous(memory_format=mf), [32, 1, k, k],
                                                    gy.contiguous(memory_format=mf), [s, s],
                                                    [k // 2, k // 2], [1, 1], 32))
    finally:
        torch.set_num_threads(before)
    assert torch.equal(results[0], results[2]) and torch.equal(results[1], results[3])


def _capabilities():
    flags = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    caps = ["default"]
    if " avx2" in flags:
        caps.append("avx2")
    if all(f in flags for f in (" avx512f", " avx512bw", " avx512vl", " avx512dq")):
        caps.append("avx512")
    return caps


@pytest.mark.parametrize("cap", _capabilities())
def test_depthwise_every_isa_build(cap):
    """This file's depthwise tests again, in a process whose ATen (and so convx) runs `cap`."""
    env = dict(os.environ, ATEN_CPU_CAPABILITY=cap)
    got = subprocess.run([sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
                         env=env, capture_output=True, text=True, timeout=300).stdout.strip()
    assert got == cap.upper()
    here = os.path.dirname(os.path.abspath(__file__))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                           os.path.join(here, "test_cpu_kernels.py"), "-k", "depthwise and not every_isa"],
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert " passed" in proc.stdout


@pytest.mark.parametrize("groups", [1, 2])
@pytest.mark.parametrize("k,s,p,op,d", [(2, 2, 0, 0, 1), (4, 2, 1, 0, 1), (3, 2, 1, 1, 1),
                                        (1, 1, 0, 0, 1), (1, 1, 0, 1, 2), (3, 1, 2, 0, 2)])
def test_dense_channels_last(k, s, p, op, d, groups):
    g = torch.Generator().manual_seed(k * 100 + s * 10 + p + op)
    x = torch.randn(3, 6, 7, 9, generator=g, dtype=torch.float64).contiguous(memory_format=torch.channels_last)
    w = torch.randn(6, 4 // groups * 2, k, k, generator=g, dtype=torch.float64)
    b = torch.randn(4 // groups * 2 * groups, generator=g, dtype=torch.float64)
    x.requires_grad_()
    w.requires_grad_()
    y = X.conv_transpose2d(x, w, b, [s, s], [p, p], [op, op], groups, [d, d])
    ref = F.conv_transpose2d(x, w, b, s, p, op, groups, d)
    assert y.is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(y, ref)
    gy = torch.randn(ref.shape, generator=g, dtype=torch.float64)
    for got, want in zip(torch.autograd.grad(y, (x, w), gy), torch.autograd.grad(ref, (x, w), gy)):
        torch.testing.assert_close(got, want)


# The phase-decomposed transposed convolution (ops/conv/cpu_phases.cpp): groups 1, dilation 1,
# a stride > 1, either layout (NCHW through channels-last temporaries). Each output phase reads its own taps: several (k4 s2), one
# per phase shared by all phases (k == s, p == 0: one GEMM and a pixel shuffle), none (k < s:
# bias only), output_padding (k == s with extra phase rows, so not shared), padding beyond the
# kernel, unequal strides, stride 1 on one dim, ranks 1-3. Sizes give several row blocks.
PHASE_CASES = [
    # rank, kernel, stride, padding, output_padding
    (2, (2, 2), (2, 2), (0, 0), (0, 0)),
    (2, (4, 4), (2, 2), (1, 1), (0, 0)),
    (2, (3, 3), (2, 2), (1, 1), (1, 1)),
    (2, (1, 1), (2, 2), (0, 0), (1, 1)),
    (2, (2, 2), (2, 2), (0, 0), (1, 1)),
    (2, (5, 3), (3, 2), (2, 0), (2, 1)),
    (2, (3, 3), (2, 1), (1, 0), (0, 0)),
    (2, (2, 2), (3, 3), (2, 2), (0, 0)),
    (1, (4,), (2,), (1,), (0,)),
    (1, (2,), (2,), (0,), (0,)),
    (3, (2, 2, 2), (2, 2, 2), (0, 0, 0), (0, 0, 0)),
    (3, (3, 3, 2), (2, 2, 1), (1, 1, 0), (1, 0, 0)),
]


def _channels_last(t):
    if t.dim() == 3:  # rank 1: an (N, L, C) tensor viewed as (N, C, L)
        return t.transpose(1, 2).contiguous().transpose(1, 2)
    return t.contiguous(memory_format=torch.channels_last if t.dim() == 4 else torch.channels_last_3d)


@pytest.mark.parametrize("cl", [False, True], ids=["contiguous", "channels_last"])
@pytest.mark.parametrize("bias", [False, True], ids=["nobias", "bias"])
@pytest.mark.parametrize("rank,k,s,p,op", PHASE_CASES, ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v))
def test_transposed_phases_float64(rank, k, s, p, op, bias, cl):
    g = torch.Generator().manual_seed(sum(k) * 100 + sum(s) * 10 + sum(p) + sum(op) + rank)
    spatial = {1: (301,), 2: (23, 29), 3: (7, 9, 8)}[rank]
    x = torch.randn(3, 5, *spatial, generator=g, dtype=torch.float64)
    x = _channels_last(x) if cl else x
    w = torch.randn(5, 7, *k, generator=g, dtype=torch.float64)
    b = torch.randn(7, generator=g, dtype=torch.float64) if bias else None
    x.requires_grad_()
    w.requires_grad_()
    ours = getattr(X, f"conv_transpose{rank}d")(x, w, b, list(s), list(p), list(op), 1, [1] * rank)
    ref = getattr(F, f"conv_transpose{rank}d")(x, w, b, s, p, op, 1, 1)
    assert ours.stride() == (_channels_last(ours) if cl else ours.contiguous()).stride()
    torch.testing.assert_close(ours, ref)
    gy = torch.randn(ref.shape, generator=g, dtype=torch.float64)
    for got, want in zip(torch.autograd.grad(ours, (x, w), gy), torch.autograd.grad(ref, (x, w), gy)):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("cl", [False, True], ids=["contiguous", "channels_last"])
@pytest.mark.parametrize("channels", [(5, 7), (300, 37)], ids=["5to7", "300to37"])
@pytest.mark.parametrize("rank,k,s,p,op", PHASE_CASES, ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v))
def test_transposed_phases_float32(rank, k, s, p, op, channels, cl):
    # float32 takes the AVX-512 packed GEMM (ops/conv/cpu_gemm.cpp) where the CPU has it: row
    # tiles of 1-12, C_out not a multiple of 16 or 32 (masked columns), C_in over one 256-channel
    # K block (300), taps reading outside the input (the zero row); compared with float64 aten.
    ci, co = channels
    g = torch.Generator().manual_seed(sum(k) * 100 + sum(s) * 10 + sum(p) + sum(op) + rank + ci)
    spatial = {1: (67,), 2: (13, 11), 3: (5, 4, 6)}[rank]
    x = torch.randn(2, ci, *spatial, generator=g)
    x = _channels_last(x) if cl else x
    w = torch.randn(ci, co, *k, generator=g)
    b = torch.randn(co, generator=g)
    ours = getattr(X, f"conv_transpose{rank}d")(x, w, b, list(s), list(p), list(op), 1, [1] * rank)
    ref = getattr(F, f"conv_transpose{rank}d")(x.double(), w.double(), b.double(), s, p, op, 1, 1)
    assert ours.dtype == torch.float32
    assert rel_err(ours, ref) < 1e-5


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_transposed_phases_realistic_channels(dtype):
    # 64 -> 48 channels, k4 s2 p1 and k2 s2, many row blocks, a non-contiguous input; the
    # grad_input of a strided convolution (conv2d_input_grad) takes the same path.
    g = torch.Generator().manual_seed(7)
    x = torch.randn(2, 64, 21, 38, generator=g).to(dtype).contiguous(memory_format=torch.channels_last)
    x = x[..., ::2]
    assert not x.is_contiguous() and not x.is_contiguous(memory_format=torch.channels_last)
    for k, s, p in ((4, 2, 1), (2, 2, 0)):
        w = torch.randn(64, 48, k, k, generator=g).to(dtype) / 16
        ours = X.conv_transpose2d(x, w, None, [s, s], [p, p], [0, 0], 1, [1, 1])
        ref = F.conv_transpose2d(x.double(), w.double(), None, s, p)
        assert ours.dtype == dtype
        assert rel_err(ours, ref) < (1e-5 if dtype == torch.float32 else 2e-2)
        size = [2, 48, ref.shape[2], ref.shape[3]]
        gx = X.conv2d_input_grad(size, w, x, [s, s], [p, p], [1, 1], 1)  # weight [C_out, C_in, k, k]
        assert rel_err(gx, ref) < (1e-5 if dtype == torch.float32 else 2e-2)


@pytest.mark.parametrize("cap", _capabilities())
def test_transposed_phases_every_isa(cap):
    """The float32 phase and direct-forward tests in a process whose ATen runs `cap`: the AVX-512
    packed GEMM, and BLAS (gathered rows / im2col) below AVX-512."""
    env = dict(os.environ, ATEN_CPU_CAPABILITY=cap)
    here = os.path.dirname(os.path.abspath(__file__))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                           os.path.join(here, "test_cpu_kernels.py"), "-k", "phases_float32 or direct_forward"],
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert " passed" in proc.stdout


# The implicit-GEMM convolution forward (ops/conv/cpu_direct.cpp): float, groups 1, C_in >= 64,
# C_out >= 32, on AVX-512 (else the im2col path these same checks cover). Strides, padding,
# dilation, kernels reaching past the input, ranks 1-3, both layouts, a non-contiguous input,
# C_in over one 256-channel K block, C_out not a multiple of 16, a 1x1 stride 1 (NCHW: BLAS).
DIRECT_CASES = [
    # rank, C_in, C_out, kernel, stride, padding, dilation
    (2, 64, 32, (3, 3), (1, 1), (1, 1), (1, 1)),
    (2, 300, 37, (4, 4), (2, 2), (1, 1), (1, 1)),
    (2, 64, 48, (3, 2), (2, 1), (2, 0), (2, 1)),
    (2, 96, 33, (1, 1), (1, 1), (0, 0), (1, 1)),
    (2, 64, 40, (5, 5), (3, 3), (4, 4), (1, 1)),
    (1, 70, 35, (3,), (2,), (1,), (1,)),
    (3, 64, 32, (3, 3, 3), (2, 1, 2), (1, 1, 0), (1, 1, 1)),
]


@pytest.mark.parametrize("cl", [False, True], ids=["contiguous", "channels_last"])
@pytest.mark.parametrize("rank,ci,co,k,s,p,d", DIRECT_CASES, ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v))
def test_direct_forward_float32(rank, ci, co, k, s, p, d, cl):
    g = torch.Generator().manual_seed(ci + co + sum(k) * 10 + rank)
    spatial = {1: (41,), 2: (15, 13), 3: (6, 7, 5)}[rank]
    x = torch.randn(3, ci, *spatial, generator=g)
    x = _channels_last(x) if cl else x
    w = torch.randn(co, ci, *k, generator=g)
    b = torch.randn(co, generator=g)
    ours = getattr(X, f"conv{rank}d")(x, w, b, list(s), list(p), list(d), 1)
    ref = getattr(F, f"conv{rank}d")(x.double(), w.double(), b.double(), s, p, d, 1)
    assert ours.dtype == torch.float32
    assert ours.stride() == (_channels_last(ours) if cl else ours.contiguous()).stride()
    assert rel_err(ours, ref) < 1e-5
    if rank == 2:  # a non-contiguous input, no bias
        xs = torch.randn(3, ci, spatial[0], 2 * spatial[1], generator=g)[..., ::2]
        ours = X.conv2d(xs, w, None, list(s), list(p), list(d), 1)
        assert rel_err(ours, F.conv2d(xs.double(), w.double(), None, s, p, d, 1)) < 1e-5


# The implicit-GEMM weight grad (ops/conv/cpu_direct.cpp, same conditions as the forward): the
# DIRECT_CASES geometries with the operands in each layout (mixed ones included: NCHW operands
# are copied to channels-last), batch 0 / 1 / 3, a non-contiguous input.
@pytest.mark.parametrize("layouts", ["nchw", "channels_last", "mixed"])
@pytest.mark.parametrize("rank,ci,co,k,s,p,d", DIRECT_CASES, ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v))
def test_direct_weight_grad_float32(rank, ci, co, k, s, p, d, layouts):
    g = torch.Generator().manual_seed(ci * 3 + co + sum(k) * 10 + rank)
    spatial = {1: (41,), 2: (15, 13), 3: (6, 7, 5)}[rank]
    op = getattr(X, f"conv{rank}d_weight_grad")
    conv = getattr(F, f"conv{rank}d")
    for batch in (3, 1, 0):
        x = torch.randn(batch, ci, *spatial, generator=g)
        w = torch.randn(co, ci, *k, dtype=torch.float64, requires_grad=True)
        ref_y = conv(x.double(), w, None, s, p, d, 1)
        gy = torch.randn(ref_y.shape, generator=g)
        if layouts != "nchw":
            x = _channels_last(x)
        if layouts == "channels_last":
            gy = _channels_last(gy)
        ours = op(x, list(w.shape), gy, list(s), list(p), list(d), 1)
        (ref,) = torch.autograd.grad(ref_y, w, gy.double())
        assert ours.dtype == torch.float32 and ours.shape == w.shape
        assert rel_err(ours, ref) < 1e-5, (batch, rel_err(ours, ref))
    if rank == 2:  # a non-contiguous input
        xs = torch.randn(3, ci, spatial[0], 2 * spatial[1], generator=g)[..., ::2]
        w = torch.randn(co, ci, *k, dtype=torch.float64, requires_grad=True)
        ref_y = conv(xs.double(), w, None, s, p, d, 1)
        gy = torch.randn(ref_y.shape, generator=g)
        ours = op(xs, list(w.shape), gy, list(s), list(p), list(d), 1)
        (ref,) = torch.autograd.grad(ref_y, w, gy.double())
        assert rel_err(ours, ref) < 1e-5


def test_direct_weight_grad_does_not_depend_on_threads():
    # Each task sums its pixels in a fixed order: the same bits at 1 and 2 threads.
    g = torch.Generator().manual_seed(5)
    x = torch.randn(3, 200, 17, 17, generator=g)
    gy = torch.randn(3, 64, 8, 8, generator=g)
    before = torch.get_num_threads()
    results = []
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            results.append(X.conv2d_weight_grad(x, [64, 200, 4, 4], gy, [2, 2], [1, 1], [1, 1], 1))
    finally:
        torch.set_num_threads(before)
    assert torch.equal(results[0], results[1])


@pytest.mark.parametrize("cl", [False, True], ids=["contiguous", "channels_last"])
def test_direct_forward_does_not_depend_on_threads(cl):
    # Row blocks differ with the thread count (and an NCHW output is transposed out of each
    # block), but every output sums its K segments in one order: the same bits at 1 and 2
    # threads. 300 input channels: segments of 256 + 44 channels per tap. Below AVX-512 (this
    # test runs again under ATEN_CPU_CAPABILITY=default / avx2) the forward is im2col + BLAS,
    # whose threading may move the last bits (MKL did on the session-9 machine): close, not equal.
    g = torch.Generator().manual_seed(7)
    x = torch.randn(3, 300, 13, 11, generator=g)
    x = _channels_last(x) if cl else x
    w = torch.randn(40, 300, 4, 4, generator=g)
    before = torch.get_num_threads()
    results = []
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            results.append(X.conv2d(x, w, None, [2, 2], [1, 1], [1, 1], 1))
    finally:
        torch.set_num_threads(before)
    if torch.backends.cpu.get_cpu_capability() == "AVX512":  # the implicit-GEMM forward
        assert torch.equal(results[0], results[1])
    else:
        assert rel_err(results[0], results[1]) < 1e-6
    assert rel_err(results[0], F.conv2d(x.double(), w.double(), None, 2, 1)) < 1e-5


def test_transposed_backward_realistic_channels():
    # DCGAN / UNet shaped transposed convolutions (smaller images): their backward is the
    # implicit-GEMM forward (data grad) and weight grad, checked through autograd in float64.
    for (ci, co, k, s, p, hw), cl in itertools.product(
            [(256, 128, 4, 2, 1, 7), (128, 64, 2, 2, 0, 6)], (False, True)):
        g = torch.Generator().manual_seed(ci + k)
        x = torch.randn(3, ci, hw, hw + 1, generator=g)
        x = _channels_last(x) if cl else x
        w = torch.randn(ci, co, k, k, generator=g)
        x.requires_grad_()
        w.requires_grad_()
        y = X.conv_transpose2d(x, w, None, [s, s], [p, p], [0, 0], 1, [1, 1])
        ref = F.conv_transpose2d(x.double(), w.double(), None, s, p)
        gy = torch.randn(ref.shape, generator=g, dtype=torch.float64)
        gx, gw = torch.autograd.grad(y, (x, w), gy.float())
        gx_ref, gw_ref = torch.autograd.grad(ref, (x, w), gy)
        assert rel_err(gx, gx_ref) < 1e-5 and rel_err(gw, gw_ref) < 1e-5
