"""TEMPORARY (session 9, removed with the CONVX_TC1D knob): the tensor-core 16-bit 1-D rows
(tc_row1d.cuh) against the CUDA-core kernels they replace, in one process (the knob is read per
call; the two alternate, bench/timing.py's time_pair_ms), to choose the taps routed to them and
the NCL tiles per warp. bf16, forward and input-grad, NCL and (N, L, C)-held.

    CONVX_LIBRARY=build-gpu/libconvx.so PYTHONPATH=python python3 bench/tc1d_sweep.py
"""

import os

import torch

import convx  # noqa: F401
from timing import time_ms, time_pair_ms

ops = torch.ops.convx


def knobbed(fn, v):
    def run():
        os.environ["CONVX_TC1D"] = v
        return fn()

    return run


def make(N, C, L, layout):
    if layout == "nlc":
        return torch.randn(N, L, C, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
    return torch.randn(N, C, L, device="cuda", dtype=torch.bfloat16)


def main():
    x = torch.empty(1 << 28, dtype=torch.float32, device="cuda")
    bw = 2 * x.numel() * 4 / (time_ms(lambda: x.clone(), 30) * 1e-3)
    del x
    print(f"device: {torch.cuda.get_device_name()}  copy bandwidth {bw / 1e9:.0f} GB/s")
    print("taps sweep: N8 C1024 L2048 bf16, 'same' padding k//2; off = CONVX_TC1D=0, on = tensor cores")
    print(f"{'lay':4} {'k':>3} {'dir':5} | {'off ms':>7} {'on ms':>7} {'x':>5} | {'off%bw':>6} {'on%bw':>6}")
    N, C, L = 8, 1024, 2048
    for layout in ("ncl", "nlc"):
        for k in (7, 9, 11, 13, 15, 17, 21, 25, 31, 33, 41, 47):
            x = make(N, C, L, layout)
            w = torch.randn(C, 1, k, device="cuda", dtype=torch.bfloat16)
            p = k // 2
            gy = make(N, C, L + 2 * p - k + 1, layout)
            fwd = lambda: ops.depthwise_conv1d(x, w, None, [1], [p], [1])  # noqa: E731
            dg = lambda: ops.conv1d_input_grad(list(x.shape), w, gy, [1], [p], [1], C)  # noqa: E731
            nbytes = 2 * x.numel() * 2
            for name, fn in (("fwd", fwd), ("dgrad", dg)):
                off, on = time_pair_ms(knobbed(fn, "0"), knobbed(fn, "2"), 40)
                print(f"{layout:4} {k:3} {name:5} | {off:7.4f} {on:7.4f} {off / on:5.2f} |"
                      f" {100 * nbytes / (off * 1e-3) / bw:6.0f} {100 * nbytes / (on * 1e-3) / bw:6.0f}", flush=True)
    print("NCL tiles per warp t (CONVX_TC1D) x tiles in flight pd (CONVX_TC1D_PD), bench shapes; off = CUDA cores")
    for name, (N, C, L, k, p) in {"conformer_512": (32, 512, 1000, 31, 15), "k15_causal": (8, 2048, 4096, 15, 14)}.items():
        x = make(N, C, L, "ncl")
        w = torch.randn(C, 1, k, device="cuda", dtype=torch.bfloat16)
        gy = make(N, C, L + 2 * p - k + 1, "ncl")
        fwd = lambda: ops.depthwise_conv1d(x, w, None, [1], [p], [1])  # noqa: E731
        dg = lambda: ops.conv1d_input_grad(list(x.shape), w, gy, [1], [p], [1], C)  # noqa: E731
        for dn, fn in (("fwd", fwd), ("dgrad", dg)):
            res = []
            for t, pd in (("2", "1"), ("2", "2"), ("4", "1"), ("4", "2"), ("8", "2")):
                os.environ["CONVX_TC1D_PD"] = pd
                a, b = time_pair_ms(knobbed(fn, "0"), knobbed(fn, t), 40)
                res.append(f"t{t}pd{pd} {b:.4f} (off {a:.4f})")
            os.environ.pop("CONVX_TC1D_PD")
            print(f"{name:14} {dn:5} " + "  ".join(res), flush=True)
    os.environ.pop("CONVX_TC1D")


if __name__ == "__main__":
    main()
