"""The NCHW 7 x 7 16-bit weight-grad on tensor cores reducing over rows
(ops/depthwise_conv/cuda/tc_wgrad7_rows.cuh, session 14): rows wider than 32, fp16 / bf16, against
float64 on the same rounded data, on poisoned memory, bitwise repeatable; fp32 on the same shapes
stays exact (the CUDA-core kernels)."""

import pytest
import torch

if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

from test_cuda import DEV, poison  # noqa: E402

# (N, C, size, padding): ConvNeXt's 56 x 56 (one 56-row tile, several chunks per channel); 49 rows;
# odd widths (value by value) with padding 6 and 0; padding 1, 2, 5 (the dy column offsets 2, 4, 6);
# rows wider than 64 (two column tiles); 70 rows (two row tiles); rows 32 wide and ConvNeXt's
# 14 x 14 (declined: the other kernels); batch 0.
TCW7_CASES = [
    (4, 8, (56, 56), (3, 3)),
    (3, 5, (49, 56), (3, 3)),
    (1, 4, (11, 37), (6, 6)),
    (2, 3, (12, 37), (0, 0)),
    (3, 2, (9, 70), (3, 2)),
    (2, 3, (13, 40), (1, 1)),
    (2, 3, (12, 48), (2, 5)),
    (1, 3, (70, 40), (3, 3)),
    (2, 3, (9, 32), (3, 3)),
    (2, 6, (14, 14), (3, 3)),
    (0, 4, (56, 56), (3, 3)),
]


@pytest.mark.parametrize("placement", ["nchw", "nchw_off1"])
@pytest.mark.parametrize(
    "dtype,tf32",
    [(torch.float16, True), (torch.bfloat16, True), (torch.float32, True), (torch.float32, False)],
    ids=["fp16", "bf16", "fp32_tf32flag", "fp32"],
)
def test_depthwise_tcw7r_nc(dtype, tf32, placement):
    """fp32 within 2e-5 of the scale with and without allow_tf32 (the weight-grad stays exact)."""
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
            tol = {torch.float16: 4e-3, torch.bfloat16: 2e-2}.get(dtype, 2e-5)
            poison()
            gw = op(x, list(w.shape), gy, [1, 1], list(p), [1, 1], C)
            poison()
            gw2 = op(x, list(w.shape), gy, [1, 1], list(p), [1, 1], C)
            assert not torch.isnan(gw).any(), f"{what}: NaN (unwritten element)"
            scale = max(1.0, float(gw_ref.abs().max()))
            e = float((gw.double() - gw_ref).abs().max()) / scale
            assert e <= tol, f"{what}: error {e:.2e} of the scale, above {tol:.0e}"
            assert torch.equal(gw, gw2), f"{what}: not bitwise repeatable"
