"""The few-channel data-grad gather (ops/conv/cuda/few_channel_gather.cu) against cuDNN and aten,
forward device time per call, one process, all columns of a row interleaved (each round runs
every column once, starting at a rotating column), median of --iters rounds; each column's
result checked against aten's (max error / max |aten|).

Rows: issue #5's autoencoder head (conv_transpose2d 64 -> 3, k5 s2 op1), an RGB decoder head
(32 -> 3, k3 s2 p1 op1), the hand-off of a wide channel multiplier (256 -> 1, k4 s2 p1: depthwise-
shaped, summed by the dense path), the input-grad of an RGB stem (conv2d 3 -> 64, k7 s2 p3 on 224²)
and of a ResNeXt grouped conv (32 groups of 4 channels, k3 s1 p1 on 56²).

    CONVX_LIBRARY=build-gpu/libconvx.so PYTHONPATH=python python3 bench/few_channel_ab.py \
        [--variants cudnn,gather,default,cudnn_end] [--iters 30]

(Session 9's first run also had columns for the gather's tile plans, through a temporary
CONVX_FEWCH_PLAN knob removed after it: bench/results/h100/session9/few_channel_ab_plans.log.)
"""

import argparse
import json
import os
import statistics

import torch
import torch.nn.functional as F

import convx  # noqa: F401  (loads the operator library)
from timing import _timer

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
# column -> environment while the column's call runs (convx reads its knobs on every call).
VARIANTS = {
    "cudnn": {"CONVX_CUDA_DENSE": "cudnn"},
    "gather": {"CONVX_CUDA_DENSE": "few_channel"},
    "default": {},
    "cudnn_end": {"CONVX_CUDA_DENSE": "cudnn"},  # the baseline again, last in the column order
}
# name, kind, N, C_in, C_out, spatial, k, stride, padding, output_padding, groups, dtypes
ROWS = [
    ("autoenc_k5s2op1", "t", 128, 64, 3, 14, 5, 2, 0, 1, 1, ("fp32", "fp16", "bf16")),
    ("rgbhead_k3s2p1op1", "t", 64, 32, 3, 64, 3, 2, 1, 1, 1, ("fp32", "fp16", "bf16")),
    ("mult256_k4s2p1", "t", 32, 256, 1, 32, 4, 2, 1, 0, 1, ("fp32", "bf16")),
    # input-grads: C_in / C_out are the forward conv's; spatial is its input size
    ("stem_k7s2p3_gin", "g", 32, 3, 64, 224, 7, 2, 3, 0, 1, ("fp32", "bf16")),
    ("resnext_g32_gin", "g", 32, 128, 128, 56, 3, 1, 1, 0, 32, ("fp32", "bf16")),
]


class env:
    def __init__(self, variables):
        self.variables = variables

    def __enter__(self):
        for k, v in self.variables.items():
            os.environ[k] = v

    def __exit__(self, *exc):
        for k in self.variables:
            os.environ.pop(k, None)


def calls(row, dtype, layout):
    name, kind, N, cin, cout, sp, k, s, p, op, g, _ = row
    mf = torch.channels_last if layout == "NHWC" else torch.contiguous_format
    if kind == "t":
        x = torch.randn(N, cin, sp, sp, device="cuda", dtype=dtype).to(memory_format=mf)
        w = (torch.randn(cin, cout // g, k, k, device="cuda", dtype=dtype) / (cin * k * k) ** 0.5)
        b = torch.randn(cout, device="cuda", dtype=dtype)
        aten = lambda: F.conv_transpose2d(x, w, b, s, p, op, g)  # noqa: E731
        conv = lambda: convx.functional.conv_transpose2d(x, w, b, stride=s, padding=p,  # noqa: E731
                                                         output_padding=op, groups=g)
    else:
        w = (torch.randn(cout, cin // g, k, k, device="cuda", dtype=dtype) / (cin // g * k * k) ** 0.5)
        ho = (sp + 2 * p - k) // s + 1
        gy = torch.randn(N, cout, ho, ho, device="cuda", dtype=dtype).to(memory_format=mf)
        size = [N, cin, sp, sp]
        aten = lambda: torch.nn.grad.conv2d_input(size, w, gy, s, p, 1, g)  # noqa: E731
        conv = lambda: torch.ops.convx.conv2d_input_grad(size, w, gy, [s, s], [p, p], [1, 1], g)  # noqa: E731
    return aten, conv


def with_env(fn, variables):
    def run():
        with env(variables):
            return fn()
    return run


def bench_row(row, dt, layout, variants, iters):
    aten, conv = calls(row, DTYPES[dt], layout)
    cols = {"aten": aten}
    for v in variants:
        cols[v] = with_env(conv, VARIANTS[v])
    out = {"case": row[0], "dtype": dt, "layout": layout}
    with torch.no_grad():
        ref = aten().float()
        scale = float(ref.abs().max())
        for c, fn in cols.items():
            out[f"err_{c}"] = float((fn().float() - ref).abs().max()) / scale
        timers = {c: _timer(fn, 5) for c, fn in cols.items()}
        names = list(cols)
        times = {c: [] for c in names}
        for i in range(iters):
            for j in range(len(names)):
                c = names[(i + j) % len(names)]
                times[c].append(timers[c]())
    for c in names:
        out[f"{c}_ms"] = statistics.median(times[c])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--variants", default="cudnn,default")
    ap.add_argument("--rows", default="", help="comma-separated row names (default: all)")
    ap.add_argument("--out", default="bench/results/h100/session9/few_channel_ab.json")
    a = ap.parse_args()
    torch.manual_seed(0)
    variants = a.variants.split(",")
    print(f"{'case':20} {'dtype':5} {'layout':6} " + " ".join(f"{c:>9}" for c in ["aten"] + variants)
          + "   x aten (" + ",".join(variants) + ")   max err", flush=True)
    rows = []
    for row in ROWS:
        if a.rows and row[0] not in a.rows.split(","):
            continue
        for dt in row[-1]:
            for layout in ("NCHW", "NHWC"):
                r = bench_row(row, dt, layout, variants, a.iters)
                rows.append(r)
                cols = ["aten"] + variants
                print(f"{r['case']:20} {dt:5} {layout:6} " + " ".join(f"{r[c + '_ms']:9.4f}" for c in cols)
                      + "   " + " ".join(f"{r['aten_ms'] / r[v + '_ms']:5.2f}" for v in variants)
                      + "   " + f"{max(r['err_' + c] for c in cols):.1e}", flush=True)
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "cudnn": torch.backends.cudnn.version(), "iters": a.iters,
            "tf32_conv": torch.backends.cudnn.allow_tf32}
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out, "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
