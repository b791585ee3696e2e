"""Export models that call convx operators to ONNX with standard operators only.

    import convx.onnx
    torch.onnx.export(model, (x,), "model.onnx", dynamo=True,
                      dynamic_shapes={"x": {0: torch.export.Dim("batch")}},
                      custom_translation_table=convx.onnx.translation_table())

Every forward operator becomes one standard ONNX node (opset 18 semantics), so any ONNX runtime
runs the model without convx:

=====================================  =========================================================
``convNd``                             ``Conv`` (``group=groups``)
``depthwise_convNd``                   ``Conv`` with ``group`` = input channels
``conv_transposeNd``                   ``ConvTranspose`` (with ``output_padding``)
``convNd_input_grad``                  ``ConvTranspose``, ``output_padding`` taken from the
                                       static spatial sizes of ``input_size``
``convNd_weight_grad``                 not exported: :class:`OnnxExportError` (training only)
=====================================  =========================================================

ONNX ``pads`` are all the begins then all the ends; convx paddings are symmetric, so both halves
are ``padding``. Unbatched inputs ``[C, *spatial]`` get a batch axis (``Unsqueeze``) around the
node. ONNX attributes are constants: when an argument that must become one is not known at
export time (a symbolic channel count, a symbolic spatial size of ``input_size``), the export
stops with :class:`OnnxExportError` saying which argument and what to do.

This module imports onnxscript; ``import convx`` alone does not.
"""

import torch
from onnxscript import opset18 as op

__all__ = ["translation_table", "OnnxExportError"]


class OnnxExportError(RuntimeError):
    """A convx operator call that standard ONNX cannot express."""


def _fail(name: str, message: str):
    raise OnnxExportError(f"convx.onnx: convx::{name}: {message}")


def _static_dim(name: str, value, what: str, fix: str) -> int:
    if isinstance(value, int):
        return value
    _fail(name, f"{what} is symbolic ({value}) but ONNX needs it as a constant attribute; {fix}")


def _rank_check(name: str, x, rank: int) -> bool:
    """True when ``x`` is unbatched ([C, *spatial])."""
    if x.shape is None:
        _fail(name, "the input has no known rank; export with torch.onnx.export(..., dynamo=True)")
    if len(x.shape) not in (rank + 1, rank + 2):
        _fail(name, f"expected a {rank + 2}-d (batched) or {rank + 1}-d (unbatched) input, "
                    f"got {len(x.shape)} dims")
    return len(x.shape) == rank + 1


def _batched(fn, unbatched: bool, x):
    """Runs ``fn`` on ``x`` with a batch axis added (and removed again) when it has none."""
    if not unbatched:
        return fn(x)
    axis = op.Constant(value_ints=[0])
    return op.Squeeze(fn(op.Unsqueeze(x, axis)), axis)


def _ints(values, rank: int, default: int) -> list:
    """A schema int[N] argument; the exporter leaves out the ones at their default."""
    return [default] * rank if values is None else [int(v) for v in values]


def _inputs(x, weight, bias):
    return (x, weight) if bias is None else (x, weight, bias)


def _conv(rank, input, weight, bias=None, stride=None, padding=None, dilation=None, groups=1,
          *, name=None):
    unbatched = _rank_check(name, input, rank)
    return _batched(
        lambda x: op.Conv(*_inputs(x, weight, bias), strides=_ints(stride, rank, 1),
                          pads=_ints(padding, rank, 0) * 2, dilations=_ints(dilation, rank, 1),
                          group=groups),
        unbatched, input)


def _depthwise_conv(rank, input, weight, bias=None, stride=None, padding=None, dilation=None,
                    *, name=None):
    unbatched = _rank_check(name, input, rank)
    channels = _static_dim(name, input.shape[0 if unbatched else 1], "the input channel count",
                           "export with a fixed number of channels (it becomes Conv's group)")
    return _conv(rank, input, weight, bias, stride, padding, dilation, channels, name=name)


