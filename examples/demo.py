"""convx in one run: convert two models, check them against aten, run one from C++, time both.

    scripts/demo.sh        (sets up and builds first, then runs this file)

1. torchvision's mobilenet_v3_small (depthwise convolutions) and a small decoder (transposed
   and depthwise convolutions) are converted with convx.convert; their outputs must equal
   those of the unconverted models, which aten computes.
2. Both are scripted and saved with their test input and aten's output (build/demo_model.pt,
   build/demo_decoder.pt), then run by the C++ program build/examples/cpp/convx_run_scripted,
   which checks the output and times it.
3. A table of forward times, aten vs convx: median of repeated runs, on the CPU, and on the GPU
   when there is one.
4. The converted mobilenet_v3_small goes the torch.export + AOTInductor way too: exported with a
   dynamic batch, compiled into build/demo_aoti/model.pt2 (a few minutes on two cores), run by
   the C++ program build/examples/aoti/convx_run_aoti at batch sizes other than the traced one,
   compared with aten's output and timed at batch 1.
"""
import copy
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
import torchvision

import convx

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "build"
RUNNER = BUILD / "examples" / "cpp" / "convx_run_scripted"
AOTI_RUNNER = BUILD / "examples" / "aoti" / "convx_run_aoti"
AOTI_DIR = BUILD / "demo_aoti"
sys.path.insert(0, str(REPO / "examples" / "cpp"))
from make_model import decoder, save_bundle  # noqa: E402


def models():
    """(name, aten model, input, file the converted model is saved to)."""
    torch.manual_seed(0)
    return [
        ("mobilenet_v3_small", torchvision.models.mobilenet_v3_small(weights=None).eval(),
         torch.randn(1, 3, 224, 224), BUILD / "demo_model.pt"),
        ("decoder", decoder(32).eval(), torch.randn(4, 32, 32, 32), BUILD / "demo_decoder.pt"),
    ]


def median_ms(model, x, budget_s=2.0, most=25):
    """Median forward time: at least 3 runs, more while they fit in budget_s (at most `most`)."""
    sync = torch.cuda.synchronize if x.is_cuda else (lambda: None)
    with torch.inference_mode():
        model(x)  # warm-up: first-call allocations, cuDNN/oneDNN algorithm choice
        sync()
        times, start = [], time.perf_counter()
        while len(times) < 3 or (len(times) < most and time.perf_counter() - start < budget_s):
            t0 = time.perf_counter()
            model(x)
            sync()
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, "
          f"convx {convx.__version__} ({convx.library_path or 'library already loaded'})\n")
    rows = []
    failed = False
    for name, reference, x, path in models():
        model = convx.convert(copy.deepcopy(reference))
        swapped = sorted({type(m).__name__ for m in model.modules()
                          if type(m).__module__.startswith("convx.")})
        count = sum(type(m).__module__.startswith("convx.") for m in model.modules())
        with torch.no_grad():
            expected, got = reference(x), model(x)
        diff = (got - expected).abs().max().item()
        same = torch.allclose(got, expected, rtol=1e-4, atol=1e-4)
        failed |= not same
        print(f"{name}: {count} modules now convx ({', '.join(swapped)}); "
              f"output {tuple(got.shape)} {'equals' if same else 'DIFFERS FROM'} aten's "
              f"(max |difference| {diff:.2e})")

        save_bundle(model, x, expected, path)
        run = subprocess.run([str(RUNNER), str(path), "--repeat", "10"], capture_output=True,
                             text=True)
        print(f"  C++ ({RUNNER.relative_to(REPO)} {path.relative_to(REPO)}):")
        print("    " + (run.stdout + run.stderr).strip().replace("\n", "\n    "))
        failed |= run.returncode != 0

        devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
        for device in devices:
            xd, ref_d, model_d = x.to(device), reference.to(device), model.to(device)
            try:
                convx_ms = median_ms(model_d, xd)
            except NotImplementedError as e:  # a build without CUDA kernels
                print(f"  {device}: {str(e).splitlines()[0]}")
                continue
            rows.append((name, device, median_ms(ref_d, xd), convx_ms))

    print("\nforward time, median (ms)")
    print(f"{'model':<20} {'device':<7} {'aten':>9} {'convx':>9} {'aten/convx':>11}")
    for name, device, aten_ms, convx_ms in rows:
        print(f"{name:<20} {device:<7} {aten_ms:>9.2f} {convx_ms:>9.2f} {aten_ms / convx_ms:>10.2f}x")
    failed |= not aoti_demo()
    if failed:
        sys.exit("demo: some output did not match aten's")


def aoti_demo():
    """Exports, compiles and runs mobilenet_v3_small from C++ through AOTInductor."""
    print("\nAOTInductor: mobilenet_v3_small, converted, torch.export (dynamic batch) -> .pt2 -> C++")
    steps = [
        [sys.executable, str(REPO / "examples" / "aoti" / "export_model.py"), str(AOTI_DIR),
         "--model", "mobilenet_v3_small", "--batches", "1,4"],
        [str(AOTI_RUNNER), str(AOTI_DIR / "model.pt2"), "--reference",
         str(AOTI_DIR / "reference.pt"), "--batch", "1", "--repeat", "20"],
    ]
    for command in steps:
        run = subprocess.run(command, capture_output=True, text=True)
        lines = [line for line in (run.stdout + run.stderr).splitlines()
                 if not line.startswith("W1")]  # torch's logging noise
        print("  $ " + " ".join(Path(c).name if "/" in c else c for c in command))
        print("    " + "\n    ".join(lines))
        if run.returncode != 0:
            return False
    return True


if __name__ == "__main__":
    main()
