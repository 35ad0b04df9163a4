"""What a workload is, with its sizes abstracted (kernel class) and measured (descriptor).

A MetaSchedule trace names blocks (``get_sblock("conv2d_nchw")``) and indexes their loops, so
it replays on another workload exactly when the block names, their iteration kinds and loop
depths agree; sizes may differ (tile decisions are repaired). The kernel class is that
structure, hashed: task names are no key, their numeric suffixes (``fused_conv2d9_add11``)
differ between models for the same structure.

Two levels: the *exact* class is the whole fused kernel (the full trace replays); the *anchor*
class is its anchor block alone, the reduction TVM's ``find_anchor_sblock`` picks (the
convolution or matmul), without the pad and the epilogue: a trace of any kernel with the same
anchor class may be applied with ``schedule_using_anchor_trace`` (see ``transfer.apply``).
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field

import tvm
from tvm import s_tir
from tvm.tirx import IterVar

_ITER_KIND = {IterVar.DataPar: "S", IterVar.CommReduce: "R"}


@dataclass(frozen=True)
class BlockInfo:
    """One block of an unscheduled workload: name, iteration kinds and extents, loop depth."""

    name: str
    iter_kinds: str
    extents: tuple[int, ...]
    loop_depth: int
    has_init: bool


@dataclass(frozen=True)
class KernelClass:
    """Structure key: equal keys mean a trace of one workload may replay on the other; equal
    ``anchor`` keys (None: no reduction to anchor on) mean its anchor block's trace may apply."""

    key: str
    summary: str
    anchor: str | None = None

    def __str__(self) -> str:
        return self.key


@dataclass(frozen=True)
class WorkloadDescriptor:
    """Cheap numbers about a workload that features build on (no compilation, no run).

    ``flops`` counts multiply-adds as two operations; ``bytes`` is the size of all parameter
    buffers (inputs and output), a lower bound on memory traffic.
    """

    op_kinds: tuple[str, ...]
    param_shapes: tuple[tuple[int, ...], ...]
    param_dtypes: tuple[str, ...]
    anchor: str
    anchor_extents: tuple[int, ...]
    anchor_iter_kinds: str
    flops: float
    bytes: int
    blocks: tuple[BlockInfo, ...] = field(repr=False)

    @property
    def arithmetic_intensity(self) -> float:
        return self.flops / max(self.bytes, 1)


def _main_func(mod: tvm.IRModule) -> tvm.tirx.PrimFunc:
    funcs = [f for f in mod.functions.values() if isinstance(f, tvm.tirx.PrimFunc)]
    if len(funcs) != 1:
        raise ValueError(f"A workload holds exactly one PrimFunc, got {len(funcs)}")
    return funcs[0]


def _param_buffers(func: tvm.tirx.PrimFunc) -> list:
    """The buffer parameters (TVM 0.27 keeps shape and dtype on the parameter itself)."""
    return [p for p in func.params if getattr(p, "shape", None) is not None]


def blocks_of(mod: tvm.IRModule) -> tuple[BlockInfo, ...]:
    """The blocks of an unscheduled workload in program order (the root block excluded)."""
    sch = s_tir.Schedule(mod)
    infos = []
    pending = list(reversed(sch.get_child_blocks(sch.get_sblock("root"))))
    while pending:
        rv = pending.pop()
        block = sch.get(rv)
        kinds = "".join(_ITER_KIND.get(int(iv.iter_type), "O") for iv in block.iter_vars)
        extents = tuple(_as_int(iv.dom.extent) for iv in block.iter_vars)
        depth = len(sch.get_loops(rv))
        infos.append(BlockInfo(block.name_hint, kinds, extents, depth, block.init is not None))
        pending.extend(reversed(sch.get_child_blocks(rv)))
    return tuple(infos)


def _as_int(expr) -> int:
    try:
        return int(expr)
    except TypeError:  # symbolic extent: sizes are abstracted anyway
        return -1


_MODEL_VARIABLE = re.compile(r"^lv\d*_")


def block_class_name(block_name: str) -> str:
    """``lv88_red`` -> ``red``: the block name without the model's variable name.

    Relax names a reduction after its input, a variable of the model (the mean of ResNet-18's
    last feature map is ``lv88_red`` in one network, ``lv114_red`` in another); such a name
    would make a class of one kernel. ``transfer.apply`` renames a trace's blocks back.
    """
    return _MODEL_VARIABLE.sub("", block_name)


