"""TEMPORARY A/B of tc7_nc (session 14, helper tcnc; removed after the measurement), in one process,
the baseline first and last; CUDA-event medians (bench/timing.py), ms, forward / input-grad:
- EfficientNet 5 x 5 28 x 28 NCHW (N64 C240): main's routing (nc_plane_cp; CONVX_TC_AB=0)
  against tc7_nc<T, 5, ...> with the output tile's copy loop (CONVX_TC_BULK=0) and bulk copies (1);
- ConvNeXt 56 x 56 (N64 C96): tc7_nc with the copy loop (main) against bulk copies;
- ConvNeXt 14 x 14 fp32 (N64 C384): nc_small_planes (main, CONVX_TC_AB=1) against TF32 tc7_nc (2)."""
import os
import sys

import torch

import convx  # noqa: F401
sys.path.insert(0, os.path.dirname(__file__))
from timing import time_ms  # noqa: E402

ops = torch.ops.convx
dts = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
torch.backends.cudnn.allow_tf32 = True
M = ("main", "0", "0")
rows = [
    ("effnet_k5", 64, 240, 28, 5, ("fp32", "fp16", "bf16"),
     [M, ("tc5_loop", "1", "0"), ("tc5_bulk", "1", "1"), M, ("tc5_loop", "1", "0"), ("tc5_bulk", "1", "1"), M]),
    ("convnext_56", 64, 96, 56, 7, ("fp16", "bf16", "fp32"),
     [M, ("bulk", "0", "1"), M, ("bulk", "0", "1"), M, ("bulk", "0", "1"), M]),
    ("convnext_14", 64, 384, 14, 7, ("fp32",),
     [("main", "1", "0"), ("tf32_14", "2", "0"), ("main", "1", "0"), ("tf32_14", "2", "0"), ("main", "1", "0")]),
]
for name, N, C, S, k, dtn, variants in rows:
    p = k // 2
    for dn in dtn:
        dt = dts[dn]
        x = torch.randn(N, C, S, S, device="cuda", dtype=dt)
        w = torch.randn(C, 1, k, k, device="cuda", dtype=dt)
        gy = torch.randn_like(x)
        ref = torch.nn.functional.conv2d(x.double(), w.double(), None, 1, p, 1, C)
        gref = torch.nn.grad.conv2d_input(x.shape, w.double(), gy.double(), 1, p, 1, C)
        fwd = lambda: ops.depthwise_conv2d(x, w, None, [1, 1], [p, p], [1, 1])  # noqa: E731
        dg = lambda: ops.conv2d_input_grad(list(x.shape), w, gy, [1, 1], [p, p], [1, 1], C)  # noqa: E731
        res = []
        for tag, ab, bulk in variants:
            os.environ["CONVX_TC_AB"], os.environ["CONVX_TC_BULK"] = ab, bulk
            e = float((fwd().double() - ref).abs().max() / ref.abs().max())
            eg = float((dg().double() - gref).abs().max() / gref.abs().max())
            res.append((tag, time_ms(fwd, 40), time_ms(dg, 40), max(e, eg)))
        mb = x.numel() * x.element_size() * 2 / 1e6
        print(f"{name:12s} {dn}")
        for t, f, d, e in res:
            print(f"   {t:9s} fwd {f:.4f} ({mb / f / 1e3 / 3.01 * 100:.1f}%) dgrad {d:.4f} err {e:.1e}", flush=True)
os.environ["CONVX_TC_AB"], os.environ["CONVX_TC_BULK"] = "1", "1"
