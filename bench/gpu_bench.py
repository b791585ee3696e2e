"""convx vs aten depthwise convolution on one GPU, side by side in one process.

Same inputs for both; CUDA-event device time (bench/timing.py: the GPU kept busy while the host
enqueues; forward host time per call in the JSON); median of up to --iters runs after warm-up.
Forward time and backward time (input-grad + weight-grad, each library's own operators), aten/convx ratios, and
the fraction of the copy bandwidth measured in the same run that each achieves (bytes: forward
x + y + w, backward x + dy + dx + dw, each tensor counted once). Cases: issue #4's table (every
row in fp32/fp16/bf16 x NCHW/channels_last) and the depthwise 1-D / 3-D rows of issue #9 (1-D in
both layouts: NCL and the (N, L, C)-held layout; 3-D in NCDHW and channels_last_3d). The
backward's output gradient is held in the input's layout. Causal 1-D rows pad k-1 on both sides
and keep the first L outputs, as causal sequence models do.
Writes JSON (and a PNG plot when matplotlib is installed) next to --out.

    CONVX_LIBRARY=build-gpu/libconvx.so PYTHONPATH=python python3 bench/gpu_bench.py [--quick]
"""

import argparse
import json
import math
import os

import torch
import torch.nn.functional as F

import convx  # noqa: F401  (loads the operator library)
from timing import host_us, time_ms, time_pair_ms

ALL_DT = ("fp32", "fp16", "bf16")
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
# name, group, N, C, spatial, kernel, stride, padding, transposed, dtypes, layouts
# padding: int per dim, or "causal" (1-D).
CASES = [
    ("mbv2_s1", "2d", 64, 144, (56, 56), (3, 3), 1, 1, False, ALL_DT, ("nchw", "nhwc")),
    ("mbv2_s2", "2d", 64, 96, (112, 112), (3, 3), 2, 1, False, ALL_DT, ("nchw", "nhwc")),
    ("mbv2_7", "2d", 64, 960, (7, 7), (3, 3), 1, 1, False, ALL_DT, ("nchw", "nhwc")),
    ("effnet_k5", "2d", 64, 240, (28, 28), (5, 5), 1, 2, False, ALL_DT, ("nchw", "nhwc")),
    ("convnext_56", "2d", 64, 96, (56, 56), (7, 7), 1, 3, False, ALL_DT, ("nchw", "nhwc")),
    ("convnext_14", "2d", 64, 384, (14, 14), (7, 7), 1, 3, False, ALL_DT, ("nchw", "nhwc")),
    ("replknet_k31", "2d", 32, 128, (56, 56), (31, 31), 1, 15, False, ALL_DT, ("nchw", "nhwc")),
    ("dw_transposed", "2d", 32, 256, (64, 64), (4, 4), 2, 1, True, ALL_DT, ("nchw", "nhwc")),
    ("mamba_k4", "1d", 8, 4096, (2048,), (4,), 1, "causal", False, ("bf16",), ("ncl", "nlc")),
    ("rwkv_k4", "1d", 8, 2048, (4096,), (4,), 1, "causal", False, ("fp32",), ("ncl", "nlc")),
    ("short_k3", "1d", 16, 1536, (512,), (3,), 1, "causal", False, ("bf16",), ("ncl", "nlc")),
    ("conformer_512", "1d", 32, 512, (1000,), (31,), 1, 15, False, ("bf16",), ("ncl", "nlc")),
    ("conformer_256", "1d", 32, 256, (4000,), (31,), 1, 15, False, ("fp32",), ("ncl", "nlc")),
    ("k15_causal", "1d", 8, 2048, (4096,), (15,), 1, "causal", False, ("bf16",), ("ncl", "nlc")),
    ("x3d_k3", "3d", 16, 192, (16, 56, 56), (3, 3, 3), 1, 1, False, ("fp32",), ("ncdhw", "ndhwc")),
    ("x3d_k5x3", "3d", 16, 192, (16, 56, 56), (5, 3, 3), 1, (2, 1, 1), False, ("bf16",), ("ncdhw", "ndhwc")),
]
QUICK = {"mbv2_s1", "convnext_56", "replknet_k31", "dw_transposed", "mamba_k4", "conformer_256", "x3d_k3"}
CHANNELS_LAST = {"nhwc", "nlc", "ndhwc"}


