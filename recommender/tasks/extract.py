"""Lower a network and extract its MetaSchedule tasks, each with a kernel class and descriptor."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

import tvm
import tvm_ffi
from tvm import relax
from tvm.s_tir import meta_schedule as ms
from tvm_ffi.serialization import from_json_graph_str

from ..backend.fixes import register_cpu_tensor_intrinsics
from ..core import paths
from ..core.configuration import Configuration
from ..core.errors import RecommenderError
from ..core.lazy import lazy
from ..networks.network import Network
from . import layouts
from .fast_math import fast_math
from .shape_fold import shape_only_fold
from .workload import KernelClass, WorkloadDescriptor, describe, kernel_class

logger = logging.getLogger(__name__)
TASKS_FORMAT = 3  # bump when ``prepare``/``lower``/``layouts`` change what a network's tasks are
LAYOUT_FREE = "layout_free_buffers"  # a PrimFunc attribute: params whose layout MetaSchedule picks


def structural_key(mod: tvm.IRModule) -> str:
    """A workload's structural hash as text: equal for the same kernel in any network or log."""
    return str(tvm_ffi.structural_hash(mod))


@dataclass(frozen=True)
class Task:
    """One target kernel: ``weight`` counts its occurrences in the network."""

    name: str
    mod: tvm.IRModule
    weight: int
    kernel_class: KernelClass
    descriptor: WorkloadDescriptor

    @lazy
    def structural_key(self) -> str:
        """Caches and journals key on it, and hashing is not free: computed once per task."""
        return structural_key(self.mod)

    def to_json(self) -> dict:
        d = self.descriptor
        return {
            "name": self.name,
            "kernel_class": self.kernel_class.key,
            "weight": self.weight,
            "flops": d.flops,
            "bytes": d.bytes,
            "op_kinds": list(d.op_kinds),
            "anchor": d.anchor,
            "anchor_extents": list(d.anchor_extents),
            "param_shapes": [list(s) for s in d.param_shapes],
        }


def prepare(
    mod: tvm.IRModule, target: tvm.target.Target, configuration: Configuration | None = None
) -> tvm.IRModule:
    """Inference-time simplification before legalization: batch norm folded into convolutions,
    then the corpus's configuration (default: the one in use, ``paths.configuration``: its
    logs' kernels were made so, and a database matches only kernels made the same way): fast
    math, the convolutions' layout.

    This is what ``endtoend.build`` compiles: ``compile_relax`` legalizes and fuses it itself,
    and its functions match the database only if they were not legalized before (a second
    ``AnnotateTIROpPattern`` adds attributes the tasks did not have).
    """
    config = paths.configuration() if configuration is None else configuration
    passes = [
        relax.transform.FoldBatchnormToConv2D(),
        relax.transform.DecomposeOpsForInference(),
        relax.transform.CanonicalizeBindings(),
    ]
    mod = layouts.convert(tvm.transform.Sequential(passes)(mod), config.layout)
    if config.fast_math:  # on Relax ops: after the layout, before anything is legalized
        mod = fast_math(mod)
    return layouts.legalize(mod, target)


def lower(
    mod: tvm.IRModule, target: tvm.target.Target, configuration: Configuration | None = None
) -> tvm.IRModule:
    """Prepared Relax -> fused ``call_tir`` kernels, as ``static_shape_tuning`` does: Relax's
    "zero" pipeline with constants folded by shape alone (``shape_fold``: the same kernels,
    20x faster on the zoo's networks).

    ``extract_tasks`` finds nothing on a module that was not legalized.
    """
    passes = [
        relax.transform.LegalizeOps(),
        relax.transform.AnnotateTIROpPattern(),
        shape_only_fold,
        relax.transform.FoldConstant(),
        relax.transform.FuseOps(),
        relax.transform.FuseTIR(),
    ]
    prepared = prepare(mod, target, configuration)
    with target:
        return tvm.transform.Sequential(passes)(prepared)


