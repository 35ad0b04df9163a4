"""ONNX made importable before TVM sees it, and import failures a user can act on.

Exporters write shape arithmetic as graph nodes: ``x.view(b, g, c // g, h, w)`` becomes
``Shape -> Gather -> Div -> Concat -> Reshape``. TVM's importer turns that into a shape known
only at run time, and lowering then fails deep inside Relax's legalisation ("emit_te now only
supports Tensor that has ShapeExpr shape"). With every input shape fixed, onnx-simplifier's
shape inference and constant folding turn such subgraphs into constants, so TVM sees static
shapes. It was chosen over onnxslim by measurement (``docs/import_matrix.md``): it left static
shapes on more networks (MaxViT's window partitions) and ran faster (ConvNeXt-L 6.5 s vs 31 s).

Each step that can fail says which step it was; a model exported from PyTorch is pointed to the
torch.export route, which has no ONNX importer in the way.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Mapping
from pathlib import Path

import onnx
import onnxsim
import tvm
from tvm import relax
from tvm.relax.frontend.onnx import onnx_frontend

from ..core.errors import InputError

Shapes = Mapping[str, tuple[int, ...]]

TORCH_EXPORT_HINT = (
    "this model was exported from PyTorch: the torch.export route skips TVM's ONNX importer, "
    "save `torch.export.export(model.eval(), example_args)` with `torch.export.save(program, "
    "'model.pt2')` and pass the .pt2 file"
)


def onnx_to_relax(path: Path, input_shapes: Shapes) -> tvm.IRModule:
    """Read, pin, simplify and import the ONNX file ``path``: a weight-less Relax module.

    Parameters
    ----------
    path : Path
        The ``.onnx`` file (external data beside it is read too).
    input_shapes : mapping of input name to shape
        Shapes for the graph inputs (``--input-shape``); each dynamic dimension needs one.

    Raises
    ------
    InputError
        A step failed; the message names the step, and the node and opset where known.
    """
    try:
        model = onnx.load(str(path))
    except Exception as err:  # onnx raises DecodeError and others for a bad file
        raise InputError(f"not a readable ONNX file ({_short(err)})", path=path) from None
    hint = f"; {TORCH_EXPORT_HINT}" if model.producer_name == "pytorch" else ""
    pin_input_shapes(model, input_shapes, path=path)
    try:
        model = onnxsim.simplify(model)[0]  # the flag is a numeric check, only with check_n > 0
    except Exception as err:  # onnxsim raises whatever its passes raise
        raise InputError(
            f"step 'simplify' (onnx-simplifier shape inference and constant folding) failed: "
            f"{_short(err)}{hint}",
            path=path,
        ) from None
    integers_as_constants(model)
    opset = opset_of(model)
    check_operators(model, opset, path=path, hint=hint)
    mod = _convert(model, opset, path=path, hint=hint)
    check_static_shapes(mod, path=path, hint=hint)
    return relax.frontend.detach_params(mod)[0]


def graph_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    """The real inputs: old exporters also list the initializers (weights) as inputs."""
    weights = {init.name for init in model.graph.initializer}
    return [value for value in model.graph.input if value.name not in weights]


def pin_input_shapes(model: onnx.ModelProto, shapes: Shapes, *, path: Path) -> None:
    """Write ``shapes`` into the graph inputs (in place); a dynamic dimension left is an error.

    A pinned shape must keep the input's rank and agree with its fixed dimensions.
    """
    inputs = {value.name: value for value in graph_inputs(model)}
    for name in shapes:
        if name not in inputs:
            raise InputError(
                f"--input-shape names {name!r}, which is not an input of this model; "
                f"its inputs: {', '.join(inputs) or 'none'}",
                path=path,
            )
    for name, value in inputs.items():
        shape = value.type.tensor_type.shape
        dims = list(shape.dim) if value.type.tensor_type.HasField("shape") else None
        if name in shapes:
            _pin(value, dims, shapes[name], path)
        elif dims is None or any(not _fixed(d) for d in dims):
            text = "unknown rank" if dims is None else _dims_text(dims)
            example = "1x3x224x224" if dims is None else "x".join(_example(d) for d in dims)
            raise InputError(
                f"input {name!r} has a dynamic shape ({text}); pin it with "
                f"--input-shape {name}:{example}",
                path=path,
            )


def _pin(value: onnx.ValueInfoProto, dims: list | None, shape: tuple[int, ...], path: Path):
    name = value.name
    if dims is not None and len(dims) != len(shape):
        raise InputError(
            f"--input-shape {name}: expected {len(dims)} dimensions ({_dims_text(dims)}), "
            f"got {len(shape)} ({'x'.join(map(str, shape))})",
            path=path,
        )
    for i, (dim, size) in enumerate(zip(dims or [], shape)):
        if _fixed(dim) and dim.dim_value != size:
            raise InputError(
                f"--input-shape {name}: dimension {i} is fixed to {dim.dim_value} in the model, "
                f"got {size}",
                path=path,
            )
    tensor_shape = value.type.tensor_type.shape
    tensor_shape.ClearField("dim")
    for size in shape:
        tensor_shape.dim.add().dim_value = size


def _fixed(dim) -> bool:
    return dim.HasField("dim_value") and dim.dim_value > 0


def _dims_text(dims) -> str:
    return " x ".join(str(d.dim_value) if _fixed(d) else d.dim_param or "?" for d in dims)


def _example(dim) -> str:
    return str(dim.dim_value) if _fixed(dim) else "1"


def integers_as_constants(model: onnx.ModelProto) -> None:
    """Turn integer initializers (shapes, axes, indices) into ``Constant`` nodes, in place.

    TVM's importer makes every initializer a parameter when weights are kept as inputs, and a
    parameter's value is unknown: an ``Expand`` to a shape held in an initializer (Swin V2's
    ``F.normalize``, after simplification) gets a shape known only at run time. Weights are
    floating point; they stay parameters.
    """
    graph = model.graph
    integer = [init for init in graph.initializer if init.data_type in _INTEGER_TYPES]
    if not integer:
        return
    names = {init.name for init in integer}
    weights = [init for init in graph.initializer if init.name not in names]
    inputs = [value for value in graph.input if value.name not in names]
    constants = [onnx.helper.make_node("Constant", [], [i.name], value=i) for i in integer]
    nodes = constants + list(graph.node)
    for field, values in (("initializer", weights), ("input", inputs), ("node", nodes)):
        graph.ClearField(field)
        getattr(graph, field).extend(values)


_INTEGER_TYPES = {
    onnx.TensorProto.INT64,
    onnx.TensorProto.INT32,
    onnx.TensorProto.INT16,
    onnx.TensorProto.INT8,
    onnx.TensorProto.UINT8,
    onnx.TensorProto.BOOL,
}


def opset_of(model: onnx.ModelProto) -> int:
    """The default-domain opset, as TVM's importer reads it (1 when none is declared)."""
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return int(entry.version)
    return 1


