"""Every operator against its aten reference on random configurations."""

import pytest
import torch

from helpers import (ALL_OPS, CHANNELS_LAST, FAMILIES, RANKS, Case, abs_bound, cases,
                     generator, random_case)

# (rank -> chunks) x 20 configurations: 200 per operator for rank 2, 100 for ranks 1 and 3.
CHUNK = 20
CHUNKS = {1: 5, 2: 10, 3: 5}
FORWARD_PARAMS = [(f, r, c) for r in RANKS for f in FAMILIES for c in range(CHUNKS[r])]


@pytest.mark.parametrize("family,rank,chunk", FORWARD_PARAMS)
def test_float64_matches_reference(family, rank, chunk):
    for case in cases(family, rank, CHUNK, "f64", chunk):
        out = case.run_convx()
        ref = case.run_ref()
        assert out.shape == ref.shape, case
        assert out.dtype == ref.dtype, case
        torch.testing.assert_close(out, ref, rtol=1e-10, atol=1e-10, msg=lambda m: f"{case}\n{m}")


def test_configurations_cover_the_space():
    """The generator really produces what the suite claims to test."""
    seen = {"batch": set(), "unbatched": False, "groups": set(), "stride": set(),
            "padding": set(), "dilation": set(), "layout_cl": False, "layout_strided": False,
            "output_padding": set(), "kernel": set()}
    for family in FAMILIES:
        for case in cases(family, 2, 60, "coverage"):
            t = case.tensors.get("input")
            if t is None:
                t = case.tensors["grad_output"]
            if case.batched():
                seen["batch"].add(t.shape[0])
            else:
                seen["unbatched"] = True
            seen["groups"].add(case.groups)
            seen["stride"].update(case.stride)
            seen["padding"].update(case.padding)
            seen["dilation"].update(case.dilation)
            seen["output_padding"].update(case.output_padding)
            w = case.tensors.get("weight")
            if w is not None:
                seen["kernel"].update(w.shape[2:])
            if t.dim() == 4 and t.shape[1] > 1 and t.is_contiguous(memory_format=torch.channels_last) \
                    and not t.is_contiguous():
                seen["layout_cl"] = True
            if not t.is_contiguous() and not t.is_contiguous(memory_format=torch.channels_last):
                seen["layout_strided"] = True
    assert seen["batch"] == {0, 1, 3}
    assert seen["unbatched"] and seen["layout_cl"] and seen["layout_strided"]
    assert seen["groups"] >= {1, 2, 3, 4}
    assert seen["stride"] == {1, 2, 3} and seen["dilation"] == {1, 2, 3}
    assert seen["padding"] == {0, 1, 2, 3} and seen["output_padding"] == {0, 1, 2}
    assert seen["kernel"] == set(range(1, 8))


# ---- lower precision against the float64 reference ----

# Error allowed, in units of eps * sum(|terms|): accumulation in float32 plus one or two
# roundings to the output dtype.
PRECISION = {torch.float32: 8.0, torch.float16: 4.0, torch.bfloat16: 4.0}


@pytest.mark.parametrize("dtype", list(PRECISION), ids=lambda d: str(d)[6:])
@pytest.mark.parametrize("family,rank", ALL_OPS)
def test_low_precision_matches_float64(family, rank, dtype):
    eps = torch.finfo(dtype).eps
    for case in cases(family, rank, 8, "lowp", dtype, dtype=dtype):
        out = case.run_convx()
        assert out.dtype == dtype, case
        ref = case.run_ref(case.map_tensors(lambda t: t.double()))
        assert out.shape == ref.shape, case
        bound = PRECISION[dtype] * eps * abs_bound(case) + 1e-30
        err = (out.double() - ref).abs()
        assert bool((err <= bound).all()), f"{case}: max error {err.max()} (bound {bound.max()})"


# ---- output memory format ----

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("family,which", [
    ("conv", "input"), ("conv", "weight"), ("conv_transpose", "input"),
    ("conv_transpose", "weight"), ("depthwise_conv", "input"),  # a [C*m, 1, *k] weight has no layout
])
@pytest.mark.parametrize("rank", [2, 3])
def test_channels_last_output_like_aten(family, rank, which, dtype):
    """channels_last input (or weight) -> channels_last output, as aten's main CPU paths give.

    aten's float64 3-D convolutions fall back to a kernel that always returns a contiguous
    tensor; convx keeps its one rule there (channels_last in -> channels_last out)."""
    gen = generator("cl", family, rank, which, dtype)
    fmt = CHANNELS_LAST[rank]
    for groups, stride, dilation, spatial in [(1, 1, 1, 6), (2, 2, 1, 7), (1, 1, 2, 8)]:
        cin, cout = 4, 6 if family != "depthwise_conv" else 8
        g = 4 if family == "depthwise_conv" else groups
        if family == "conv_transpose":
            w_shape = [cin, cout // g] + [3] * rank
        else:
            w_shape = [cout, cin // g] + [3] * rank
        x = torch.randn([2, cin] + [spatial] * rank, generator=gen, dtype=dtype)
        w = torch.randn(w_shape, generator=gen, dtype=dtype)
        b = torch.randn(cout, generator=gen, dtype=dtype)
        if which == "input":
            x = x.contiguous(memory_format=fmt)
        else:
            w = w.contiguous(memory_format=fmt)
        case = Case(family, rank, {"input": x, "weight": w, "bias": b}, [stride] * rank,
                    [1] * rank, [dilation] * rank, g,
                    [0] * rank if family == "conv_transpose" else [])
        out, ref = case.run_convx(), case.run_ref()
        if rank == 3 and dtype == torch.float64:
            assert out.is_contiguous(memory_format=fmt), case
        else:
            assert ref.is_contiguous(memory_format=fmt)  # aten's rule, as this test assumes
            assert out.is_contiguous(memory_format=fmt), case
            assert out.stride() == ref.stride(), case
        tol = 1e-10 if dtype == torch.float64 else 1e-4
        torch.testing.assert_close(out, ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("family", ["conv_input_grad", "conv_weight_grad"])
@pytest.mark.parametrize("rank", [2, 3])
def test_channels_last_grad_ops_values(family, rank):
    """The gradient operators on channels_last operands give the reference values in a dense
    layout."""
    gen = generator("cl-grad", family, rank)
    fmt = CHANNELS_LAST[rank]
    for _ in range(10):
        case = random_case(family, rank, gen, layouts=("contiguous",), batches=(2, 3))
        case.tensors = case.map_tensors(lambda t: t.contiguous(memory_format=fmt))
        out, ref = case.run_convx(), case.run_ref()
        assert out.is_contiguous() or out.is_contiguous(memory_format=fmt), case
        torch.testing.assert_close(out, ref, rtol=1e-10, atol=1e-10)
