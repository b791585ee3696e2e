"""The whole-plane NCHW kernel (nc_plane: blocks walk several groups, the next group's span
prefetched in registers and scattered into the shared-memory tile the previous group was computed
from) on a few problems with more groups than the grid has blocks, forward and input-grad, and
nothing else: run under compute-sanitizer --tool racecheck (and memcheck)."""

import torch

import convx  # noqa: F401  (loads the operator library)

ops = torch.ops.convx
# (N, C, plane, kernel, stride, padding, dtype): 7x7 planes, 36 per group (556 groups); 112x112
# planes in bands of rows (4 bands per fp32 plane, 3 per bf16 stride-2 plane)
CASES = [
    (1, 20000, (7, 7), 3, 1, 1, torch.float32),
    (1, 150, (112, 112), 3, 1, 1, torch.float32),
    (1, 200, (112, 112), 3, 2, 1, torch.bfloat16),
    (2, 300, (28, 28), 5, 1, 2, torch.float16),
]
for N, C, sp, k, s, p, dt in CASES:
    x = torch.randn(N, C, *sp, device="cuda", dtype=dt)
    w = torch.randn(C, 1, k, k, device="cuda", dtype=dt)
    y = ops.depthwise_conv2d(x, w, None, [s, s], [p, p], [1, 1])
    if s == 1:
        ops.conv2d_input_grad(list(x.shape), w, torch.randn_like(y), [1, 1], [p, p], [1, 1], C)
torch.cuda.synchronize()
print("racecheck_nc_plane: every call returned")
