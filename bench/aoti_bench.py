"""Latency of convx models out of Python: the C++ AOTInductor run vs eager PyTorch, with and
without convx, at batch 1 and 64.

    PYTHONPATH=python python bench/aoti_bench.py --runner build-aoti/convx_run_aoti --out DIR
        [--device cuda] [--models mobilenet_v3_large,decoder]

For every model: four AOTInductor packages, compiled in parallel by examples/aoti/export_model.py
(traced at batch 2, dynamic batch): the converted model (convx, proxy executor), the same with
convx's C shims, and the unconverted model (aten only, "without convx"). The C++ runner checks
each package against aten's output at batch 1 and 64 (float32, TF32 off; rtol 1e-3,
atol 1e-5: the outputs are ~0.01-0.3), then times it (median
of --repeat runs, a device synchronisation after each run). Eager times are taken here the same
way (median, synchronised per call) for the unconverted and the converted model, after the
compiles (which load every CPU core) have finished. On the CPU, two more ways out when asked:
--scripted-runner (the converted model scripted, run by examples/cpp's C++ program) and --onnx
(the converted model through convx.onnx, run by onnxruntime's CPU provider). Prints a table
and writes DIR/aoti_bench.json.
"""
import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "examples" / "aoti"))
import convx  # noqa: E402
from export_model import build, convert  # noqa: E402

BATCHES = (1, 64)
VARIANTS = {"convx": [], "convx_c_shims": ["--c-shims"], "aten": ["--aten"]}


def eager_ms(model, x, repeat):
    sync = torch.cuda.synchronize if x.is_cuda else (lambda: None)
    with torch.inference_mode():
        for _ in range(5):
            model(x)
        sync()
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            model(x)
            sync()
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def compile_all(models, device, out):
    """Starts every export + compile at once; returns {(model, variant): (dir, log, process)}."""
    jobs = {}
    for name in models:
        for variant, flags in VARIANTS.items():
            folder = out / f"{name}_{variant}"
            folder.mkdir(parents=True, exist_ok=True)
            log = open(folder / "export.log", "w")
            command = [sys.executable, str(REPO / "examples" / "aoti" / "export_model.py"),
                       str(folder), "--model", name, "--device", device,
                       "--batches", ",".join(map(str, BATCHES)), *flags,
                       # CUDA mobilenet_v3_large guards batch <= 65535 (aten's CUDA kernels):
                       # an unbounded Dim fails to export there, so give every package a bound.
                       "--max-batch", "4096"]
            jobs[name, variant] = (folder, log, subprocess.Popen(command, stdout=log,
                                                                 stderr=subprocess.STDOUT))
    return jobs


def runner_ms(runner, folder, batch, repeat, log):
    command = [str(runner), str(folder / "model.pt2"), "--batch", str(batch), "--repeat",
               str(repeat), "--reference", str(folder / "reference.pt"), "--rtol", "1e-3",
               "--atol", "1e-5"]
    run = subprocess.run(command, capture_output=True, text=True)
    log.write("$ " + " ".join(command) + "\n" + run.stdout + run.stderr + "\n")
    found = re.search(r"median of \d+ runs: ([0-9.e+-]+) ms", run.stdout)
    return (float(found.group(1)) if found else None), run.returncode == 0


def scripted_rows(args, name, converted, shape):
    """TorchScript: the converted model scripted and run by convx_run_scripted (C++, CPU)."""
    import warnings
    sys.path.insert(0, str(REPO / "examples" / "cpp"))
    from make_model import save_bundle
    path = args.out / f"{name}_scripted.pt"
    x = torch.randn(1, *shape)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"`torch\.jit\.\w+` is deprecated")
        save_bundle(converted, x, converted(x), path)
    rows = []
    for batch in BATCHES:
        run = subprocess.run([str(args.scripted_runner), str(path), "--shape",
                              ",".join(map(str, (batch, *shape))), "--repeat", str(args.repeat)],
                             capture_output=True, text=True)
        found = re.search(r"median of \d+ runs: ([0-9.e+-]+) ms", run.stdout)
        rows.append({"model": name, "batch": batch, "mode": "C++ TorchScript convx",
                     "ms": float(found.group(1)) if found else None})
    return rows


