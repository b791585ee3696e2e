"""Scripts a small convx decoder for the C++ example, with a test input and aten's output for it.

    CONVX_LIBRARY=build/libconvx.so PYTHONPATH=python python examples/cpp/make_model.py OUT.pt
    build/examples/cpp/convx_run_scripted OUT.pt

The saved module is a "bundle": the scripted model plus the buffers example_input and
expected_output, which convx_run_scripted runs and compares. (TorchScript needs the classes'
source, so they live in this file; examples/demo.py imports save_bundle from here.)
"""
import copy
import sys
import warnings

import torch

import convx

# TorchScript is deprecated in favour of torch.export, but still the way to run a model in C++
# from a single file without compiling it; the warnings say nothing new here.
warnings.filterwarnings("ignore", message=r".*torch\.jit\.\w+.* deprecated")


class Bundle(torch.nn.Module):
    """A model with one input and the output expected from it."""

    def __init__(self, model: torch.nn.Module, example_input: torch.Tensor,
                 expected_output: torch.Tensor):
        super().__init__()
        self.model = model
        self.register_buffer("example_input", example_input)
        self.register_buffer("expected_output", expected_output)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x)


def save_bundle(model, example_input, expected_output, path):
    """Scripts ``model`` with its test data and saves it; returns the scripted bundle."""
    scripted = torch.jit.script(Bundle(model, example_input, expected_output))
    torch.jit.save(scripted, str(path))
    return scripted


def decoder(channels=8):
    """Upsamples 4x with transposed convolutions, a depthwise convolution between them."""
    return torch.nn.Sequential(
        torch.nn.ConvTranspose2d(channels, channels, 4, stride=2, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(channels, channels, 3, padding=1, groups=channels),
        torch.nn.ReLU(),
        torch.nn.ConvTranspose2d(channels, 3, 3, stride=2, padding=1, output_padding=1),
    )


def main(path):
    torch.manual_seed(0)
    reference = decoder().eval()
    model = convx.convert(copy.deepcopy(reference))
    kinds = {type(m) for m in model.modules()}
    for wanted in (convx.nn.ConvTranspose2d, convx.nn.DepthwiseConv2d):
        assert wanted in kinds, f"convx.convert left no {wanted.__name__} in {kinds}"

    x = torch.randn(2, 8, 7, 7)
    with torch.no_grad():
        expected = reference(x)
        torch.testing.assert_close(model(x), expected)
    graph = str(save_bundle(model, x, expected, path).inlined_graph)
    for op in ("convx::conv_transpose2d", "convx::depthwise_conv2d"):
        assert op in graph, f"the scripted model does not call {op}"
    print(f"saved {path}: input {tuple(x.shape)} -> output {tuple(expected.shape)}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} OUT.pt")
    main(sys.argv[1])
