"""The tensor-core channels-last 7 x KW kernel (tc_cl2d.cuh) on a few small problems and nothing
else, for compute-sanitizer (memcheck; racecheck of its shared-memory ring, planes and filter
tables): forward (bias) and input-grad in fp16 and bf16; ConvNeXt 56-wide rows (7 warps), 14-wide
rows (2 warps), two column chunks, padding beyond the filter, 7 x 5."""

import os

import torch

import convx  # noqa: F401  (loads the operator library)

ops = torch.ops.convx
# (N, C, size, padding, KW)
CASES = [(2, 16, (56, 56), (3, 3), 7), (2, 24, (14, 14), (3, 3), 7), (1, 8, (21, 75), (3, 3), 7),
         (1, 8, (5, 6), (5, 4), 7), (1, 16, (17, 20), (3, 2), 5)]
os.environ["CONVX_TC7C"] = "tf32"  # A/B knob (session 13, temporary): fp32 as TF32 too
for dtype in (torch.float32, torch.float16, torch.bfloat16):
    for N, C, size, p, kw in CASES:
        x = torch.randn(N, C, *size, device="cuda", dtype=dtype).contiguous(memory_format=torch.channels_last)
        w = torch.randn(C, 1, 7, kw, device="cuda", dtype=dtype)
        b = torch.randn(C, device="cuda", dtype=dtype)
        y = ops.depthwise_conv2d(x, w, b, [1, 1], list(p), [1, 1])
        gy = torch.randn_like(y).contiguous(memory_format=torch.channels_last)
        ops.conv2d_input_grad(list(x.shape), w, gy, [1, 1], list(p), [1, 1], C)
torch.cuda.synchronize()
print("sanitize_tc_cl2d: every call returned")
