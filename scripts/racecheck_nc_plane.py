"""The pipelined whole-plane NCHW kernel (nc_plane: blocks walk several groups, the next group's
span prefetched in registers and scattered into the shared-memory tile the previous group was
computed from) on problems with more groups than the grid has blocks (four per SM), forward and
input-grad, plus one small-plane problem (nc_small_planes), and nothing else: run under
compute-sanitizer --tool racecheck (and memcheck)."""

import torch

import convx  # noqa: F401  (loads the operator library)

ops = torch.ops.convx
# (N, C, plane, kernel, stride, padding, dtype): 28x28 planes, 4 per group (550 groups); 56x56
# planes, one per group (540); 7x7 planes (nc_small_planes). Padding 0: half-width padding on
# these planes goes to nc_plane_cp (scripts/racecheck_nc_plane_cp.py).
CASES = [
    (1, 2200, (28, 28), 3, 1, 0, torch.float32),
    (1, 540, (56, 56), 3, 1, 0, torch.bfloat16),
    (2, 300, (7, 7), 5, 1, 2, torch.float16),
]
for N, C, sp, k, s, p, dt in CASES:
    x = torch.randn(N, C, *sp, device="cuda", dtype=dt)
    w = torch.randn(C, 1, k, k, device="cuda", dtype=dt)
    y = ops.depthwise_conv2d(x, w, None, [s, s], [p, p], [1, 1])
    ops.conv2d_input_grad(list(x.shape), w, torch.randn_like(y), [s, s], [p, p], [1, 1], C)
torch.cuda.synchronize()
print("racecheck_nc_plane: every call returned")
