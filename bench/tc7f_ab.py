"""TEMPORARY A/B of tc7_nc (session 13, helper tc7f; removed after the measurement): ConvNeXt 7x7
NCHW forward and input-grad, main's tc7_nc (CONVX_TC7F_AB=0) against the compile-time copy width
(1, the default) and that with the fragments stored directly (2), in one process, main first and
last; CUDA-event medians (bench/timing.py)."""
import os
import sys

import torch

import convx  # noqa: F401
sys.path.insert(0, os.path.dirname(__file__))
from timing import time_ms  # noqa: E402

ops = torch.ops.convx
rows = [("convnext_56", 64, 96, 56, ("fp32", "fp16", "bf16")), ("convnext_14", 64, 384, 14, ("fp16", "bf16"))]
dts = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
torch.backends.cudnn.allow_tf32 = True
for name, N, C, S, dtn in rows:
    for dn in dtn:
        dt = dts[dn]
        x = torch.randn(N, C, S, S, device="cuda", dtype=dt)
        w = torch.randn(C, 1, 7, 7, device="cuda", dtype=dt)
        gy = torch.randn_like(x)
        ref = torch.nn.functional.conv2d(x.double(), w.double(), None, 1, 3, 1, C)
        fwd = lambda: ops.depthwise_conv2d(x, w, None, [1, 1], [3, 3], [1, 1])  # noqa: E731
        dg = lambda: ops.conv2d_input_grad(list(x.shape), w, gy, [1, 1], [3, 3], [1, 1], C)  # noqa: E731
        res = []
        for tag, knob in (("main", "0"), ("new", "1"), ("direct", "2"), ("main", "0"), ("new", "1"), ("direct", "2"),
                          ("main", "0")):
            os.environ["CONVX_TC7F_AB"] = knob
            e = float((fwd().double() - ref).abs().max() / ref.abs().max())
            res.append((tag, time_ms(fwd, 40), time_ms(dg, 40), e))
        mb = x.numel() * x.element_size() * 2 / 1e6
        print(f"{name:12s} {dn}  " + "  ".join(
            f"{t}: fwd {f:.4f} ({mb / f / 1e3 / 3.01 * 100:.0f}%) dgrad {d:.4f} err {e:.1e}" for t, f, d, e in res),
            flush=True)
os.environ["CONVX_TC7F_AB"] = "1"
