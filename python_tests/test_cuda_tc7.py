"""The tensor-core 7 x 7 NCHW kernel (ops/depthwise_conv/cuda/tc7_nc.cuh, session 13): ConvNeXt's
56 x 56 and 14 x 14 planes, forward and stride-1 input-grad, fp16 / bf16 and fp32 as TF32 (only
while torch.backends.cudnn.allow_tf32 is true), against float64 on the same rounded data."""

import pytest
import torch

if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

from test_cuda import DEV, poison  # noqa: E402

# (N, C, size, bias): ConvNeXt's 56 x 56 with several channels per block range; heights 49 (the
# last warp stores one row) and 64 (every warp full); a width of 52 (fp32 only); ConvNeXt's 14 x 14
# (16-bit: a warp per plane, partial steps of 4 planes), height 16, 9 x 20; batch 0. Sizes the
# kernel declines (16-bit off1 placements, fp32 small planes, the widths of the other dtype) run
# on the other kernels and must be as correct.
TC7_CASES = [
    (2, 8, (56, 56), True),
    (3, 5, (49, 56), False),
    (1, 3, (64, 56), True),
    (2, 3, (50, 52), True),
    (3, 7, (14, 14), True),
    (2, 3, (16, 14), False),
    (1, 4, (9, 20), True),
    (0, 4, (56, 56), True),
]


def _tf32_taken(N, size):
    """Whether fp32 takes tc7_nc on this size (heights 49-64, even widths of 7 N-blocks of 8; the
    14 x 14 planes stay on the exact nc_small_planes, faster there)."""
    H, W = size
    return N > 0 and W % 2 == 0 and 49 <= H <= 64 and (W + 7) // 8 == 7


def _place(t, dtype, placement):
    if placement == "nchw":
        return t.to(DEV, dtype)
    if placement == "nchw_off1":
        flat = torch.empty(t.numel() + 1, device=DEV, dtype=dtype)[1:]
        return flat.view(t.shape).copy_(t)
    wide = torch.empty(*t.shape[:-1], 2 * t.shape[-1], device=DEV, dtype=dtype)[..., ::2]
    return wide.copy_(t)


def _check_cases(cases, k, seed, dtype, tf32, placement, taken):
    """Forward (operator and autograd) and input-grad of a k x k filter at padding k // 2 on each
    case against float64, on poisoned memory; taken(N, size): whether fp32 runs as TF32 there."""
    import torch.nn.functional as F

    ops = torch.ops.convx
    p = k // 2
    with torch.backends.cudnn.flags(enabled=True, allow_tf32=tf32):
        for i, (N, C, size, has_bias) in enumerate(cases):
            gen = torch.Generator().manual_seed(seed + i)
            x = _place(torch.randn(N, C, *size, generator=gen), dtype, placement)
            w = torch.randn(C, 1, k, k, generator=gen).to(DEV, dtype)
            b = torch.randn(C, generator=gen).to(DEV, dtype) if has_bias else None
            bd = None if b is None else b.double()
            ref = F.conv2d(x.double(), w.double(), bd, 1, p, 1, C)
            gy = _place(torch.randn(ref.shape, generator=gen), dtype, placement)
            gx_ref = torch.nn.grad.conv2d_input(x.shape, w.double(), gy.double(), 1, p, 1, C)
            what = f"case {i} k{k} {dtype} tf32={tf32} {placement}"
            taken_tf32 = dtype == torch.float32 and tf32 and taken(N, size)
            tol = {torch.float16: 4e-3, torch.bfloat16: 2e-2}.get(dtype, 1e-3 if tf32 else 2e-5)

            def err(out, r, name):
                assert not torch.isnan(out).any(), f"{what} {name}: NaN (unwritten element)"
                scale = max(1.0, float(r.abs().max())) if r.numel() else 1.0
                e = float((out.double() - r).abs().max()) / scale if r.numel() else 0.0
                assert e <= tol, f"{what} {name}: error {e:.2e} of the output scale, above {tol:.0e}"
                if taken_tf32:
                    assert e > 1e-5, f"{what} {name}: error {e:.1e}: the TF32 path did not run"

            poison()
            y = ops.depthwise_conv2d(x, w, b, [1, 1], [p, p], [1, 1])
            err(y, ref, "forward")
            poison()
            gx = ops.conv2d_input_grad(list(x.shape), w, gy, [1, 1], [p, p], [1, 1], C)
            err(gx, gx_ref, "input-grad")
            xa = x.detach().clone().requires_grad_()
            poison()
            ya = ops.depthwise_conv2d(xa, w, b, [1, 1], [p, p], [1, 1])
            ya.backward(gy)
            err(ya.detach(), ref, "autograd forward")
            err(xa.grad, gx_ref, "autograd input-grad")


DTYPE_CASES = pytest.mark.parametrize(
    "dtype,tf32",
    [(torch.float16, True), (torch.bfloat16, True), (torch.float32, True), (torch.float32, False)],
    ids=["fp16", "bf16", "fp32_tf32", "fp32_exact"],
)


@pytest.mark.parametrize("placement", ["nchw", "nchw_off1", "strided"])
@DTYPE_CASES
def test_depthwise_tc7_nc(dtype, tf32, placement):
    """7 x 7 padding 3. fp32 with allow_tf32: within 1e-3 of the output scale and, on the planes
    the kernel takes (also 4 bytes off alignment: 4-byte copies), not within 1e-5 (the TF32 path
    ran); without it within 2e-5 (exact kernels)."""
    _check_cases(TC7_CASES, 7, 1300, dtype, tf32, placement, _tf32_taken)


# tcnc (session 14): 5 x 5 padding 2 (N, C, size, bias): EfficientNet's 28 x 28 (16-bit: two
# warps per plane), heights 18 (the second warp two rows) and 32, width 24, batch 0; 25 x 28 and
# the off1 placements the 16-bit kernel declines (output planes / input rows not whole copies)
# run on nc_plane_cp and must be as correct.
TC5_CASES = [
    (2, 8, (28, 28), True),
    (3, 5, (18, 28), False),
    (1, 3, (32, 28), True),
    (2, 3, (25, 28), True),
    (1, 4, (20, 24), True),
    (0, 4, (28, 28), True),
]


@pytest.mark.parametrize("placement", ["nchw", "nchw_off1", "strided"])
@DTYPE_CASES
def test_depthwise_tc5_nc(dtype, tf32, placement):
    """5 x 5 padding 2 (16-bit: tc7_nc<T, 5, ...>), as test_depthwise_tc7_nc; fp32 stays exact
    under either allow_tf32 (the TF32 5 x 5 was slower than nc_plane_cp: not routed)."""
    _check_cases(TC5_CASES, 5, 1400, dtype, tf32, placement, lambda N, size: False)
