"""torch.export + AOTInductor for models that call convx operators.

    import convx.export
    ep = convx.export.export(model, (x,))                       # dynamic batch, convx nodes kept
    convx.export.aoti_package(ep, "model.pt2")                  # a .pt2 for C++ (or Python)
    run = convx.export.load("model.pt2"); y = run(x)           # Python, with convx's checks

The package does not contain convx's kernels: its code calls ``convx::*`` through the dispatcher
(AOTInductor's "proxy executor"), so the process that runs it must have ``libconvx.so`` loaded:
link ``convx::convx`` (``find_package(convx)``) into the C++ program, or ``import convx`` in
Python. :func:`aoti_package` writes what the package needs into its metadata (keys ``convx.*``,
read in C++ with ``AOTIModelPackageLoader::load_metadata_from_package``) so a runner can check
before loading, and say what to do; ``examples/aoti/run_aoti.cpp`` shows how, with no convx symbol.
"""

import os

import sympy
import torch

from . import __version__

__all__ = ["export", "convx_ops", "aoti_package", "load", "Package", "batch_error"]

_MISSING_LIBRARY = (
    "this package calls convx operators ({ops}) through the dispatcher, and libconvx.so is not "
    "loaded in this process. Link the program with convx::convx (find_package(convx) then "
    "target_link_libraries(app PRIVATE convx::convx)), or dlopen libconvx.so before loading the "
    "package; in Python, `import convx` first. It must be convx {version} built against torch "
    "{torch}.")

_BATCH_HINT = ("Export again with a range that holds it (convx.export.export(model, inputs, "
               "min_batch=..., max_batch=...)), or split the input into batches inside the range.")


def export(model: torch.nn.Module, example_inputs: tuple, *, min_batch: int | None = None,
           max_batch: int | None = None, strict: bool = False) -> torch.export.ExportedProgram:
    """``torch.export.export`` with dim 0 of every tensor input dynamic (one shared batch
    dimension, ``min_batch..max_batch``, unbounded above by default). Raises ``ValueError``
    when the exported graph calls no convx operator (the model was not converted, or the
    operators were decomposed), since nothing would then need convx at run time."""
    if not isinstance(example_inputs, tuple):
        raise TypeError(f"example_inputs must be a tuple of inputs, got "
                        f"{type(example_inputs).__name__}")
    bounds = {k: v for k, v in (("min", min_batch), ("max", max_batch)) if v is not None}
    batch = torch.export.Dim("batch", **bounds)
    shapes = tuple({0: batch} if isinstance(a, torch.Tensor) else None for a in example_inputs)
    for a in example_inputs:
        if isinstance(a, torch.Tensor) and max_batch is not None and a.shape[0] > max_batch:
            raise ValueError(f"convx.export: the example batch {a.shape[0]} is larger than "
                             f"max_batch={max_batch}; pass an example inside the range")
    ep = torch.export.export(model, example_inputs, dynamic_shapes=shapes, strict=strict)
    if not convx_ops(ep):
        raise ValueError("convx.export: the exported graph calls no convx operator; convert the "
                         "model first (convx.convert(model)) or call torch.export directly")
    return ep


def convx_ops(ep: torch.export.ExportedProgram) -> list[str]:
    """The convx operators an exported program calls, as sorted 'convx::name' strings."""
    ops = set()
    for node in ep.graph.nodes:
        target = node.target
        if node.op == "call_function" and isinstance(target, torch._ops.OpOverload) \
                and target.namespace == "convx":
            ops.add(f"convx::{target._opname}")
    return sorted(ops)


def _batch_range(ep: torch.export.ExportedProgram) -> tuple[int, int | None]:
    """The range the first tensor input's batch was traced for (None: unbounded)."""
    for node in ep.graph.nodes:
        if node.op != "placeholder" or node.name in ep.graph_signature.inputs_to_parameters \
                or node.name in ep.graph_signature.inputs_to_buffers:
            continue
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor):
            continue
        size = val.shape[0]
        if isinstance(size, int):
            return size, size
        vr = ep.range_constraints.get(size.node.expr)
        if vr is None:
            return 0, None
        # an unbounded range ends in torch's int_oo, not a sympy.Integer
        upper = int(vr.upper) if isinstance(vr.upper, sympy.Integer) else None
        return int(vr.lower), upper
    return 0, None


def _c_shim_declaration(op: torch._ops.OpOverload, device: str) -> str:
    """The C declaration Inductor calls for ``op`` (src/aoti_shims.cpp defines them)."""
    params = []
    for arg in op._schema.arguments:
        kind = str(arg.type)
        if kind == "Tensor":
            params.append(f"AtenTensorHandle {arg.name}")
        elif kind == "Optional[Tensor]":
            params.append(f"AtenTensorHandle* {arg.name}")
        elif kind == "List[int]":
            params.append(f"const int64_t* {arg.name}, int64_t {arg.name}_len_")
        elif kind == "int":
            params.append(f"int64_t {arg.name}")
        else:
            raise NotImplementedError(f"convx.export: no C shim for {op} (argument {arg})")
    params.append("AtenTensorHandle* ret0")
    return f"AOTITorchError aoti_torch_{device}_{op._opname}({', '.join(params)})"


