"""Networks into Relax: a zoo name, an ONNX file, a Relax JSON file or a torch ExportedProgram."""

from __future__ import annotations

import gzip
from pathlib import Path

import tvm
from tvm import relax

from ..core.errors import InputError
from .network import Network, bind_random_weights, inputs_of
from .zoo import load_zoo_network, zoo_index


def load_network(spec: str, *, seed: int = 0) -> Network:
    """Load what the user named: a zoo model, or a ``.onnx``, ``.json[.gz]`` or ``.pt2`` file.

    Weight parameters left unbound (``num_input`` set) get seeded random values: schedules
    depend on shapes, not on weights.
    """
    if spec in zoo_index():
        return load_zoo_network(spec, seed=seed)
    path = Path(spec)
    if not path.exists():
        if path.suffix:
            raise InputError("model file not found", path=path)
        raise InputError(
            f"unknown model {spec!r}: not a zoo name ({', '.join(zoo_index())}) and no such file"
        )
    name = path.name.split(".")[0]
    suffixes = "".join(path.suffixes[-2:])
    if path.suffix == ".onnx":
        mod = _from_onnx(path)
    elif suffixes in (".json", ".json.gz") or path.suffix == ".json":
        mod = _from_relax_json(path)
    elif path.suffix == ".pt2":
        mod = _from_exported_program(path)
    else:
        raise InputError(
            f"unsupported model format {path.suffix!r}; use .onnx, .json, .json.gz or .pt2",
            path=path,
        )
    if "main" not in [gv.name_hint for gv in mod.get_global_vars()]:
        raise InputError("the Relax module has no 'main' function", path=path)
    return Network(name=name, mod=bind_random_weights(mod, seed), inputs=inputs_of(mod))


def _from_onnx(path: Path) -> tvm.IRModule:
    import onnx
    from tvm.relax.frontend.onnx import from_onnx

    try:
        model = onnx.load(str(path))
    except Exception as err:  # onnx raises DecodeError and others for a bad file
        raise InputError(f"not a readable ONNX file ({err})", path=path) from None
    try:
        mod = from_onnx(model, keep_params_in_input=True)
    except Exception as err:  # an op TVM lacks, a dynamic shape, ...
        raise InputError(f"TVM cannot import this ONNX model: {err}", path=path) from None
    return relax.frontend.detach_params(mod)[0]


def _from_relax_json(path: Path) -> tvm.IRModule:
    try:
        raw = path.read_bytes()
        text = (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode()
        mod = tvm.ir.load_json(text)
    except Exception as err:  # gzip, unicode and TVM's parser errors
        raise InputError(f"not a Relax JSON module ({err})", path=path) from None
    if not isinstance(mod, tvm.IRModule):
        raise InputError(f"holds a {type(mod).__name__}, not an IRModule", path=path)
    return mod


def _from_exported_program(path: Path) -> tvm.IRModule:
    try:
        import torch
        from tvm.relax.frontend.torch import from_exported_program
    except ImportError:
        raise InputError("loading .pt2 needs torch: pip install '.[zoo]'", path=path) from None
    try:
        program = torch.export.load(str(path))
        mod = from_exported_program(program, keep_params_as_input=True)
    except Exception as err:  # torch and the TVM frontend raise many types
        raise InputError(f"cannot import this ExportedProgram: {err}", path=path) from None
    return relax.frontend.detach_params(mod)[0]
