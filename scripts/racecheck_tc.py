"""The tensor-core 1-D kernels (tc_row1d, tc_wgrad1d) on a few bf16 rows in both layouts, and
nothing else: scripts/gpu_check.sh runs it under compute-sanitizer --tool racecheck. The pytest
cases of those kernels compute float64 references with aten's generic kernels, which racecheck
instruments too (one case took minutes: session 9's check ran past the call's limit)."""

import torch

import convx  # noqa: F401  (loads the operator library)

ops = torch.ops.convx
# (N, C, L, taps, padding): Conformer-like 'same' k31, causal k15, a row shorter than a tile,
# 47 taps (4 k-steps)
ROWS = [(2, 64, 1000, 31, 15), (2, 48, 1029, 15, 14), (1, 40, 9, 31, 15), (2, 16, 300, 47, 23)]
for layout in ("ncl", "nlc"):
    for N, C, L, k, p in ROWS:
        x = torch.randn(N, C, L, device="cuda", dtype=torch.bfloat16)
        if layout == "nlc":
            x = x.transpose(1, 2).contiguous().transpose(1, 2)
        w = torch.randn(C, 1, k, device="cuda", dtype=torch.bfloat16)
        y = ops.depthwise_conv1d(x, w, None, [1], [p], [1])
        gy = torch.randn_like(y)
        ops.conv1d_input_grad(list(x.shape), w, gy, [1], [p], [1], C)
        ops.conv1d_weight_grad(x, list(w.shape), gy, [1], [p], [1], C)
torch.cuda.synchronize()
print("racecheck_tc: every call returned")