def copy_bandwidth(iters):
    x = torch.empty(1 << 28, dtype=torch.float32, device="cuda")  # 1 GiB
    x.fill_(1.0)
    ms = time_ms(lambda: x.clone(), iters)
    return 2 * x.numel() * x.element_size() / (ms * 1e-3)  # bytes read + written per second


def nbytes(*ts):
    return sum(t.numel() * t.element_size() for t in ts)


def make_input(N, C, spatial, dtype, layout):
    if layout in CHANNELS_LAST:
        # (N, *spatial, C) in memory, viewed as (N, C, *spatial)
        x = torch.randn(N, *spatial, C, device="cuda", dtype=dtype)
        return x.movedim(-1, 1)
    return torch.randn(N, C, *spatial, device="cuda", dtype=dtype)


def grad_like(y, layout):
    """A random output gradient in the layout the activations are held in: a model that keeps
    (N, L, C) / channels-last activations hands back gradients in that layout too. (aten's 1-D
    output of an (N, L, C)-strided input is NCL-contiguous; randn_like would give an NCL dy and
    time a layout copy in both libraries.)"""
    if layout in CHANNELS_LAST:
        return torch.randn(y.shape[0], *y.shape[2:], y.shape[1], device=y.device, dtype=y.dtype).movedim(-1, 1)
    return torch.randn_like(y, memory_format=torch.contiguous_format)


