"""Session-12 wg16 A/B (temporary): the 16-bit channels-last 2-D 3x3 / 5x5 stride-1 weight-grad
tiles picked by CONVX_WG16* (read per call; 0 = cl_wgrad_partial, main's kernel), timed alone
(bench/timing.py: CUDA events with the GPU kept busy ahead, median), baseline first and last, one
process; every variant checked against float64 and for bitwise repeatability on odd shapes.
Writes the fastest (variant, lanes) per row to --best FILE as shell exports."""
import os
import sys

import torch

import convx  # noqa: F401
sys.path.insert(0, os.path.dirname(__file__))
from timing import time_ms  # noqa: E402

# row: (name, N, C, H, k, p, knob prefix)
ROWS = [("mbv2_s1", 64, 144, 56, 3, 1, "CONVX_WG16"), ("mbv2_7", 64, 960, 7, 3, 1, "CONVX_WG16_SMALL"),
        ("effnet_k5", 64, 240, 28, 5, 2, "CONVX_WG16_K5")]
ODD = [(3, 40, 13, 11, 3, 1), (2, 24, 9, 10, 5, 0), (2, 18, 7, 15, 3, 1), (1, 16, 30, 17, 5, 4), (2, 960, 7, 7, 3, 1),
       (2, 48, 7, 7, 5, 2)]
V3 = [1, 2, 3, 5, 7, 8, 9, 11, 12, 13, 14]
V5 = [1, 2, 3, 7, 8, 11, 12, 13, 14]
LANES = [128, 32]
KNOBS = ["CONVX_WG16", "CONVX_WG16_SMALL", "CONVX_WG16_K5"]
op = torch.ops.convx.conv2d_weight_grad
CHECK = "--check" in sys.argv  # odd shapes only, the variants in the environment (sanitizers)


def setv(prefix, v, lanes):
    os.environ[prefix] = str(v)
    os.environ[prefix + "_LANES"] = str(lanes)


def data(N, C, H, k, p, dt, W=None):
    W = W or H
    g = torch.Generator(device="cuda").manual_seed(N * 1000 + C + H)
    x = torch.randn(N, H, W, C, device="cuda", dtype=dt, generator=g).movedim(-1, 1)
    Ho, Wo = H + 2 * p - k + 1, W + 2 * p - k + 1
    dy = torch.randn(N, Ho, Wo, C, device="cuda", dtype=dt, generator=g).movedim(-1, 1)
    return x, dy


def call(x, dy, C, k, p):
    return op(x, [C, 1, k, k], dy, [1, 1], [p, p], [1, 1], C)


def rel(a, ref):
    return float((a.double() - ref).abs().max() / ref.abs().max().clamp_min(1e-30))


def variants(k):
    return [(0, 128)] + [(v, ln) for v in (V3 if k == 3 else V5) for ln in LANES] + [(0, 128)]


bad = 0
print("== correctness (rel err vs float64, bitwise repeat)", flush=True)
for dt in (torch.float16, torch.bfloat16):
    tol = 2e-2 if dt == torch.bfloat16 else 5e-3
    for (N, C, H, W, k, p) in ODD:
        x, dy = data(N, C, H, k, p, dt, W)
        ref = torch.nn.grad.conv2d_weight(x.double(), (C, 1, k, k), dy.double(), 1, p, 1, C)
        for v, lanes in ([(None, None)] if CHECK else variants(k)[:-1]):
            if v is not None:
                for kn in KNOBS:
                    setv(kn, v, lanes)
            a = call(x, dy, C, k, p)
            b = call(x, dy, C, k, p)
            e = rel(a, ref)
            ok = e < tol and torch.equal(a, b)
            bad += not ok
            if not ok:
                print(f"{str(dt)[6:]:8} N{N} C{C} {H}x{W} k{k} p{p} v{v} lanes{lanes}: err {e:.1e} "
                      f"repeat {torch.equal(a, b)} FAIL", flush=True)
print("correctness failures:", bad, flush=True)
if CHECK:
    sys.exit(1 if bad else 0)
for kn in KNOBS:
    os.environ.pop(kn, None), os.environ.pop(kn + "_LANES", None)

print("== weight-grad alone, device ms (median); aten = convolution_backward weight only; "
      "vV/LANES (0 = main's cl_wgrad_partial; unset = planned routing)", flush=True)
best = []
for name, N, C, H, k, p, kn in ROWS:
    tot = {}
    for dt in (torch.float16, torch.bfloat16):
        x, dy = data(N, C, H, k, p, dt)
        w = torch.randn(C, 1, k, k, device="cuda", dtype=dt)
        ta = time_ms(lambda: torch.ops.aten.convolution_backward(dy, x, w, None, [1, 1], [p, p], [1, 1], False,
                                                                 [0, 0], C, [False, True, False]), 30)
        os.environ.pop(kn, None), os.environ.pop(kn + "_LANES", None)
        line = f"{name:10} {str(dt)[6:]:8} aten {ta:.4f} unset {time_ms(lambda: call(x, dy, C, k, p), 30):.4f} |"
        for v, lanes in variants(k):
            setv(kn, v, lanes)
            t = time_ms(lambda: call(x, dy, C, k, p), 30)
            tot[(v, lanes)] = tot.get((v, lanes), 0) + t
            line += f" v{v}/{lanes} {t:.4f}"
        print(line, flush=True)
    (v, lanes), t = min(tot.items(), key=lambda kv: kv[1])
    print(f"best {name}: v{v}/{lanes} (fp16+bf16 {t:.4f} ms)", flush=True)
    best.append(f"export {kn}={v} {kn}_LANES={lanes}")
    os.environ.pop(kn, None), os.environ.pop(kn + "_LANES", None)
if "--best" in sys.argv:
    with open(sys.argv[sys.argv.index("--best") + 1], "w") as f:
        f.write("\n".join(best) + "\n")

print("== NCHW 16-bit weight-grad alone: one chunk per channel writing gw (CONVX_WG16_NC=1) vs main "
      "(partials + sum_slots, =0)", flush=True)
for name, N, C, H, k, p, _ in ROWS:
    for dt in (torch.float16, torch.bfloat16):
        x = torch.randn(N, C, H, H, device="cuda", dtype=dt)
        dy = torch.randn(N, C, H + 2 * p - k + 1, H + 2 * p - k + 1, device="cuda", dtype=dt)
        w = torch.randn(C, 1, k, k, device="cuda", dtype=dt)
        ta = time_ms(lambda: torch.ops.aten.convolution_backward(dy, x, w, None, [1, 1], [p, p], [1, 1], False,
                                                                 [0, 0], C, [False, True, False]), 30)
        line = f"{name:10} {str(dt)[6:]:8} nchw aten {ta:.4f} |"
        outs = []
        for nc in ("0", "1", "0", "1"):
            os.environ["CONVX_WG16_NC"] = nc
            line += f" nc{nc} {time_ms(lambda: call(x, dy, C, k, p), 30):.4f}"
            outs.append(call(x, dy, C, k, p))
        ref = torch.nn.grad.conv2d_weight(x.double(), (C, 1, k, k), dy.double(), 1, p, 1, C)
        e = rel(outs[1], ref)
        same = torch.equal(outs[0], outs[1])
        bad += not (e < 2e-2 and same)
        print(line + f" | err {e:.1e} equal {same}", flush=True)
        os.environ.pop("CONVX_WG16_NC")
print("failures:", bad)
sys.exit(1 if bad else 0)
