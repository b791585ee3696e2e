"""The depthwise weight-grad alone on the 1-D long-filter rows of gpu_bench.py (issue #9), convx
beside aten, in one process: CUDA-event medians (bench/timing.py) and the fraction of the copy
bandwidth (bytes: x + dy read, dw written). --variants times convx once per environment setting
("-" for none; e.g. "-" "CONVX_X=0"), each set before its timings, for A/B runs in one process.

    CONVX_LIBRARY=build-gpu/libconvx.so PYTHONPATH=python python3 bench/wgrad1d_bench.py
"""

import argparse
import os

import torch

import convx  # noqa: F401  (loads the operator library)
from gpu_bench import CASES, DTYPES, copy_bandwidth, grad_like, make_input, nbytes
from timing import time_ms

ROWS = ("conformer_512", "k15_causal", "conformer_256")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--only", default=",".join(ROWS), help="comma-separated 1-D case names")
    ap.add_argument("--layouts", default="ncl,nlc")
    ap.add_argument("--variants", nargs="*", default=["-"], help="NAME=VALUE[,NAME=VALUE] or - (none)")
    args = ap.parse_args()
    bw = copy_bandwidth(args.iters)
    print(f"{torch.cuda.get_device_name()}: copy bandwidth {bw / 1e12:.2f} TB/s")
    knobs = {kv.split("=")[0] for v in args.variants if v != "-" for kv in v.split(",")}
    for case in CASES:
        name, _, N, C, spatial, k, s, p = case[:8]
        if name not in args.only.split(","):
            continue
        for dn in case[9]:
            for layout in args.layouts.split(","):
                x = make_input(N, C, spatial, DTYPES[dn], layout)
                pad = [k[-1] - 1] if p == "causal" else [p]
                w = torch.randn(C, 1, *k, device="cuda", dtype=x.dtype)
                dy = grad_like(torch.nn.functional.conv1d(x, w, None, s, pad, 1, C), layout)
                moved = nbytes(x, dy, w)

                def conv_wg():
                    torch.ops.convx.conv1d_weight_grad(x, list(w.shape), dy, [s], pad, [1], C)

                def aten_wg():
                    torch.ops.aten.convolution_backward(dy, x, w, None, [s], pad, [1], False, [0], C,
                                                        [False, True, False])

                ta = time_ms(aten_wg, args.iters)
                for v in args.variants:
                    for kname in knobs:
                        os.environ.pop(kname, None)
                    if v != "-":
                        for kv in v.split(","):
                            key, val = kv.split("=")
                            os.environ[key] = val
                    tc = time_ms(conv_wg, args.iters)
                    print(f"{name:14s} {dn} {layout}  {v:28s} convx {tc:.4f} ms ({100 * moved / (tc * 1e-3) / bw:5.1f}%)"
                          f"  aten {ta:.4f} ms  x{ta / tc:5.2f}", flush=True)
                for kname in knobs:
                    os.environ.pop(kname, None)


if __name__ == "__main__":
    main()
