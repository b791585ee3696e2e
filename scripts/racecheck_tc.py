"""The tensor-core 1-D kernels (tc_row1d, tc_wgrad1d) on a few bf16 rows in both layouts, and
nothing else: scripts/gpu_check.sh runs it under compute-sanitizer --tool racecheck. The pytest
cases of those kernels compute float64 references with aten's generic kernels, which racecheck
instruments too (one case took minutes: session 9's check ran past the call's limit).

Rows (N, C, L, taps, padding): Conformer-like 'same' k31 with many samples (the weight-grads in
several chunks: their last blocks' ordered sums), causal k15, a row shorter than a tile, 47 taps (4
k-steps), padding beyond the filter; each NCL and (N, L, C), aligned and one element off (NCL: the
staged windows' first vector straddles the row's start; (N, L, C): the launchers decline)."""

import torch

import convx  # noqa: F401  (loads the operator library)

ops = torch.ops.convx


def held(t, nlc, off1):
    t = t.transpose(1, 2) if nlc else t
    if off1:
        flat = torch.empty(t.numel() + 1, device="cuda", dtype=t.dtype)[1:]
        t = flat.view(t.shape).copy_(t)
    else:
        t = t.contiguous()
    return t.transpose(1, 2) if nlc else t


ROWS = [(64, 8, 1000, 31, 15), (16, 16, 1000, 31, 15), (20, 8, 70, 15, 14), (2, 24, 9, 15, 7), (1, 40, 1029, 15, 14),
        (2, 16, 300, 47, 23), (3, 8, 333, 31, 40)]
for nlc in (False, True):
    for off1 in (False, True):
        for N, C, L, k, p in ROWS:
            x = held(torch.randn(N, C, L, device="cuda", dtype=torch.bfloat16), nlc, off1)
            w = torch.randn(C, 1, k, device="cuda", dtype=torch.bfloat16)
            y = ops.depthwise_conv1d(x, w, None, [1], [p], [1])
            gy = held(torch.randn(y.shape, device="cuda", dtype=torch.bfloat16), nlc, off1)
            ops.conv1d_input_grad(list(x.shape), w, gy, [1], [p], [1], C)
            ops.conv1d_weight_grad(x, list(w.shape), gy, [1], [p], [1], C)
torch.cuda.synchronize()
print("racecheck_tc: every call returned")
