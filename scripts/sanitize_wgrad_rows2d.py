"""Session 12's 16-bit 2-D weight-grads of small planes, alone, for compute-sanitizer (memcheck;
racecheck of the shared-memory group sums): channels-last 3 x 3 / 5 x 5 at stride 1 on the
row-streaming tiles (cl_wgrad_rows on planes <= 7 wide and 5 x 5, cl_wgrad_depth3d through
rows_as_depth on wider 3 x 3 planes; channel tiles with idle lanes, strips cut by the edge) and
NCHW 3 x 3 / 5 x 5 with one chunk of planes per channel (nc_wgrad_stream writing the weight-grad
itself). Run: compute-sanitizer --tool memcheck python3 <this>"""

import torch

import convx  # noqa: F401  (loads the operator library)

ops = torch.ops.convx
g = torch.Generator().manual_seed(12)
n = 0
# (N, C, H, W, k, padding): MobileNetV2 7 x 7 (C 960), a wider 3 x 3 plane, an odd 3 x 3 plane,
# EfficientNet-like 5 x 5, 5 x 5 without padding, channel counts leaving lanes idle
CASES = [(2, 960, 7, 7, 3, 1), (2, 144, 20, 18, 3, 1), (3, 40, 9, 5, 3, 0), (2, 240, 14, 14, 5, 2),
         (1, 24, 13, 11, 5, 0), (2, 18, 7, 7, 3, 1)]
for dt in (torch.float16, torch.bfloat16):
    for cl in (False, True):
        for N, C, H, W, k, p in CASES:
            x = torch.randn(N, C, H, W, generator=g).to("cuda", dt)
            gy = torch.randn(N, C, H + 2 * p - k + 1, W + 2 * p - k + 1, generator=g).to("cuda", dt)
            if cl:
                x = x.contiguous(memory_format=torch.channels_last)
                gy = gy.contiguous(memory_format=torch.channels_last)
            ops.conv2d_weight_grad(x, [C, 1, k, k], gy, [1, 1], [p, p], [1, 1], C)
            n += 1
torch.cuda.synchronize()
print(f"sanitize_wgrad_rows2d: {n} calls returned")
