"""A TVM kernel as the operator a runtime would run instead: ONNX Runtime's and PyTorch's.

The kernel benchmark compares TVM's schedules with what users deploy otherwise, kernel by
kernel. A fused workload is read back into its operator: a convolution (plain, grouped or
depthwise, NCHW or blocked NCHW{b}c; stride and padding recovered from the buffer shapes) or a
matmul (batched or not, with the weight transposed or not), each with its bias when the kernel
adds one, or a softmax or an erf GELU. Other epilogues (an activation, a residual add) are left
out: they are a pass over the output that ONNX Runtime fuses or runs separately, small beside
the anchor's work.
Everything else (reshapes, transposes) has no operator here and is timed in TVM alone.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import tvm
from tvm import relax, s_tir

from ..core.timing import seconds_per_run
from ..tasks.workload import describe

CONVOLUTIONS = ("conv2d_nchw", "group_conv2d_nchw", "depthwise_conv2d_nchw")
BLOCKED_CONVOLUTIONS = ("conv2d_NCHWc", "depthwise_conv2d_NCHWc")  # tasks.layouts
MATMULS = ("matmul", "NT_matmul")


@dataclass(frozen=True)
class RuntimeOp:
    """The operator behind a kernel: ``kind`` and the shapes a runtime needs.

    ``shapes`` are the inputs in the runtime's order (data, weight[, bias]); for a convolution
    ``attrs`` holds ``stride``, ``pads`` (top, left, bottom, right) and ``groups``; for a matmul
    ``transpose_b`` (the weight stored as N x K, as TVM's ``NT_matmul`` reads it). ``weights``
    says whether the inputs after the first are a model's weights (constants a runtime may
    prepack) or activations, as in attention's matmuls.
    """

    kind: str  # conv2d | matmul | softmax | gelu
    shapes: tuple[tuple[int, ...], ...]
    attrs: tuple[tuple[str, object], ...] = ()
    flops: float = 0.0  # the anchor's multiply-adds x 2; 0 for softmax and GELU
    weights: bool = True

    def attr(self, name: str):
        return dict(self.attrs)[name]

    def random_inputs(self, seed: int = 0) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        return [rng.standard_normal(shape, dtype=np.float32) for shape in self.shapes]


def runtime_op(mod: tvm.IRModule) -> RuntimeOp | None:
    """The runtime operator of an unscheduled float32 workload, or None where there is none."""
    desc = describe(mod)
    if desc.param_dtypes[0] != "float32" or desc.param_dtypes[-1] != "float32":
        return None
    sch = s_tir.Schedule(mod)
    anchor = sch.get(sch.get_sblock(desc.anchor)) if desc.anchor else None
    if anchor is not None and desc.anchor in CONVOLUTIONS + BLOCKED_CONVOLUTIONS:
        return _convolution(sch, anchor, desc)
    if anchor is not None and desc.anchor in MATMULS:
        return _matmul(anchor, desc)
    if any(kind.startswith("softmax") for kind in desc.op_kinds):
        return RuntimeOp("softmax", (desc.param_shapes[0],))
    if "erf" in mod.script() and len(desc.param_shapes) == 2:
        return RuntimeOp("gelu", (desc.param_shapes[-1],))
    return None


def _shape(buffer) -> tuple[int, ...]:
    return tuple(int(d) for d in buffer.shape)


def _bias(
    desc, channels: int, exclude: set[tuple[int, ...]], lanes: int = 1
) -> tuple[int, ...] | None:
    """A parameter holding one value per output channel, which the kernel adds (blocked by
    ``lanes`` channels in a blocked layout)."""
    if "add" not in desc.op_kinds:
        return None
    for shape in desc.param_shapes[:-1]:
        if shape in exclude or math.prod(shape) != channels:
            continue
        if shape[-1] in (channels, 1) or (lanes > 1 and shape[-1] == lanes):
            return (channels,)
    return None


def _convolution(sch: s_tir.Schedule, anchor, desc) -> RuntimeOp | None:
    """The NCHW convolution (in a blocked layout, the one it was converted from)."""
    data, weight = (_shape(r.source) for r in anchor.reads[:2])
    out = _shape(anchor.writes[0].source)
    blocked = desc.anchor in BLOCKED_CONVOLUTIONS
    padded, source = "data_pad" if blocked else "pad_temp", data
    if padded in (b.name for b in desc.blocks):
        source = _shape(sch.get(sch.get_sblock(padded)).reads[0].source)
    lanes = out[-1] if blocked else 1
    if blocked:  # NCHW{b}c -> NCHW, OIHW{b}i{b}o or OIHW1i{b}o -> OIHW
        data, source, out = (_unblocked(x) for x in (data, source, out))
        weight = (weight[0] * weight[5], weight[1] * weight[4], weight[2], weight[3])
    (_, c, h, w), (k, c_per_group, r, s) = source, weight
    pad_h, pad_w = data[2] - h, data[3] - w
    strides = [_stride(data[2], r, out[2]), _stride(data[3], s, out[3])]
    if None in strides or strides[0] != strides[1] or c % c_per_group:
        return None
    pads = (pad_h // 2, pad_w // 2, pad_h - pad_h // 2, pad_w - pad_w // 2)
    flops = 2.0 * math.prod(out) * c_per_group * r * s
    bias = _bias(desc, k, {source, weight}, lanes)
    shapes = (source, weight) + ((bias,) if bias else ())
    attrs = (("stride", strides[0]), ("pads", pads), ("groups", c // c_per_group))
    return RuntimeOp("conv2d", shapes, attrs, flops)


def _unblocked(shape: tuple[int, ...]) -> tuple[int, ...]:
    n, chunks, h, w, lanes = shape
    return (n, chunks * lanes, h, w)


def _stride(padded: int, kernel: int, out: int) -> int | None:
    """The stride that fits ``out`` windows of size ``kernel`` in ``padded`` (dilation 1)."""
    if out == 1:
        return 1
    stride = (padded - kernel) // (out - 1)
    return stride if stride >= 1 and (padded - kernel) // stride + 1 == out else None


def _matmul(anchor, desc) -> RuntimeOp | None:
    a, b = (_shape(r.source) for r in anchor.reads[:2])
    weights = anchor.reads[1].source.name.startswith("param")  # bound weights are param_N
    out = _shape(anchor.writes[0].source)
    transpose_b = desc.anchor == "NT_matmul"
    reduction = a[-1]
    if (b[-1] if transpose_b else b[-2]) != reduction:
        return None
    bias = _bias(desc, out[-1], {a, b})
    shapes = (a, b) + ((bias,) if bias else ())
    flops = 2.0 * math.prod(out) * reduction
    return RuntimeOp("matmul", shapes, (("transpose_b", transpose_b),), flops, weights)


def torch_run(op: RuntimeOp) -> Callable[[], object]:
    """``op`` in PyTorch eager on its seeded inputs: each call computes the output tensor."""
    import torch
    import torch.nn.functional as F

    args = [torch.from_numpy(a) for a in op.random_inputs()]
    if op.kind == "conv2d":
        top, left, bottom, right = op.attr("pads")
        symmetric = (top, left) == (bottom, right)
        data, weight, *bias = args
        padding = (top, left) if symmetric else 0
        stride, groups = op.attr("stride"), op.attr("groups")

        def run():
            x = data if symmetric else F.pad(data, (left, right, top, bottom))
            return F.conv2d(x, weight, bias[0] if bias else None, stride, padding, 1, groups)

        return run
    if op.kind == "matmul":
        a, b, *bias = args
        b = b.transpose(-1, -2) if op.attr("transpose_b") else b  # a view, as a Linear reads it
        return lambda: torch.matmul(a, b).add_(bias[0]) if bias else torch.matmul(a, b)
    if op.kind == "softmax":
        return lambda: torch.softmax(args[0], dim=-1)
    return lambda: F.gelu(args[0])


def torch_timer(op: RuntimeOp, threads: int) -> Callable[[], float]:
    """A timing round of ``op`` in PyTorch eager on ``threads`` threads (seconds per run)."""
    import torch

    run = torch_run(op)

    def one_round() -> float:
        torch.set_num_threads(threads)
        with torch.inference_mode():
            return seconds_per_run(run)

    return one_round


def onnx_file(op: RuntimeOp, directory: Path) -> tuple[Path, dict[str, np.ndarray]]:
    """``op`` as a one-operator ONNX model (weights as initializers, as in an exported network,
    so ONNX Runtime may prepack them) and its input; written once per operator."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    arrays = op.random_inputs()
    names = ["x", "w", "b"][: len(arrays)]
    fed = 1 if op.weights else len(arrays)
    initializers = [numpy_helper.from_array(a, n) for a, n in zip(arrays[fed:], names[fed:])]
    if op.kind == "conv2d":
        weight = op.shapes[1]
        nodes = [
            helper.make_node(
                "Conv",
                names,
                ["y"],
                kernel_shape=list(weight[2:]),
                pads=list(op.attr("pads")),
                strides=[op.attr("stride")] * 2,
                group=op.attr("groups"),
            )
        ]
    elif op.kind == "matmul":
        b = "w"
        nodes = []
        if op.attr("transpose_b"):
            perm = list(range(len(op.shapes[1])))
            perm[-2:] = perm[-1], perm[-2]
            nodes.append(helper.make_node("Transpose", ["w"], ["wt"], perm=perm))
            b = "wt"
        product = "y" if len(names) == 2 else "xw"
        nodes.append(helper.make_node("MatMul", ["x", b], [product]))
        if len(names) == 3:
            nodes.append(helper.make_node("Add", [product, "b"], ["y"]))
    elif op.kind == "softmax":
        nodes = [helper.make_node("Softmax", ["x"], ["y"], axis=-1)]
    else:  # erf GELU as exported from PyTorch; ONNX Runtime fuses it into one Gelu kernel
        half, root2 = (
            numpy_helper.from_array(np.float32(0.5), "half"),
            numpy_helper.from_array(np.float32(math.sqrt(2.0)), "root2"),
        )
        one = numpy_helper.from_array(np.float32(1.0), "one")
        initializers += [half, root2, one]
        nodes = [
            helper.make_node("Div", ["x", "root2"], ["scaled"]),
            helper.make_node("Erf", ["scaled"], ["erf"]),
            helper.make_node("Add", ["erf", "one"], ["shifted"]),
            helper.make_node("Mul", ["x", "shifted"], ["product"]),
            helper.make_node("Mul", ["product", "half"], ["y"]),
        ]
    graph = helper.make_graph(
        nodes,
        op.kind,
        [
            helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))
            for name, shape in zip(names[:fed], op.shapes)
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializers,
    )
    # IR version 8 (opset 17's own): onnx writes its newest, which ONNX Runtime may not read yet
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    digest = hashlib.sha1(repr(op).encode()).hexdigest()[:12]
    path = directory / f"{op.kind}-{digest}.onnx"
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path, dict(zip(names[:fed], arrays))


