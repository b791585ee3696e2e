"""Drop-in replacements for the ``torch.nn`` convolution modules, computed by convx.

Each class subclasses its ``torch.nn`` counterpart: same constructor, parameters,
initialisation and ``state_dict`` keys, so a ``torch.nn`` state dict loads as it is. Only
``forward`` differs: it calls ``torch.ops.convx.*``.

* :class:`Conv1d`, :class:`Conv2d`, :class:`Conv3d`
* :class:`ConvTranspose1d`, :class:`ConvTranspose2d`, :class:`ConvTranspose3d`
* :class:`DepthwiseConv1d`, :class:`DepthwiseConv2d`, :class:`DepthwiseConv3d`: the
  ``torch.nn.ConvNd`` constructor without ``groups``, which is ``in_channels``;
  ``out_channels`` must be a multiple of ``in_channels``.

All modules can be compiled with ``torch.jit.script``. String paddings ('same', 'valid') and
the padding modes other than 'zeros' are resolved at construction (see :meth:`_convx_setup`)
into plain int lists, so ``forward`` stays free of ``Union`` types.
"""

import inspect
from typing import List, Optional

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn.modules.conv import _ConvNd

__all__ = [
    "Conv1d", "Conv2d", "Conv3d",
    "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "DepthwiseConv1d", "DepthwiseConv2d", "DepthwiseConv3d",
]


def _convx_padding_plan(padding, padding_mode: str, kernel_size, dilation,
                        reversed_padding_repeated_twice: List[int]):
    """What a convx forward needs: (``F.pad`` amounts applied first (empty for none), the
    ``F.pad`` mode, the symmetric padding handed to the operator)."""
    n = len(kernel_size)
    if padding_mode != "zeros":
        # Like torch: pad with the mode (the same amounts as 'zeros' would use), then convolve
        # without padding.
        pad = [int(p) for p in reversed_padding_repeated_twice]
        return (pad if any(pad) else []), padding_mode, [0] * n
    if isinstance(padding, str):
        if padding == "valid":
            return [], "constant", [0] * n
        # 'same' (the torch constructor rejected anything else): the symmetric part goes to the
        # operator; an odd total pads one more element at the end of that dimension.
        sym: List[int] = []
        pad: List[int] = [0, 0] * n
        for i in range(n):
            total = dilation[i] * (kernel_size[i] - 1)
            sym.append(total // 2)
            pad[2 * (n - 1 - i) + 1] = total - 2 * (total // 2)
        return (pad if any(pad) else []), "constant", sym
    return [], "constant", [int(p) for p in padding]


class _ConvxConvMixin:
    """Shared set-up of the (depthwise) convolution modules."""

    def _convx_setup(self) -> None:
        """Precomputes the padding attributes that ``forward`` uses. Call again after changing
        ``padding``, ``padding_mode``, ``kernel_size`` or ``dilation`` in place."""
        pre_pad, mode, padding = _convx_padding_plan(
            self.padding, self.padding_mode, self.kernel_size, self.dilation,
            self._reversed_padding_repeated_twice)
        self._convx_pre_pad = pre_pad
        self._convx_pre_pad_mode = mode
        self._convx_padding = padding

    def __setstate__(self, state):
        super().__setstate__(state)
        if "_convx_padding" not in self.__dict__:
            self._convx_setup()


_CONVX_ATTRS = {
    "_convx_pre_pad": List[int],
    "_convx_pre_pad_mode": str,
    "_convx_padding": List[int],
}


def _script_annotations(cls):
    """TorchScript reads the attribute types of a module from the first class (depth first
    through the bases) that has annotations; give it torch's ones plus ours."""
    cls.__annotations__ = {**inspect.get_annotations(_ConvNd), **_CONVX_ATTRS}
    return cls


def _check_depthwise_channels(in_channels: int, out_channels: int) -> None:
    if in_channels <= 0 or out_channels % in_channels != 0:
        raise ValueError(
            f"depthwise convolution: out_channels ({out_channels}) must be a multiple of "
            f"in_channels ({in_channels})")


# ---------------------------------------------------------------------------------------------
# convolutions
# ---------------------------------------------------------------------------------------------

@_script_annotations
class Conv1d(_ConvxConvMixin, torch.nn.Conv1d):
    """:class:`torch.nn.Conv1d` computed by ``torch.ops.convx.conv1d``."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._convx_setup()

    def forward(self, input: Tensor) -> Tensor:
        if len(self._convx_pre_pad) > 0:
            input = F.pad(input, self._convx_pre_pad, mode=self._convx_pre_pad_mode)
        return torch.ops.convx.conv1d(input, self.weight, self.bias, self.stride,
                                      self._convx_padding, self.dilation, self.groups)


@_script_annotations
class Conv2d(_ConvxConvMixin, torch.nn.Conv2d):
    """:class:`torch.nn.Conv2d` computed by ``torch.ops.convx.conv2d``."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._convx_setup()

    def forward(self, input: Tensor) -> Tensor:
        if len(self._convx_pre_pad) > 0:
            input = F.pad(input, self._convx_pre_pad, mode=self._convx_pre_pad_mode)
        return torch.ops.convx.conv2d(input, self.weight, self.bias, self.stride,
                                      self._convx_padding, self.dilation, self.groups)


@_script_annotations
class Conv3d(_ConvxConvMixin, torch.nn.Conv3d):
    """:class:`torch.nn.Conv3d` computed by ``torch.ops.convx.conv3d``."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._convx_setup()

    def forward(self, input: Tensor) -> Tensor:
        if len(self._convx_pre_pad) > 0:
            input = F.pad(input, self._convx_pre_pad, mode=self._convx_pre_pad_mode)
        return torch.ops.convx.conv3d(input, self.weight, self.bias, self.stride,
                                      self._convx_padding, self.dilation, self.groups)


# ---------------------------------------------------------------------------------------------
# depthwise convolutions
# ---------------------------------------------------------------------------------------------

@_script_annotations
class DepthwiseConv1d(_ConvxConvMixin, torch.nn.Conv1d):
    """Depthwise :class:`torch.nn.Conv1d` (``groups = in_channels``), weight ``[C*m, 1, k]``,
    computed by ``torch.ops.convx.depthwise_conv1d``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, bias: bool = True, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        _check_depthwise_channels(in_channels, out_channels)
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         in_channels, bias, padding_mode, device=device, dtype=dtype)
        self._convx_setup()

    def forward(self, input: Tensor) -> Tensor:
        if len(self._convx_pre_pad) > 0:
            input = F.pad(input, self._convx_pre_pad, mode=self._convx_pre_pad_mode)
        return torch.ops.convx.depthwise_conv1d(input, self.weight, self.bias, self.stride,
                                                self._convx_padding, self.dilation)


@_script_annotations
class DepthwiseConv2d(_ConvxConvMixin, torch.nn.Conv2d):
    """Depthwise :class:`torch.nn.Conv2d` (``groups = in_channels``), weight
    ``[C*m, 1, kH, kW]``, computed by ``torch.ops.convx.depthwise_conv2d``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, bias: bool = True, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        _check_depthwise_channels(in_channels, out_channels)
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         in_channels, bias, padding_mode, device=device, dtype=dtype)
        self._convx_setup()

    def forward(self, input: Tensor) -> Tensor:
        if len(self._convx_pre_pad) > 0:
            input = F.pad(input, self._convx_pre_pad, mode=self._convx_pre_pad_mode)
        return torch.ops.convx.depthwise_conv2d(input, self.weight, self.bias, self.stride,
                                                self._convx_padding, self.dilation)


@_script_annotations
class DepthwiseConv3d(_ConvxConvMixin, torch.nn.Conv3d):
    """Depthwise :class:`torch.nn.Conv3d` (``groups = in_channels``), weight
    ``[C*m, 1, kD, kH, kW]``, computed by ``torch.ops.convx.depthwise_conv3d``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, bias: bool = True, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        _check_depthwise_channels(in_channels, out_channels)
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         in_channels, bias, padding_mode, device=device, dtype=dtype)
        self._convx_setup()

    def forward(self, input: Tensor) -> Tensor:
        if len(self._convx_pre_pad) > 0:
            input = F.pad(input, self._convx_pre_pad, mode=self._convx_pre_pad_mode)
        return torch.ops.convx.depthwise_conv3d(input, self.weight, self.bias, self.stride,
                                                self._convx_padding, self.dilation)


