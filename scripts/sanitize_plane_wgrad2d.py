"""The staged 7 x 7 weight-grads (plane_wgrad2d.cuh: plane_wgrad2d NCHW, cl_band_wgrad2d NHWC) on a
few small problems and nothing else, for compute-sanitizer (memcheck; racecheck of the cp.async
staging and shared-memory sums): fp32 and bf16, ConvNeXt 'same' padding (several chunks), stages
of several 14 x 14 planes with a partial last stage, padding 6, an even column padding (16-bit
E = 0); NHWC bands of 56 x 56 planes, one band of 14 x 14."""

import torch

import convx  # noqa: F401  (loads the operator library)

ops = torch.ops.convx
# (N, C, size, padding)
CASES = [(4, 8, (56, 56), (3, 3)), (17, 4, (14, 14), (3, 3)), (1, 6, (10, 12), (6, 6)), (3, 2, (12, 18), (2, 4))]
CL_CASES = [(2, 32, (56, 56), (3, 3)), (3, 16, (14, 14), (3, 3)), (1, 16, (10, 12), (6, 6))]
for dtype in (torch.float32, torch.bfloat16):
    for layout, cases in (("nchw", CASES), ("nhwc", CL_CASES)):
        for N, C, size, p in cases:
            x = torch.randn(N, C, *size, device="cuda", dtype=dtype)
            gy = torch.randn([N, C] + [s + 2 * q - 6 for s, q in zip(size, p)], device="cuda", dtype=dtype)
            if layout == "nhwc":
                x = x.contiguous(memory_format=torch.channels_last)
                gy = gy.contiguous(memory_format=torch.channels_last)
            ops.conv2d_weight_grad(x, [C, 1, 7, 7], gy, [1, 1], list(p), [1, 1], C)
torch.cuda.synchronize()
print("sanitize_plane_wgrad2d: every call returned")