def extract_tasks(
    network: Network,
    target: tvm.target.Target,
    *,
    configuration: Configuration | None = None,
    cache: bool = True,
    layout_free: bool = False,
) -> list[Task]:
    """The network's tuning tasks in MetaSchedule's order, with structure keys attached, the
    network prepared by ``configuration`` (default: the corpus's).

    ``layout_free``: as TVM's weight-prepacking pipeline makes them (``static_shape_tuning``
    with ``cpu_weight_prepack``): every kernel argument that is a constant of the network (a
    weight) is marked ``layout_free_buffers``, so MetaSchedule's ``RewriteLayout`` may give it
    the layout its schedule reads best, the rewrite then run once when the network is built.

    Lowering and extraction cost seconds to tens of seconds per network and every command
    repeats them, so the tasks are kept under ``paths.cache_root()/tasks``, keyed by the
    network's graph as loaded and the seed of its random weights (their values never change a
    task, and a cached network's weights are never bound), the configuration, the target and
    TVM's version; an unreadable entry is extracted again.
    """
    config = paths.configuration() if configuration is None else configuration
    path = _cache_path(network, target, config, layout_free) if cache else None
    tasks = _load_tasks(path) if path and path.exists() else None
    if tasks is None:
        try:
            tasks = _extract(network, target, config, layout_free)
        except RuntimeError as err:  # TVM's errors; a build of many networks names the one
            first = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
            raise RecommenderError(
                f"{network.name}: TVM failed to lower or extract its tasks ({config}): {first}"
            ) from err
        if path:
            _store_tasks(path, tasks)
    logger.info("%s: %d tasks", network.name, len(tasks))
    return tasks


def _extract(
    network: Network, target: tvm.target.Target, configuration: Configuration, layout_free: bool
) -> list[Task]:
    register_cpu_tensor_intrinsics(target)  # before extraction makes a TuneContext
    lowered = lower(network.mod, target, configuration)
    if layout_free:
        lowered = relax.transform.AttachAttrLayoutFreeBuffers()(lowered)
    extracted = ms.relax_integration.extract_tasks(lowered, target)
    return [_task(task.task_name, task.dispatched[0], int(task.weight)) for task in extracted]


def _task(name: str, workload: tvm.IRModule, weight: int) -> Task:
    return Task(name, workload, weight, kernel_class(workload), describe(workload))


def without_layout_free(mod: tvm.IRModule) -> tvm.IRModule:
    """``mod`` without its ``layout_free_buffers`` attribute (an empty one included): the kernel
    as extracted plainly. The pass that marks them renames and reorders the tasks; this is how
    a marked kernel is matched with its plain one."""
    func = mod["main"]
    if func.attrs is None or LAYOUT_FREE not in func.attrs:
        return mod
    return tvm.IRModule({"main": func.without_attr(LAYOUT_FREE)})


def _cache_path(
    network: Network, target: tvm.target.Target, configuration: Configuration, layout_free: bool
) -> Path:
    parts = [
        structural_key(network.graph),
        str(network.weights_seed),
        str(configuration),
        str(target),
        tvm.__version__,
        str(TASKS_FORMAT),
        *(["layout-free"] if layout_free else []),
    ]
    digest = hashlib.sha256("|".join(parts).encode()).hexdigest()[:24]
    return paths.cache_root() / "tasks" / f"{digest}.json"


def _store_tasks(path: Path, tasks: list[Task]) -> None:
    entries = [{"name": t.name, "weight": t.weight, "mod": tvm.ir.save_json(t.mod)} for t in tasks]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(entries))
    tmp.replace(path)


def _load_tasks(path: Path) -> list[Task] | None:
    """The cached tasks; written by this TVM version (it is in the key), so read without
    ``tvm.ir.load_json``'s upgrade of older JSON (a Python pass over every node: 0.1 s)."""
    try:
        entries = json.loads(path.read_text())
        return [_task(e["name"], from_json_graph_str(e["mod"]), int(e["weight"])) for e in entries]
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as err:
        logger.warning("%s: unreadable task cache entry, extracting again (%s)", path, err)
        return None
