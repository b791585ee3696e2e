"""Temporary A/B (session 12, cnx): the 7 x 7 forward, input-grad and weight-grad alone, main's
kernels (CONVX_WALK_CONV=off / CONVX_WALK_WGRAD=off) against walk2d's kernels, alternating in one
process (old2: a second pair, 10 iterations); NCHW rows a multiple of 4 wide also with
CONVX_WALK_NCVEC=off (rows value by value) against the default (4-value vectors)."""

import os
import sys

import torch

import convx  # noqa: F401
sys.path.insert(0, os.path.dirname(__file__))
from gpu_bench import DTYPES, grad_like, make_input  # noqa: E402
from timing import time_pair_ms  # noqa: E402

CASES = [("convnext_56", 64, 96, 56), ("convnext_14", 64, 384, 14)]


KNOB = "CONVX_WALK_WGRAD"


def with_knob(val, fn):
    def f():
        os.environ[KNOB] = val
        return fn()
    return f


ops = torch.ops.convx
print(f"{'row':12} {'dt':5} {'lay':5} {'op':5} | {'old ms':>8} {'new ms':>8} {'old2 ms':>8} | {'x':>5} | relerr old/new vs fp64 (8 samples)")
for name, N, C, S in CASES:
    for dn in ("fp32", "fp16", "bf16"):
        for lay in ("nchw", "nhwc"):
            x = make_input(N, C, (S, S), DTYPES[dn], lay)
            w = torch.randn(C, 1, 7, 7, device="cuda", dtype=DTYPES[dn])
            dy = grad_like(torch.empty(N, C, S, S, device="cuda", dtype=DTYPES[dn]), lay)
            xd, wd, dyd = x[:8].double(), w.double(), dy[:8].double()
            rows = [
                ("fwd", "CONVX_WALK_CONV", lambda x=x, w=w: ops.depthwise_conv2d(x, w, None, [1, 1], [3, 3], [1, 1]),
                 lambda: ops.depthwise_conv2d(x[:8], w, None, [1, 1], [3, 3], [1, 1]),
                 lambda: torch.nn.functional.conv2d(xd, wd, None, 1, 3, 1, C)),
                ("dgrad", "CONVX_WALK_CONV", lambda: ops.conv2d_input_grad(list(x.shape), w, dy, [1, 1], [3, 3], [1, 1], C),
                 lambda: ops.conv2d_input_grad(list(x[:8].shape), w, dy[:8], [1, 1], [3, 3], [1, 1], C),
                 lambda: torch.nn.grad.conv2d_input(xd.shape, wd, dyd, 1, 3, 1, C)),
                ("wgrad", "CONVX_WALK_WGRAD", lambda: ops.conv2d_weight_grad(x, [C, 1, 7, 7], dy, [1, 1], [3, 3], [1, 1], C),
                 lambda: ops.conv2d_weight_grad(x[:8], [C, 1, 7, 7], dy[:8], [1, 1], [3, 3], [1, 1], C),
                 lambda: torch.nn.grad.conv2d_weight(xd, (C, 1, 7, 7), dyd, 1, 3, 1, C)),
            ]
            for op, knob, call, sub, ref_f in rows:
                KNOB = knob
                ref = ref_f()
                sc = float(ref.abs().max())
                eo = float((with_knob("off", sub)().double() - ref).abs().max()) / sc
                en = float((with_knob("on", sub)().double() - ref).abs().max()) / sc
                old, new = with_knob("off", call), with_knob("on", call)
                t_old, t_new = time_pair_ms(old, new, 30)
                t_old2, _ = time_pair_ms(old, new, 10)
                extra = ""
                if lay == "nchw" and S % 4 == 0:  # NCHW rows value by value (CONVX_WALK_NCVEC=off) vs vectors

                    def scalar():
                        os.environ["CONVX_WALK_NCVEC"] = "off"
                        try:
                            return new()
                        finally:
                            os.environ.pop("CONVX_WALK_NCVEC")

                    t_sc, t_vec = time_pair_ms(scalar, new, 30)
                    extra = f" | scalar rows {t_sc:.4f} vs vectors {t_vec:.4f}"
                print(f"{name:12} {dn:5} {lay:5} {op:5} | {t_old:8.4f} {t_new:8.4f} {t_old2:8.4f} | {t_old / t_new:5.2f} | "
                      f"{eo:.1e} / {en:.1e}{extra}", flush=True)
                os.environ.pop(knob)
