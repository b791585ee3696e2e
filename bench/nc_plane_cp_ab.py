"""TEMPORARY (session 12, helper nc16): A/B of the NCHW 2-D forward and data-grad under
CONVX_NC_PLANE_CP (0 = main's routing, 1 = nc_plane_cp, 2 = nc_plane_cp with the other row count)
in one process, baseline first and last. Device time by CUDA events (bench/timing.py), medians;
aten beside it; max error against aten relative to its max.

    python3 bench/nc_plane_cp_ab.py [--iters 30] [--only mbv2_s1,effnet_k5] [--variants 0,1,2,0]
"""

import argparse
import os

import torch
import torch.nn.functional as F

import convx  # noqa: F401
from gpu_bench import CASES, DTYPES, copy_bandwidth
from timing import time_ms

ROWS = ["mbv2_s1", "mbv2_s2", "effnet_k5"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--only", default="")
    ap.add_argument("--dtypes", default="fp32,fp16,bf16")
    ap.add_argument("--variants", default="0,1,2,0")
    args = ap.parse_args()
    rows = args.only.split(",") if args.only else ROWS
    bw = copy_bandwidth(20)
    print(f"{torch.cuda.get_device_name()}: copy bandwidth {bw / 1e12:.2f} TB/s", flush=True)
    ops = torch.ops.convx
    for case in CASES:
        name, _, N, C, spatial, k, s, p = case[:8]
        if name not in rows:
            continue
        for dn in args.dtypes.split(","):
            dt = DTYPES[dn]
            x = torch.randn(N, C, *spatial, device="cuda", dtype=dt)
            w = torch.randn(C, 1, *k, device="cuda", dtype=dt)
            y = F.conv2d(x, w, None, s, p, 1, C)
            dy = torch.randn_like(y)
            fwd = lambda: ops.depthwise_conv2d(x, w, None, [s, s], [p, p], [1, 1])  # noqa: E731
            dgr = lambda: ops.conv2d_input_grad(list(x.shape), w, dy, [s, s], [p, p], [1, 1], C)  # noqa: E731
            fwd_a = lambda: F.conv2d(x, w, None, s, p, 1, C)  # noqa: E731
            dgr_a = lambda: torch.ops.aten.convolution_backward(dy, x, w, None, [s, s], [p, p], [1, 1], False,  # noqa: E731
                                                                [0, 0], C, [True, False, False])
            nb = (x.numel() + y.numel()) * x.element_size()
            for what, fc, fa in (("fwd", fwd, fwd_a), ("dgrad", dgr, dgr_a)):
                os.environ.pop("CONVX_NC_PLANE_CP", None)
                ref = (fa() if what == "fwd" else fa()[0]).float()
                ta = time_ms(fa, args.iters)
                line = f"{name:10} {dn:5} {what:5} aten {ta:7.4f}"
                for v in args.variants.split(","):
                    os.environ["CONVX_NC_PLANE_CP"] = v
                    out = fc().float()
                    err = float((out - ref).abs().max() / ref.abs().max())
                    t = time_ms(fc, args.iters)
                    line += f" | v{v} {t:7.4f} {100 * nb / (t * 1e-3) / bw:3.0f}% e{err:.0e}"
                os.environ.pop("CONVX_NC_PLANE_CP", None)
                print(line, flush=True)


if __name__ == "__main__":
    main()
