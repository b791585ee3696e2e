"""convx: convolution operators for PyTorch, implemented in C++ as ``torch.ops.convx.*``.

Importing this package loads the compiled operator library. It is looked for, in order:

1. ``libconvx.so`` next to this file (where ``pip install .`` puts it);
2. the path in the ``CONVX_LIBRARY`` environment variable;
3. ``<repo>/build/libconvx.so`` (the CMake build directory of a source checkout).

Submodules: :mod:`convx.functional` (the operators with PyTorch-style argument handling),
:mod:`convx.nn` (drop-in ``torch.nn`` modules) and :func:`convx.convert` (swap the
depthwise and transposed convolutions of an existing model for the convx ones, in place).
"""

import os

import torch

__version__ = "0.1.0"

_HERE = os.path.dirname(os.path.abspath(__file__))
_LIB_NAME = "libconvx.so"


def _library_candidates():
    """The places the library is looked for, in order, as (description, path) pairs."""
    out = [("next to the convx package", os.path.join(_HERE, _LIB_NAME))]
    env = os.environ.get("CONVX_LIBRARY")
    if env:
        out.append(("$CONVX_LIBRARY", env))
    repo = os.path.dirname(os.path.dirname(_HERE))
    out.append(("the build directory of the source tree", os.path.join(repo, "build", _LIB_NAME)))
    return out


def _already_loaded():
    try:
        torch.ops.convx.conv2d  # noqa: B018 - raises when the schema is not registered
    except (AttributeError, RuntimeError):
        return False
    return True


def _load_library():
    if _already_loaded():
        return None
    tried = []
    for where, path in _library_candidates():
        if os.path.isfile(path):
            torch.ops.load_library(path)
            return path
        tried.append(f"  {where}: {path}")
    raise ImportError(
        "convx: could not find the compiled operator library " + _LIB_NAME + ". Looked in:\n"
        + "\n".join(tried)
        + "\nBuild it (CMake, into <repo>/build), install the package with `pip install .`, "
        "or point the CONVX_LIBRARY environment variable at the .so file."
    )


library_path = _load_library()

from . import functional  # noqa: E402
from . import nn  # noqa: E402
from .convert import convert  # noqa: E402

__all__ = ["functional", "nn", "convert", "__version__", "library_path"]
