"""Session-12 wg16 A/B (temporary): the 16-bit channels-last 2-D 3x3 / 5x5 stride-1 weight-grad
tiles picked by CONVX_WG16 / CONVX_WG16_LANES (read per call), timed alone (CUDA events, median),
baseline (variant 0) first and last, one process; every variant checked against float64 and for
bitwise repeatability on the bench shapes and on odd shapes."""
import os
import sys

import torch

import convx  # noqa: F401

ROWS = [("mbv2_s1", 64, 144, 56, 3, 1), ("mbv2_7", 64, 960, 7, 3, 1), ("effnet_k5", 64, 240, 28, 5, 2)]
ODD = [(3, 40, 13, 11, 3, 1), (2, 24, 9, 10, 5, 0), (2, 18, 7, 15, 3, 1), (1, 16, 30, 17, 5, 4), (2, 960, 7, 7, 3, 1)]
VARIANTS = [(0, 128), (1, 128), (2, 128), (3, 128), (4, 128), (5, 128), (6, 32), (6, 64), (1, 32), (2, 32),
            (3, 32), (5, 32), (0, 128)]
op = torch.ops.convx.conv2d_weight_grad
CHECK = "--check" in sys.argv


def setv(v, lanes):
    os.environ["CONVX_WG16"] = str(v)
    os.environ["CONVX_WG16_LANES"] = str(lanes)


def data(N, C, H, k, p, dt, W=None):
    W = W or H
    g = torch.Generator(device="cuda").manual_seed(N * 1000 + C + H)
    x = torch.randn(N, H, W, C, device="cuda", dtype=dt, generator=g).movedim(-1, 1)
    Ho, Wo = H + 2 * p - k + 1, W + 2 * p - k + 1
    dy = torch.randn(N, Ho, Wo, C, device="cuda", dtype=dt, generator=g).movedim(-1, 1)
    return x, dy


def call(x, dy, C, k, p):
    return op(x, [C, 1, k, k], dy, [1, 1], [p, p], [1, 1], C)


def ms(f, iters=30):
    for _ in range(5):
        f()
    ts = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        f()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2]


def rel(a, ref):
    return float((a.double() - ref).abs().max() / ref.abs().max().clamp_min(1e-30))


bad = 0
print("== correctness (rel err vs float64, bitwise repeat)")
for dt in (torch.float16, torch.bfloat16):
    tol = 2e-2 if dt == torch.bfloat16 else 5e-3
    shapes = ODD if CHECK else ODD + [(r[1], r[2], r[3], r[3], r[4], r[5]) for r in ROWS]
    for (N, C, H, W, k, p) in shapes:
        x, dy = data(N, C, H, k, p, dt, W)
        ref = torch.nn.grad.conv2d_weight(x.double(), (C, 1, k, k), dy.double(), 1, p, 1, C)
        for v, lanes in VARIANTS[:-1]:
            setv(v, lanes)
            a = call(x, dy, C, k, p)
            b = call(x, dy, C, k, p)
            e = rel(a, ref)
            ok = e < tol and torch.equal(a, b)
            bad += not ok
            if not ok or (N, C) in [(64, 144), (64, 960), (64, 240)]:
                print(f"{str(dt)[6:]:8} N{N} C{C} {H}x{W} k{k} p{p} v{v} lanes{lanes}: err {e:.1e} "
                      f"repeat {torch.equal(a, b)} {'' if ok else 'FAIL'}")
print("correctness failures:", bad)
if CHECK:  # the small shapes only (compute-sanitizer)
    setv(0, 128)
    sys.exit(1 if bad else 0)

print("== weight-grad alone, ms (median of 30); aten = convolution_backward weight only")
for name, N, C, H, k, p in ROWS:
    for dt in (torch.float16, torch.bfloat16):
        x, dy = data(N, C, H, k, p, dt)
        w = torch.randn(C, 1, k, k, device="cuda", dtype=dt)
        ta = ms(lambda: torch.ops.aten.convolution_backward(dy, x, w, None, [1, 1], [p, p], [1, 1], False, [0, 0], C,
                                                            [False, True, False]))
        line = f"{name:10} {str(dt)[6:]:8} aten {ta:.4f} |"
        for v, lanes in VARIANTS:
            setv(v, lanes)
            line += f" v{v}/{lanes} {ms(lambda: call(x, dy, C, k, p)):.4f}"
        print(line, flush=True)
setv(0, 128)
sys.exit(1 if bad else 0)
