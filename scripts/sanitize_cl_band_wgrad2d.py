"""The channels-last 7 x 7 and 5 x 5 weight-grad from staged bands (cl_band_wgrad2d.cuh) on a few
small problems and nothing else, for compute-sanitizer (memcheck; racecheck of its cp.async staging,
shared-memory sums and fp32's last-block chunk sum): fp32 and bf16, ConvNeXt 'same' padding on 56 x
56 (bands of 8 rows, several chunks) and 14 x 14 (one band), padding 6 and 0 on odd sizes; fp32 5 x 5
on outputs 24 to 32 wide."""

import torch

import convx  # noqa: F401  (loads the operator library)

ops = torch.ops.convx
# (N, C, size, padding)
CASES = [(2, 32, (56, 56), (3, 3)), (3, 16, (14, 14), (3, 3)), (1, 16, (20, 15), (6, 6)), (2, 16, (30, 18), (0, 1))]
# clw (session 14): 5 x 5 fp32 (EfficientNet's 28 x 28, padding 4 and 0)
CASES5 = [(2, 16, (28, 28), (2, 2)), (1, 8, (20, 24), (4, 4)), (2, 16, (30, 30), (0, 1))]
for K, cases, dtypes in ((7, CASES, (torch.float32, torch.bfloat16)), (5, CASES5, (torch.float32,))):
    for dtype in dtypes:
        for N, C, size, p in cases:
            x = torch.randn(N, C, *size, device="cuda", dtype=dtype).contiguous(memory_format=torch.channels_last)
            gy = torch.randn([N, C] + [s + 2 * q - K + 1 for s, q in zip(size, p)], device="cuda", dtype=dtype)
            gy = gy.contiguous(memory_format=torch.channels_last)
            ops.conv2d_weight_grad(x, [C, 1, K, K], gy, [1, 1], list(p), [1, 1], C)
torch.cuda.synchronize()
print("sanitize_cl_band_wgrad2d: every call returned")
