"""Swap the depthwise and transposed convolutions of a model for the convx modules."""

import copy

import torch

from . import nn as cnn

__all__ = ["convert"]

# Exact torch classes only: subclasses (a user's, or convx's own) may have their own forward.
_DEPTHWISE = {
    torch.nn.Conv1d: cnn.DepthwiseConv1d,
    torch.nn.Conv2d: cnn.DepthwiseConv2d,
    torch.nn.Conv3d: cnn.DepthwiseConv3d,
}
_TRANSPOSED = {
    torch.nn.ConvTranspose1d: cnn.ConvTranspose1d,
    torch.nn.ConvTranspose2d: cnn.ConvTranspose2d,
    torch.nn.ConvTranspose3d: cnn.ConvTranspose3d,
}


def _replacement_class(module: torch.nn.Module):
    cls = type(module)
    if cls in _DEPTHWISE:
        if module.groups == module.in_channels and module.in_channels > 1:
            return _DEPTHWISE[cls]
        return None
    return _TRANSPOSED.get(cls)


def _rebuild(module: torch.nn.Module, cls) -> torch.nn.Module:
    """A ``cls`` instance with the state of ``module``, built without running ``__init__`` (so
    nothing is re-initialised): the same Parameter and buffer objects, the same children, and
    copies of the bookkeeping containers (hooks, ...) so the two modules stay independent."""
    new = object.__new__(cls)
    state = {}
    for key, value in module.__dict__.items():
        if isinstance(value, (dict, set, list)):
            value = copy.copy(value)  # a new container holding the same objects
        state[key] = value
    new.__dict__.update(state)
    setup = getattr(new, "_convx_setup", None)
    if setup is not None:
        setup()
    return new


def convert(model: torch.nn.Module) -> torch.nn.Module:
    """Replaces, in place, the convolutions of ``model`` that convx has dedicated operators for:

    * every ``torch.nn.Conv1d/2d/3d`` with ``groups == in_channels > 1`` by
      :class:`convx.nn.DepthwiseConv1d/2d/3d`;
    * every ``torch.nn.ConvTranspose1d/2d/3d`` by :class:`convx.nn.ConvTranspose1d/2d/3d`.

    The new modules share the Parameter objects of the old ones (no copies, so optimizers and
    tied weights keep working) and keep their hyper-parameters, hooks, training mode and
    ``state_dict`` keys. Modules that are already convx modules, and everything else, are left
    alone. Returns ``model`` (or its replacement, when ``model`` itself is such a convolution).
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"convx.convert expects a torch.nn.Module, got {type(model).__name__}")
    cls = _replacement_class(model)
    if cls is not None:
        return _rebuild(model, cls)
    _convert_children(model, {}, set())
    return model


def _convert_children(module: torch.nn.Module, replaced: dict, visited: set) -> None:
    # A module used at several places is replaced by one new module (identity is preserved).
    visited.add(id(module))
    for name, child in list(module._modules.items()):
        if child is None:
            continue
        if id(child) in replaced:
            module._modules[name] = replaced[id(child)][1]
            continue
        cls = _replacement_class(child)
        if cls is not None:
            new = _rebuild(child, cls)
            replaced[id(child)] = (child, new)  # keeps `child` alive: ids stay unique
            module._modules[name] = new
        elif id(child) not in visited:
            _convert_children(child, replaced, visited)
