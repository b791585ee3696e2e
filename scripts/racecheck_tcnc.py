"""The tensor-core NC(D)HW rows kernel (tc_rows_nc: a ring of cp.async bricks reused across
barriers) on a few small bf16 problems and two fp32 (TF32) ones, forward and input-grad, and
nothing else: run under
compute-sanitizer --tool racecheck (and memcheck). Small on purpose: racecheck instruments every
shared-memory access."""

import torch

import convx  # noqa: F401  (loads the operator library)

ops = torch.ops.convx
# (N, C, spatial, kernel, padding): X3D-like 5x3x3 (a depth of two segments' worth and odd
# widths), 2-D 7x7 on a 56 plane, 31x31 (B from shared memory), 31x31 with 3 samples per block
CASES = [
    (1, 4, (16, 20, 56), (5, 3, 3), (2, 1, 1)),
    (1, 2, (23, 5, 21), (5, 3, 3), (2, 1, 1)),
    (2, 2, (56, 60), (7, 7), (3, 3)),
    (1, 2, (40, 45), (31, 31), (15, 15)),
    (40, 64, (12, 12), (31, 31), (15, 15)),
]
for N, C, sp, k, p in CASES:
    n = len(sp)
    x = torch.randn(N, C, *sp, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(C, 1, *k, device="cuda", dtype=torch.bfloat16)
    one = [1] * n
    y = getattr(ops, f"depthwise_conv{n}d")(x, w, None, one, list(p), one)
    getattr(ops, f"conv{n}d_input_grad")(list(x.shape), w, torch.randn_like(y), one, list(p), one, C)
# fp32 as TF32 (31x31 on planes of at least 56 x 56, allow_tf32): NCHW and channels-last (one
# 4-byte copy per staged value, channel-fastest blocks)
torch.backends.cudnn.allow_tf32 = True
for cl in (False, True):
    x = torch.randn(1, 4, 56, 60, device="cuda")
    if cl:
        x = x.contiguous(memory_format=torch.channels_last)
    w = torch.randn(4, 1, 31, 31, device="cuda")
    y = ops.depthwise_conv2d(x, w, None, [1, 1], [15, 15], [1, 1])
    gy = torch.randn_like(y)
    ops.conv2d_input_grad(list(x.shape), w, gy, [1, 1], [15, 15], [1, 1], 4)
torch.cuda.synchronize()
print("racecheck_tcnc: every call returned")