def bench_case(case, dn, layout, iters):
    name, group, N, C, spatial, k, s, p, transposed = case[:9]
    dtype = DTYPES[dn]
    rank = len(spatial)
    x = make_input(N, C, spatial, dtype, layout)
    w = torch.randn(C, 1, *k, device="cuda", dtype=dtype)
    ops = torch.ops.convx
    conv_a = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[rank]
    conv_c = getattr(ops, f"depthwise_conv{rank}d")
    L = spatial[-1]
    causal = p == "causal"
    pad = [k[-1] - 1] if causal else ([p] * rank if isinstance(p, int) else list(p))
    st, dil = [s] * rank, [1] * rank
    if transposed:
        op_ = [0] * rank
        fwd_c = lambda: getattr(ops, f"conv_transpose{rank}d")(x, w, None, st, pad, op_, C, dil)  # noqa: E731
        fwd_a = lambda: F.conv_transpose2d(x, w, None, s, pad, 0, C, 1)  # noqa: E731
    elif causal:  # pad k-1 on both sides, keep the first L outputs (a view)
        fwd_c = lambda: conv_c(x, w, None, st, pad, dil)[..., :L]  # noqa: E731
        fwd_a = lambda: conv_a(x, w, None, s, pad, 1, C)[..., :L]  # noqa: E731
    else:
        fwd_c = lambda: conv_c(x, w, None, st, pad, dil)  # noqa: E731
        fwd_a = lambda: conv_a(x, w, None, s, pad, 1, C)  # noqa: E731
    y = fwd_a()
    yc = fwd_c()
    err = float((yc.float() - y.float()).abs().max() / y.float().abs().max().clamp_min(1e-30))
    res = {"case": name, "group": group, "N": N, "C": C, "spatial": list(spatial), "k": list(k),
           "stride": s, "padding": p, "transposed": transposed, "dtype": dn, "layout": layout,
           "max_rel_err": err}
    if not transposed:  # the output keeps the input's layout (no conversion copies)
        full = conv_c(x, w, None, st, pad, dil)
        res["layout_kept"] = full.stride(1) == 1 if layout in CHANNELS_LAST else full.is_contiguous()
    else:
        res["layout_kept"] = yc.stride(1) == 1 if layout in CHANNELS_LAST else yc.is_contiguous()
    res["fwd_bytes"] = nbytes(x, y, w)
    res["fwd_convx_ms"], res["fwd_aten_ms"] = time_pair_ms(fwd_c, fwd_a, iters)
    res["fwd_convx_host_us"] = host_us(fwd_c)
    res["fwd_aten_host_us"] = host_us(fwd_a)
    if not transposed:
        # Backward = input-grad + weight-grad through each library's own operators, with the
        # full (uncropped) output's gradient.
        yfull = conv_a(x, w, None, s, pad, 1, C)
        dy = grad_like(yfull, layout)
        ig = getattr(ops, f"conv{rank}d_input_grad")
        wg = getattr(ops, f"conv{rank}d_weight_grad")

        def bwd_c():
            ig(list(x.shape), w, dy, st, pad, dil, C)
            wg(x, list(w.shape), dy, st, pad, dil, C)

        def bwd_a():
            torch.ops.aten.convolution_backward(dy, x, w, None, st, pad, dil, False, [0] * rank, C,
                                                [True, True, False])

        gxc, gwc = ig(list(x.shape), w, dy, st, pad, dil, C), wg(x, list(w.shape), dy, st, pad, dil, C)
        gxa, gwa, _ = torch.ops.aten.convolution_backward(dy, x, w, None, st, pad, dil, False, [0] * rank, C,
                                                          [True, True, False])
        rel = lambda a, b: float((a.float() - b.float()).abs().max() / b.float().abs().max().clamp_min(1e-30))  # noqa: E731
        res["bwd_max_rel_err"] = max(rel(gxc, gxa), rel(gwc, gwa))
        res["bwd_bytes"] = nbytes(x, dy, x, w)
        res["bwd_convx_ms"], res["bwd_aten_ms"] = time_pair_ms(bwd_c, bwd_a, iters)
    return res


def geomean(v):
    v = [x for x in v if x and x > 0]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")


