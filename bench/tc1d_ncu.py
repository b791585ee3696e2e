"""TEMPORARY (session 9): three Conformer k31 bf16 forwards per layout, for ncu on the
tensor-core row kernels (ncu --kernel-name regex:tc_row1d ...)."""
import torch

import convx  # noqa: F401

ops = torch.ops.convx
w = torch.randn(512, 1, 31, device="cuda", dtype=torch.bfloat16)
for lay in ("ncl", "nlc"):
    if lay == "nlc":
        x = torch.randn(32, 1000, 512, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
    else:
        x = torch.randn(32, 512, 1000, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        ops.depthwise_conv1d(x, w, None, [1], [15], [1])
torch.cuda.synchronize()
