"""Temporary A/B (session 13, w7): the 7 x 7 weight-grad alone, main's kernels (walk_wgrad2d /
tc_wgrad2d) against the staged kernels' variants, each alternating with main in one process; main
also last. NCHW: CONVX_PWG = off (main) | "<tile target>,<waves>" (plane_wgrad2d); NHWC:
CONVX_CLBW = off | "<band rows>,<waves>" (cl_band_wgrad2d)."""

import os
import sys

import torch

import convx  # noqa: F401
sys.path.insert(0, os.path.dirname(__file__))
from gpu_bench import DTYPES, grad_like, make_input  # noqa: E402
from timing import time_pair_ms  # noqa: E402

CASES = [("convnext_56", 64, 96, 56), ("convnext_14", 64, 384, 14)]
LAYOUTS = sys.argv[1].split(",") if len(sys.argv) > 1 else ["nchw", "nhwc"]
VARIANTS = {"nchw": ("CONVX_PWG", ["128,1", "64,1", "128,2", "32,1", "256,2"]),
            "nhwc": ("CONVX_CLBW", ["8,1", "4,1", "16,1", "8,2", "4,2"])}
ops = torch.ops.convx


def under(knob, val, fn):
    def f():
        os.environ[knob] = val
        return fn()
    return f


print("ms (CUDA-event medians of 30, each variant alternating with main; main first and last); "
      "relerr = max |out - fp64| / max |fp64| on 8 samples")
for name, N, C, S in CASES:
    for dn in ("fp32", "fp16", "bf16"):
        for lay in LAYOUTS:
            knob, variants = VARIANTS[lay]
            x = make_input(N, C, (S, S), DTYPES[dn], lay)
            dy = grad_like(torch.empty(N, C, S, S, device="cuda", dtype=DTYPES[dn]), lay)
            xd, dyd = x[:8].double(), dy[:8].double()
            call = lambda: ops.conv2d_weight_grad(x, [C, 1, 7, 7], dy, [1, 1], [3, 3], [1, 1], C)  # noqa: E731
            sub = lambda: ops.conv2d_weight_grad(x[:8], [C, 1, 7, 7], dy[:8], [1, 1], [3, 3], [1, 1], C)  # noqa: E731
            ref = torch.nn.grad.conv2d_weight(xd, (C, 1, 7, 7), dyd, 1, 3, 1, C)
            sc = float(ref.abs().max())
            main = under(knob, "off", call)
            errs = [float((under(knob, "off", sub)().double() - ref).abs().max()) / sc]
            times, t_main = [], None
            for val in variants + ["off"]:
                errs.append(float((under(knob, val, sub)().double() - ref).abs().max()) / sc)
                tm, tv = time_pair_ms(main, under(knob, val, call), 30)
                t_main = tm if t_main is None else t_main
                times.append(f"{'main-last' if val == 'off' else val} {tv:.4f} ({tm / tv:.2f}x)")
            print(f"{name:12} {dn:5} {lay:5} wgrad | main {t_main:.4f} | " + " | ".join(times) +
                  f" | relerr max {max(errs[1:]):.1e} (main {errs[0]:.1e})", flush=True)
            os.environ.pop(knob, None)
