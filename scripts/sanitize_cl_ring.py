# The channels-last ring kernel (cl_ring.cuh, session 11, branch cl2d) under compute-sanitizer:
# forward and stride-1 input-grad of 3x3 (stride 1, 2), 5x5 and 7x7 filters, fp32 / fp16 / bf16,
# on the routes of launch_tiled (fp32 3x3 stride 1; 16-bit outputs at least 28 wide; the others
# go to cuDNN or cl_gather): odd sizes, several rows per step, column tiles and channel chunks
# with idle lanes (fp32 C 260), 960 channels, padding beyond the filter. Each result is compared
# with aten (a coarse check: the sanitizer is the point). Its device runs (two, with the A/B knob
# of that branch looping over the variants) reported 0 errors / 0 hazards.
# Run: compute-sanitizer --tool memcheck|racecheck python3 <this>
import torch
import torch.nn.functional as F

import convx  # noqa: F401

ops = torch.ops.convx
DEV = "cuda"
g = torch.Generator().manual_seed(5)
CASES = [(2, 16, (13, 17), 3, 1, 1), (2, 16, (9, 40), 3, 1, 1), (2, 16, (14, 60), 3, 2, 1), (2, 8, (15, 30), 5, 1, 2),
         (1, 16, (19, 33), 7, 1, 3), (1, 8, (6, 29), 3, 1, 4), (1, 264, (5, 40), 3, 1, 1), (1, 260, (5, 40), 3, 1, 1),
         (1, 960, (4, 30), 7, 1, 3), (1, 144, (20, 56), 3, 1, 1), (1, 96, (24, 56), 7, 1, 3)]
n = 0
worst = 0.0
for dt in (torch.float32, torch.float16, torch.bfloat16):
    for N, C, size, k, s, p in CASES:
        if C % (4 if dt == torch.float32 else 8):
            continue
        x = torch.randn(N, C, *size, generator=g).to(DEV, dt).contiguous(memory_format=torch.channels_last)
        w = torch.randn(C, 1, k, k, generator=g).to(DEV, dt)
        b = torch.randn(C, generator=g).to(DEV, dt)
        y = ops.depthwise_conv2d(x, w, b, [s, s], [p, p], [1, 1])
        ref = F.conv2d(x.float(), w.float(), b.float(), s, p, 1, C)
        worst = max(worst, float((y.float() - ref).abs().max() / ref.abs().max()))
        gy = torch.randn(y.shape, generator=g).to(DEV, dt).contiguous(memory_format=torch.channels_last)
        gx = ops.conv2d_input_grad(list(x.shape), w, gy, [s, s], [p, p], [1, 1], C)
        gref = torch.nn.grad.conv2d_input(list(x.shape), w.float(), gy.float(), s, p, 1, C)
        worst = max(worst, float((gx.float() - gref).abs().max() / gref.abs().max()))
        n += 2
torch.cuda.synchronize()
print(f"sanitize_cl_ring: {n} calls, worst relative error against aten {worst:.1e}")
