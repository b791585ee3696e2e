"""The tensor-core channels-last 7 x 7 kernel (tc_cl2d.cuh) on a few small problems and nothing
else, for compute-sanitizer (memcheck; racecheck of its shared-memory ring, planes and filter
tables): forward (bias) and input-grad in fp16 and bf16, which dispatch routes to it: ConvNeXt's
56-wide rows (7 warps, one raw brick in flight), 14-wide rows (2 warps, two bricks), two column
chunks, padding beyond the filter's reach."""

import torch

import convx  # noqa: F401  (loads the operator library)

ops = torch.ops.convx
# (N, C, size, padding)
CASES = [(2, 16, (56, 56), (3, 3)), (2, 24, (14, 14), (3, 3)), (1, 8, (21, 75), (3, 3)), (1, 8, (5, 16), (5, 4))]
for dtype in (torch.float16, torch.bfloat16):
    for N, C, size, p in CASES:
        x = torch.randn(N, C, *size, device="cuda", dtype=dtype).contiguous(memory_format=torch.channels_last)
        w = torch.randn(C, 1, 7, 7, device="cuda", dtype=dtype)
        b = torch.randn(C, device="cuda", dtype=dtype)
        y = ops.depthwise_conv2d(x, w, b, [1, 1], list(p), [1, 1])
        gy = torch.randn_like(y).contiguous(memory_format=torch.channels_last)
        ops.conv2d_input_grad(list(x.shape), w, gy, [1, 1], list(p), [1, 1], C)
torch.cuda.synchronize()
print("sanitize_tc_cl2d: every call returned")
