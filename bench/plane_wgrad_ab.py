"""Temporary A/B (session 13, w7): the 7 x 7 weight-grad alone, main's kernels (walk_wgrad2d /
tc_wgrad2d, one-thread-per-output chunk sum) against the new kernels' variants, each alternating
with main in one process; main also last. NCHW: CONVX_PWG = off | "<tile target>,<waves>"
(plane_wgrad2d); NHWC: CONVX_CLBW = off | "<band rows>,<waves>" (cl_band_wgrad2d), CONVX_SUMG =
off | on (walk_wgrad2d's grouped chunk sum)."""

import os
import sys

import torch

import convx  # noqa: F401
sys.path.insert(0, os.path.dirname(__file__))
from gpu_bench import DTYPES, grad_like, make_input  # noqa: E402
from timing import time_pair_ms  # noqa: E402

CASES = [("convnext_56", 64, 96, 56), ("convnext_14", 64, 384, 14)]
LAYOUTS = sys.argv[1].split(",") if len(sys.argv) > 1 else ["nchw", "nhwc"]
OFF = {"CONVX_PWG": "off", "CONVX_CLBW": "off", "CONVX_SUMG": "off"}
# (label, environment) per layout; main = OFF
VARIANTS = {"nchw": [("plane 128,1", {**OFF, "CONVX_PWG": "128,1"})],
            "nhwc": [("walk+sumg", {**OFF, "CONVX_SUMG": "on"})] +
                    [(f"band {v}", {**OFF, "CONVX_CLBW": v}) for v in ("8,1", "4,1", "16,1", "8,2", "4,2")]}
ops = torch.ops.convx


def under(env, fn):
    def f():
        os.environ.update(env)
        return fn()
    return f


print("ms (CUDA-event medians of 30, each variant alternating with main; main first and last); "
      "relerr = max |out - fp64| / max |fp64| on 8 samples")
for name, N, C, S in CASES:
    for dn in ("fp32", "fp16", "bf16"):
        for lay in LAYOUTS:
            variants = VARIANTS[lay]
            x = make_input(N, C, (S, S), DTYPES[dn], lay)
            dy = grad_like(torch.empty(N, C, S, S, device="cuda", dtype=DTYPES[dn]), lay)
            xd, dyd = x[:8].double(), dy[:8].double()
            call = lambda: ops.conv2d_weight_grad(x, [C, 1, 7, 7], dy, [1, 1], [3, 3], [1, 1], C)  # noqa: E731
            sub = lambda: ops.conv2d_weight_grad(x[:8], [C, 1, 7, 7], dy[:8], [1, 1], [3, 3], [1, 1], C)  # noqa: E731
            ref = torch.nn.grad.conv2d_weight(xd, (C, 1, 7, 7), dyd, 1, 3, 1, C)
            sc = float(ref.abs().max())
            main = under(OFF, call)
            errs = [float((under(OFF, sub)().double() - ref).abs().max()) / sc]
            times, t_main = [], None
            for vn, env in variants + [("main-last", OFF)]:
                errs.append(float((under(env, sub)().double() - ref).abs().max()) / sc)
                tm, tv = time_pair_ms(main, under(env, call), 30)
                t_main = tm if t_main is None else t_main
                times.append(f"{vn} {tv:.4f} ({tm / tv:.2f}x)")
            print(f"{name:12} {dn:5} {lay:5} wgrad | main {t_main:.4f} | " + " | ".join(times) +
                  f" | relerr max {max(errs[1:]):.1e} (main {errs[0]:.1e})", flush=True)
for k in OFF:
    os.environ.pop(k, None)
