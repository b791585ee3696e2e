"""Temporary A/B (session 13, eff5): EfficientNet's 5 x 5 fp32 (N64 C240 28x28, padding 2) forward,
input-grad and weight-grad alone, main's kernels against variants chosen by the temporary knobs
CONVX_EFF5_FW (forward / data-grad) and CONVX_EFF5_WG (weight-grad), alternating in one process
(bench/timing.py's time_pair_ms), main alone first and last; relative error of every variant
against float64 on the full problem."""

import os
import sys

import torch
import torch.nn.functional as F

import convx  # noqa: F401
sys.path.insert(0, os.path.dirname(__file__))
from gpu_bench import grad_like, make_input  # noqa: E402
from timing import time_ms, time_pair_ms  # noqa: E402

N, C, S, K, P = 64, 240, 28, 5, 2
FW = {"nchw": ["walk8", "walk16", "th3", "th4", "oneblk"], "nhwc": ["walk8", "walk16", "ring0", "ring1"]}
WG = ["walk8", "walk16", "walk24"]
ops = torch.ops.convx
only = sys.argv[1:] or ["fwd", "dgrad", "wgrad"]


def knob(name, val, fn):
    def f():
        if val == "main":
            os.environ.pop(name, None)
        else:
            os.environ[name] = val
        return fn()
    return f


print(f"{'lay':5} {'op':5} {'variant':8} | {'main ms':>8} {'var ms':>8} | {'x':>5} | relerr vs fp64")
for lay in ("nchw", "nhwc"):
    torch.manual_seed(0)
    x = make_input(N, C, (S, S), torch.float32, lay)
    w = torch.randn(C, 1, K, K, device="cuda")
    dy = grad_like(torch.empty(N, C, S, S, device="cuda"), lay)
    xd, wd, dyd = x.double(), w.double(), dy.double()
    refs = {"fwd": F.conv2d(xd, wd, None, 1, P, 1, C),
            "dgrad": torch.nn.grad.conv2d_input(xd.shape, wd, dyd, 1, P, 1, C),
            "wgrad": torch.nn.grad.conv2d_weight(xd, (C, 1, K, K), dyd, 1, P, 1, C)}
    calls = {"fwd": lambda: ops.depthwise_conv2d(x, w, None, [1, 1], [P, P], [1, 1]),
             "dgrad": lambda: ops.conv2d_input_grad(list(x.shape), w, dy, [1, 1], [P, P], [1, 1], C),
             "wgrad": lambda: ops.conv2d_weight_grad(x, [C, 1, K, K], dy, [1, 1], [P, P], [1, 1], C)}
    for op in only:
        name = "CONVX_EFF5_WG" if op == "wgrad" else "CONVX_EFF5_FW"
        ref = refs[op]
        sc = float(ref.abs().max())
        main = knob(name, "main", calls[op])
        t0 = time_ms(main, 30)
        e0 = float((main().double() - ref).abs().max()) / sc
        print(f"{lay:5} {op:5} {'main':8} | {t0:8.4f} {'':8} | {'':5} | {e0:.1e}", flush=True)
        for var in (WG if op == "wgrad" else FW[lay]):
            f = knob(name, var, calls[op])
            e = float((f().double() - ref).abs().max()) / sc
            ta, tb = time_pair_ms(main, f, 30)
            print(f"{lay:5} {op:5} {var:8} | {ta:8.4f} {tb:8.4f} | {ta / tb:5.2f} | {e:.1e}", flush=True)
        os.environ.pop(name, None)
        t1 = time_ms(main, 30)
        print(f"{lay:5} {op:5} {'main end':8} | {t1:8.4f}", flush=True)
