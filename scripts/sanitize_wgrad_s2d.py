"""Session 13's (mb16) staged 16-bit 2-D weight-grads alone, for compute-sanitizer (memcheck;
racecheck of the cp.async rings and the shared-memory sums): channels-last 3 x 3 / 5 x 5 at
stride 1 on cl_wgrad_s2d (several channel tiles, a partial one, two column blocks, padding 0 and
K - 1, rows cut into segments) and NCHW on nc_wgrad_s2d (16-, 8- and 4-byte copies, one and
several chunks, several samples a step). Run: compute-sanitizer --tool memcheck python3 <this>"""

import torch

import convx  # noqa: F401  (loads the operator library)

ops = torch.ops.convx
g = torch.Generator().manual_seed(13)
n = 0
# (N, C, H, W, k, padding)
CASES = [(2, 144, 20, 40, 3, 1), (3, 40, 9, 60, 3, 0), (2, 16, 7, 30, 3, 2), (2, 240, 14, 20, 5, 2),
         (1, 24, 13, 30, 5, 0), (1, 8, 9, 12, 5, 4)]
for dt in (torch.float16, torch.bfloat16):
    for N, C, H, W, k, p in CASES:
        x = torch.randn(N, C, H, W, generator=g).to("cuda", dt).contiguous(memory_format=torch.channels_last)
        gy = torch.randn(N, C, H + 2 * p - k + 1, W + 2 * p - k + 1, generator=g).to("cuda", dt)
        gy = gy.contiguous(memory_format=torch.channels_last)
        ops.conv2d_weight_grad(x, [C, 1, k, k], gy, [1, 1], [p, p], [1, 1], C)
        n += 1
# NCHW (N, C, H, W, k, height padding; width padding (k - 1) / 2)
for dt in (torch.float16, torch.bfloat16):
    for N, C, H, W, k, ph in [(6, 8, 56, 56, 3, 1), (5, 16, 28, 28, 5, 2), (5, 8, 11, 30, 3, 0), (7, 8, 13, 30, 5, 4)]:
        pw = (k - 1) // 2
        x = torch.randn(N, C, H, W, generator=g).to("cuda", dt)
        gy = torch.randn(N, C, H + 2 * ph - k + 1, W + 2 * pw - k + 1, generator=g).to("cuda", dt)
        ops.conv2d_weight_grad(x, [C, 1, k, k], gy, [1, 1], [ph, pw], [1, 1], C)
        n += 1
torch.cuda.synchronize()
print(f"sanitize_wgrad_s2d: {n} calls returned")
