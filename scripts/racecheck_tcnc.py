"""The tensor-core NC(D)HW rows kernel (tc_rows_nc: a ring of cp.async bricks reused across
barriers) on a few small bf16 problems, forward and input-grad, and nothing else: run under
compute-sanitizer --tool racecheck (and memcheck). Small on purpose: racecheck instruments every
shared-memory access."""

import torch

import convx  # noqa: F401  (loads the operator library)

ops = torch.ops.convx
# (N, C, spatial, kernel, padding): X3D-like 5x3x3 (a depth of two segments' worth and odd
# widths), 3x3x3, 2-D 3x3 / 7x7 / 31x31 (B from shared memory), 3x3 with 3 samples per block
CASES = [
    (1, 4, (16, 20, 56), (5, 3, 3), (2, 1, 1)),
    (1, 2, (23, 5, 21), (5, 3, 3), (2, 1, 1)),
    (1, 2, (5, 17, 28), (3, 3, 3), (1, 1, 1)),
    (2, 4, (56, 56), (3, 3), (1, 1)),
    (1, 4, (14, 14), (7, 7), (3, 3)),
    (1, 2, (40, 45), (31, 31), (15, 15)),
    (40, 256, (8, 8), (3, 3), (1, 1)),
]
for N, C, sp, k, p in CASES:
    n = len(sp)
    x = torch.randn(N, C, *sp, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(C, 1, *k, device="cuda", dtype=torch.bfloat16)
    one = [1] * n
    y = getattr(ops, f"depthwise_conv{n}d")(x, w, None, one, list(p), one)
    getattr(ops, f"conv{n}d_input_grad")(list(x.shape), w, torch.randn_like(y), one, list(p), one, C)
torch.cuda.synchronize()
print("racecheck_tcnc: every call returned")