def check_operators(model: onnx.ModelProto, opset: int, *, path: Path, hint: str = "") -> None:
    """Name the first node whose operator TVM's importer has no converter for."""
    known = set(onnx_frontend._get_convert_map()) | {"If", "Constant"}
    missing = [node for node in model.graph.node if node.op_type not in known]
    if missing:
        node = missing[0]
        others = {n.op_type for n in missing} - {node.op_type}
        also = f"; also unsupported: {', '.join(sorted(others))}" if others else ""
        raise InputError(
            f"TVM's ONNX importer does not support operator {node.op_type!r} "
            f"(domain {node.domain or 'ai.onnx'!r}, opset {opset}), used by node "
            f"{node.name or node.output[0]!r} and {len(missing) - 1} more node(s){also}{hint}",
            path=path,
        )


class _Importer(onnx_frontend.ONNXGraphImporter):
    """TVM's importer, remembering the node it is converting so that a failure can name it."""

    node: tuple[str, str] = ("", "")

    def _convert_operator(self, op_name, inputs, attrs, opset):
        self.node = (attrs["tvm_custom"]["name"], op_name)
        return super()._convert_operator(op_name, inputs, attrs, opset)


def _convert(model: onnx.ModelProto, opset: int, *, path: Path, hint: str) -> tvm.IRModule:
    importer = _Importer(None, "float32", keep_params_in_input=True)
    try:
        # the importer prints every failing node's inputs (whole tensors) on stdout
        with contextlib.redirect_stdout(io.StringIO()):
            return importer.from_onnx(model.graph, opset)
    except Exception as err:  # TVM's converters raise many types
        name, op = importer.node
        where = f" at node {name!r} (operator {op!r}, opset {opset})" if op else ""
        raise InputError(
            f"step 'convert' (TVM's ONNX importer) failed{where}: {_short(err)}{hint}", path=path
        ) from None


def check_static_shapes(mod: tvm.IRModule, *, path: Path, hint: str = "") -> None:
    """Refuse a module with a tensor whose shape is only known at run time.

    TVM imports it, but lowering fails later with an assertion about ``ShapeExpr`` that names
    nothing the user wrote; here the message names the Relax operator that made the shape.
    """
    for block in mod["main"].body.blocks:
        for binding in block.bindings:
            if not _is_static(binding.var.ty):
                op = getattr(getattr(binding.value, "op", None), "name", "an expression")
                raise InputError(
                    f"step 'check shapes' failed: after import, tensor {binding.var.name!r} "
                    f"(from {op}) has a shape known only at run time, which TVM cannot tune; "
                    f"the model computes a shape from data{hint}",
                    path=path,
                )


def _is_static(ty) -> bool:
    if isinstance(ty, relax.TupleType):
        return all(_is_static(field) for field in ty.fields)
    if not isinstance(ty, relax.TensorType):
        return True
    shape = ty.shape
    return isinstance(shape, relax.ShapeExpr) and all(
        isinstance(d, tvm.tirx.IntImm) for d in shape.values
    )


def _short(err: Exception) -> str:
    """The first line of an exception: TVM appends C++ stack traces to its messages."""
    lines = [line for line in str(err).splitlines() if line.strip()]
    return f"{type(err).__name__}: {lines[0][:300] if lines else ''}"
