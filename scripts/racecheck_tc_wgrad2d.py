"""The tensor-core 2-D weight-grads (tc_wgrad2d: 7 x 7, NCHW and NHWC, one and several chunks) on a
few small bf16 problems and nothing else, for compute-sanitizer (racecheck,
memcheck): the pytest cases' float64 references would be instrumented too and take minutes."""

import torch

import convx  # noqa: F401  (loads the operator library)

ops = torch.ops.convx
# (N, C, size, K, padding): ConvNeXt 7 x 7 'same' on 56-wide rows (NHWC: three row tiles; chunks),
# 7 x 7 on rows of 70 (two column tiles) and of 19 (NHWC: two column steps)
CASES = [(2, 8, (40, 56), 7, (3, 3)), (1, 8, (9, 70), 7, (3, 3)), (2, 8, (11, 19), 7, (6, 6))]
for layout in ("nchw", "nhwc"):
    for N, C, size, k, p in CASES:
        x = torch.randn(N, C, *size, device="cuda", dtype=torch.bfloat16)
        gy_shape = [N, C] + [s + 2 * q - k + 1 for s, q in zip(size, p)]
        gy = torch.randn(gy_shape, device="cuda", dtype=torch.bfloat16)
        if layout == "nhwc":
            x = x.contiguous(memory_format=torch.channels_last)
            gy = gy.contiguous(memory_format=torch.channels_last)
        ops.conv2d_weight_grad(x, [C, 1, k, k], gy, [1, 1], list(p), [1, 1], C)
torch.cuda.synchronize()
print("racecheck_tc_wgrad2d: every call returned")
