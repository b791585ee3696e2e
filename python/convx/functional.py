"""The convx operators with PyTorch-style argument handling.

Every function here mirrors its ``torch.nn.functional`` / ``torch.nn.grad`` counterpart and
calls the matching ``torch.ops.convx`` operator:

=========================  ===========================================================
convx.functional           reference
=========================  ===========================================================
``convNd``                 ``F.convNd``
``conv_transposeNd``       ``F.conv_transposeNd`` (same argument order)
``depthwise_convNd``       ``F.convNd(..., groups=C)`` with a ``[C*m, 1, *k]`` weight
``convNd_input_grad``      ``torch.nn.grad.convNd_input``
``convNd_weight_grad``     ``torch.nn.grad.convNd_weight``
=========================  ===========================================================

Hyper-parameters (``stride``, ``padding``, ``dilation``, ``output_padding``) take a single int
(used for every spatial dimension) or one value per spatial dimension. ``convNd`` and
``depthwise_convNd`` also take ``padding='valid'`` (no padding) and ``padding='same'`` (output
as large as the input; stride 1 only, an odd total padding puts the extra element at the end,
as PyTorch does). ``conv1d`` and ``depthwise_conv1d`` also take ``padding='causal'``: the input
is padded on the left by ``dilation * (kernel_size - 1)`` so that output position ``t`` only
sees inputs ``<= t`` (with stride 1 the output is as long as the input).

Argument errors are raised by the operators themselves, as ``RuntimeError`` naming the
argument.
"""

from typing import List, Optional, Sequence, Tuple, Union

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = [
    "conv1d", "conv2d", "conv3d",
    "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "depthwise_conv1d", "depthwise_conv2d", "depthwise_conv3d",
    "conv1d_input_grad", "conv2d_input_grad", "conv3d_input_grad",
    "conv1d_weight_grad", "conv2d_weight_grad", "conv3d_weight_grad",
]

IntOrSeq = Union[int, Sequence[int]]
Padding = Union[str, int, Sequence[int]]


def _tuple(value, n: int) -> List[int]:
    """A single int becomes ``n`` copies; a sequence is passed on as a list (its length is
    checked by the operator, which names the argument when it is wrong)."""
    if isinstance(value, (int, torch.SymInt)) and not isinstance(value, bool):
        return [value] * n
    return list(value)


def _sizes(value) -> List[int]:
    return list(value)


def _string_padding(padding: str, weight: Tensor, stride: List[int], dilation: List[int],
                    n: int, allow_causal: bool) -> Tuple[List[int], List[int]]:
    """Resolves a padding string into (symmetric padding for the operator, extra ``F.pad``
    amounts in ``F.pad`` order, empty when none is needed)."""
    if padding == "valid":
        return [0] * n, []
    if padding == "same":
        if any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        sym: List[int] = []
        extra_end: List[int] = []
        for i in range(n):
            total = dilation[i] * (weight.shape[2 + i] - 1)
            sym.append(total // 2)
            extra_end.append(total - 2 * (total // 2))
        if not any(extra_end):
            return sym, []
        pad: List[int] = []
        for i in reversed(range(n)):  # F.pad lists the last dimension first
            pad += [0, extra_end[i]]
        return sym, pad
    if padding == "causal" and allow_causal:
        if n != 1:  # pragma: no cover - only the 1-D functions allow it
            raise RuntimeError("padding='causal' is only supported for 1-D convolutions")
        left = dilation[0] * (weight.shape[2] - 1)
        return [0], ([left, 0] if left > 0 else [])
    valid = "'valid', 'same' or 'causal'" if allow_causal else "'valid' or 'same'"
    raise RuntimeError(f"Invalid padding string: {padding!r} (expected {valid}, or ints)")


def _resolve_padding(input: Tensor, weight: Tensor, padding, stride: List[int],
                     dilation: List[int], n: int, allow_causal: bool):
    if isinstance(padding, str):
        sym, pad = _string_padding(padding, weight, stride, dilation, n, allow_causal)
        if pad:
            input = F.pad(input, pad)
        return input, sym
    return input, _tuple(padding, n)


# ---------------------------------------------------------------------------------------------
# convolution
# ---------------------------------------------------------------------------------------------

def _conv(n: int, op, input, weight, bias, stride, padding, dilation, groups, allow_causal):
    stride = _tuple(stride, n)
    dilation = _tuple(dilation, n)
    input, padding = _resolve_padding(input, weight, padding, stride, dilation, n, allow_causal)
    return op(input, weight, bias, stride, padding, dilation, groups)


def conv1d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride: IntOrSeq = 1,
           padding: Padding = 0, dilation: IntOrSeq = 1, groups: int = 1) -> Tensor:
    """1-D convolution, like :func:`torch.nn.functional.conv1d` (also ``padding='causal'``).

    input ``[N, C_in, L]`` or ``[C_in, L]``; weight ``[C_out, C_in/groups, k]``."""
    return _conv(1, torch.ops.convx.conv1d, input, weight, bias, stride, padding, dilation,
                 groups, True)


def conv2d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride: IntOrSeq = 1,
           padding: Padding = 0, dilation: IntOrSeq = 1, groups: int = 1) -> Tensor:
    """2-D convolution, like :func:`torch.nn.functional.conv2d`.

    input ``[N, C_in, H, W]`` or ``[C_in, H, W]``; weight ``[C_out, C_in/groups, kH, kW]``."""
    return _conv(2, torch.ops.convx.conv2d, input, weight, bias, stride, padding, dilation,
                 groups, False)


def conv3d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride: IntOrSeq = 1,
           padding: Padding = 0, dilation: IntOrSeq = 1, groups: int = 1) -> Tensor:
    """3-D convolution, like :func:`torch.nn.functional.conv3d`.

    input ``[N, C_in, D, H, W]`` or ``[C_in, D, H, W]``; weight ``[C_out, C_in/groups, kD, kH, kW]``."""
    return _conv(3, torch.ops.convx.conv3d, input, weight, bias, stride, padding, dilation,
                 groups, False)


