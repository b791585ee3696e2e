"""The tensor-core 3-D weight-grad (tc_wgrad3d: NCDHW and NDHWC, 16-byte and value staging) on a
few small bf16 problems and nothing else, for compute-sanitizer (racecheck, memcheck): the pytest
cases' float64 references would be instrumented too and take minutes."""

import torch

import convx  # noqa: F401  (loads the operator library)

ops = torch.ops.convx
# (N, C, size, KD, padding): X3D k5x3x3 'same' on 56-wide rows (several tiles and chunks), k3 on
# an odd width (NCDHW value staging; NDHWC k3 is cl_wgrad_depth3d's), k5 with no padding and two
# column tiles
CASES = [(1, 8, (10, 12, 56), 5, (2, 1, 1)), (2, 8, (5, 9, 19), 3, (1, 1, 1)), (1, 8, (6, 5, 72), 5, (0, 0, 0))]
for layout in ("ncdhw", "ndhwc"):
    for N, C, size, kd, p in CASES:
        x = torch.randn(N, C, *size, device="cuda", dtype=torch.bfloat16)
        gy_shape = [N, C] + [s + 2 * q - k + 1 for s, q, k in zip(size, p, (kd, 3, 3))]
        gy = torch.randn(gy_shape, device="cuda", dtype=torch.bfloat16)
        if layout == "ndhwc":
            x = x.contiguous(memory_format=torch.channels_last_3d)
            gy = gy.contiguous(memory_format=torch.channels_last_3d)
        ops.conv3d_weight_grad(x, [C, 1, kd, 3, 3], gy, [1, 1, 1], list(p), [1, 1, 1], C)
torch.cuda.synchronize()
print("racecheck_tc_wgrad3d: every call returned")
