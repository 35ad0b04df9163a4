"""Source schedules: the tuning records of other networks' logs, indexed by kernel class."""

from __future__ import annotations

import logging
import math
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import tvm
import tvm_ffi
from tvm import s_tir

from . import paths
from .errors import InputError
from .tuning_log import FAILED_RUN_S, TuningLog
from .workload import KernelClass, WorkloadDescriptor, describe, kernel_class
from .zoo import zoo_names

logger = logging.getLogger(__name__)

# The transfer-tuning paper's fixed pairing: target <- source model.
PAPER_PAIRS = {
    "resnet18": "resnet50",
    "resnet50": "googlenet",
    "alexnet": "vgg16",
    "vgg16": "googlenet",
    "mobilenetv2": "efficientnetb4",
    "googlenet": "resnet50",
    "mnasnet1_0": "googlenet",
    "efficientnetb0": "efficientnetb4",
    "efficientnetb4": "efficientnetb0",
    "bert": "mobilebert",
    "mobilebert": "bert",
}


@dataclass(frozen=True)
class SourceSchedule:
    """One tuning record of a source workload. ``rank`` 0 is the best record of that workload."""

    model: str
    workload: tvm.IRModule
    workload_key: int
    kernel_class: KernelClass
    descriptor: WorkloadDescriptor
    trace: s_tir.Trace
    run_s: float
    rank: int

    @property
    def label(self) -> str:
        return (
            f"{self.model}/{self.kernel_class.summary}#{self.workload_key % 10**6:06d}r{self.rank}"
        )


def resolve_sources(spec: str, target_model: str) -> list[str]:
    """``all`` (every other logged zoo model), ``paper`` (the paper's pair) or ``a,b,c``.

    The target model itself is never a source (leave-one-model-out).
    """
    if spec == "paper":
        if target_model not in PAPER_PAIRS:
            raise InputError(f"--sources paper: no paper pairing for {target_model!r}")
        return [PAPER_PAIRS[target_model]]
    if spec == "all":
        names = [n for n in zoo_names() if (paths.LOGS / n).is_dir()]
    else:
        names = [n.strip() for n in spec.split(",") if n.strip()]
    names = [n for n in names if n != target_model]
    if not names and spec == "all":
        raise InputError(
            f"no tuning log of any model but {target_model!r}; make one with "
            "`recommender collect MODEL` (the shipped corpus lives here)",
            path=paths.LOGS,
        )
    if not names:
        raise InputError(f"--sources {spec!r} leaves no source model besides {target_model!r}")
    return names


def log_dir(model: str) -> Path:
    """The shipped log of a zoo model, or an error saying how to make it."""
    path = paths.LOGS / model
    if not path.is_dir():
        raise InputError(
            f"no tuning log for source model {model!r}; run `recommender collect {model}`",
            path=path,
        )
    return path


def load_sources(
    logs: dict[str, Path], target: tvm.target.Target, *, top_n: int = 1
) -> list[SourceSchedule]:
    """The ``top_n`` fastest valid records of every workload in each model's log."""
    sources = []
    for model, path in logs.items():
        database = TuningLog.open(path, target=target).database()
        by_workload: dict[int, list] = defaultdict(list)
        workloads: dict[int, tvm.IRModule] = {}
        for record in database.get_all_tuning_records():
            secs = [float(s) for s in record.run_secs] if record.run_secs else []
            run_s = statistics.median(secs) if secs else math.inf
            if run_s >= FAILED_RUN_S:
                continue
            key = tvm_ffi.structural_hash(record.workload.mod)
            workloads[key] = record.workload.mod
            by_workload[key].append((run_s, record.trace))
        for key, records in by_workload.items():
            mod = workloads[key]
            klass, descriptor = kernel_class(mod), describe(mod)
            records.sort(key=lambda r: r[0])
            for rank, (run_s, trace) in enumerate(records[:top_n]):
                sources.append(
                    SourceSchedule(model, mod, key, klass, descriptor, trace, run_s, rank)
                )
        logger.info("%s: %d source workloads", model, len(by_workload))
    return sources
