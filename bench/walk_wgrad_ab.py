"""Temporary A/B (session 12, cnx): the 7 x 7 weight-grad alone, main's kernels
(CONVX_WALK_WGRAD=off) against walk_wgrad2d, alternating in one process, old first and last."""

import os
import sys

import torch

import convx  # noqa: F401
sys.path.insert(0, os.path.dirname(__file__))
from gpu_bench import DTYPES, grad_like, make_input  # noqa: E402
from timing import time_pair_ms  # noqa: E402

CASES = [("convnext_56", 64, 96, 56), ("convnext_14", 64, 384, 14)]


def with_knob(val, fn):
    def f():
        os.environ["CONVX_WALK_WGRAD"] = val
        return fn()
    return f


wg = torch.ops.convx.conv2d_weight_grad
print(f"{'row':12} {'dt':5} {'lay':5} | {'old ms':>8} {'new ms':>8} {'old2 ms':>8} | {'x':>5} | relerr old/new vs fp64")
for name, N, C, S in CASES:
    for dn in ("fp32", "fp16", "bf16"):
        for lay in ("nchw", "nhwc"):
            x = make_input(N, C, (S, S), DTYPES[dn], lay)
            dy = grad_like(torch.empty(N, C, S, S, device="cuda", dtype=DTYPES[dn]), lay)
            call = lambda: wg(x, [C, 1, 7, 7], dy, [1, 1], [3, 3], [1, 1], C)  # noqa: E731
            old, new = with_knob("off", call), with_knob("on", call)
            ref = torch.nn.grad.conv2d_weight(x[:8].double(), (C, 1, 7, 7), dy[:8].double(), 1, 3, 1, C)
            sub = lambda: wg(x[:8], [C, 1, 7, 7], dy[:8], [1, 1], [3, 3], [1, 1], C)  # noqa: E731
            sc = float(ref.abs().max())
            eo = float((with_knob("off", sub)().double() - ref).abs().max()) / sc
            en = float((with_knob("on", sub)().double() - ref).abs().max()) / sc
            t_old, t_new = time_pair_ms(old, new, 30)
            t_old2, _ = time_pair_ms(old, new, 10)
            print(f"{name:12} {dn:5} {lay:5} | {t_old:8.4f} {t_new:8.4f} {t_old2:8.4f} | {t_old / t_new:5.2f} | "
                  f"{eo:.1e} / {en:.1e}", flush=True)
os.environ.pop("CONVX_WALK_WGRAD")
