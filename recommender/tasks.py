"""Lower a network and extract its MetaSchedule tasks, each with a kernel class and descriptor."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import tvm
from tvm import relax
from tvm.s_tir import meta_schedule as ms

from .network import Network
from .tvm_fixes import register_cpu_tensor_intrinsics
from .workload import KernelClass, WorkloadDescriptor, describe, kernel_class

logger = logging.getLogger(__name__)
register_cpu_tensor_intrinsics()  # before anything creates a TuneContext: saves about a minute


@dataclass(frozen=True)
class Task:
    """One target kernel: ``weight`` counts its occurrences in the network."""

    name: str
    mod: tvm.IRModule
    weight: int
    kernel_class: KernelClass
    descriptor: WorkloadDescriptor

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


def prepare(mod: tvm.IRModule) -> tvm.IRModule:
    """Inference-time simplification before legalization: batch norm folded into convolutions.

    This is what ``endtoend.build`` compiles: ``compile_relax`` legalizes and fuses it itself,
    and its functions match the database only if they were not legalized before (a second
    ``AnnotateTIROpPattern`` adds attributes the tasks did not have).
    """
    passes = [
        relax.transform.FoldBatchnormToConv2D(),
        relax.transform.DecomposeOpsForInference(),
        relax.transform.CanonicalizeBindings(),
    ]
    return tvm.transform.Sequential(passes)(mod)


def lower(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    """Prepared Relax -> fused ``call_tir`` kernels, as ``static_shape_tuning`` does.

    ``extract_tasks`` finds nothing on a module that was not legalized.
    """
    with target:
        return relax.get_pipeline("zero")(prepare(mod))


def extract_tasks(network: Network, target: tvm.target.Target) -> list[Task]:
    """The network's tuning tasks in MetaSchedule's order, with structure keys attached."""
    lowered = lower(network.mod, target)
    extracted = ms.relax_integration.extract_tasks(lowered, target)
    tasks = []
    for task in extracted:
        workload = task.dispatched[0]
        tasks.append(
            Task(
                name=task.task_name,
                mod=workload,
                weight=int(task.weight),
                kernel_class=kernel_class(workload),
                descriptor=describe(workload),
            )
        )
    logger.info("%s: %d tasks", network.name, len(tasks))
    return tasks