# ---------------------------------------------------------------------------------------------
# depthwise convolution
# ---------------------------------------------------------------------------------------------

def _depthwise(n: int, op, input, weight, bias, stride, padding, dilation, allow_causal):
    stride = _tuple(stride, n)
    dilation = _tuple(dilation, n)
    input, padding = _resolve_padding(input, weight, padding, stride, dilation, n, allow_causal)
    return op(input, weight, bias, stride, padding, dilation)


def depthwise_conv1d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
                     stride: IntOrSeq = 1, padding: Padding = 0,
                     dilation: IntOrSeq = 1) -> Tensor:
    """Depthwise 1-D convolution: ``F.conv1d(input, weight, bias, ..., groups=C)``.

    input ``[N, C, L]`` or ``[C, L]``; weight ``[C*m, 1, k]`` (channel multiplier m).
    Also takes ``padding='causal'``."""
    return _depthwise(1, torch.ops.convx.depthwise_conv1d, input, weight, bias, stride, padding,
                      dilation, True)


def depthwise_conv2d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
                     stride: IntOrSeq = 1, padding: Padding = 0,
                     dilation: IntOrSeq = 1) -> Tensor:
    """Depthwise 2-D convolution: ``F.conv2d(input, weight, bias, ..., groups=C)``.

    input ``[N, C, H, W]`` or ``[C, H, W]``; weight ``[C*m, 1, kH, kW]``."""
    return _depthwise(2, torch.ops.convx.depthwise_conv2d, input, weight, bias, stride, padding,
                      dilation, False)


def depthwise_conv3d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
                     stride: IntOrSeq = 1, padding: Padding = 0,
                     dilation: IntOrSeq = 1) -> Tensor:
    """Depthwise 3-D convolution: ``F.conv3d(input, weight, bias, ..., groups=C)``.

    input ``[N, C, D, H, W]`` or ``[C, D, H, W]``; weight ``[C*m, 1, kD, kH, kW]``."""
    return _depthwise(3, torch.ops.convx.depthwise_conv3d, input, weight, bias, stride, padding,
                      dilation, False)


# ---------------------------------------------------------------------------------------------
# transposed convolution
# ---------------------------------------------------------------------------------------------

def _conv_transpose(n: int, op, input, weight, bias, stride, padding, output_padding, groups,
                    dilation):
    if isinstance(padding, str):
        raise RuntimeError(f"Invalid padding string: {padding!r}: conv_transpose{n}d takes ints")
    return op(input, weight, bias, _tuple(stride, n), _tuple(padding, n),
              _tuple(output_padding, n), groups, _tuple(dilation, n))


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
                     stride: IntOrSeq = 1, padding: IntOrSeq = 0, output_padding: IntOrSeq = 0,
                     groups: int = 1, dilation: IntOrSeq = 1) -> Tensor:
    """Transposed 1-D convolution, like :func:`torch.nn.functional.conv_transpose1d`.

    input ``[N, C_in, L]`` or ``[C_in, L]``; weight ``[C_in, C_out/groups, k]``."""
    return _conv_transpose(1, torch.ops.convx.conv_transpose1d, input, weight, bias, stride,
                           padding, output_padding, groups, dilation)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
                     stride: IntOrSeq = 1, padding: IntOrSeq = 0, output_padding: IntOrSeq = 0,
                     groups: int = 1, dilation: IntOrSeq = 1) -> Tensor:
    """Transposed 2-D convolution, like :func:`torch.nn.functional.conv_transpose2d`.

    input ``[N, C_in, H, W]`` or ``[C_in, H, W]``; weight ``[C_in, C_out/groups, kH, kW]``."""
    return _conv_transpose(2, torch.ops.convx.conv_transpose2d, input, weight, bias, stride,
                           padding, output_padding, groups, dilation)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
                     stride: IntOrSeq = 1, padding: IntOrSeq = 0, output_padding: IntOrSeq = 0,
                     groups: int = 1, dilation: IntOrSeq = 1) -> Tensor:
    """Transposed 3-D convolution, like :func:`torch.nn.functional.conv_transpose3d`.

    input ``[N, C_in, D, H, W]`` or ``[C_in, D, H, W]``; weight ``[C_in, C_out/groups, kD, kH, kW]``."""
    return _conv_transpose(3, torch.ops.convx.conv_transpose3d, input, weight, bias, stride,
                           padding, output_padding, groups, dilation)


