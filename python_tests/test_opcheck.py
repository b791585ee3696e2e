"""torch.library.opcheck on every operator: schema, autograd registration, fake tensors (Meta
kernels agree with the real ones, strides included) and AOT dispatch with dynamic shapes."""

import pytest
import torch

from helpers import ALL_OPS, CHANNELS_LAST, convx_op, generator, random_case, requires_grad_copy

# Per operator: a batched contiguous call with bias, a channels_last one (for rank 1 an (N, L, C)
# tensor viewed as (N, C, L)) and an unbatched one.
VARIANTS = ["contiguous", "channels_last", "unbatched"]


def _case(family, rank, variant):
    gen = generator("opcheck", family, rank, variant)
    layouts = {"contiguous": ("contiguous",), "channels_last": ("channels_last",),
               "unbatched": ("contiguous", "strided")}[variant]
    batches = (None,) if variant == "unbatched" else (2, 3)
    for _ in range(100):
        case = random_case(family, rank, gen, layouts=layouts, batches=batches,
                           bias=variant == "contiguous")
        if variant == "channels_last":
            # make sure the activations are really channels-last (channels > 1, spatial > 1)
            acts = [t for n, t in case.tensors.items() if n in ("input", "grad_output")]
            if any(t.shape[1] < 2 or min(t.shape[2:]) < 2 for t in acts):
                continue
            if rank > 1:
                fmt = CHANNELS_LAST[rank]
                assert all(t.is_contiguous(memory_format=fmt) for t in acts)
        return case
    raise AssertionError("no case")


# torch's own AOT-dispatch checker reads .grad of the non-leaf tensors it makes.
@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf:UserWarning")
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("family,rank", ALL_OPS)
def test_opcheck(family, rank, variant):
    case = requires_grad_copy(_case(family, rank, variant))
    op = convx_op(family, rank).default
    torch.library.opcheck(op, case.convx_args())


def test_ops_are_pt2_compliant():
    for family, rank in ALL_OPS:
        op = convx_op(family, rank).default
        assert torch.Tag.pt2_compliant_tag in op.tags


@pytest.mark.parametrize("shape,rank", [((2, 3, 5), 1), ((3, 5, 4), 2), ((2, 4, 3, 5), 2),
                                        ((2, 4, 3, 5, 2), 3)])
def test_opcheck_bias_grad(shape, rank):
    """The private bias gradient of the closure: schema, Meta kernel, dynamic shapes. It has no
    autograd formula (the closure differentiates through at::sum instead), so the autograd
    registration check is left out."""
    g = torch.randn(shape, dtype=torch.float64)
    torch.library.opcheck(torch.ops.convx._bias_grad.default, (g, rank),
                          test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_static",
                                      "test_aot_dispatch_dynamic"))
    channel = g.dim() - rank - 1
    assert torch.equal(torch.ops.convx._bias_grad(g, rank),
                       g.sum([d for d in range(g.dim()) if d != channel]))
    assert torch.Tag.pt2_compliant_tag in torch.ops.convx._bias_grad.default.tags


def test_bias_grad_errors():
    with pytest.raises(RuntimeError, match="expected rank to be 1, 2 or 3, but got rank=0"):
        torch.ops.convx._bias_grad(torch.randn(2, 3), 0)
    with pytest.raises(RuntimeError, match="expected grad_output with 3 .unbatched. or 4 .batched. dims, got 2"):
        torch.ops.convx._bias_grad(torch.randn(2, 3), 2)
