"""Which of issues #4 and #9's depthwise targets a benchmark run meets, row by row.

Reads the JSON that bench/gpu_bench.py writes (default bench/results/h100/gpu_depthwise.json) and
prints a Markdown report: every target, each row it applies to, the measured value and met /
MISSED. No GPU needed. The thresholds are the issues' own words:
  #4, 2-D kernels 3-7: forward >= 75% and backward >= 50% of copy bandwidth on every case moving
      >= 50 MB (bytes of that direction); never slower than aten; geometric mean >= 2x forward
      and >= 3x backward. k31: >= 5x aten forward and backward. Depthwise transposed: >= 60% of
      copy bandwidth and >= 8x aten.
  #9, 1-D: forward >= 75% and forward+backward >= 60% on every row moving >= 50 MB (forward
      bytes), never slower than aten, geometric mean >= 5x forward+backward. X3D: forward >= 60%
      and forward+backward >= 40%, geometric mean >= 5x.
A ratio within 1% of aten is reported as a tie ("never slower" is then not shown either way).

    python3 bench/target_status.py [path/to/gpu_depthwise.json]
"""

import json
import math
import sys

MB50 = 50e6


def name(r):
    return f"{r['case']} {r['dtype']} {r['layout']}"


def geomean(v):
    return math.exp(sum(math.log(x) for x in v) / len(v))


def report(rows):
    out, missed = [], 0
    out.append("| target, row | measured | status |")
    out.append("|---|---|---|")

    def add(ok, what, value):
        nonlocal missed
        missed += not ok
        out.append(f"| {what} | {value} | {'met' if ok else '**MISSED**'} |")

    def slower(r, direction):
        x = r.get(f"{direction}_speedup")
        if x is None:
            return
        if x < 0.99:
            add(False, f"#{4 if r['group'] == '2d' else 9} never slower than aten: {name(r)} {direction}", f"{x:.2f}x")
        elif x < 1.0:
            out.append(f"| never slower than aten: {name(r)} {direction} | {x:.2f}x | tie |")

    two = [r for r in rows if r["group"] == "2d"]
    for r in two:
        k = max(r["k"])
        if r["transposed"]:
            add(r["fwd_bw_frac_convx"] >= 0.60 and r["fwd_speedup"] >= 8,
                f"#4 transposed >= 60% and >= 8x: {name(r)}",
                f"{100 * r['fwd_bw_frac_convx']:.0f}%, {r['fwd_speedup']:.1f}x")
        elif k >= 13:
            add(r["fwd_speedup"] >= 5, f"#4 k31 forward >= 5x: {name(r)}", f"{r['fwd_speedup']:.2f}x")
            add(r["bwd_speedup"] >= 5, f"#4 k31 backward >= 5x: {name(r)}", f"{r['bwd_speedup']:.2f}x")
        else:
            if r["fwd_bytes"] >= MB50:
                add(r["fwd_bw_frac_convx"] >= 0.75, f"#4 forward >= 75%: {name(r)}",
                    f"{r['fwd_convx_ms']:.3f} ms, {100 * r['fwd_bw_frac_convx']:.0f}%")
            if r.get("bwd_bytes") and r["bwd_bytes"] >= MB50:
                add(r["bwd_bw_frac_convx"] >= 0.50, f"#4 backward >= 50%: {name(r)}",
                    f"{r['bwd_convx_ms']:.3f} ms, {100 * r['bwd_bw_frac_convx']:.0f}%")
        slower(r, "fwd")
        slower(r, "bwd")
    if two:
        g = geomean([r["fwd_speedup"] for r in two])
        add(g >= 2, "#4 geometric mean forward >= 2x (2-D rows)", f"{g:.2f}x")
        g = geomean([r["bwd_speedup"] for r in two if r.get("bwd_speedup")])
        add(g >= 3, "#4 geometric mean backward >= 3x (2-D rows)", f"{g:.2f}x")

    # issue #9: 1-D rows moving >= 50 MB and every X3D row, forward and forward+backward
    for group, what, fwd_t, fb_t, big_only in (("1d", "1-D", 0.75, 0.60, True), ("3d", "X3D", 0.60, 0.40, False)):
        part = [r for r in rows if r["group"] == group]
        for r in part:
            if not big_only or r["fwd_bytes"] >= MB50:
                add(r["fwd_bw_frac_convx"] >= fwd_t, f"#9 {what} forward >= {100 * fwd_t:.0f}%: {name(r)}",
                    f"{r['fwd_convx_ms']:.3f} ms, {100 * r['fwd_bw_frac_convx']:.0f}%")
                add(r["fwdbwd_bw_frac_convx"] >= fb_t, f"#9 {what} forward+backward >= {100 * fb_t:.0f}%: {name(r)}",
                    f"{r['fwd_convx_ms'] + r['bwd_convx_ms']:.3f} ms, {100 * r['fwdbwd_bw_frac_convx']:.1f}%")
            slower(r, "fwd")
            slower(r, "bwd")
        if part:
            g = geomean([r["fwdbwd_speedup"] for r in part])
            add(g >= 5, f"#9 {what} geometric mean forward+backward >= 5x", f"{g:.2f}x")
    return out, missed


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "bench/results/h100/gpu_depthwise.json"
    with open(path) as f:
        data = json.load(f)
    lines, missed = report(data["results"])
    print(f"Targets of issues #4 and #9 on {data['device']} (torch {data['torch']}, copy bandwidth "
          f"{data['copy_bandwidth_Bps'] / 1e9:.0f} GB/s), from {path}: {missed} missed.\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
