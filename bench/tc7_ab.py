"""Temporary A/B of tc7_nc (session 13, removed after the measurement): ConvNeXt 7x7 NCHW forward
and input-grad, main's routing (CONVX_TC7_AB=0) against tc7_nc (1) and its 16-bit variant with 2
stages at 8 blocks per SM (2), in one process, baseline first and last; CUDA-event medians
(bench/timing.py)."""
import os
import sys

import torch

import convx  # noqa: F401
sys.path.insert(0, os.path.dirname(__file__))
from timing import time_ms  # noqa: E402

ops = torch.ops.convx
rows = [("convnext_56", 64, 96, 56), ("convnext_14", 64, 384, 14)]
dts = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
for name, N, C, S in rows:
    for dn, dt in dts.items():
        x = torch.randn(N, C, S, S, device="cuda", dtype=dt)
        w = torch.randn(C, 1, 7, 7, device="cuda", dtype=dt)
        gy = torch.randn_like(x)
        ref = torch.nn.functional.conv2d(x.double(), w.double(), None, 1, 3, 1, C)
        fwd = lambda: ops.depthwise_conv2d(x, w, None, [1, 1], [3, 3], [1, 1])  # noqa: E731
        dg = lambda: ops.conv2d_input_grad(list(x.shape), w, gy, [1, 1], [3, 3], [1, 1], C)  # noqa: E731
        res = {}
        for tag, knob in (("base", "0"), ("tc7", "1"), ("v8", "2"), ("tc7b", "1"), ("base2", "0")):
            os.environ["CONVX_TC7_AB"] = knob
            e = float((fwd().double() - ref).abs().max() / ref.abs().max())
            res[tag] = (time_ms(fwd, 40), time_ms(dg, 40), e)
        mb = x.numel() * x.element_size() * 2 / 1e6
        line = f"{name:12s} {dn}  " + "  ".join(
            f"{k}: fwd {v[0]:.4f} ({mb / v[0] / 1e3 / 3.01 * 100:.0f}%) dgrad {v[1]:.4f} err {v[2]:.1e}" for k, v in res.items())
        print(line, flush=True)
os.environ["CONVX_TC7_AB"] = "1"
