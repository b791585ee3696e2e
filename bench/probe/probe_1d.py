"""Session-8 probe: does the 1-D depthwise forward's speed depend on the output rows' alignment?"""
import sys
import torch
import torch.nn.functional as F
sys.path.insert(0, "bench")
import convx  # noqa: F401
from timing import time_pair_ms

torch.backends.cudnn.benchmark = True
ops = torch.ops.convx
N, C = 8, 4096
for dt in (torch.bfloat16, torch.float32):
    for lay in ("ncl", "nlc"):
        for L, k, p in ((2048, 4, 3), (2045, 4, 3), (2048, 3, 1), (2048, 4, 0), (2048, 4, 2), (2048, 2, 1), (2048, 2, 0)):
            if lay == "ncl":
                x = torch.randn(N, C, L, device="cuda", dtype=dt)
            else:
                x = torch.randn(N, L, C, device="cuda", dtype=dt).transpose(1, 2)
            w = torch.randn(C, 1, k, device="cuda", dtype=dt)
            fc = lambda: ops.depthwise_conv1d(x, w, None, [1], [p], [1])
            fa = lambda: F.conv1d(x, w, None, 1, p, 1, C)
            y = fc()
            err = float((y.float() - fa().float()).abs().max())
            tc, ta = time_pair_ms(fc, fa, 40)
            byts = x.numel() * x.element_size() + y.numel() * y.element_size()
            print(f"{str(dt)[6:]:8} {lay} L{L} k{k} p{p} Lout {y.shape[-1]}: convx {tc:.4f} ms ({byts / tc / 3.0e9:.0%})"
                  f"  aten {ta:.4f} ({byts / ta / 3.0e9:.0%})  err {err:.1e}", flush=True)
