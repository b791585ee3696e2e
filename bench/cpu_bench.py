"""convx vs aten on the CPU, side by side in one process, same inputs.

Forward and backward (input-grad + weight-grad through autograd), median of repeated runs after
warm-up, aten and convx timed alternately. Writes JSON (--out) and prints a markdown table.

    .venv/bin/python bench/cpu_bench.py --out bench/results/cpu.json
"""
import argparse
import json
import platform
import statistics
import time

import torch
import torch.nn.functional as F

import convx  # noqa: F401  (registers torch.ops.convx)

X = torch.ops.convx

# name, kind, (N, C_in, H, C_out, k, stride, padding)
CASES = [
    ("MobileNetV2 dw 8x144x56 k3", "depthwise", (8, 144, 56, 144, 3, 1, 1)),
    ("MobileNetV2 dw 8x96x112 k3 s2", "depthwise", (8, 96, 112, 96, 3, 2, 1)),
    ("EfficientNet dw 8x240x28 k5", "depthwise", (8, 240, 28, 240, 5, 1, 2)),
    ("ConvNeXt dw 8x96x56 k7", "depthwise", (8, 96, 56, 96, 7, 1, 3)),
    ("UNet up 8x512x32 ->256 k2s2", "transpose", (8, 512, 32, 256, 2, 2, 0)),
    ("DCGAN up 8x256x16 ->128 k4s2p1", "transpose", (8, 256, 16, 128, 4, 2, 1)),
]


CLOCK = time.perf_counter


def paired_ms(fa, fb, reps):
    """Medians of fa and fb timed alternately (the order flips every repetition), so both see
    the same machine load; the development machine is shared and its load moves by seconds."""
    for _ in range(2):
        fa()
        fb()
    ta, tb = [], []
    for i in range(reps):
        for fn, ts in ((fa, ta), (fb, tb)) if i % 2 == 0 else ((fb, tb), (fa, ta)):
            t0 = CLOCK()
            fn()
            ts.append((CLOCK() - t0) * 1e3)
    return statistics.median(ta), statistics.median(tb), min(ta), min(tb)


def make(kind, shape, channels_last):
    n, c, h, co, k, s, p = shape
    x = torch.randn(n, c, h, h)
    if kind == "depthwise":
        w = torch.randn(co, 1, k, k)
        ours = lambda x, w: X.depthwise_conv2d(x, w, None, [s, s], [p, p], [1, 1])
        ref = lambda x, w: F.conv2d(x, w, None, s, p, 1, c)
    else:
        w = torch.randn(c, co, k, k)
        ours = lambda x, w: X.conv_transpose2d(x, w, None, [s, s], [p, p], [0, 0], 1, [1, 1])
        ref = lambda x, w: F.conv_transpose2d(x, w, None, s, p)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    return x, w, ours, ref


def bench_case(name, kind, shape, channels_last, reps):
    x, w, ours, ref = make(kind, shape, channels_last)
    x.requires_grad_()
    w.requires_grad_()
    row = {"case": name, "layout": "channels_last" if channels_last else "NCHW", "dtype": "float32"}
    with torch.no_grad():
        y_ref = ref(x, w)
        y_ours = ours(x, w)
        row["max_abs_diff"] = (y_ref - y_ours).abs().max().item()
        (row["aten_fwd_ms"], row["convx_fwd_ms"], row["aten_fwd_min_ms"],
         row["convx_fwd_min_ms"]) = paired_ms(lambda: ref(x, w), lambda: ours(x, w), reps)
    gy = torch.randn_like(y_ref)

    def backward(fn):
        y = fn(x, w)
        return lambda: torch.autograd.grad(y, (x, w), gy, retain_graph=True)

    (row["aten_bwd_ms"], row["convx_bwd_ms"], row["aten_bwd_min_ms"],
     row["convx_bwd_min_ms"]) = paired_ms(backward(ref), backward(ours), reps)
    row["fwd_speedup"] = row["aten_fwd_ms"] / row["convx_fwd_ms"]
    row["bwd_speedup"] = row["aten_bwd_ms"] / row["convx_bwd_ms"]
    # Ratios of the fastest repetitions: what each side does when the machine lets it.
    row["fwd_speedup_min"] = row["aten_fwd_min_ms"] / row["convx_fwd_min_ms"]
    row["bwd_speedup_min"] = row["aten_bwd_min_ms"] / row["convx_bwd_min_ms"]
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/results/cpu.json")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help="first two cases only, 3 repetitions")
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: leave it)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="cpu: process CPU time (time.process_time), which other processes' load "
                         "does not inflate; meaningful with --threads 1")
    ap.add_argument("--only", default="", help="run the cases whose name contains this")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    cases = CASES[:2] if args.quick else [c for c in CASES if args.only in c[0]]
    reps = 3 if args.quick else args.reps
    rows = []
    print("| case | layout | aten fwd ms | convx fwd ms | fwd x | aten bwd ms | convx bwd ms | bwd x "
          "| fwd x (min) | bwd x (min) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, kind, shape in cases:
        for cl in (False, True):
            r = bench_case(name, kind, shape, cl, reps)
            rows.append(r)
            print(f"| {r['case']} | {r['layout']} | {r['aten_fwd_ms']:.2f} | {r['convx_fwd_ms']:.2f} | "
                  f"{r['fwd_speedup']:.2f} | {r['aten_bwd_ms']:.2f} | {r['convx_bwd_ms']:.2f} | "
                  f"{r['bwd_speedup']:.2f} | {r['fwd_speedup_min']:.2f} | {r['bwd_speedup_min']:.2f} |",
                  flush=True)
    meta = {"torch": torch.__version__, "threads": torch.get_num_threads(),
            "machine": platform.processor() or platform.machine(), "reps": reps,
            "clock": args.clock, "cpu_capability": torch.backends.cpu.get_cpu_capability()}
    with open(args.out, "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