# The operators src/aoti_shims.cpp has C entry points for.
_C_SHIM_OPS = {f"{family}{n}d" for family in ("conv", "depthwise_conv", "conv_transpose")
               for n in (1, 2, 3)}


def _c_shim_configs(ep: torch.export.ExportedProgram) -> tuple[dict, str]:
    """Inductor's settings for the direct path, and the directory of libconvx.so."""
    from . import library_path
    device = "cpu"
    for node in ep.graph.nodes:
        val = node.meta.get("val")
        if node.op == "placeholder" and isinstance(val, torch.Tensor) and val.device.type == "cuda":
            device = "cuda"
    shims = {}
    for node in ep.graph.nodes:
        op = node.target
        if node.op == "call_function" and isinstance(op, torch._ops.OpOverload) \
                and op.namespace == "convx":
            if op._opname not in _C_SHIM_OPS:
                raise ValueError(f"convx.export: c_shims=True, but {op} has no C shim (only "
                                 "the forward operators do); compile without c_shims")
            shims[op] = [_c_shim_declaration(op, device)]
    if library_path is None:
        raise RuntimeError("convx.export: c_shims=True links the package against libconvx.so, "
                           "but convx does not know where it was loaded from")
    return {"aot_inductor.custom_ops_to_c_shims": shims,
            "aot_inductor.custom_op_libs": ["convx"]}, os.path.dirname(library_path)


def aoti_package(model_or_ep, path: str | os.PathLike, example_inputs: tuple | None = None, *,
                 min_batch: int | None = None, max_batch: int | None = None, c_shims: bool = False,
                 inductor_configs: dict | None = None) -> str:
    """Compiles an exported program (or exports ``model`` with :func:`export` first, with
    ``example_inputs`` and the batch bounds) into an AOTInductor package at ``path``, with
    convx's metadata; returns the path.

    ``c_shims=True``: the package calls convx's forward operators through the C functions of
    src/aoti_shims.cpp instead of the proxy executor, and links against libconvx.so (it then
    needs that library findable by the dynamic loader, or already loaded, wherever it runs)."""
    if isinstance(model_or_ep, torch.export.ExportedProgram):
        ep = model_or_ep
    else:
        if example_inputs is None:
            raise TypeError("convx.export.aoti_package: pass example_inputs to export a module")
        ep = export(model_or_ep, example_inputs, min_batch=min_batch, max_batch=max_batch)
    ops = convx_ops(ep)
    low, high = _batch_range(ep)
    meta = {
        "convx.version": __version__,
        "convx.torch_version": torch.__version__,
        "convx.ops": ",".join(ops),
        "convx.batch_min": str(low),
        "convx.batch_max": "" if high is None else str(high),
        "convx.batch_hint": _BATCH_HINT,
        "convx.missing_library": _MISSING_LIBRARY.format(
            ops=", ".join(ops), version=__version__, torch=torch.__version__.split("+")[0]),
    }
    if c_shims:
        meta["convx.c_shims"] = "1"
    configs = dict(inductor_configs or {})
    configs["aot_inductor.metadata"] = {**configs.get("aot_inductor.metadata", {}), **meta}
    if not c_shims:
        return torch._inductor.aoti_compile_and_package(ep, package_path=str(path),
                                                        inductor_configs=configs)
    shim_configs, library_dir = _c_shim_configs(ep)
    configs.update(shim_configs)
    # Inductor links the model with -lconvx and has no option for the directory: the
    # compiler driver reads LIBRARY_PATH.
    saved = os.environ.get("LIBRARY_PATH")
    os.environ["LIBRARY_PATH"] = library_dir + (os.pathsep + saved if saved else "")
    try:
        return torch._inductor.aoti_compile_and_package(ep, package_path=str(path),
                                                        inductor_configs=configs)
    finally:
        if saved is None:
            del os.environ["LIBRARY_PATH"]
        else:
            os.environ["LIBRARY_PATH"] = saved


def batch_error(batch: int, low: int, high: int | None) -> str | None:
    """The message for a batch outside the exported range, or None when it fits."""
    if batch >= low and (high is None or batch <= high):
        return None
    bound = f"{low}..{high}" if high is not None else f">= {low}"
    return (f"convx: batch {batch} is outside the range {bound} this package was exported "
            f"for. {_BATCH_HINT}")


class Package:
    """A loaded AOTInductor package that checks the batch against its exported range (the
    compiled code does not check it unless AOTI_RUNTIME_CHECK_INPUTS=1)."""

    def __init__(self, path: str | os.PathLike):
        self.path = str(path)
        self._run = torch._inductor.aoti_load_package(self.path)
        self.metadata = self._run.get_metadata()
        self.batch_min = int(self.metadata.get("convx.batch_min", "0"))
        high = self.metadata.get("convx.batch_max", "")
        self.batch_max = int(high) if high else None

    def __call__(self, *inputs):
        for x in inputs:
            if isinstance(x, torch.Tensor):
                message = batch_error(x.shape[0], self.batch_min, self.batch_max)
                if message:
                    raise ValueError(message)
        return self._run(*inputs)


def load(path: str | os.PathLike) -> Package:
    """Loads a package written by :func:`aoti_package` (libconvx.so is loaded: this module
    imported convx)."""
    return Package(path)
