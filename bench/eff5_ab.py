"""Temporary A/B (session 13, eff5): 5 x 5 depthwise forward, input-grad and weight-grad alone, main's
kernels against this branch's (temporary knobs CONVX_EFF5_FW / CONVX_EFF5_WG = main select main's
routing, other values variants; CONVX_EFF5_SKEW=0 unskewed bands), alternating in one process
(bench/timing.py's time_pair_ms), main alone first and last; relative error of every variant
against float64 on the full problem. Rows: EfficientNet's N64 C240 28x28 (the benchmark's
effnet_k5), 5 x 5 on 14x14 (C672) and 56x56 (C96) planes, MobileNetV2's 3 x 3 16-bit NCHW (the
skewed bands of nc_plane_cp against the unskewed)."""

import os
import sys

import torch
import torch.nn.functional as F

import convx  # noqa: F401
sys.path.insert(0, os.path.dirname(__file__))
from gpu_bench import DTYPES, grad_like, make_input  # noqa: E402
from timing import time_ms, time_pair_ms  # noqa: E402

FW, WG, SK = "CONVX_EFF5_FW", "CONVX_EFF5_WG", "CONVX_EFF5_SKEW"
MAIN = {"fwd": {FW: "main"}, "dgrad": {FW: "main"}, "wgrad": {WG: "main"}}
NEW = {}
# (row, N, C, size, k, dtype, layout, op, variants {name: env})
ROWS = []
for op in ("fwd", "dgrad"):
    ROWS.append(("effnet", 64, 240, 28, 5, "fp32", "nchw", op, {"cp": NEW, "cp-th2": {FW: "th2"}, "cp-noskew": {SK: "0"}}))
    for dn in ("fp16", "bf16"):
        ROWS.append(("effnet", 64, 240, 28, 5, dn, "nchw", op, {"cp": NEW, "cp-th4": {FW: "th4"}, "cp-noskew": {SK: "0"}}))
    ROWS.append(("effnet", 64, 240, 28, 5, "fp32", "nhwc", op, {"walk": NEW}))
ROWS.append(("effnet", 64, 240, 28, 5, "fp32", "nchw", "wgrad", {"cp": NEW, "walk": {WG: "walk"}}))
for name, C, S in (("k5_14", 672, 14), ("k5_56", 96, 56)):
    if S > 14:  # nc_plane_cp leaves planes up to 14 x 14 to nc_small_planes
        ROWS.append((name, 64, C, S, 5, "fp32", "nchw", "fwd", {"cp": NEW}))
        ROWS.append((name, 64, C, S, 5, "bf16", "nchw", "fwd", {"cp": NEW}))
    ROWS.append((name, 64, C, S, 5, "fp32", "nhwc", "fwd", {"walk": NEW}))
    ROWS.append((name, 64, C, S, 5, "fp32", "nchw", "wgrad", {"cp": NEW, "walk": {WG: "walk"}}))
for dn in ("fp16", "bf16"):
    ROWS.append(("mbv2_s1", 64, 144, 56, 3, dn, "nchw", "fwd", {"skew": NEW, "noskew": {SK: "0"}}))
ops = torch.ops.convx


def with_env(env, fn):
    def f():
        for k in (FW, WG, SK):
            os.environ.pop(k, None)
        os.environ.update(env)
        return fn()
    return f


print(f"{'row':8} {'dt':5} {'lay':5} {'op':5} {'variant':10} | {'main ms':>8} {'var ms':>8} | {'x':>5} | relerr vs fp64")
cache = {}
for row, N, C, S, K, dn, lay, op, variants in ROWS:
    key = (row, dn, lay)
    if key not in cache:
        cache.clear()
        torch.manual_seed(0)
        x = make_input(N, C, (S, S), DTYPES[dn], lay)
        w = torch.randn(C, 1, K, K, device="cuda", dtype=DTYPES[dn])
        dy = grad_like(torch.empty(N, C, S, S, device="cuda", dtype=DTYPES[dn]), lay)
        cache[key] = (x, w, dy, {})
    x, w, dy, refs = cache[key]
    P = K // 2
    if op not in refs:
        xd, wd, dyd = x.double(), w.double(), dy.double()
        refs[op] = {"fwd": lambda: F.conv2d(xd, wd, None, 1, P, 1, C),
                    "dgrad": lambda: torch.nn.grad.conv2d_input(xd.shape, wd, dyd, 1, P, 1, C),
                    "wgrad": lambda: torch.nn.grad.conv2d_weight(xd, (C, 1, K, K), dyd, 1, P, 1, C)}[op]()
    ref = refs[op]
    sc = float(ref.abs().max())
    call = {"fwd": lambda: ops.depthwise_conv2d(x, w, None, [1, 1], [P, P], [1, 1]),
            "dgrad": lambda: ops.conv2d_input_grad(list(x.shape), w, dy, [1, 1], [P, P], [1, 1], C),
            "wgrad": lambda: ops.conv2d_weight_grad(x, [C, 1, K, K], dy, [1, 1], [P, P], [1, 1], C)}[op]
    main = with_env(MAIN[op], call)
    t0 = time_ms(main, 30)
    e0 = float((main().double() - ref).abs().max()) / sc
    head = f"{row:8} {dn:5} {lay:5} {op:5}"
    print(f"{head} {'main':10} | {t0:8.4f} {'':8} | {'':5} | {e0:.1e}", flush=True)
    for var, env in variants.items():
        f = with_env(env, call)
        e = float((f().double() - ref).abs().max()) / sc
        ta, tb = time_pair_ms(main, f, 30)
        print(f"{head} {var:10} | {ta:8.4f} {tb:8.4f} | {ta / tb:5.2f} | {e:.1e}", flush=True)
    t1 = time_ms(main, 30)
    print(f"{head} {'main end':10} | {t1:8.4f}", flush=True)
    with_env({}, lambda: None)()