def onnx_rows(args, name, reference, converted, shape):
    """ONNX: the converted model exported with convx.onnx, run by onnxruntime (CPU)."""
    import onnxruntime
    import convx.onnx
    program = torch.onnx.export(converted, (torch.randn(2, *shape),), dynamo=True, verbose=False,
                                dynamic_shapes=({0: torch.export.Dim("batch")},),
                                custom_translation_table=convx.onnx.translation_table())
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()
    session = onnxruntime.InferenceSession(program.model_proto.SerializeToString(), options,
                                           providers=["CPUExecutionProvider"])
    feed = session.get_inputs()[0].name
    rows = []
    for batch in BATCHES:
        x = torch.randn(batch, *shape)
        with torch.no_grad():
            want = reference(x)
        got = torch.from_numpy(session.run(None, {feed: x.numpy()})[0])
        ok = torch.allclose(got, want, rtol=1e-3, atol=1e-5)
        rows.append({"model": name, "batch": batch, "mode": "onnxruntime (convx.onnx)",
                     "ms": eager_ms(lambda t: session.run(None, {feed: t.numpy()}), x,
                                    args.repeat), "matches_aten": ok})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runner", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--models", default="mobilenet_v3_large,decoder")
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--batches", default="1,64")
    parser.add_argument("--scripted-runner", type=Path,
                        help="convx_run_scripted: adds TorchScript rows (CPU)")
    parser.add_argument("--onnx", action="store_true", help="adds onnxruntime rows (CPU)")
    parser.add_argument("--compile-timeout", type=float, default=300,
                        help="seconds for all exports + compiles together")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    models = args.models.split(",")
    global BATCHES
    BATCHES = tuple(int(b) for b in args.batches.split(","))

    start = time.perf_counter()
    jobs = compile_all(models, args.device, args.out)
    codes = {}
    for key, (_, _, process) in jobs.items():
        try:
            codes[key] = process.wait(timeout=max(1.0, args.compile_timeout
                                                  - (time.perf_counter() - start)))
        except subprocess.TimeoutExpired:
            process.kill()
            codes[key] = "timed out"
    print(f"(exports and compiles took {time.perf_counter() - start:.0f} s)")

    # Timed only now: the compiles load every CPU core.
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    for name in models:
        torch.manual_seed(0)
        reference, shape = build(name)
        reference = reference.eval().to(args.device)
        converted = convert(reference)
        for batch in BATCHES:
            x = torch.randn(batch, *shape, device=args.device)
            rows.append({"model": name, "batch": batch, "mode": "eager aten",
                         "ms": eager_ms(reference, x, args.repeat)})
            rows.append({"model": name, "batch": batch, "mode": "eager convx",
                         "ms": eager_ms(converted, x, args.repeat)})
        if args.scripted_runner:
            rows += scripted_rows(args, name, converted, shape)
        if args.onnx:
            rows += onnx_rows(args, name, reference, converted, shape)

    with open(args.out / "runner.log", "w") as log:
        for (name, variant), (folder, export_log, _) in jobs.items():
            code = codes[name, variant]
            export_log.close()
            log.write(f"== {name} {variant}: export exit status {code}\n")
            log.write((folder / "export.log").read_text()[-2000:] + "\n")
            for batch in BATCHES:
                ms, ok = (None, False) if code else runner_ms(args.runner, folder, batch,
                                                              args.repeat, log)
                rows.append({"model": name, "batch": batch, "mode": f"C++ .pt2 {variant}",
                             "ms": ms, "matches_aten": ok})

    device = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    print(f"\n{device}, torch {torch.__version__}: median latency (ms), float32, TF32 off")
    print(f"{'model':<20} {'batch':>5} {'mode':<24} {'ms':>9}  matches aten")
    rows.sort(key=lambda r: (models.index(r["model"]), r["batch"]))  # stable: modes in order
    for row in rows:
        ms = f"{row['ms']:9.3f}" if row["ms"] is not None else "   failed"
        print(f"{row['model']:<20} {row['batch']:>5} {row['mode']:<24} {ms}  "
              f"{row.get('matches_aten', '')}")
    with open(args.out / "aoti_bench.json", "w") as f:
        json.dump({"device": device, "torch": torch.__version__, "rows": rows}, f, indent=1)
    return 0 if all(r.get("matches_aten", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
