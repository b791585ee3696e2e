"""TEMPORARY A/B (session 14, clw): the NHWC weight-grad alone, main's routing (CONVX_CLW=off:
cl_band_wgrad2d 7 x 7 with sum_slots after; 5 x 5 fp32 on cl_wgrad_partial) against
cl_band_wgrad2d variants CONVX_CLW="<TC>,<band rows>,<fused>[,<max threads>]", each alternating
with main in one process, main also last. Then each row's fastest variant (if faster than main)
through gpu_bench's bench_case (the bench row: data-grad + weight-grad, aten beside it)."""

import os
import sys

import torch

import convx  # noqa: F401
sys.path.insert(0, os.path.dirname(__file__))
from gpu_bench import CASES, DTYPES, bench_case, copy_bandwidth, grad_like, make_input  # noqa: E402
from timing import time_pair_ms  # noqa: E402

K7_56 = {"fp32": ["8,8,1", "8,8,1,128", "4,8,1"], "16": ["8,8,1", "8,4,1,128"]}
K7_14 = {"fp32": ["8,16,1", "8,16,1,128", "4,16,1"], "16": ["8,16,1", "8,16,1,128"]}
K5_28 = {"fp32": ["8,16,1", "8,16,1,128", "4,16,1", "4,8,1"]}
ROWS = [("convnext_56", 64, 96, 56, 7, 3, K7_56), ("convnext_14", 64, 384, 14, 7, 3, K7_14),
        ("effnet_k5", 64, 240, 28, 5, 2, K5_28)]
ops = torch.ops.convx


def under(env, fn):
    def f():
        os.environ["CONVX_CLW"] = env
        return fn()
    return f


torch.backends.cudnn.benchmark = True
print("weight-grad alone, ms (CUDA-event medians of 30, each variant alternating with main; main first and last);"
      " relerr = max |out - fp64| / max |fp64| on 8 samples; rep = bitwise repeatable", flush=True)
best = {}
for name, N, C, S, K, p, variants in ROWS:
    for dn in ("fp32", "fp16", "bf16"):
        vs = variants.get(dn, variants.get("16") if dn != "fp32" else None)
        if vs is None:
            continue
        x = make_input(N, C, (S, S), DTYPES[dn], "nhwc")
        dy = grad_like(torch.empty(N, C, S, S, device="cuda", dtype=DTYPES[dn]), "nhwc")
        xd, dyd = x[:8].double(), dy[:8].double()
        call = lambda: ops.conv2d_weight_grad(x, [C, 1, K, K], dy, [1, 1], [p, p], [1, 1], C)  # noqa: E731
        sub = lambda: ops.conv2d_weight_grad(x[:8], [C, 1, K, K], dy[:8], [1, 1], [p, p], [1, 1], C)  # noqa: E731
        ref = torch.nn.grad.conv2d_weight(xd, (C, 1, K, K), dyd, 1, p, 1, C)
        sc = float(ref.abs().max())
        main = under("off", call)
        err_main = float((under("off", sub)().double() - ref).abs().max()) / sc
        out, t_first, pick = [], None, ("off", None)
        for v in vs + ["off"]:
            e = float((under(v, sub)().double() - ref).abs().max()) / sc
            a, b = under(v, call)(), under(v, call)()
            rep = bool(torch.equal(a, b))
            tm, tv = time_pair_ms(main, under(v, call), 30)
            t_first = tm if t_first is None else t_first
            out.append(f"{v} {tv:.4f} ({tm / tv:.2f}x, {e:.1e}{'' if rep else ' NOT REP'})")
            if v != "off" and rep and tv < tm and (pick[1] is None or tv / tm < pick[1]):
                pick = (v, tv / tm)
        best[(name, dn)] = pick[0]
        print(f"{name:12} {dn:5} nhwc wgrad | main {t_first:.4f} ({err_main:.1e}) | " + " | ".join(out) +
              f" | pick {pick[0]}", flush=True)

bw = copy_bandwidth(30)
print(f"\nbench rows (gpu_bench.bench_case, iters 30) with each row's pick; copy bandwidth {bw / 1e9:.0f} GB/s")
for case in CASES:
    for dn in ("fp32", "fp16", "bf16"):
        if (case[0], dn) not in best:
            continue
        os.environ["CONVX_CLW"] = best[(case[0], dn)]
        r = bench_case(case, dn, "nhwc", 30)
        f = lambda ms, key: 100 * r[key] / (ms * 1e-3) / bw  # noqa: E731
        print(f"{case[0]:14} {dn:5} nhwc  | {r['fwd_convx_ms']:8.3f} {r['fwd_aten_ms']:8.3f} "
              f"{r['fwd_aten_ms'] / r['fwd_convx_ms']:6.2f} {f(r['fwd_convx_ms'], 'fwd_bytes'):4.0f} | "
              f"{r['bwd_convx_ms']:8.3f} {r['bwd_aten_ms']:8.3f} {r['bwd_aten_ms'] / r['bwd_convx_ms']:6.2f} "
              f"{f(r['bwd_convx_ms'], 'bwd_bytes'):4.0f} | {r['max_rel_err']:.1e} {r['bwd_max_rel_err']:.1e}"
              f" | CONVX_CLW={os.environ['CONVX_CLW']}", flush=True)
os.environ.pop("CONVX_CLW", None)
