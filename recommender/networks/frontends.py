"""Networks into Relax: a zoo name, a Hugging Face name, an ONNX file, a Relax JSON file or a
torch ExportedProgram."""

from __future__ import annotations

import gzip
from collections.abc import Mapping
from pathlib import Path

import tvm
from tvm import relax

from ..core.errors import InputError
from . import huggingface, torchvision_models
from .import_cache import cached_import, file_digest
from .network import Network, inputs_of
from .zoo import load_zoo_network, zoo_index


def load_network(
    spec: str,
    *,
    seed: int = 0,
    input_shapes: Mapping[str, tuple[int, ...]] | None = None,
    seq_len: int | None = None,
) -> Network:
    """Load what the user named: a zoo model, ``hf:NAME``, ``tv:NAME`` (a torchvision
    classifier), or a ``.onnx``, ``.json[.gz]`` or ``.pt2`` file.

    Weight parameters left unbound (``num_input`` set) get seeded random values: schedules
    depend on shapes, not on weights.

    Parameters
    ----------
    spec : str
        Zoo name, ``hf:NAME`` (see ``huggingface.KNOWN``), ``tv:NAME`` (see
        ``torchvision_models``) or a model file.
    seed : int
        Seed of the random weights.
    input_shapes : mapping of input name to shape, optional
        ``--input-shape``: pins the inputs of an ONNX model (needed for dynamic dimensions).
    seq_len : int, optional
        ``--seq-len``: the sequence length of an ``hf:`` model (default 128).

    Raises
    ------
    InputError
        Unknown name, unreadable file, an option that does not apply, or a failed import.
    """
    is_onnx = spec.endswith(".onnx")
    if input_shapes and not is_onnx:
        raise InputError(f"--input-shape applies to .onnx models; {spec} has fixed shapes")
    if seq_len is not None and not huggingface.is_hf_name(spec):
        raise InputError(f"--seq-len applies to hf: models, not to {spec}")
    if huggingface.is_hf_name(spec):
        name = huggingface.known_name(spec)
        tokens = seq_len or huggingface.DEFAULT_SEQ_LEN
        mod = cached_import(
            {"hf": name, "seq_len": tokens, "configuration": huggingface.KNOWN[name]},
            lambda: _relax_from_program(
                huggingface.export_program(spec, seq_len=tokens), source=spec
            ),
        )
        return Network(name, mod, inputs_of(mod), weights_seed=seed)
    if torchvision_models.is_tv_name(spec):
        name = spec.removeprefix(torchvision_models.PREFIX)  # checked when first imported
        mod = cached_import(
            {"tv": name},
            lambda: _relax_from_program(torchvision_models.export_program(spec), source=spec),
        )
        return Network(name, mod, inputs_of(mod), weights_seed=seed)
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
    if is_onnx:
        from .onnx_prepare import onnx_to_relax

        shapes = {k: list(v) for k, v in sorted((input_shapes or {}).items())}
        mod = cached_import(
            {"onnx": file_digest(path), "input_shapes": shapes},
            lambda: onnx_to_relax(path, input_shapes or {}),
        )
    elif suffixes in (".json", ".json.gz") or path.suffix == ".json":
        mod = _from_relax_json(path)
    elif path.suffix == ".pt2":
        mod = cached_import({"pt2": file_digest(path)}, lambda: _from_exported_program(path))
    else:
        raise InputError(
            f"unsupported model format {path.suffix!r}; use .onnx, .json, .json.gz or .pt2",
            path=path,
        )
    if "main" not in [gv.name_hint for gv in mod.get_global_vars()]:
        raise InputError("the Relax module has no 'main' function", path=path)
    return Network(name, mod, inputs_of(mod), weights_seed=seed)


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
    except ImportError:
        raise InputError("loading .pt2 needs torch: pip install '.[zoo]'", path=path) from None
    try:
        program = torch.export.load(str(path))
    except Exception as err:  # torch raises many types for a bad file
        raise InputError(f"not a readable ExportedProgram ({err})", path=path) from None
    return _relax_from_program(program, source=path)


def _relax_from_program(program, *, source: str | Path) -> tvm.IRModule:
    """A torch ``ExportedProgram`` -> weight-less Relax (weights become ``main``'s parameters)."""
    from tvm.relax.frontend.torch import from_exported_program

    _drop_empty_cat_inputs(program)
    try:
        mod = from_exported_program(program, keep_params_as_input=True)
    except Exception as err:  # the TVM frontend raises many types
        raise InputError(f"TVM cannot import this ExportedProgram: {err}", path=source) from None
    return relax.frontend.detach_params(mod)[0]


def _drop_empty_cat_inputs(program) -> None:
    """Removes the 1-D empty tensors that ``torch.cat`` skips (a legacy rule of PyTorch's).

    transformers' key-value cache starts as ``torch.tensor([])`` and is concatenated with the
    first keys (GPT-2 and every decoder exported with its default ``use_cache``); Relax's concat
    requires one rank for all inputs and refuses the graph.
    """
    graph = program.graph_module.graph
    for node in list(graph.nodes):
        if node.op != "call_function" or "aten.cat" not in str(node.target):
            continue
        tensors = node.args[0]
        kept = [t for t in tensors if not _is_empty_vector(t)]
        if len(kept) == len(tensors) or not kept:
            continue
        if len(kept) == 1:
            node.replace_all_uses_with(kept[0])
            graph.erase_node(node)
        else:
            node.args = (kept, *node.args[1:])
    graph.eliminate_dead_code()
    program.graph_module.recompile()


def _is_empty_vector(node) -> bool:
    value = getattr(node, "meta", {}).get("val")
    return value is not None and tuple(value.shape) == (0,)
