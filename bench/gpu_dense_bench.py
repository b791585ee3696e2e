"""convx vs aten dense transposed convolutions on one GPU, side by side in one process.

Bias included. Same inputs for both; CUDA-event device time (bench/timing.py: the GPU kept busy
while the host enqueues) and forward host time per call; median of --iters runs after warm-up.
Forward: convx (default path: the stride == kernel GEMM where it applies — one group, k == s,
half types or float32 with TF32 allowed — else cuDNN; its backward halves on the GEMM for NC*
tensors, on cuDNN for channels-last ones), convx with CONVX_CUDA_DENSE=cudnn (cuDNN
only, to compare the two),
convx with CONVX_CUDNN_BIAS=fused and =separate (the bias in the cuDNN graph, or one add after
it; the default picks per call by the rule these columns measured), aten. Backward: autograd of the functional call (grad of
input, weight and bias), convx (default and cuDNN only) vs aten. Ratios are aten time / convx time (> 1: convx faster);
TFLOP/s counts 2*N*C_in*C_out/groups*in_pixels*k_pixels per pass (forward), twice that backward.

Stride == kernel rows add the backward through the patch GEMM in all directions
(CONVX_CUDA_DENSE=patch_gemm: "patch"), grad_input + grad_weight + grad_bias by the closure's
joint operator (convx::_conv_and_weight_grad with input_sum: one gather of dy, the bias sum on a
side stream beside the GEMMs) against the three operators apart (two gathers, _bias_grad after),
with the joint call's time per CUDA kernel, and, with --split, each half of the backward alone
(grad_input = a stride == kernel conv forward of dy; grad_weight) for aten, convx's default,
cuDNN and the patch GEMM, with the patch GEMM's time per CUDA kernel (torch.profiler: the
gather, the operand copy, the GEMM) to show which piece to work on.

    CONVX_LIBRARY=build-gpu/libconvx.so PYTHONPATH=python python3 bench/gpu_dense_bench.py \
        [--quick] [--cases unet_k2s2,unet3d_k2s2] [--split]
"""

import argparse
import json
import os

import torch
import torch.nn.functional as F

import convx  # noqa: F401  (loads the operator library)
from timing import host_us, time_ms, time_pair_ms

# name, rank, N, C_in, C_out, spatial, k, stride, padding, output_padding, groups, dtypes
HALF_AND_FLOAT = ("fp32", "fp16", "bf16")
CASES = [
    ("unet_k2s2", 2, 32, 512, 256, 32, 2, 2, 0, 0, 1, HALF_AND_FLOAT),
    ("dcgan_k4s2p1", 2, 128, 256, 128, 16, 4, 2, 1, 0, 1, HALF_AND_FLOAT),
    ("autoenc_k5s2op1", 2, 128, 64, 3, 14, 5, 2, 0, 1, 1, HALF_AND_FLOAT),
    # An RGB decoder head (session 9: the few-channel gather's second shape).
    ("rgbhead_k3s2p1op1", 2, 64, 32, 3, 64, 3, 2, 1, 1, 1, HALF_AND_FLOAT),
    ("grouped_g4_k4s2p1", 2, 32, 256, 256, 32, 4, 2, 1, 0, 4, HALF_AND_FLOAT),
    ("unet3d_k2s2", 3, 4, 64, 32, 32, 2, 2, 0, 0, 1, ("bf16",)),
    ("vocoder1d_k16s8", 1, 16, 512, 256, 1024, 16, 8, 4, 0, 1, ("bf16",)),
    # Transposed patchify stems: with --split, gin is the stem's forward (ViT-B/16 on 224²,
    # ConvNeXt-T's k4 s4 on 224²) and gw its weight-grad, which NC* runs on the patch GEMM.
    ("vit_stem_k16s16", 2, 64, 768, 3, 14, 16, 16, 0, 0, 1, ("bf16",)),
    ("convnext_stem_k4s4", 2, 64, 96, 3, 56, 4, 4, 0, 0, 1, ("bf16",)),
]
QUICK = {"unet_k2s2", "unet3d_k2s2", "vocoder1d_k16s8"}
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
CONV_T = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}
CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
CONV_WGRAD = {1: torch.nn.grad.conv1d_weight, 2: torch.nn.grad.conv2d_weight, 3: torch.nn.grad.conv3d_weight}
# The patch GEMM's columns: column and environment.
PATCH_PATHS = (("patch", {"CONVX_CUDA_DENSE": "patch_gemm"}),)


