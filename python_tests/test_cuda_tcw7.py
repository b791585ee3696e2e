"""The ring-staged tensor-core NCHW 7 x 7 weight-grad (ops/depthwise_conv/cuda/tc_wgrad7_nc.cuh,
session 14): rows wider than 32, fp16 / bf16 and fp32 as TF32 (only while
torch.backends.cudnn.allow_tf32 is true), against float64 on the same rounded data, on poisoned
memory, bitwise repeatable."""

import pytest
import torch

if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

from test_cuda import DEV, poison  # noqa: E402

# (N, C, size, padding): ConvNeXt's 56 x 56 (one 56-row tile, several chunks per channel); 49 rows;
# odd widths (value by value) with padding 6 and 0; rows wider than 64 (two column tiles); 70 rows
# (two row tiles); rows 32 wide and ConvNeXt's 14 x 14 (declined: the other kernels); batch 0.
TCW7_CASES = [
    (4, 8, (56, 56), (3, 3)),
    (3, 5, (49, 56), (3, 3)),
    (1, 4, (11, 37), (6, 6)),
    (2, 3, (12, 37), (0, 0)),
    (3, 2, (9, 70), (3, 2)),
    (1, 3, (70, 40), (3, 3)),
    (2, 3, (9, 32), (3, 3)),
    (2, 6, (14, 14), (3, 3)),
    (0, 4, (56, 56), (3, 3)),
]


@pytest.mark.parametrize("placement", ["nchw", "nchw_off1"])
@pytest.mark.parametrize(
    "dtype,tf32",
    [(torch.float16, True), (torch.bfloat16, True), (torch.float32, True), (torch.float32, False)],
    ids=["fp16", "bf16", "fp32_tf32", "fp32_exact"],
)
def test_depthwise_tcw7_nc(dtype, tf32, placement):
    """fp32 with allow_tf32 on rows wider than 32: within 1e-3 of the scale and not within 1e-5
    (the TF32 path ran); without it within 2e-5 (exact kernels)."""
    import torch.nn.functional as F

    op = torch.ops.convx.conv2d_weight_grad

    def place(t):
        if placement == "nchw":
            return t.to(DEV, dtype)
        flat = torch.empty(t.numel() + 1, device=DEV, dtype=dtype)[1:]
        return flat.view(t.shape).copy_(t)

    with torch.backends.cudnn.flags(enabled=True, allow_tf32=tf32):
        for i, (N, C, size, p) in enumerate(TCW7_CASES):
            gen = torch.Generator().manual_seed(1400 + i)
            x = place(torch.randn(N, C, *size, generator=gen))
            w = torch.randn(C, 1, 7, 7, generator=gen).to(DEV, dtype)
            wr = w.double().requires_grad_()
            ref = F.conv2d(x.double(), wr, None, 1, p, 1, C)
            gy = place(torch.randn(ref.shape, generator=gen))
            if N > 0:
                (gw_ref,) = torch.autograd.grad(ref, (wr,), gy.double())
            else:
                gw_ref = torch.zeros_like(wr)
            what = f"case {i} {dtype} tf32={tf32} {placement}"
            taken_tf32 = dtype == torch.float32 and tf32 and N > 0 and size[1] > 32
            tol = {torch.float16: 4e-3, torch.bfloat16: 2e-2}.get(dtype, 1e-3 if tf32 else 2e-5)
            poison()
            gw = op(x, list(w.shape), gy, [1, 1], list(p), [1, 1], C)
            poison()
            gw2 = op(x, list(w.shape), gy, [1, 1], list(p), [1, 1], C)
            assert not torch.isnan(gw).any(), f"{what}: NaN (unwritten element)"
            scale = max(1.0, float(gw_ref.abs().max()))
            e = float((gw.double() - gw_ref).abs().max()) / scale
            assert e <= tol, f"{what}: error {e:.2e} of the scale, above {tol:.0e}"
            if taken_tf32:
                assert e > 1e-5, f"{what}: error {e:.1e}: the TF32 path did not run"
            assert torch.equal(gw, gw2), f"{what}: not bitwise repeatable"