def onnxruntime_timer(op: RuntimeOp, threads: int, directory: Path) -> Callable[[], float]:
    """A timing round of ``op`` in ONNX Runtime on ``threads`` threads (seconds per run)."""
    from ..networks.onnxruntime_baseline import ort_timer_for

    path, inputs = onnx_file(op, directory)
    return ort_timer_for(path, inputs, threads)


def relax_convolution(op: RuntimeOp) -> tvm.IRModule:
    """A ``conv2d`` op (+ its bias) as a Relax module in NCHW, weights as parameters: the
    operator, to be lowered another way (another layout) and tuned again."""
    if op.kind != "conv2d":
        raise ValueError(f"not a convolution: {op.kind}")
    params = [
        relax.Var(name, relax.TensorType(shape, "float32"))
        for name, shape in zip(("x", "w", "b"), op.shapes)
    ]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = relax.op.nn.conv2d(
                params[0],
                params[1],
                strides=op.attr("stride"),
                padding=op.attr("pads"),
                groups=op.attr("groups"),
            )
            if len(params) == 3:  # the bias, one value per output channel
                out = relax.op.add(out, relax.op.reshape(params[2], (1, -1, 1, 1)))
            out = bb.emit_output(out)
        bb.emit_func_output(out)
    return bb.get()
