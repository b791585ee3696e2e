"""Session 13 tc7c A/B (temporary, removed after the run): the NHWC 7 x 7 forward and stride-1
data-grad of the ConvNeXt rows under CONVX_TC7C (main = main's kernels, cudnn = convx's cuDNN
path, unset = tc_cl2d; fp32 takes it under tf32) and CONVX_TC7C_S (tc_cl2d's raw bricks in flight), CONVX_TC7C_T (its blocks wanted per SM), CONVX_TC7C_B (3: __launch_bounds__ for 3 blocks per SM), in one process,
main first and last. CUDA-event medians (bench/timing.py), ms and % of the 3.01 TB/s copy."""

import os
import sys

import torch

import convx  # noqa: F401
from timing import time_ms

ops = torch.ops.convx
ROWS = {"convnext_56": (64, 96, 56), "convnext_14": (64, 384, 14)}
DT = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
VARIANTS = [("main", {"CONVX_TC7C": "main"}), ("tc S2 T8", {}), ("tc S1 T8", {"CONVX_TC7C_S": "1"}),
            ("tc S2 T4", {"CONVX_TC7C_T": "4"}), ("tc S1 T4", {"CONVX_TC7C_S": "1", "CONVX_TC7C_T": "4"}),
            ("tc S1 T2", {"CONVX_TC7C_S": "1", "CONVX_TC7C_T": "2"}),
            ("tc S1 T4 B3", {"CONVX_TC7C_S": "1", "CONVX_TC7C_T": "4", "CONVX_TC7C_B": "3"}),
            ("tc S1 T8 B3", {"CONVX_TC7C_S": "1", "CONVX_TC7C_B": "3"}),
            ("cudnn", {"CONVX_TC7C": "cudnn"}), ("main", {"CONVX_TC7C": "main"})]
KNOBS = ("CONVX_TC7C", "CONVX_TC7C_S", "CONVX_TC7C_T", "CONVX_TC7C_B")
dts = sys.argv[1].split(",") if len(sys.argv) > 1 else ["fp16", "bf16"]
for row, (N, C, S) in ROWS.items():
    for dn in dts:
        dt = DT[dn]
        x = torch.randn(N, C, S, S, device="cuda", dtype=dt).contiguous(memory_format=torch.channels_last)
        w = torch.randn(C, 1, 7, 7, device="cuda", dtype=dt)
        gy = torch.randn(N, C, S, S, device="cuda", dtype=dt).contiguous(memory_format=torch.channels_last)
        mb = 2 * x.numel() * x.element_size() / 1e6
        fwd = lambda: ops.depthwise_conv2d(x, w, None, [1, 1], [3, 3], [1, 1])  # noqa: E731
        dg = lambda: ops.conv2d_input_grad(list(x.shape), w, gy, [1, 1], [3, 3], [1, 1], C)  # noqa: E731
        ref_f, ref_d = None, None
        cells = []
        for name, env in VARIANTS:
            for k in KNOBS:
                os.environ.pop(k, None)
            os.environ.update(env)
            if dt == torch.float32 and name.startswith("tc"):
                os.environ["CONVX_TC7C"] = "tf32"  # fp32 on tc_cl2d as TF32
            tf, td = time_ms(fwd, 30), time_ms(dg, 30)
            yf, yd = fwd().float(), dg().float()
            if ref_f is None:
                ref_f, ref_d = yf, yd
            ef = float((yf - ref_f).abs().max() / ref_f.abs().max())
            ed = float((yd - ref_d).abs().max() / ref_d.abs().max())
            cells.append(f"{name} {tf:.4f}/{td:.4f} ({mb / 3010 / tf * 100:.0f}%/{mb / 3010 / td * 100:.0f}%, d{ef:.1e}/{ed:.1e})")
        print(f"{row:12s} {dn} fwd/dgrad ms: " + " | ".join(cells), flush=True)
for k in KNOBS:
    os.environ.pop(k, None)
