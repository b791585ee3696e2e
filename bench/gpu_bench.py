"""convx vs aten depthwise convolution on one GPU, side by side in one process.

Same inputs for both; CUDA events; median of --iters runs after warm-up. Forward time, and
backward time (input-grad + weight-grad). Reports aten/convx ratios and the fraction of the
measured copy bandwidth each achieves (bytes: forward x + y + w, backward x + dy + dx + dw).

    CONVX_LIBRARY=build-gpu/libconvx.so PYTHONPATH=python python3 bench/gpu_bench.py [--quick]
"""

import argparse
import json
import os
import statistics

import torch
import torch.nn.functional as F

import convx  # noqa: F401  (loads the operator library)

# name, N, C, H, k, stride, padding, transposed
CASES = [
    ("mbv2_s1", 64, 144, 56, 3, 1, 1, False),
    ("mbv2_s2", 64, 96, 112, 3, 2, 1, False),
    ("mbv2_7", 64, 960, 7, 3, 1, 1, False),
    ("effnet_k5", 64, 240, 28, 5, 1, 2, False),
    ("convnext_56", 64, 96, 56, 7, 1, 3, False),
    ("convnext_14", 64, 384, 14, 7, 1, 3, False),
    ("replknet_k31", 32, 128, 56, 31, 1, 15, False),
    ("dw_transposed", 32, 256, 64, 4, 2, 1, True),
]
QUICK = {"mbv2_s1", "convnext_56", "replknet_k31", "dw_transposed"}
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
LAYOUTS = {"nchw": torch.contiguous_format, "nhwc": torch.channels_last}


def time_ms(fn, iters, warmup=10):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def copy_bandwidth(iters):
    x = torch.empty(1 << 28, dtype=torch.float32, device="cuda")  # 1 GiB
    x.fill_(1.0)
    ms = time_ms(lambda: x.clone(), iters)
    return 2 * x.numel() * x.element_size() / (ms * 1e-3)  # bytes read + written per second


def nbytes(*ts):
    return sum(t.numel() * t.element_size() for t in ts)


def bench_case(case, dtype, mf, iters):
    name, N, C, H, k, s, p, transposed = case
    dev = "cuda"
    x = torch.randn(N, C, H, H, device=dev, dtype=dtype).to(memory_format=mf)
    w = torch.randn(C, 1, k, k, device=dev, dtype=dtype)
    ops = torch.ops.convx
    if transposed:
        op_ = 0
        fwd_c = lambda: ops.conv_transpose2d(x, w, None, [s, s], [p, p], [op_, op_], C, [1, 1])  # noqa: E731
        fwd_a = lambda: F.conv_transpose2d(x, w, None, s, p, op_, C, 1)  # noqa: E731
    else:
        fwd_c = lambda: ops.depthwise_conv2d(x, w, None, [s, s], [p, p], [1, 1])  # noqa: E731
        fwd_a = lambda: F.conv2d(x, w, None, s, p, 1, C)  # noqa: E731
    y = fwd_a()
    yc = fwd_c()
    err = float((yc.float() - y.float()).abs().max() / y.float().abs().max().clamp_min(1e-30))
    dy = torch.randn_like(y)
    res = {"case": name, "N": N, "C": C, "H": H, "k": k, "stride": s, "padding": p,
           "transposed": transposed, "dtype": str(dtype)[6:],
           "layout": "nhwc" if mf == torch.channels_last else "nchw", "max_rel_err": err}
    fwd_bytes = nbytes(x, y, w)
    res["fwd_convx_ms"] = time_ms(fwd_c, iters)
    res["fwd_aten_ms"] = time_ms(fwd_a, iters)
    res["fwd_bytes"] = fwd_bytes
    if not transposed:
        # Backward = input-grad + weight-grad, through each library's own operators.
        def bwd_c():
            ops.conv2d_input_grad(list(x.shape), w, dy, [s, s], [p, p], [1, 1], C)
            ops.conv2d_weight_grad(x, list(w.shape), dy, [s, s], [p, p], [1, 1], C)

        def bwd_a():
            torch.ops.aten.convolution_backward(dy, x, w, None, [s, s], [p, p], [1, 1], False,
                                                [0, 0], C, [True, True, False])

        res["bwd_convx_ms"] = time_ms(bwd_c, iters)
        res["bwd_aten_ms"] = time_ms(bwd_a, iters)
        res["bwd_bytes"] = nbytes(x, dy, x, w)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="a subset of cases, fp32/fp16 only")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "gpu_depthwise.json"))
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = True  # aten at its best
    bw = copy_bandwidth(args.iters)
    print(f"device: {torch.cuda.get_device_name()}  copy bandwidth: {bw / 1e9:.0f} GB/s")
    rows = []
    hdr = (f"{'case':14} {'dtype':5} {'lay':4} | {'fwd cvx':>8} {'fwd aten':>8} {'x':>5} {'%bw':>4}"
           f" | {'bwd cvx':>8} {'bwd aten':>8} {'x':>5} {'%bw':>4} | relerr")
    print(hdr)
    print("-" * len(hdr))
    for case in CASES:
        if args.quick and case[0] not in QUICK:
            continue
        for dn, dtype in DTYPES.items():
            if args.quick and dn == "bf16":
                continue
            for ln, mf in LAYOUTS.items():
                r = bench_case(case, dtype, mf, args.iters)
                r["fwd_speedup"] = r["fwd_aten_ms"] / r["fwd_convx_ms"]
                r["fwd_bw_frac_convx"] = r["fwd_bytes"] / (r["fwd_convx_ms"] * 1e-3) / bw
                r["fwd_bw_frac_aten"] = r["fwd_bytes"] / (r["fwd_aten_ms"] * 1e-3) / bw
                line = (f"{case[0]:14} {dn:5} {ln:4} | {r['fwd_convx_ms']:8.3f} {r['fwd_aten_ms']:8.3f}"
                        f" {r['fwd_speedup']:5.2f} {100 * r['fwd_bw_frac_convx']:4.0f}")
                if "bwd_convx_ms" in r:
                    r["bwd_speedup"] = r["bwd_aten_ms"] / r["bwd_convx_ms"]
                    r["bwd_bw_frac_convx"] = r["bwd_bytes"] / (r["bwd_convx_ms"] * 1e-3) / bw
                    r["bwd_bw_frac_aten"] = r["bwd_bytes"] / (r["bwd_aten_ms"] * 1e-3) / bw
                    line += (f" | {r['bwd_convx_ms']:8.3f} {r['bwd_aten_ms']:8.3f}"
                             f" {r['bwd_speedup']:5.2f} {100 * r['bwd_bw_frac_convx']:4.0f}")
                else:
                    line += " | " + " " * 30
                line += f" | {r['max_rel_err']:.1e}"
                print(line, flush=True)
                rows.append(r)
                torch.cuda.empty_cache()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "copy_bandwidth_Bps": bw, "iters": args.iters, "results": rows}, f, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
