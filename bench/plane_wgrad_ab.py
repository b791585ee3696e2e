"""Temporary A/B (session 13, w7): the 7 x 7 NCHW weight-grad alone, main's kernels
(CONVX_PWG=off: walk_wgrad2d / tc_wgrad2d) against plane_wgrad2d's variants (CONVX_PWG =
"<tile target>,<waves>"), each alternating with main in one process; main also last."""

import os
import sys

import torch

import convx  # noqa: F401
sys.path.insert(0, os.path.dirname(__file__))
from gpu_bench import DTYPES, grad_like, make_input  # noqa: E402
from timing import time_pair_ms  # noqa: E402

CASES = [("convnext_56", 64, 96, 56), ("convnext_14", 64, 384, 14)]
VARIANTS = [("128,1", "128,1"), ("64,1", "64,1"), ("128,2", "128,2"), ("32,1", "32,1"), ("256,2", "256,2")]
ops = torch.ops.convx


def under(val, fn):
    def f():
        os.environ["CONVX_PWG"] = val
        return fn()
    return f


print("ms (CUDA-event medians of 30, each variant alternating with main; main first and last); "
      "relerr = max |out - fp64| / max |fp64| on 8 samples")
for name, N, C, S in CASES:
    for dn in ("fp32", "fp16", "bf16"):
        x = make_input(N, C, (S, S), DTYPES[dn], "nchw")
        dy = grad_like(torch.empty(N, C, S, S, device="cuda", dtype=DTYPES[dn]), "nchw")
        xd, dyd = x[:8].double(), dy[:8].double()
        call = lambda: ops.conv2d_weight_grad(x, [C, 1, 7, 7], dy, [1, 1], [3, 3], [1, 1], C)  # noqa: E731
        sub = lambda: ops.conv2d_weight_grad(x[:8], [C, 1, 7, 7], dy[:8], [1, 1], [3, 3], [1, 1], C)  # noqa: E731
        ref = torch.nn.grad.conv2d_weight(xd, (C, 1, 7, 7), dyd, 1, 3, 1, C)
        sc = float(ref.abs().max())
        main = under("off", call)
        errs = [float((under("off", sub)().double() - ref).abs().max()) / sc]
        times, t_main = [], None
        for vn, val in VARIANTS + [("main-last", "off")]:
            errs.append(float((under(val, sub)().double() - ref).abs().max()) / sc)
            tm, tv = time_pair_ms(main, under(val, call), 30)
            t_main = tm if t_main is None else t_main
            times.append(f"{vn} {tv:.4f} ({tm / tv:.2f}x)")
        print(f"{name:12} {dn:5} nchw  wgrad | main {t_main:.4f} | " + " | ".join(times) +
              f" | relerr max {max(errs[1:]):.1e} (main {errs[0]:.1e})", flush=True)
os.environ.pop("CONVX_PWG", None)