# ---------------------------------------------------------------------------------------------
# gradients of the convolution
# ---------------------------------------------------------------------------------------------

def _input_grad(n: int, op, input_size, weight, grad_output, stride, padding, dilation, groups):
    return op(_sizes(input_size), weight, grad_output, _tuple(stride, n), _tuple(padding, n),
              _tuple(dilation, n), groups)


def _weight_grad(n: int, op, input, weight_size, grad_output, stride, padding, dilation, groups):
    return op(input, _sizes(weight_size), grad_output, _tuple(stride, n), _tuple(padding, n),
              _tuple(dilation, n), groups)


def conv1d_input_grad(input_size: Sequence[int], weight: Tensor, grad_output: Tensor,
                      stride: IntOrSeq = 1, padding: IntOrSeq = 0, dilation: IntOrSeq = 1,
                      groups: int = 1) -> Tensor:
    """Gradient of conv1d with respect to its input, like ``torch.nn.grad.conv1d_input``."""
    return _input_grad(1, torch.ops.convx.conv1d_input_grad, input_size, weight, grad_output,
                       stride, padding, dilation, groups)


def conv2d_input_grad(input_size: Sequence[int], weight: Tensor, grad_output: Tensor,
                      stride: IntOrSeq = 1, padding: IntOrSeq = 0, dilation: IntOrSeq = 1,
                      groups: int = 1) -> Tensor:
    """Gradient of conv2d with respect to its input, like ``torch.nn.grad.conv2d_input``."""
    return _input_grad(2, torch.ops.convx.conv2d_input_grad, input_size, weight, grad_output,
                       stride, padding, dilation, groups)


def conv3d_input_grad(input_size: Sequence[int], weight: Tensor, grad_output: Tensor,
                      stride: IntOrSeq = 1, padding: IntOrSeq = 0, dilation: IntOrSeq = 1,
                      groups: int = 1) -> Tensor:
    """Gradient of conv3d with respect to its input, like ``torch.nn.grad.conv3d_input``."""
    return _input_grad(3, torch.ops.convx.conv3d_input_grad, input_size, weight, grad_output,
                       stride, padding, dilation, groups)


def conv1d_weight_grad(input: Tensor, weight_size: Sequence[int], grad_output: Tensor,
                       stride: IntOrSeq = 1, padding: IntOrSeq = 0, dilation: IntOrSeq = 1,
                       groups: int = 1) -> Tensor:
    """Gradient of conv1d with respect to its weight, like ``torch.nn.grad.conv1d_weight``."""
    return _weight_grad(1, torch.ops.convx.conv1d_weight_grad, input, weight_size, grad_output,
                        stride, padding, dilation, groups)


def conv2d_weight_grad(input: Tensor, weight_size: Sequence[int], grad_output: Tensor,
                       stride: IntOrSeq = 1, padding: IntOrSeq = 0, dilation: IntOrSeq = 1,
                       groups: int = 1) -> Tensor:
    """Gradient of conv2d with respect to its weight, like ``torch.nn.grad.conv2d_weight``."""
    return _weight_grad(2, torch.ops.convx.conv2d_weight_grad, input, weight_size, grad_output,
                        stride, padding, dilation, groups)


def conv3d_weight_grad(input: Tensor, weight_size: Sequence[int], grad_output: Tensor,
                       stride: IntOrSeq = 1, padding: IntOrSeq = 0, dilation: IntOrSeq = 1,
                       groups: int = 1) -> Tensor:
    """Gradient of conv3d with respect to its weight, like ``torch.nn.grad.conv3d_weight``."""
    return _weight_grad(3, torch.ops.convx.conv3d_weight_grad, input, weight_size, grad_output,
                        stride, padding, dilation, groups)
