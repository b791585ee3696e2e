"""TEMPORARY (session 14, helper c1d; removed after the measurement): A/B of
 - tcw_rows' staging: main's register prefetch (CONVX_C1D_WR=old) against cp.async rings of 2
   (default) / 3 (nb3) items per warp;
 - short_k3's NCL weight-grad on tcw_rows (CONVX_C1D_K3=1) against row_warp_wgrad;
 - programmatic dependent launches of the 1-D weight-grad kernels (CONVX_C1D_PDL=1).
Each variant alternates with the baseline in one process (timing.time_pair_ms), baseline first and
last; every variant's weight-grad against float64, bitwise repeatable, compared with the
baseline's bits."""

import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convx  # noqa: F401,E402
from timing import time_pair_ms  # noqa: E402

ops = torch.ops.convx
KNOBS = ("CONVX_C1D_WR", "CONVX_C1D_K3", "CONVX_C1D_PDL")
ITERS = 100
RES = {}  # (case, what, variant) -> us, the median of its pairs


def setenv(v):
    for k in KNOBS:
        os.environ.pop(k, None)
    os.environ.update(v)


def held(t, nlc):
    return t.transpose(1, 2).contiguous().transpose(1, 2) if nlc else t.contiguous()


def case(name, N, C, L, k, p, nlc, variants):
    gen = torch.Generator(device="cuda").manual_seed(3)
    x = held(torch.randn(N, C, L, device="cuda", dtype=torch.bfloat16, generator=gen), nlc)
    w = torch.randn(C, 1, k, device="cuda", dtype=torch.bfloat16, generator=gen)
    y = F.conv1d(x, w, None, 1, p, 1, C)
    gy = held(torch.randn(y.shape, device="cuda", dtype=torch.bfloat16, generator=gen), nlc)
    ref = torch.ops.aten.convolution_backward(gy.double(), x.double(), w.double(), None, [1], [p], [1], False, [0], C,
                                              [False, True, False])[1]
    scale = float(ref.abs().max())
    wg = lambda: ops.conv1d_weight_grad(x, [C, 1, k], gy, [1], [p], [1], C)  # noqa: E731

    def bwd():
        ops.conv1d_input_grad(list(x.shape), w, gy, [1], [p], [1], C)
        wg()

    base = list(variants)[0]
    bits = {}
    for vn, env in variants.items():
        setenv(env)
        a = wg()
        b = wg()
        torch.cuda.synchronize()
        err = float((a.double() - ref).abs().max()) / scale
        bits[vn] = a
        print(f"{name} {vn}: rel err {err:.2e} repeatable {torch.equal(a, b)} nan {bool(torch.isnan(a).any())}"
              f" same bits as {base} {torch.equal(a, bits[base])}", flush=True)

    def with_env(env, f):
        def g():
            setenv(env)
            return f()
        return g

    order = [v for v in variants if v != base]
    for what, f in (("wgrad", wg), ("bwd", bwd)):
        for vn in order:
            ta, tb = time_pair_ms(with_env(variants[base], f), with_env(variants[vn], f), ITERS)
            print(f"{name} {what} us: {base} {1e3 * ta:.1f} -> {vn} {1e3 * tb:.1f}", flush=True)
            RES.setdefault((name, what, base), []).append(1e3 * ta)
            RES[(name, what, vn)] = [1e3 * tb]
        ta, tb = time_pair_ms(with_env(variants[order[0]], f), with_env(variants[base], f), ITERS)
        print(f"{name} {what} us: {order[0]} {1e3 * ta:.1f} vs {base} {1e3 * tb:.1f} (baseline last)", flush=True)
        RES[(name, what, order[0])].append(1e3 * ta)
        RES[(name, what, base)].append(1e3 * tb)
    setenv({})


if __name__ == "__main__":
    pdl = {"CONVX_C1D_PDL": "1"}
    case("conformer_512 ncl", 32, 512, 1000, 31, 15, False,
         {"old": {"CONVX_C1D_WR": "old"}, "nb2": {}, "nb3": {"CONVX_C1D_WR": "nb3"}, "nb2+pdl": pdl})
    case("short_k3 ncl", 16, 1536, 512, 3, 2, False,
         {"row_warp": {}, "row_warp+pdl": pdl, "tcw_nb2": {"CONVX_C1D_K3": "1"},
          "tcw_nb3": {"CONVX_C1D_K3": "1", "CONVX_C1D_WR": "nb3"}})
    case("short_k3 nlc", 16, 1536, 512, 3, 2, True, {"main": {}, "pdl": pdl})
    case("k15_causal ncl", 8, 2048, 4096, 15, 14, False,
         {"old": {"CONVX_C1D_WR": "old"}, "nb2": {}, "nb3": {"CONVX_C1D_WR": "nb3"}})

    # The winners, for this call's bench rows and tests (sourced by req.sh): tcw_rows' staging by
    # the Conformer weight-grad (k15's must not be slower), PDL by the sum of its three backwards,
    # short_k3 on tcw_rows by its backward.
    def t(c, w, v):
        return sum(RES[(c, w, v)]) / len(RES[(c, w, v)])
    wr = min(("old", "nb2", "nb3"), key=lambda v: t("conformer_512 ncl", "wgrad", v))
    if t("k15_causal ncl", "wgrad", wr) > t("k15_causal ncl", "wgrad", "old") + 0.5:
        wr = "old"
    gain = (t("conformer_512 ncl", "bwd", "nb2") - t("conformer_512 ncl", "bwd", "nb2+pdl") +
            t("short_k3 ncl", "bwd", "row_warp") - t("short_k3 ncl", "bwd", "row_warp+pdl") +
            t("short_k3 nlc", "bwd", "main") - t("short_k3 nlc", "bwd", "pdl"))
    k3 = min(("row_warp", "tcw_nb2", "tcw_nb3"), key=lambda v: t("short_k3 ncl", "bwd", v))
    env = {}
    if wr != "nb2":
        env["CONVX_C1D_WR"] = wr
    if gain > 0:
        env["CONVX_C1D_PDL"] = "1"
    if k3 != "row_warp":
        env["CONVX_C1D_K3"] = "1"
        if k3 == "tcw_nb3" and wr == "nb2":
            env["CONVX_C1D_WR"] = "nb3"
    print(f"winners: tcw_rows {wr}, PDL gain {gain:.2f} us, short_k3 ncl {k3} -> env {env}", flush=True)
    with open("/tmp/c1d_env.sh", "w") as fh:
        fh.write("".join(f"export {k}={v}\n" for k, v in env.items()))