def _op_kind(block_name: str) -> str:
    """``T_add_1`` -> ``add``, ``conv2d_nchw`` -> ``conv2d_nchw``: block names without noise."""
    name = re.sub(r"_\d+$", "", block_class_name(block_name))
    return name[2:] if name.startswith("T_") else name


def kernel_class(mod: tvm.IRModule) -> KernelClass:
    """The structure key of a workload (see the module docstring for why these parts).

    Examples
    --------
    Two convolutions that differ only in channel counts or image size share a key; a
    convolution and a matmul never do.
    """
    func = _main_func(mod)
    blocks = blocks_of(mod)
    params = _param_buffers(func)
    parts = [
        f"{block_class_name(b.name)}:{b.iter_kinds}:{b.loop_depth}:{int(b.has_init)}"
        for b in blocks
    ]
    parts.append("params:" + ",".join(f"{len(buf.shape)}{buf.dtype}" for buf in params))
    digest = hashlib.sha1("|".join(parts).encode()).hexdigest()[:10]
    kinds = [_op_kind(b.name) for b in blocks]
    summary = "+".join(dict.fromkeys(k for k in kinds if k != "pad_temp"))
    if "pad_temp" in kinds:
        summary = "pad+" + summary
    return KernelClass(key=f"{summary}@{digest}", summary=summary, anchor=anchor_key(mod, blocks))


def kernel_kind(class_key: str) -> str:
    """``data_pad+conv2d_NCHWc+add+compute@1f2e...`` -> ``conv2d_NCHWc``: the first op of a
    kernel class besides its pad, coarse enough that every network has kernels of it (what the
    evaluation of untimed picks is summed per, ``learn.untimed``)."""
    ops = class_key.split("@")[0].split("+")
    return next((op for op in ops if op not in ("pad", "data_pad")), ops[0])


def anchor_key(mod: tvm.IRModule, blocks: tuple[BlockInfo, ...] | None = None) -> str | None:
    """The anchor block's structure: name, iteration kinds, loop depth and buffer dtypes (what
    ``schedule_using_anchor_trace`` needs to agree), or None for a kernel without exactly one
    reduction (with two, TVM's anchor transfer parallelises the other's reduction loop)."""
    blocks = blocks or blocks_of(mod)
    anchor = s_tir.analysis.find_anchor_sblock(mod)
    if anchor is None or sum(b.has_init for b in blocks) != 1:
        return None
    info = next(b for b in blocks if b.name == anchor.name_hint)
    dtypes = ",".join(str(r.source.dtype) for r in [*anchor.reads, *anchor.writes])
    return f"{block_class_name(info.name)}:{info.iter_kinds}:{info.loop_depth}:{dtypes}"


def epilogue_ops(desc: WorkloadDescriptor) -> frozenset[str]:
    """The op kinds of a workload besides its anchor and pad: what an anchor transfer leaves to
    TVM to schedule (inlined into the anchor's output, or fused and parallelised)."""
    return frozenset(
        _op_kind(b.name) for b in desc.blocks if b.name not in (desc.anchor, "pad_temp")
    )


def describe(mod: tvm.IRModule) -> WorkloadDescriptor:
    """Descriptors of a workload: op kinds, shapes, FLOPs, bytes, the anchor block's extents."""
    func = _main_func(mod)
    blocks = blocks_of(mod)
    buffers = _param_buffers(func)
    shapes = tuple(tuple(_as_int(d) for d in buf.shape) for buf in buffers)
    dtypes = tuple(str(buf.dtype) for buf in buffers)
    total_bytes = sum(
        math.prod(shape) * tvm.runtime.DataType(dtype).bits // 8
        for shape, dtype in zip(shapes, dtypes)
    )
    try:
        flops = float(s_tir.analysis.estimate_tir_flops(mod))
    except RuntimeError:  # TVM errors subclass RuntimeError
        flops = float("nan")
    anchor = max(blocks, key=lambda b: (("R" in b.iter_kinds), math.prod(b.extents)))
    return WorkloadDescriptor(
        op_kinds=tuple(dict.fromkeys(_op_kind(b.name) for b in blocks)),
        param_shapes=shapes,
        param_dtypes=dtypes,
        anchor=anchor.name,
        anchor_extents=anchor.extents,
        anchor_iter_kinds=anchor.iter_kinds,
        flops=flops,
        bytes=total_bytes,
        blocks=blocks,
    )
