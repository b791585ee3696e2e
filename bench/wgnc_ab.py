"""TEMPORARY A/B of the NCHW 7x7 16-bit weight-grad (session 14, helper wgnc; removed after the
measurement): main's tcw2_nc (CONVX_WGNC_AB=0) against tc_wgrad7_rows variants (1: 2 stages 1056
blocks, 2: 3 stages, 3: 2 stages 2112 blocks, 4: 2 stages 528 blocks), in one process, main first
and last; CUDA-event medians (bench/timing.py); error of the max against float64, of the scale."""
import os
import sys

import torch

import convx  # noqa: F401
sys.path.insert(0, os.path.dirname(__file__))
from timing import time_ms  # noqa: E402

ops = torch.ops.convx
torch.backends.cudnn.allow_tf32 = True
dts = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
order = sys.argv[1].split(",") if len(sys.argv) > 1 else ["0", "1", "2", "3", "4", "0", "1", "2", "3", "4", "0"]
for name, N, C, S in (("convnext_56", 64, 96, 56),):
    for dn in ("fp16", "bf16"):
        dt = dts[dn]
        gen = torch.Generator(device="cuda").manual_seed(14)
        x = torch.randn(N, C, S, S, device="cuda", dtype=dt, generator=gen)
        gy = torch.randn(N, C, S, S, device="cuda", dtype=dt, generator=gen)
        ref = torch.nn.grad.conv2d_weight(x.double(), (C, 1, 7, 7), gy.double(), 1, 3, 1, C)
        scale = float(ref.abs().max())
        fn = lambda: ops.conv2d_weight_grad(x, [C, 1, 7, 7], gy, [1, 1], [3, 3], [1, 1], C)  # noqa: E731
        mb = x.numel() * x.element_size() * 2 / 1e6
        out = []
        for v in order:
            os.environ["CONVX_WGNC_AB"] = v
            e = float((fn().double() - ref).abs().max()) / scale
            ms = time_ms(fn, 30)
            out.append(f"v{v} {ms * 1e3:.1f}us ({mb / ms / 1e3 / 3.01 * 100:.0f}%) err {e:.1e}")
        print(f"{name} {dn} wgrad: " + " | ".join(out), flush=True)
os.environ.pop("CONVX_WGNC_AB", None)
