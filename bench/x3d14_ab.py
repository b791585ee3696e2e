"""Temporary A/B of session 14's x3d branch (removed after the measurement): X3D N16 C192
16x56x56 bf16 5x3x3 p(2,1,1). NCDHW weight-grad (tcw3_nc): main's launch (CONVX_X3D_AB unset)
against w3 (whole waves), b4 (4 blocks per SM) and b4d (b4, depth tiles first); NDHWC forward /
input-grad / weight-grad: main's 1 x 8 outputs per thread against q (2 x 4). Variants alternate in
one process, the baseline first and last; CUDA-event medians of 30."""

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


def rel(a, b):
    return ((a.float() - b.float()).abs().max() / b.float().abs().max()).item()


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
    variants = ("old", "w3", "b4", "b4d") * 2 + ("old",) if layout == "ncdhw" else ("old", "q") * 3 + ("old",)
    first = None
    for v in variants:
        if v == "old":
            os.environ.pop("CONVX_X3D_AB", None)
        else:
            os.environ["CONVX_X3D_AB"] = v
        tw = time_ms(wg, 30)
        gw = wg()
        rep = torch.equal(gw, wg())
        if layout == "ndhwc":
            tf, ti = time_ms(f, 30), time_ms(ig, 30)
            y, gx = f(), ig()
            rep = rep and torch.equal(y, f()) and torch.equal(gx, ig())
            if first is None:
                first = (y, gx, gw)
            print(f"{layout} {v:4s} fwd {tf:.4f} ms  input-grad {ti:.4f}  weight-grad {tw:.4f}  fwd+bwd {tf + ti + tw:.4f}"
                  f"  rel diff vs old fwd {rel(y, first[0]):.1e} ig {rel(gx, first[1]):.1e} wg {rel(gw, first[2]):.1e}"
                  f"  repeatable {rep}", flush=True)
        else:
            if first is None:
                first = gw
            print(f"{layout} {v:4s} weight-grad {tw:.4f} ms  rel diff vs old {rel(gw, first):.1e}"
                  f"  repeatable {rep}", flush=True)
    os.environ.pop("CONVX_X3D_AB", None)
