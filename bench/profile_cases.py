"""Runs chosen depthwise benchmark cases a few times and brackets the last repetition with
cudaProfilerStart/Stop, for Nsight Compute: `ncu --profile-from-start off ... python3
bench/profile_cases.py CASE:DTYPE:LAYOUT:DIR ...` profiles exactly the kernels of that
repetition, convx's then aten's (DIR: fwd or bwd).
The cases are gpu_bench.py's, so a profile explains a row of its table.

    python3 bench/profile_cases.py mbv2_s1:fp16:nhwc:fwd mamba_k4:bf16:nlc:bwd
    python3 bench/profile_cases.py --host     # host time per call on tiny shapes, convx vs aten
    python3 bench/profile_cases.py --kernels mbv2_s1:fp16:nhwc:bwd   # each kernel's device time
"""

import sys

import torch
import torch.nn.functional as F

import convx  # noqa: F401  (loads the operator library)
from gpu_bench import CASES, DTYPES, grad_like, make_input


def calls(case, dn, layout):
    """(convx fwd, aten fwd, convx bwd, aten bwd) closures for one benchmark row."""
    name, group, N, C, spatial, k, s, p, transposed = case[:9]
    rank = len(spatial)
    x = make_input(N, C, spatial, DTYPES[dn], layout)
    w = torch.randn(C, 1, *k, device="cuda", dtype=DTYPES[dn])
    ops = torch.ops.convx
    pad = [k[-1] - 1] if p == "causal" else ([p] * rank if isinstance(p, int) else list(p))
    st, dil = [s] * rank, [1] * rank
    conv_a = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[rank]
    if transposed:
        op_ = [0] * rank
        fc = lambda: getattr(ops, f"conv_transpose{rank}d")(x, w, None, st, pad, op_, C, dil)  # noqa: E731
        fa = lambda: F.conv_transpose2d(x, w, None, s, pad, 0, C, 1)  # noqa: E731
        return fc, fa, None, None
    fc = lambda: getattr(ops, f"depthwise_conv{rank}d")(x, w, None, st, pad, dil)  # noqa: E731
    fa = lambda: conv_a(x, w, None, s, pad, 1, C)  # noqa: E731
    dy = grad_like(fa(), layout)
    ig = getattr(ops, f"conv{rank}d_input_grad")
    wg = getattr(ops, f"conv{rank}d_weight_grad")

    def bc():
        ig(list(x.shape), w, dy, st, pad, dil, C)
        wg(x, list(w.shape), dy, st, pad, dil, C)

    def ba():
        torch.ops.aten.convolution_backward(dy, x, w, None, st, pad, dil, False, [0] * rank, C,
                                            [True, True, False])

    return fc, fa, bc, ba


def host_overhead():
    """Microseconds of host time per call on shapes too small to keep the GPU busy: convx's
    dispatch + checks + plan lookup vs aten's, for the dense (cuDNN) and depthwise paths."""
    import time
    ops = torch.ops.convx
    x = torch.randn(2, 16, 8, 8, device="cuda")
    wd = torch.randn(16, 16, 3, 3, device="cuda")
    wt = torch.randn(16, 8, 4, 4, device="cuda")
    wdw = torch.randn(16, 1, 3, 3, device="cuda")
    b = torch.randn(16, device="cuda")
    pairs = {
        "conv2d": (lambda: ops.conv2d(x, wd, b, [1, 1], [1, 1], [1, 1], 1), lambda: F.conv2d(x, wd, b, 1, 1)),
        "conv_transpose2d": (lambda: ops.conv_transpose2d(x, wt, None, [2, 2], [1, 1], [0, 0], 1, [1, 1]),
                             lambda: F.conv_transpose2d(x, wt, None, 2, 1)),
        "depthwise_conv2d": (lambda: ops.depthwise_conv2d(x, wdw, b, [1, 1], [1, 1], [1, 1]),
                             lambda: F.conv2d(x, wdw, b, 1, 1, 1, 16)),
    }
    for name, (fc, fa) in pairs.items():
        for lib, f in (("convx", fc), ("aten", fa)):
            for _ in range(50):
                f()
            torch.cuda.synchronize()
            best = float("inf")
            for _ in range(20):
                t = time.perf_counter()
                for _ in range(200):
                    f()
                torch.cuda.synchronize()
                best = min(best, (time.perf_counter() - t) / 200 * 1e6)
            print(f"host {name:18} {lib:5} {best:7.1f} us/call", flush=True)


def kernel_times(specs):
    """Each CUDA kernel of one call of convx's side of a row (aten's with a fifth field `:aten`),
    with its device time (torch.profiler, median of 5 calls): which launch of a forward or
    backward the time goes to."""
    from torch.profiler import ProfilerActivity, profile
    by_name = {c[0]: c for c in CASES}
    for spec in specs:
        name, dn, layout, direction, *lib = spec.split(":")
        fc, fa, bc, ba = calls(by_name[name], dn, layout)
        if lib == ["aten"]:  # aten's kernels for the row (cuDNN autotuned, as in the benchmark)
            torch.backends.cudnn.benchmark = True
            f = fa if direction == "fwd" else ba
        else:
            f = fc if direction == "fwd" else bc
        for _ in range(3):
            f()
        torch.cuda.synchronize()
        runs = []
        for _ in range(5):
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                f()
                torch.cuda.synchronize()
            runs.append([(e.name, e.device_time_total) for e in prof.events() if e.device_type.name == "CUDA"])
        print(f"kernels {spec}:", flush=True)
        for i, (kname, _) in enumerate(runs[0]):
            times = sorted(r[i][1] for r in runs if len(r) > i)
            print(f"  {times[len(times) // 2]:9.1f} us  {kname[:150]}", flush=True)


def main():
    if sys.argv[1:] == ["--host"]:
        return host_overhead()
    if sys.argv[1:2] == ["--kernels"]:
        return kernel_times(sys.argv[2:])
    torch.backends.cudnn.benchmark = True  # aten's kernels as in the benchmark
    by_name = {c[0]: c for c in CASES}
    for spec in sys.argv[1:]:
        name, dn, layout, direction = spec.split(":")
        fc, fa, bc, ba = calls(by_name[name], dn, layout)
        for lib, f in (("convx", fc if direction == "fwd" else bc), ("aten", fa if direction == "fwd" else ba)):
            for _ in range(3):  # warm-up: plans, autotuning, caches
                f()
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
            f()
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
            print(f"profiled {spec} {lib}", flush=True)


if __name__ == "__main__":
    main()
