"""The cp.async whole-plane NCHW kernel (nc_plane_cp: blocks walk several groups, the next group's
rows copied into the other of two shared-memory tiles while the current one is computed) on
problems with more groups than the grid has blocks, forward and input-grad, outputs stored from
registers and staged (16-bit 28-wide rows), and nothing else: run under compute-sanitizer --tool
racecheck (and memcheck)."""

import torch

import convx  # noqa: F401  (loads the operator library)

ops = torch.ops.convx
# (N, C, plane, kernel, stride, padding, dtype): 56x56 3x3 (2 planes per group, 600 groups); 28x28
# 5x5 fp16 (4 per group, staged outputs, 500); 112x112 at stride 2 (one per group, 500); 28x28 3x3
# fp32 (9 per group, 445)
CASES = [
    (1, 1200, (56, 56), 3, 1, 1, torch.bfloat16),
    (1, 2000, (28, 28), 5, 1, 2, torch.float16),
    (1, 500, (112, 112), 3, 2, 1, torch.bfloat16),
    (1, 4000, (28, 28), 3, 1, 1, torch.float32),
]
for N, C, sp, k, s, p, dt in CASES:
    x = torch.randn(N, C, *sp, device="cuda", dtype=dt)
    w = torch.randn(C, 1, k, k, device="cuda", dtype=dt)
    y = ops.depthwise_conv2d(x, w, None, [s, s], [p, p], [1, 1])
    if s == 1:
        ops.conv2d_input_grad(list(x.shape), w, torch.randn_like(y), [s, s], [p, p], [1, 1], C)
torch.cuda.synchronize()
print("racecheck_nc_plane_cp: every call returned")
