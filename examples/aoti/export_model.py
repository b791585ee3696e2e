"""Exports a convx model to an AOTInductor package for the C++ runner, with reference data.

    PYTHONPATH=python python examples/aoti/export_model.py OUT_DIR [--model small|decoder|
        mobilenet_v3_small|mobilenet_v3_large] [--device cpu|cuda] [--batches 1,3,7]
        [--max-batch N] [--c-shims | --aten]
    build/examples/aoti/convx_run_aoti OUT_DIR/model.pt2 --reference OUT_DIR/reference.pt

Writes OUT_DIR/model.pt2 and OUT_DIR/reference.pt (torch.save of a dict: input_<i> and
expected_<i> for every batch size in --batches, none of them the traced batch 2). The expected
outputs are those of the unconverted model, computed by aten. run_aoti.cpp loads both.

The "small" model (the CI one) calls convx operators directly and through convx.convert; the
others are a decoder of transposed convolutions and torchvision models, converted. --aten
packages the unconverted model instead (the baseline without convx, for bench/aoti_bench.py).
"""
import argparse
import copy
import sys
import time
from pathlib import Path

import torch

import convx
import convx.export

TRACED_BATCH = 2


class Small(torch.nn.Module):
    """A depthwise + transposed convolution block (convx.convert swaps it) followed by a 1x1
    convolution that, once ``convx_head`` is set, calls torch.ops.convx.conv2d directly."""

    def __init__(self, channels=4):
        super().__init__()
        self.block = torch.nn.Sequential(
            torch.nn.Conv2d(channels, channels, 3, padding=1, groups=channels),
            torch.nn.ReLU(),
            torch.nn.ConvTranspose2d(channels, channels, 3, stride=2, padding=1, output_padding=1),
        )
        self.head = torch.nn.Parameter(torch.randn(3, channels, 1, 1) * 0.5)
        self.convx_head = False  # False: the aten reference

    def forward(self, x):
        y = self.block(x)
        if self.convx_head:
            return torch.ops.convx.conv2d(y, self.head)
        return torch.nn.functional.conv2d(y, self.head)


def decoder(channels=64):
    """Upsamples 8x: transposed convolutions (one depthwise) and depthwise convolutions."""
    c = channels
    return torch.nn.Sequential(
        torch.nn.ConvTranspose2d(c, c, 4, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(c, c, 3, padding=1, groups=c), torch.nn.ReLU(),
        torch.nn.ConvTranspose2d(c, c // 2, 4, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.ConvTranspose2d(c // 2, c // 2, 3, stride=2, padding=1, output_padding=1,
                                 groups=c // 2),
        torch.nn.Conv2d(c // 2, 3, 1),
    )


def calibrate_batchnorm(model, shape, batch=8):
    """Sets the BatchNorm statistics from one random batch. Untrained torchvision models keep
    mean 0 / variance 1, and their outputs are then ~1e-9: any tolerance would pass."""
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
            m.momentum = None  # a plain average over the calibration batch
    model.train()
    with torch.no_grad():
        model(torch.randn(batch, *shape))
    return model.eval()


def build(name):
    """(unconverted reference model, input shape without the batch)."""
    if name == "small":
        return Small(), (4, 6, 6)
    if name == "decoder":
        return decoder(), (64, 16, 16)
    import torchvision
    shape = (3, 224, 224)
    return calibrate_batchnorm(getattr(torchvision.models, name)(weights=None), shape), shape


def convert(reference):
    """The convx version of a reference model built by :func:`build`."""
    model = convx.convert(copy.deepcopy(reference))
    if isinstance(model, Small):
        model.convx_head = True
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--model", default="small")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batches", default="1,3,7")
    parser.add_argument("--max-batch", type=int, default=None,
                        help="the largest batch the package accepts (default: unbounded)")
    parser.add_argument("--c-shims", action="store_true",
                        help="call convx through its C shims instead of the proxy executor")
    parser.add_argument("--aten", action="store_true",
                        help="package the unconverted model instead (the baseline without convx)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    if args.device == "cuda":  # the references in full float32, as convx computes
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    reference, shape = build(args.model)
    reference = reference.eval().to(args.device)
    model = convert(reference)
    example = torch.randn(TRACED_BATCH, *shape, device=args.device)

    start = time.perf_counter()
    if args.aten:
        batch = torch.export.Dim("batch", max=args.max_batch)
        ep = torch.export.export(reference, (example,), dynamic_shapes=({0: batch},))
        path = torch._inductor.aoti_compile_and_package(ep, package_path=str(args.out / "model.pt2"))
    else:
        ep = convx.export.export(model, (example,), max_batch=args.max_batch)
        print(f"{args.model}: exported graph calls {', '.join(convx.export.convx_ops(ep))}")
        path = convx.export.aoti_package(ep, args.out / "model.pt2", c_shims=args.c_shims)
    print(f"compiled {path} in {time.perf_counter() - start:.1f} s")

    data = {}
    with torch.no_grad():
        for i, n in enumerate(int(b) for b in args.batches.split(",")):
            x = torch.randn(n, *shape, device=args.device)
            expected = reference(x)
            torch.testing.assert_close(model(x), expected, rtol=1e-4, atol=1e-4)
            data[f"input_{i}"], data[f"expected_{i}"] = x.cpu(), expected.cpu()
    torch.save(data, args.out / "reference.pt")
    print(f"saved {args.out / 'reference.pt'}: batches {args.batches}")


if __name__ == "__main__":
    sys.exit(main())