def plot(rows, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot")
        return
    labels = [f"{r['case']} {r['dtype']} {r['layout']}" for r in rows]
    fig, ax = plt.subplots(figsize=(max(10, 0.22 * len(rows)), 6))
    xs = range(len(rows))
    ax.bar([i - 0.2 for i in xs], [r["fwd_speedup"] for r in rows], 0.4, label="forward")
    ax.bar([i + 0.2 for i in xs], [r.get("bwd_speedup", 0) for r in rows], 0.4, label="backward")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_yscale("log")
    ax.set_ylabel("speed-up over aten (aten ms / convx ms)")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(labels, rotation=90, fontsize=6)
    ax.legend()
    ax.set_title(f"convx depthwise vs aten, {torch.cuda.get_device_name()}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="a subset of cases, fp32/fp16 and the 1-D / 3-D dtype")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--only", default="", help="comma-separated case names")
    ap.add_argument("--layouts", default="", help="comma-separated layouts (e.g. nhwc,nlc,ndhwc)")
    ap.add_argument("--dtypes", default="", help="comma-separated dtypes (fp32,fp16,bf16)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "gpu_depthwise.json"))
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = True  # aten at its best
    bw = copy_bandwidth(args.iters)
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}  copy bandwidth: {bw / 1e9:.0f} GB/s")
    rows = []
    hdr = (f"{'case':14} {'dtype':5} {'lay':5} | {'fwd cvx':>8} {'fwd aten':>8} {'x':>6} {'%bw':>4} {'aten%':>5}"
           f" | {'bwd cvx':>8} {'bwd aten':>8} {'x':>6} {'%bw':>4} {'aten%':>5} | relerr")
    print(hdr)
    print("-" * len(hdr))
    only = set(filter(None, args.only.split(",")))
    layouts = set(filter(None, args.layouts.split(",")))
    dtypes = set(filter(None, args.dtypes.split(",")))
    for case in CASES:
        if (args.quick and case[0] not in QUICK) or (only and case[0] not in only):
            continue
        for dn in case[9]:
            if args.quick and dn == "bf16" and case[1] == "2d":
                continue
            for layout in case[10]:
                if (layouts and layout not in layouts) or (dtypes and dn not in dtypes):
                    continue
                r = bench_case(case, dn, layout, args.iters)
                r["fwd_speedup"] = r["fwd_aten_ms"] / r["fwd_convx_ms"]
                r["fwd_bw_frac_convx"] = r["fwd_bytes"] / (r["fwd_convx_ms"] * 1e-3) / bw
                r["fwd_bw_frac_aten"] = r["fwd_bytes"] / (r["fwd_aten_ms"] * 1e-3) / bw
                line = (f"{case[0]:14} {dn:5} {layout:5} | {r['fwd_convx_ms']:8.3f} {r['fwd_aten_ms']:8.3f}"
                        f" {r['fwd_speedup']:6.2f} {100 * r['fwd_bw_frac_convx']:4.0f} {100 * r['fwd_bw_frac_aten']:5.0f}")
                if "bwd_convx_ms" in r:
                    r["bwd_speedup"] = r["bwd_aten_ms"] / r["bwd_convx_ms"]
                    r["bwd_bw_frac_convx"] = r["bwd_bytes"] / (r["bwd_convx_ms"] * 1e-3) / bw
                    r["bwd_bw_frac_aten"] = r["bwd_bytes"] / (r["bwd_aten_ms"] * 1e-3) / bw
                    fb = r["fwd_bytes"] + r["bwd_bytes"]
                    r["fwdbwd_speedup"] = (r["fwd_aten_ms"] + r["bwd_aten_ms"]) / (r["fwd_convx_ms"] + r["bwd_convx_ms"])
                    r["fwdbwd_bw_frac_convx"] = fb / ((r["fwd_convx_ms"] + r["bwd_convx_ms"]) * 1e-3) / bw
                    line += (f" | {r['bwd_convx_ms']:8.3f} {r['bwd_aten_ms']:8.3f}"
                             f" {r['bwd_speedup']:6.2f} {100 * r['bwd_bw_frac_convx']:4.0f} {100 * r['bwd_bw_frac_aten']:5.0f}")
                    line += f" | {r['max_rel_err']:.1e} {r['bwd_max_rel_err']:.1e}"
                else:
                    line += " | " + " " * 37 + f" | {r['max_rel_err']:.1e}"
                if not r["layout_kept"]:
                    line += "  LAYOUT CHANGED"
                print(line, flush=True)
                rows.append(r)
                torch.cuda.empty_cache()
    summary = {}
    for grp in ("2d", "1d", "3d"):
        g = [r for r in rows if r["group"] == grp]
        if g:
            summary[grp] = {
                "fwd_geomean_speedup": geomean([r["fwd_speedup"] for r in g]),
                "bwd_geomean_speedup": geomean([r.get("bwd_speedup") for r in g]),
                "fwdbwd_geomean_speedup": geomean([r.get("fwdbwd_speedup") for r in g]),
            }
            s = summary[grp]
            print(f"geomean {grp}: fwd {s['fwd_geomean_speedup']:.2f}x  bwd {s['bwd_geomean_speedup']:.2f}x"
                  f"  fwd+bwd {s['fwdbwd_geomean_speedup']:.2f}x  ({len(g)} rows)")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "copy_bandwidth_Bps": bw, "iters": args.iters, "summary": summary, "results": rows}, f, indent=1)
    print(f"wrote {args.out}")
    plot(rows, os.path.splitext(args.out)[0] + ".png")


if __name__ == "__main__":
    main()
