"""The cp.async whole-plane NCHW kernels (nc_plane_cp: blocks walk several groups, the next group's
rows copied into the other of two shared-memory tiles while the current one is computed; the fp32
5x5 weight-grad nc_wgrad_cp staged the same way) on problems with more groups than the grid has
blocks, forward and input-grad, outputs stored from registers and staged (stride 2 onto 20-wide
rows, 16-bit 28-wide rows), and nothing else: run under compute-sanitizer --tool racecheck (and
memcheck)."""

import torch

import convx  # noqa: F401  (loads the operator library)

ops = torch.ops.convx
# (N, C, plane, kernel, stride, padding, dtype): 56x56 (2 planes per group, 600 groups); 112x112
# at stride 2 (one per group, 500); 40x40 at stride 2 (20x20 outputs staged, several planes per
# group); 5x5 on EfficientNet's 28x28 planes (fp32: 5 planes per group; bf16: 28 x 28 outputs
# staged; the fp32 weight-grad nc_wgrad_cp: units of 10 samples, its block sums in shared memory)
CASES = [
    (1, 1200, (56, 56), 3, 1, 1, torch.bfloat16),
    (1, 500, (112, 112), 3, 2, 1, torch.bfloat16),
    (1, 4000, (40, 40), 3, 2, 1, torch.float16),
    (64, 30, (28, 28), 5, 1, 2, torch.float32),
    (20, 60, (28, 28), 5, 1, 2, torch.bfloat16),
]
for N, C, sp, k, s, p, dt in CASES:
    x = torch.randn(N, C, *sp, device="cuda", dtype=dt)
    w = torch.randn(C, 1, k, k, device="cuda", dtype=dt)
    y = ops.depthwise_conv2d(x, w, None, [s, s], [p, p], [1, 1])
    if s == 1:
        ops.conv2d_input_grad(list(x.shape), w, torch.randn_like(y), [s, s], [p, p], [1, 1], C)
    if k == 5:
        ops.conv2d_weight_grad(x, list(w.shape), torch.randn_like(y), [s, s], [p, p], [1, 1], C)
torch.cuda.synchronize()
print("racecheck_nc_plane_cp: every call returned")
