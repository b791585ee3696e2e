"""The channels-last register-blocked 7 x 7 tile (cl_tile2d.cuh) on a few small problems and nothing
else, for compute-sanitizer (memcheck; racecheck of its staged tile and filter): forward (bias) and
input-grad in fp32 and fp16 on the 14-wide outputs dispatch routes to it: full and partial
channel chunks, a height below the tile, padding beyond the filter's reach."""

import torch

import convx  # noqa: F401  (loads the operator library)

ops = torch.ops.convx
# (N, C, size, padding, K)
CASES = [(2, 16, (14, 14), 3, 7), (1, 40, (14, 14), 3, 7), (1, 24, (9, 14), 3, 7), (1, 8, (4, 10), 5, 7)]
for dtype in (torch.float32, torch.float16):
    for N, C, size, p, k in CASES:
        x = torch.randn(N, C, *size, device="cuda", dtype=dtype).contiguous(memory_format=torch.channels_last)
        w = torch.randn(C, 1, k, k, device="cuda", dtype=dtype)
        b = torch.randn(C, device="cuda", dtype=dtype)
        y = ops.depthwise_conv2d(x, w, b, [1, 1], [p, p], [1, 1])
        gy = torch.randn_like(y).contiguous(memory_format=torch.channels_last)
        ops.conv2d_input_grad(list(x.shape), w, gy, [1, 1], [p, p], [1, 1], C)
torch.cuda.synchronize()
print("sanitize_cl_tile2d: every call returned")
