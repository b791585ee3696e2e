"""TEMPORARY (session 13, conf): A/B of the (N, L, C) Conformer-512 kernels in one process.
CONVX_CONF_AB = VERSION:TILES picks tc_row1d_cl (0 = main's), CONVX_CONF_WG tcw_cl (0 = main's),
CONVX_CONF_WR tcw_rows (NCL; 0 = main's);
each variant alternates with main's kernel (timing.time_pair_ms), so main's is timed first and
last. Checks: outputs against float64, new forward / data-grad bitwise equal to main's, weight-grads
bitwise repeatable."""
import os

import torch

import convx  # noqa: F401
from timing import time_pair_ms

ops = torch.ops.convx
torch.manual_seed(0)
N, C, L, K, P = 32, 512, 1000, 31, 15
x = torch.randn(N, L, C, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
w = torch.randn(C, 1, K, device="cuda", dtype=torch.bfloat16)
dy = torch.randn(N, L, C, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
xn, dyn = x.contiguous(), dy.contiguous()  # NCL copies
wgr_ncl = lambda: ops.conv1d_weight_grad(xn, list(w.shape), dyn, [1], [P], [1], C)  # noqa: E731
fwd = lambda: ops.depthwise_conv1d(x, w, None, [1], [P], [1])  # noqa: E731
dgr = lambda: ops.conv1d_input_grad(list(x.shape), w, dy, [1], [P], [1], C)  # noqa: E731
wgr = lambda: ops.conv1d_weight_grad(x, list(w.shape), dy, [1], [P], [1], C)  # noqa: E731
xd, wd, dyd = x.double(), w.double(), dy.double()
ref_y = torch.nn.functional.conv1d(xd, wd, None, 1, P, 1, C)
ref_dx, ref_dw = torch.ops.aten.convolution_backward(dyd, xd, wd, None, [1], [P], [1], False, [0], C,
                                                     [True, True, False])[:2]


def err(a, r):
    return ((a.double() - r).abs().max() / r.abs().max()).item()


def env(key, val):
    def f(fn):
        def g():
            os.environ[key] = val
            return fn()
        return g
    return f


def check(key, val, fn, ref, base_out):
    os.environ[key] = val
    a, b = fn(), fn()
    torch.cuda.synchronize()
    same = torch.equal(a, base_out)
    print(f"  check {key}={val}: err vs fp64 {err(a, ref):.2e}, repeat bitwise {torch.equal(a, b)}, "
          f"== main's {same}", flush=True)


# k15 causal (N, L, C) forward, the bench's other tc_row1d_cl row (its data-grad is the same kernel)
xk = torch.randn(8, 4096, 2048, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
wk = torch.randn(2048, 1, 15, device="cuda", dtype=torch.bfloat16)
fwd15 = lambda: ops.depthwise_conv1d(xk, wk, None, [1], [14], [1])  # noqa: E731
ref15 = torch.nn.functional.conv1d(xk[:1].double(), wk.double(), None, 1, 14, 1, 2048)
fwd15_1 = lambda: fwd15()[:1]  # noqa: E731  (checked on the first sample)

for name, fn, ref, key, variants in (
        ("k15 fwd", fwd15_1, ref15, "CONVX_CONF_AB", ("1:2", "1:4", "1:0")),
        ("fwd", fwd, ref_y, "CONVX_CONF_AB", ("1:4", "1:0", "0:4")),
        ("dgrad", dgr, ref_dx, "CONVX_CONF_AB", ("1:4", "1:0")),
        ("wgrad", wgr, ref_dw, "CONVX_CONF_WG", ("1",)),
        ("ncl wgrad", wgr_ncl, ref_dw, "CONVX_CONF_WR", ("1",))):
    base_val = "0:2" if key == "CONVX_CONF_AB" else "0"
    os.environ[key] = base_val
    base_out = fn()
    torch.cuda.synchronize()
    print(f"{name} main's: err vs fp64 {err(base_out, ref):.2e}", flush=True)
    for v in variants:
        check(key, v, fn, ref, base_out)
        for rep in range(2):
            ta, tb = time_pair_ms(env(key, base_val)(fn), env(key, v)(fn), 60)
            print(f"  {name} {key} main {ta * 1e3:.1f} us  {v} {tb * 1e3:.1f} us  ({(ta - tb) * 1e3:+.1f})", flush=True)
    os.environ.pop(key)
# backward as the bench calls it (data-grad + weight-grad), main's vs the defaults
def bwd():
    dgr()
    wgr()


def bwd_main():
    os.environ["CONVX_CONF_AB"], os.environ["CONVX_CONF_WG"] = "0:2", "0"
    bwd()
    os.environ.pop("CONVX_CONF_AB"), os.environ.pop("CONVX_CONF_WG")


for rep in range(2):
    ta, tb = time_pair_ms(bwd_main, bwd, 60)
    print(f"bwd main {ta * 1e3:.1f} us  new {tb * 1e3:.1f} us", flush=True)
