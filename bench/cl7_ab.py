"""Session 14 cl7 A/B (temporary, removed after the run): the NHWC 5 x 5 / 7 x 7 forward and
stride-1 data-grad under CONVX_CLT (off = main's kernels; "CG,SY" = cl_tile2d with CG channel
vectors x SY strips of 2 rows per block), in one process, main first and last. CUDA-event medians
(bench/timing.py), ms and % of the 3.01 TB/s copy; d = max error against main's result / scale."""

import os
import sys

import torch

import convx  # noqa: F401
from timing import time_ms

ops = torch.ops.convx
# row: N, C, size, K, padding, tile variants
ROWS = {
    "convnext_56": (64, 96, 56, 7, 3, ["4,7", "4,4", "2,8", "2,4", "4,8", "8,4", "2,7"]),
    "effnet_k5": (64, 240, 28, 5, 2, ["8,7", "4,14", "4,7", "2,14", "8,4", "16,2"]),
    "convnext_14": (64, 384, 14, 7, 3, ["16,7", "8,7", "32,4", "16,4", "32,7"]),
}
DT = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
rows = sys.argv[1].split(",") if len(sys.argv) > 1 else list(ROWS)
dts = sys.argv[2].split(",") if len(sys.argv) > 2 else list(DT)
for row in rows:
    N, C, S, K, p, tiles = ROWS[row]
    for dn in dts:
        dt = DT[dn]
        x = torch.randn(N, C, S, S, device="cuda", dtype=dt).contiguous(memory_format=torch.channels_last)
        w = torch.randn(C, 1, K, K, device="cuda", dtype=dt)
        b = torch.randn(C, device="cuda", dtype=dt)
        gy = torch.randn(N, C, S, S, device="cuda", dtype=dt).contiguous(memory_format=torch.channels_last)
        mb = 2 * x.numel() * x.element_size() / 1e6
        fwd = lambda: ops.depthwise_conv2d(x, w, b, [1, 1], [p, p], [1, 1])  # noqa: E731
        dg = lambda: ops.conv2d_input_grad(list(x.shape), w, gy, [1, 1], [p, p], [1, 1], C)  # noqa: E731
        ref_f, ref_d = None, None
        cells = []
        for name in ["off"] + tiles + ["off"]:
            os.environ["CONVX_CLT"] = name
            tf, td = time_ms(fwd, 30), time_ms(dg, 30)
            yf, yd = fwd().float(), dg().float()
            if ref_f is None:
                ref_f, ref_d = yf, yd
            ef = float((yf - ref_f).abs().max() / ref_f.abs().max())
            ed = float((yd - ref_d).abs().max() / ref_d.abs().max())
            cells.append(f"{name} {tf:.4f}/{td:.4f} ({mb / 3010 / tf * 100:.0f}%/{mb / 3010 / td * 100:.0f}%, d{ef:.1e}/{ed:.1e})")
        print(f"{row:12s} {dn} fwd/dgrad ms: " + " | ".join(cells), flush=True)
os.environ.pop("CONVX_CLT", None)