def channels_last(t, rank):
    if rank == 2:
        return t.to(memory_format=torch.channels_last)
    if rank == 3:
        return t.to(memory_format=torch.channels_last_3d)
    return t.transpose(1, 2).contiguous().transpose(1, 2)  # (N, L, C) viewed as (N, C, L)


class env:
    """Sets one environment variable (convx reads its path knobs on every call) for a block."""

    def __init__(self, name, value):
        self.name, self.value = name, value

    def __enter__(self):
        os.environ[self.name] = self.value

    def __exit__(self, *exc):
        os.environ.pop(self.name, None)


def forced_path(value):
    return env("CONVX_CUDA_DENSE", value)


def bias_mode(value):
    return env("CONVX_CUDNN_BIAS", value)


class patch_path:
    """The environment of one PATCH_PATHS entry."""

    def __init__(self, variables):
        self.vars = [env(k, v) for k, v in variables.items()]

    def __enter__(self):
        for v in self.vars:
            v.__enter__()

    def __exit__(self, *exc):
        for v in self.vars:
            v.__exit__(*exc)


def kernel_us(fn, reps=10):
    """Device time per call of each CUDA kernel fn launches (torch.profiler, reps calls), in us,
    the longest first; names cut to 70 characters."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
    total = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            name = e.name[:70]
            total[name] = total.get(name, 0.0) + e.device_time_total / reps
    return dict(sorted(total.items(), key=lambda kv: -kv[1]))


def split_backward(row, x, w, dy, r, s, iters):
    """Each half of a stride == kernel transposed conv's backward alone: grad_input (a conv
    forward of dy) and grad_weight, aten vs convx's default, cuDNN and the patch GEMM, with each
    result checked against aten's, and the patch GEMM's time per kernel."""
    ops = torch.ops.convx
    conv_c = getattr(ops, f"conv{r}d")
    wgrad_c = getattr(ops, f"conv{r}d_weight_grad")
    st, pd, dl = [s] * r, [0] * r, [1] * r
    halves = {
        "gin": (lambda: CONV[r](dy, w, None, s), lambda: conv_c(dy, w, None, st, pd, dl, 1)),
        "gw": (lambda: CONV_WGRAD[r](dy, w.shape, x, s), lambda: wgrad_c(dy, list(w.shape), x, st, pd, dl, 1)),
    }
    with torch.no_grad():
        for half, (fa, fc) in halves.items():
            ref = fa().float()
            scale = float(ref.abs().max())
            row[f"aten_{half}_ms"] = time_ms(fa, iters)
            row[f"max_rel_err_default_{half}"] = float((fc().float() - ref).abs().max()) / scale
            row[f"convx_default_{half}_ms"] = time_ms(fc, iters)
            with forced_path("cudnn"):
                row[f"convx_cudnn_{half}_ms"] = time_ms(fc, iters)
            for col, variables in PATCH_PATHS:
                with patch_path(variables):
                    row[f"max_rel_err_{col}_{half}"] = float((fc().float() - ref).abs().max()) / scale
                    row[f"convx_{col}_{half}_ms"] = time_ms(fc, iters)
                    row[f"{col}_{half}_kernels_us"] = kernel_us(fc)
    if dy.stride(1) != 1 or dy.size(1) == 1:  # NC*: the weight-grad's GEMM shape alone
        gemm_probe(row, x, w, dy, iters)


def joint_vs_apart(row, x, w, dy, r, s, iters):
    """grad_input, grad_weight and grad_bias of a stride == kernel transposed conv as the autograd
    closure computes them: convx::_conv_and_weight_grad with input_sum (one gather of dy where
    the patch GEMM serves both convolutions, the bias sum on a side stream) against the two
    public operators and _bias_grad in sequence (two gathers), alternating, on convx's default
    path and with the GEMM forced; results checked against each other; the joint call's time per
    CUDA kernel (the side stream's sum among them)."""
    ops = torch.ops.convx
    st, pd, dl = [s] * r, [0] * r, [1] * r
    joint = lambda: ops._conv_and_weight_grad(dy, w, x, r, st, pd, dl, 1, True)  # noqa: E731
    apart = lambda: (getattr(ops, f"conv{r}d")(dy, w, None, st, pd, dl, 1),  # noqa: E731
                     getattr(ops, f"conv{r}d_weight_grad")(dy, list(w.shape), x, st, pd, dl, 1),
                     ops._bias_grad(dy, r))
    with torch.no_grad():
        for col, variables in (("default", {}),) + PATCH_PATHS:
            with patch_path(variables):
                row[f"max_rel_err_joint_{col}"] = max(
                    float((u.float() - v.float()).abs().max()) / float(v.float().abs().max())
                    for u, v in zip(joint(), apart()))
                row[f"convx_apart_{col}_ms"], row[f"convx_joint_{col}_ms"] = time_pair_ms(apart, joint, iters)
                row[f"joint_{col}_kernels_us"] = kernel_us(joint)


def gemm_probe(row, x, w, dy, iters):
    """The NC* weight-grad's one GEMM, [C_in, N*L] x [N*L, C_out*T] (M 512, N 1024, K 32768 for
    unet_k2s2), as torch.mm on dense operands through cuBLAS and through cuBLASLt (torch's
    preferred_blas_library), 16-bit outputs where convx writes float32: whether another heuristic
    (split-K, stream-K) would beat the plain cublasGemmStridedBatchedEx convx calls."""
    ci, co, t = w.shape[0], w.shape[1], w[0, 0].numel()
    nl = x.numel() // ci
    a = torch.randn(ci, nl, device="cuda", dtype=x.dtype)
    b = torch.randn(co * t, nl, device="cuda", dtype=x.dtype).t()  # P's (C, taps) rows, K-contiguous
    prev_lib, prev_tf32 = torch.backends.cuda.preferred_blas_library(), torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32  # the conv's precision
        for lib in ("cublas", "cublaslt"):
            torch.backends.cuda.preferred_blas_library(lib)
            row[f"gw_gemm_{lib}_ms"] = time_ms(lambda: torch.mm(a, b), iters)
    finally:
        torch.backends.cuda.preferred_blas_library(prev_lib)
        torch.backends.cuda.matmul.allow_tf32 = prev_tf32


def bench_case(case, dtype_name, layout, iters, split):
    name, r, N, cin, cout, sp, k, s, p, op, g, _ = case
    dtype = DTYPES[dtype_name]
    x = torch.randn([N, cin] + [sp] * r, device="cuda", dtype=dtype)
    w = torch.randn([cin, cout // g] + [k] * r, device="cuda", dtype=dtype) / (cin * k**r) ** 0.5
    b = torch.randn(cout, device="cuda", dtype=dtype)
    if layout == "channels_last":
        x = channels_last(x, r)
        w = channels_last(w, r) if r > 1 else w
    fn_c = getattr(convx.functional, f"conv_transpose{r}d")
    args = dict(stride=s, padding=p, output_padding=op, groups=g)
    fwd_c = lambda: fn_c(x, w, b, **args)  # noqa: E731
    fwd_a = lambda: CONV_T[r](x, w, b, **args)  # noqa: E731
    with torch.no_grad():
        ya, yc = fwd_a(), fwd_c()
        with forced_path("cudnn"):
            yk = fwd_c()
    scale = float(ya.float().abs().max())
    err = float((yc.float() - ya.float()).abs().max()) / scale
    err_k = float((yk.float() - ya.float()).abs().max()) / scale
    row = {"case": name, "rank": r, "N": N, "C_in": cin, "C_out": cout, "spatial": sp, "k": k,
           "stride": s, "padding": p, "output_padding": op, "groups": g, "dtype": dtype_name,
           "layout": layout, "out_layout_matches": yc.stride() == ya.stride(),
           "max_rel_err_vs_aten": err, "max_rel_err_cudnn_vs_aten": err_k}
    with torch.no_grad():
        row["aten_fwd_ms"], row["convx_fwd_ms"] = time_pair_ms(fwd_a, fwd_c, iters)
        row["aten_fwd_host_us"] = host_us(fwd_a)
        row["convx_fwd_host_us"] = host_us(fwd_c)
        with forced_path("cudnn"):
            row["convx_cudnn_fwd_ms"] = time_ms(fwd_c, iters)
        with bias_mode("fused"):
            row["convx_fusedbias_fwd_ms"] = time_ms(fwd_c, iters)
        with bias_mode("separate"):
            row["convx_sepbias_fwd_ms"] = time_ms(fwd_c, iters)

    dy = torch.randn_like(ya)
    xs, ws, bs = (t.detach().requires_grad_() for t in (x, w, b))
    ya_g = CONV_T[r](xs, ws, bs, **args)
    yc_g = fn_c(xs, ws, bs, **args)
    bwd_a = lambda: torch.autograd.grad(ya_g, (xs, ws, bs), dy, retain_graph=True)  # noqa: E731
    bwd_c = lambda: torch.autograd.grad(yc_g, (xs, ws, bs), dy, retain_graph=True)  # noqa: E731
    row["aten_bwd_ms"], row["convx_bwd_ms"] = time_pair_ms(bwd_a, bwd_c, iters)
    with forced_path("cudnn"):
        row["convx_cudnn_bwd_ms"] = time_ms(bwd_c, iters)
    if k == s and p == 0 and op == 0 and g == 1:
        for col, variables in PATCH_PATHS:
            with patch_path(variables):
                gc = torch.autograd.grad(yc_g, (xs, ws, bs), dy, retain_graph=True)
                ga = bwd_a()
                row[f"max_rel_err_{col}_bwd"] = max(
                    float((u.float() - v.float()).abs().max()) / float(v.float().abs().max()) for u, v in zip(gc, ga))
                row[f"convx_{col}_bwd_ms"] = time_ms(bwd_c, iters)
                row[f"{col}_bwd_ratio"] = row["aten_bwd_ms"] / row[f"convx_{col}_bwd_ms"]
        joint_vs_apart(row, x, w, dy, r, s, iters)
        if split:
            split_backward(row, x, w, dy, r, s, iters)

    flops = 2 * N * cin * (cout // g) * sp**r * k**r
    row["fwd_ratio"] = row["aten_fwd_ms"] / row["convx_fwd_ms"]
    row["cudnn_fwd_ratio"] = row["aten_fwd_ms"] / row["convx_cudnn_fwd_ms"]
    row["cudnn_bwd_ratio"] = row["aten_bwd_ms"] / row["convx_cudnn_bwd_ms"]
    row["bwd_ratio"] = row["aten_bwd_ms"] / row["convx_bwd_ms"]
    row["convx_fwd_tflops"] = flops / (row["convx_fwd_ms"] * 1e-3) / 1e12
    row["aten_fwd_tflops"] = flops / (row["aten_fwd_ms"] * 1e-3) / 1e12
    row["convx_bwd_tflops"] = 2 * flops / (row["convx_bwd_ms"] * 1e-3) / 1e12
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--cases", default="", help="comma-separated case names (default: all, or --quick's)")
    ap.add_argument("--split", action="store_true", help="stride == kernel rows: each backward half alone")
    ap.add_argument("--out", default="bench/results/h100/gpu_dense.json")
    a = ap.parse_args()
    torch.manual_seed(0)
    rows = []
    hdr = (f"{'case':18} {'dtype':5} {'layout':13} {'aten fwd':>9} {'convx':>8} {'cudnn':>8} {'fused':>8} {'sepbias':>8} "
           f"{'ratio':>6} {'aten bwd':>9} {'convx':>8} {'cudnn':>8} {'ratio':>6} {'TFLOP/s':>8} {'err':>8} {'host us aten/convx'}")
    print(hdr)
    for case in CASES:
        if a.quick and case[0] not in QUICK:
            continue
        if a.cases and case[0] not in a.cases.split(","):
            continue
        for dt in case[-1]:
            for layout in ("contiguous", "channels_last"):
                r = bench_case(case, dt, layout, a.iters, a.split)
                rows.append(r)
                print(f"{r['case']:18} {dt:5} {layout:13} {r['aten_fwd_ms']:9.4f} {r['convx_fwd_ms']:8.4f} "
                      f"{r['convx_cudnn_fwd_ms']:8.4f} {r['convx_fusedbias_fwd_ms']:8.4f} {r['convx_sepbias_fwd_ms']:8.4f} {r['fwd_ratio']:6.2f} {r['aten_bwd_ms']:9.4f} "
                      f"{r['convx_bwd_ms']:8.4f} {r['convx_cudnn_bwd_ms']:8.4f} {r['bwd_ratio']:6.2f} {r['convx_fwd_tflops']:8.1f} "
                      f"{r['max_rel_err_vs_aten']:8.1e} {r['aten_fwd_host_us']:8.1f}/{r['convx_fwd_host_us']:.1f}",
                      flush=True)
                if "convx_patch_bwd_ms" in r:
                    print(f"{'':38} bwd " + " ".join(
                        f"{c} {r[f'convx_{c}_bwd_ms']:.4f} ({r[f'{c}_bwd_ratio']:.2f}x, err {r[f'max_rel_err_{c}_bwd']:.1e})"
                        for c, _ in PATCH_PATHS), flush=True)
                if "convx_joint_default_ms" in r:
                    for c in ("default",) + tuple(c for c, _ in PATCH_PATHS):
                        print(f"{'':38} gin+gw+gb {c}: apart {r[f'convx_apart_{c}_ms']:.4f} joint "
                              f"{r[f'convx_joint_{c}_ms']:.4f} (err {r[f'max_rel_err_joint_{c}']:.1e})", flush=True)
                        for kname, us in r[f"joint_{c}_kernels_us"].items():
                            print(f"{'':42} joint {c} kernel {us:8.1f} us  {kname}", flush=True)
                if "aten_gin_ms" in r:
                    for half in ("gin", "gw"):
                        print(f"{'':38} {half:3} aten {r[f'aten_{half}_ms']:.4f} default {r[f'convx_default_{half}_ms']:.4f} "
                              f"cudnn {r[f'convx_cudnn_{half}_ms']:.4f} " + " ".join(
                                  f"{c} {r[f'convx_{c}_{half}_ms']:.4f} (err {r[f'max_rel_err_{c}_{half}']:.1e})"
                                  for c, _ in PATCH_PATHS), flush=True)
                        for c, _ in PATCH_PATHS:
                            for kname, us in r[f"{c}_{half}_kernels_us"].items():
                                print(f"{'':42} {c} kernel {us:8.1f} us  {kname}", flush=True)
                if "gw_gemm_cublas_ms" in r:
                    print(f"{'':38} gw GEMM alone (torch.mm): cublas {r['gw_gemm_cublas_ms']:.4f} "
                          f"cublaslt {r['gw_gemm_cublaslt_ms']:.4f}", flush=True)
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "cudnn": torch.backends.cudnn.version(), "iters": a.iters,
            "tf32_conv": torch.backends.cudnn.allow_tf32}
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out, "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
