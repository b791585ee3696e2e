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
