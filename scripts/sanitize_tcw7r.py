"""The NCHW 7 x 7 16-bit weight-grad on tensor cores reducing over rows (tc_wgrad7_rows.cuh) on a few
small problems and nothing else, for compute-sanitizer (memcheck; racecheck of its cp.async ring
and shared-memory sums): fp16 and bf16, ConvNeXt 'same' padding on 56 x 56 (several chunks per
channel: the last block's sum), 49 rows, an odd width (value by value) with padding 6, rows wider
than 64 (two column tiles)."""

import torch

import convx  # noqa: F401  (loads the operator library)

ops = torch.ops.convx
# (N, C, size, padding)
CASES = [(8, 4, (56, 56), (3, 3)), (2, 3, (49, 56), (3, 3)), (1, 2, (11, 37), (6, 6)), (2, 2, (9, 70), (3, 2))]
for dtype in (torch.float16, torch.bfloat16):
    for N, C, size, p in CASES:
        x = torch.randn(N, C, *size, device="cuda", dtype=dtype)
        gy = torch.randn([N, C] + [s + 2 * q - 6 for s, q in zip(size, p)], device="cuda", dtype=dtype)
        ops.conv2d_weight_grad(x, [C, 1, 7, 7], gy, [1, 1], list(p), [1, 1], C)
torch.cuda.synchronize()
print("sanitize_tcw7r: every call returned")
