"""Temporary A/B (session 12, cnx): the 7 x 7 forward, input-grad and weight-grad alone, main's
kernels (CONVX_WALK_CONV=off / CONVX_WALK_WGRAD=off) against walk2d's variants (CONVX_WALK_V:
unrolled static ring / shifted ring with prefetch; CONVX_WALK_TH: rows per band; NCHW rows in
vectors or value by value: CONVX_WALK_NCVEC), each alternating with main in one process."""

import os
import sys

import torch

import convx  # noqa: F401
sys.path.insert(0, os.path.dirname(__file__))
from gpu_bench import DTYPES, grad_like, make_input  # noqa: E402
from timing import time_pair_ms  # noqa: E402

CASES = [("convnext_56", 64, 96, 56), ("convnext_14", 64, 384, 14)]

ops = torch.ops.convx
# (name, environment): the walk2d variants against main's kernels
A = {"CONVX_WALK_ROUTE": "all"}
VARIANTS = [("v0 th8", {**A, "CONVX_WALK_V": "0", "CONVX_WALK_TH": "8"}), ("v1 th8", {**A, "CONVX_WALK_TH": "8"}),
            ("v1 th16", A), ("v0 th16", {**A, "CONVX_WALK_V": "0"})]
NC_SCALAR = ("v1 th16 scalar", {**A, "CONVX_WALK_NCVEC": "off"})
ALL_KNOBS = ("CONVX_WALK_CONV", "CONVX_WALK_WGRAD", "CONVX_WALK_V", "CONVX_WALK_TH", "CONVX_WALK_NCVEC", "CONVX_WALK_ROUTE")


def under(env, fn):
    def f():
        for k in ALL_KNOBS:
            os.environ.pop(k, None)
        os.environ.update(env)
        return fn()
    return f


print("ms (CUDA-event medians, each variant alternating with main's kernels; 'main' from the first pair); "
      "relerr = max |out - fp64| / max |fp64| on 8 samples")
for name, N, C, S in CASES:
    for dn in ("fp32", "fp16", "bf16"):
        for lay in ("nchw", "nhwc"):
            x = make_input(N, C, (S, S), DTYPES[dn], lay)
            w = torch.randn(C, 1, 7, 7, device="cuda", dtype=DTYPES[dn])
            dy = grad_like(torch.empty(N, C, S, S, device="cuda", dtype=DTYPES[dn]), lay)
            xd, wd, dyd = x[:8].double(), w.double(), dy[:8].double()
            rows = [
                ("fwd", "CONVX_WALK_CONV", lambda: ops.depthwise_conv2d(x, w, None, [1, 1], [3, 3], [1, 1]),
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
                ref = ref_f()
                sc = float(ref.abs().max())
                main = under({knob: "off"}, call)
                variants = VARIANTS + ([NC_SCALAR] if lay == "nchw" and S % 4 == 0 else [])
                errs = [float((under({knob: "off"}, sub)().double() - ref).abs().max()) / sc]
                times, t_main = [], None
                for vn, env in variants:
                    errs.append(float((under(env, sub)().double() - ref).abs().max()) / sc)
                    tm, tv = time_pair_ms(main, under(env, call), 30)
                    t_main = tm if t_main is None else t_main
                    times.append(f"{vn} {tv:.4f} ({tm / tv:.2f}x)")
                print(f"{name:12} {dn:5} {lay:5} {op:5} | main {t_main:.4f} | " + " | ".join(times) +
                      f" | relerr max {max(errs):.1e} (main {errs[0]:.1e})", flush=True)
for k in ALL_KNOBS:
    os.environ.pop(k, None)
