"""convx.functional: argument normalisation and the string paddings ('same', 'valid',
'causal') against references written out by hand."""

import itertools
import os
import shutil
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

import convx
import convx.functional as cf
from helpers import CONV_F, CONV_T_F, generator

CONV = {1: cf.conv1d, 2: cf.conv2d, 3: cf.conv3d}
DW = {1: cf.depthwise_conv1d, 2: cf.depthwise_conv2d, 3: cf.depthwise_conv3d}
CONV_T = {1: cf.conv_transpose1d, 2: cf.conv_transpose2d, 3: cf.conv_transpose3d}
IG = {1: cf.conv1d_input_grad, 2: cf.conv2d_input_grad, 3: cf.conv3d_input_grad}
WG = {1: cf.conv1d_weight_grad, 2: cf.conv2d_weight_grad, 3: cf.conv3d_weight_grad}
D = torch.float64


def _manual_same(x, w, b, dilation, groups, rank):
    """'same' written out: total padding d*(k-1) per dim, half before, the rest after."""
    pad = []
    for i in reversed(range(rank)):
        total = dilation[i] * (w.shape[2 + i] - 1)
        pad += [total // 2, total - total // 2]
    return CONV_F[rank](F.pad(x, pad), w, b, 1, 0, dilation, groups)


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths:UserWarning")
@pytest.mark.parametrize("depthwise", [False, True], ids=["conv", "depthwise"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_padding_same(rank, depthwise):
    gen = generator("same", rank, depthwise)
    kmax = 3 if rank == 3 else 5
    combos = list(itertools.product(range(1, kmax + 1), [1, 2, 3]))  # (kernel, dilation)
    for k, d in combos:
        kernel = [k] + [max(1, k - i) for i in range(1, rank)]  # non-square, odd and even
        dil = [d] + [1 + (d + i) % 3 for i in range(1, rank)]
        sp = [7 if rank < 3 else 5] * rank
        c = 3
        if depthwise:
            w = torch.randn([2 * c, 1] + kernel, generator=gen, dtype=D)
            groups = c
        else:
            w = torch.randn([4, c] + kernel, generator=gen, dtype=D)
            groups = 1
        x = torch.randn([2, c] + sp, generator=gen, dtype=D)
        b = torch.randn(w.shape[0], generator=gen, dtype=D)
        if depthwise:
            out = DW[rank](x, w, b, padding="same", dilation=dil)
        else:
            out = CONV[rank](x, w, b, padding="same", dilation=dil)
        assert out.shape[2:] == x.shape[2:]
        torch.testing.assert_close(out, _manual_same(x, w, b, dil, groups, rank))
        torch.testing.assert_close(out, CONV_F[rank](x, w, b, 1, "same", dil, groups))
        # unbatched too
        unb = (DW[rank](x[0], w, b, padding="same", dilation=dil) if depthwise
               else CONV[rank](x[0], w, b, padding="same", dilation=dil))
        torch.testing.assert_close(unb, out[0])


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_padding_same_gradients(rank):
    """Asymmetric 'same' (even kernel) is differentiable through F.pad."""
    gen = generator("same-grad", rank)
    x = torch.randn([2, 3] + [5] * rank, generator=gen, dtype=D, requires_grad=True)
    w = torch.randn([4, 3] + [2] * rank, generator=gen, dtype=D, requires_grad=True)
    out = CONV[rank](x, w, None, padding="same")
    ref = CONV_F[rank](x, w, None, 1, "same")
    v = torch.randn(ref.shape, generator=gen, dtype=D)
    for a, b in zip(torch.autograd.grad(out, (x, w), v), torch.autograd.grad(ref, (x, w), v)):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("depthwise", [False, True], ids=["conv", "depthwise"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_padding_valid(rank, depthwise):
    gen = generator("valid", rank, depthwise)
    x = torch.randn([2, 2] + [6] * rank, generator=gen, dtype=D)
    w = torch.randn([4, 1 if depthwise else 2] + [3] * rank, generator=gen, dtype=D)
    fn = DW[rank] if depthwise else CONV[rank]
    out = fn(x, w, None, stride=2, padding="valid")  # 'valid' allows strides
    ref = CONV_F[rank](x, w, None, 2, 0, 1, 2 if depthwise else 1)
    torch.testing.assert_close(out, ref)


@pytest.mark.parametrize("depthwise", [False, True], ids=["conv", "depthwise"])
def test_padding_causal(depthwise):
    gen = generator("causal", depthwise)
    for k, d, s in itertools.product([1, 2, 3, 5], [1, 2, 3], [1, 2]):
        c = 3
        x = torch.randn(2, c, 11, generator=gen, dtype=D)
        if depthwise:
            w = torch.randn(2 * c, 1, k, generator=gen, dtype=D)
            groups = c
            out = cf.depthwise_conv1d(x, w, None, stride=s, padding="causal", dilation=d)
        else:
            w = torch.randn(4, c, k, generator=gen, dtype=D)
            groups = 1
            out = cf.conv1d(x, w, None, stride=s, padding="causal", dilation=d)
        ref = F.conv1d(F.pad(x, [d * (k - 1), 0]), w, None, s, 0, d, groups)
        torch.testing.assert_close(out, ref)
        if s == 1:
            assert out.shape[-1] == x.shape[-1]
            # causality: changing input step t changes no output before t
            t = 6
            x2 = x.clone()
            x2[..., t] += 1.0
            out2 = (cf.depthwise_conv1d(x2, w, None, padding="causal", dilation=d) if depthwise
                    else cf.conv1d(x2, w, None, padding="causal", dilation=d))
            assert torch.equal(out2[..., :t], out[..., :t])
            assert not torch.equal(out2[..., t], out[..., t])


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_int_and_tuple_arguments(rank):
    """A single int means the same value for every spatial dimension; tuples and lists work."""
    gen = generator("norm", rank)
    x = torch.randn([2, 4] + [7] * rank, generator=gen, dtype=D)
    w = torch.randn([6, 2] + [3] * rank, generator=gen, dtype=D)
    b = torch.randn(6, generator=gen, dtype=D)
    ref = CONV_F[rank](x, w, b, 2, 1, 2, 2)
    torch.testing.assert_close(CONV[rank](x, w, b, 2, 1, 2, 2), ref)
    torch.testing.assert_close(CONV[rank](x, w, b, (2,) * rank, [1] * rank, (2,) * rank, 2), ref)
    torch.testing.assert_close(
        CONV[rank](x, w, b, stride=2, padding=1, dilation=2, groups=2), ref)
    # transposed, with its argument order (..., output_padding, groups, dilation)
    wt = torch.randn([4, 3] + [3] * rank, generator=gen, dtype=D)
    ref_t = CONV_T_F[rank](x, wt, b, 2, 1, 1, 2, 1)
    torch.testing.assert_close(CONV_T[rank](x, wt, b, 2, 1, 1, 2, 1), ref_t)
    torch.testing.assert_close(
        CONV_T[rank](x, wt, b, stride=[2] * rank, padding=1, output_padding=(1,) * rank,
                     groups=2, dilation=1), ref_t)
    # gradients, with torch.Size sizes
    gy = torch.randn(ref.shape, generator=gen, dtype=D)
    torch.testing.assert_close(IG[rank](x.shape, w, gy, 2, 1, 2, 2),
                               getattr(torch.nn.grad, f"conv{rank}d_input")(x.shape, w, gy, 2, 1, 2, 2))
    torch.testing.assert_close(WG[rank](x, w.shape, gy, 2, 1, 2, 2),
                               getattr(torch.nn.grad, f"conv{rank}d_weight")(x, w.shape, gy, 2, 1, 2, 2))
    # depthwise defaults
    wd = torch.randn([8, 1] + [3] * rank, generator=gen, dtype=D)
    torch.testing.assert_close(DW[rank](x, wd), CONV_F[rank](x, wd, None, 1, 0, 1, 4))


def test_package():
    assert convx.__version__ == "0.1.0"
    for name in cf.__all__:
        assert callable(getattr(cf, name))
    assert callable(convx.convert)
    assert os.path.isfile(convx.library_path or "") or hasattr(torch.ops.convx, "conv2d")


def test_import_does_not_import_onnx():
    code = "import sys, convx; assert 'onnx' not in sys.modules, 'onnx imported'"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(convx.__file__))] + sys.path))
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=300)


def test_library_from_environment_variable(tmp_path):
    """With no library beside the package, $CONVX_LIBRARY is used."""
    lib = convx.library_path
    if lib is None:
        pytest.skip("convx was loaded by someone else")
    pkg = tmp_path / "convx"
    shutil.copytree(os.path.dirname(convx.__file__), pkg,
                    ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    code = ("import convx, torch; print(convx.library_path); "
            "print(torch.ops.convx.conv1d(torch.ones(1, 1, 3), torch.ones(1, 1, 2)).tolist())")
    env = dict(os.environ, PYTHONPATH=str(tmp_path), CONVX_LIBRARY=lib)
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [lib, "[[[2.0,", "2.0]]]"]


def test_missing_library_is_a_clear_import_error(tmp_path):
    """A copy of the package with no library anywhere fails with ImportError naming it."""
    pkg = tmp_path / "convx"
    shutil.copytree(os.path.dirname(convx.__file__), pkg,
                    ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    code = "import convx"
    env = dict(os.environ, PYTHONPATH=str(tmp_path), CONVX_LIBRARY=str(tmp_path / "nope.so"))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode != 0
    assert "ImportError" in proc.stderr and "libconvx.so" in proc.stderr, proc.stderr
