"""The whole-plane 7 x 7 NCHW weight-grad (plane_wgrad2d.cuh) on a few small problems and nothing
else, for compute-sanitizer (memcheck; racecheck of its cp.async staging and shared-memory sums):
fp32 and bf16, ConvNeXt 'same' padding (several chunks), stages of several 14 x 14 planes with a
partial last stage, padding 6, an even column padding (16-bit E = 0)."""

import torch

import convx  # noqa: F401  (loads the operator library)

ops = torch.ops.convx
# (N, C, size, padding)
CASES = [(4, 8, (56, 56), (3, 3)), (17, 4, (14, 14), (3, 3)), (1, 6, (10, 12), (6, 6)), (3, 2, (12, 18), (2, 4))]
for dtype in (torch.float32, torch.bfloat16):
    for N, C, size, p in CASES:
        x = torch.randn(N, C, *size, device="cuda", dtype=dtype)
        gy = torch.randn([N, C] + [s + 2 * q - 6 for s, q in zip(size, p)], device="cuda", dtype=dtype)
        ops.conv2d_weight_grad(x, [C, 1, 7, 7], gy, [1, 1], list(p), [1, 1], C)
torch.cuda.synchronize()
print("sanitize_plane_wgrad2d: every call returned")