def _conv_transpose(rank, input, weight, bias=None, stride=None, padding=None,
                    output_padding=None, groups=1, dilation=None, *, name=None):
    unbatched = _rank_check(name, input, rank)
    stride, padding = _ints(stride, rank, 1), _ints(padding, rank, 0)
    output_padding = _ints(output_padding, rank, 0)
    # PyTorch (and convx) allow output_padding < max(stride, dilation); onnxruntime's
    # ConvTranspose only output_padding < stride. The extra elements at the end are the ones the
    # end padding crops, so a larger output_padding can be folded into a smaller end pad.
    pad_end = list(padding)
    for i in range(rank):
        if output_padding[i] >= stride[i]:
            if output_padding[i] > padding[i]:
                _fail(name, f"output_padding[{i}] = {output_padding[i]} is not smaller than "
                            f"stride[{i}] = {stride[i]} and larger than padding[{i}] = "
                            f"{padding[i]}: ONNX ConvTranspose cannot express it (onnxruntime "
                            "requires output_padding < stride). Use a stride larger than the "
                            "output_padding, or pad the output explicitly (F.pad) instead")
            pad_end[i] -= output_padding[i]
            output_padding[i] = 0
    return _batched(
        lambda x: op.ConvTranspose(*_inputs(x, weight, bias), strides=stride,
                                   pads=padding + pad_end, output_padding=output_padding,
                                   dilations=_ints(dilation, rank, 1), group=groups),
        unbatched, input)


def _input_grad(rank, input_size, weight, grad_output, stride=None, padding=None,
                dilation=None, groups=1, *, name=None):
    # The input-gradient is the transposed convolution of grad_output; input_size picks the
    # output length among the stride-many candidates, i.e. output_padding.
    _rank_check(name, grad_output, rank)
    stride, padding = _ints(stride, rank, 1), _ints(padding, rank, 0)
    dilation = _ints(dilation, rank, 1)
    if weight.shape is None:
        _fail(name, "the weight has no known shape")
    fix = ("export with static spatial sizes (only the batch may be dynamic), or use "
           "conv_transpose with an explicit output_padding")
    output_padding = []
    for i in range(rank):
        want = _static_dim(name, input_size[len(input_size) - rank + i],
                           f"input_size[{len(input_size) - rank + i}]", fix)
        length = _static_dim(name, grad_output.shape[len(grad_output.shape) - rank + i],
                             f"grad_output spatial size {i}", fix)
        kernel = _static_dim(name, weight.shape[2 + i], f"kernel size {i}", fix)
        natural = (length - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel - 1) + 1
        output_padding.append(want - natural)
    return _conv_transpose(rank, grad_output, weight, None, stride, padding, output_padding,
                           groups, dilation, name=name)


def _weight_grad(rank, *args, name=None, **kwargs):
    _fail(name, "the weight gradient is a training-only operator; ONNX has no standard "
                "operator for it. Export the model in eval mode for inference, or keep "
                "training in PyTorch (torch.export + AOTInductor runs it in C++)")


def translation_table() -> dict:
    """``{torch.ops.convx.<op>.default: onnxscript translation}`` for every convx operator,
    for ``torch.onnx.export(..., dynamo=True, custom_translation_table=...)``."""
    families = {
        "conv{}d": _conv,
        "depthwise_conv{}d": _depthwise_conv,
        "conv_transpose{}d": _conv_transpose,
        "conv{}d_input_grad": _input_grad,
        "conv{}d_weight_grad": _weight_grad,
    }
    table = {}
    for rank in (1, 2, 3):
        for pattern, fn in families.items():
            name = pattern.format(rank)
            table[getattr(torch.ops.convx, name).default] = _bind(fn, rank, name)
    return table


def _bind(fn, rank: int, name: str):
    """``fn`` for one rank, named after the operator (the exporter names its nodes after it)."""
    def translate(*args, **kwargs):
        return fn(rank, *args, name=name, **kwargs)
    translate.__name__ = translate.__qualname__ = f"convx_{name}"
    return translate
