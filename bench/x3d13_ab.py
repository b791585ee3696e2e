"""Temporary A/B of session 13's x3d branch (removed after the measurement): X3D N16 C192
16x56x56 bf16 5x3x3 p(2,1,1), forward / input-grad / weight-grad: depth3d_nc_units /
depth3d_cl_smem / cl_wgrad_d3s with main's staging (CONVX_X3D_AB=old) against the staging at
precomputed shared addresses (default), alternating in one process, the baseline first and last;
CUDA-event medians of 30."""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convx  # noqa: F401,E402
from timing import time_ms  # noqa: E402

ops = torch.ops.convx
bf = torch.bfloat16
N, C, sp, pad, one = 16, 192, (16, 56, 56), [2, 1, 1], [1, 1, 1]
torch.manual_seed(0)
for layout in ("ncdhw", "ndhwc"):
    x = torch.randn(N, C, *sp, device="cuda", dtype=bf)
    w = torch.randn(C, 1, 5, 3, 3, device="cuda", dtype=bf)
    b = torch.randn(C, device="cuda", dtype=bf)
    gy = torch.randn(N, C, *sp, device="cuda", dtype=bf)
    if layout == "ndhwc":
        x = x.contiguous(memory_format=torch.channels_last_3d)
        gy = gy.contiguous(memory_format=torch.channels_last_3d)
    f = lambda: ops.depthwise_conv3d(x, w, b, one, pad, one)  # noqa: E731
    ig = lambda: ops.conv3d_input_grad(list(x.shape), w, gy, one, pad, one, C)  # noqa: E731
    wg = lambda: ops.conv3d_weight_grad(x, list(w.shape), gy, one, pad, one, C)  # noqa: E731
    first = None
    for v in ("old", "fast", "old", "fast", "old"):
        os.environ["CONVX_X3D_AB"] = v
        tf, ti, tw = time_ms(f, 30), time_ms(ig, 30), time_ms(wg, 30)
        y, gx = f(), ig()
        gw = wg()
        rep = torch.equal(y, f()) and torch.equal(gx, ig()) and torch.equal(gw, wg())
        if first is None:
            first = (y, gx, gw)
        same = all(torch.equal(a, b) for a, b in zip(first, (y, gx, gw)))
        print(f"{layout} {v:5s} fwd {tf:.4f} ms  input-grad {ti:.4f}  weight-grad {tw:.4f}  fwd+bwd {tf + ti + tw:.4f}"
              f"  bitwise as the first: {same}  repeatable {rep}", flush=True)
    os.environ.pop("CONVX_X3D_AB")