# ---------------------------------------------------------------------------------------------
# transposed convolutions
# ---------------------------------------------------------------------------------------------

class ConvTranspose1d(torch.nn.ConvTranspose1d):
    """:class:`torch.nn.ConvTranspose1d` computed by ``torch.ops.convx.conv_transpose1d``."""

    def forward(self, input: Tensor, output_size: Optional[List[int]] = None) -> Tensor:
        if self.padding_mode != "zeros":
            raise ValueError("Only `zeros` padding mode is supported for ConvTranspose1d")
        output_padding = self._output_padding(
            input, output_size, self.stride, self.padding, self.kernel_size,  # type: ignore[arg-type]
            1, self.dilation)  # type: ignore[arg-type]
        return torch.ops.convx.conv_transpose1d(input, self.weight, self.bias, self.stride,
                                                self.padding, output_padding, self.groups,
                                                self.dilation)


class ConvTranspose2d(torch.nn.ConvTranspose2d):
    """:class:`torch.nn.ConvTranspose2d` computed by ``torch.ops.convx.conv_transpose2d``."""

    def forward(self, input: Tensor, output_size: Optional[List[int]] = None) -> Tensor:
        if self.padding_mode != "zeros":
            raise ValueError("Only `zeros` padding mode is supported for ConvTranspose2d")
        output_padding = self._output_padding(
            input, output_size, self.stride, self.padding, self.kernel_size,  # type: ignore[arg-type]
            2, self.dilation)  # type: ignore[arg-type]
        return torch.ops.convx.conv_transpose2d(input, self.weight, self.bias, self.stride,
                                                self.padding, output_padding, self.groups,
                                                self.dilation)


class ConvTranspose3d(torch.nn.ConvTranspose3d):
    """:class:`torch.nn.ConvTranspose3d` computed by ``torch.ops.convx.conv_transpose3d``."""

    def forward(self, input: Tensor, output_size: Optional[List[int]] = None) -> Tensor:
        if self.padding_mode != "zeros":
            raise ValueError("Only `zeros` padding mode is supported for ConvTranspose3d")
        output_padding = self._output_padding(
            input, output_size, self.stride, self.padding, self.kernel_size,  # type: ignore[arg-type]
            3, self.dilation)  # type: ignore[arg-type]
        return torch.ops.convx.conv_transpose3d(input, self.weight, self.bias, self.stride,
                                                self.padding, output_padding, self.groups,
                                                self.dilation)
