"""Source schedules: the tuning records of other networks' logs, indexed by kernel class."""

from __future__ import annotations

import json
import logging
import math
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import tvm
import tvm_ffi
from tvm import s_tir
from tvm.s_tir import meta_schedule as ms

from ..backend import fp32_intrinsics
from ..core import paths
from ..core.corpora import already_warned
from ..core.errors import InputError
from ..core.lazy import lazy
from ..core.targets import same_cpu
from ..tasks.workload import KernelClass, WorkloadDescriptor, describe, kernel_class
from . import source_index
from .tuning_log import FAILED_RUN_S, TuningLog, json_lines

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
class SourceId:
    """Which tuning record a schedule is: its model, its workload's structural hash, the hash of
    its trace and its rank among that workload's records (0: the best). Journals, caches,
    datasets, leave-one-model-out exclusion and the online correction key on it; ``label`` is
    for people to read."""

    model: str
    workload_key: int
    trace_key: str
    rank: int

    @property
    def key(self) -> str:
        """The record's identity as text (the rank is not part of it: it moves as a log grows)."""
        return f"{self.model}:{self.workload_key}:{self.trace_key}"


class LoggedWorkload:
    """A source workload as its log stores it, decoded on first use (most never are)."""

    def __init__(self, workload_json: list):
        self.json = workload_json

    @lazy
    def decoded(self) -> ms.database.Workload:
        return ms.database.Workload.from_json(self.json)


@dataclass(frozen=True)
class SourceSchedule:
    """One tuning record of a source workload. ``rank`` 0 is the best record of that workload.

    Its trace is decoded from the record's JSON when first used: decoding replays the trace on
    the workload (7 ms), and ranking in two stages never needs most of them.
    """

    model: str
    workload_key: int
    kernel_class: KernelClass
    descriptor: WorkloadDescriptor
    run_s: float
    rank: int
    trace_key: str  # hash of the trace's JSON: with workload_key, names the record
    record_json: str = field(compare=False, repr=False)
    workload: LoggedWorkload = field(compare=False, repr=False)

    @lazy
    def trace(self) -> s_tir.Trace:
        fp32_intrinsics.register()  # a record tuned in a micro-kernel space names them
        record = json.loads(self.record_json)
        return ms.database.TuningRecord.from_json(record, self.workload.decoded).trace

    @property
    def id(self) -> SourceId:
        return SourceId(self.model, self.workload_key, self.trace_key, self.rank)

    @property
    def label(self) -> str:
        return (
            f"{self.model}/{self.kernel_class.summary}#{self.workload_key % 10**6:06d}r{self.rank}"
        )


def logged_models(logs: Path | None = None) -> list[str]:
    """The models with a tuning log under ``logs`` (a directory holding ``provenance.json``)."""
    logs = logs or paths.logs()
    if not logs.is_dir():
        return []
    return sorted(p.parent.name for p in logs.glob("*/provenance.json"))


def resolve_sources(spec: str, target_model: str, logs: Path | None = None) -> list[str]:
    """``all`` (every other logged model), ``paper`` (the paper's pair) or ``a,b,c``.

    The target model itself is never a source (leave-one-model-out).
    """
    logs = logs or paths.logs()
    if spec == "paper":
        if target_model not in PAPER_PAIRS:
            raise InputError(f"--sources paper: no paper pairing for {target_model!r}")
        return [PAPER_PAIRS[target_model]]
    if spec == "all":
        names = logged_models(logs)
    else:
        names = [n.strip() for n in spec.split(",") if n.strip()]
    names = [n for n in names if n != target_model]
    if not names and spec == "all":
        raise InputError(
            f"no tuning log of any model but {target_model!r}; make one with "
            "`recommender collect MODEL` (the shipped corpus lives here)",
            path=logs,
        )
    if not names:
        raise InputError(f"--sources {spec!r} leaves no source model besides {target_model!r}")
    return names


def log_dir(model: str, logs: Path | None = None) -> Path:
    """The log of ``model`` in the corpus, or an error saying how to make it."""
    path = (logs or paths.logs()) / model
    if not path.is_dir():
        raise InputError(
            f"no tuning log for source model {model!r}; run `recommender collect {model}`",
            path=path,
        )
    return path


def load_sources(
    logs: dict[str, Path], target: tvm.target.Target, *, top_n: int = 1
) -> list[SourceSchedule]:
    """The ``top_n`` fastest valid records of every workload in each model's log (tuned for
    ``target``'s architecture: logs from another CPU are used; ``corpora`` warns once about them).

    Each log is read through its index (``source_index``), made on first use.
    """
    sources, other_cpus = [], defaultdict(list)
    for model, path in logs.items():
        log = TuningLog.open(path, target=target, other_cpu=True, validate=False)
        tuned_for = log.provenance()["target_key"]
        if not same_cpu(tuned_for, target):
            other_cpus[tuned_for["mcpu"] or "no -mcpu"].append(model)
        workloads = source_index.read_index(log.path, top_n)
        if workloads is None:
            workloads = _index_log(log, max(top_n, source_index.MIN_TOP_N))
        for w in workloads:
            klass, descriptor = source_index.kernel_class_of(w), source_index.descriptor_of(w)
            logged = LoggedWorkload(w["workload"])
            for rank, r in enumerate(w["records"][:top_n]):
                sources.append(
                    SourceSchedule(
                        model,
                        int(w["key"]),
                        klass,
                        descriptor,
                        r["run_s"],
                        rank,
                        r["trace_key"],
                        r["record"],
                        logged,
                    )
                )
        logger.info("%s: %d source workloads", model, len(workloads))
    if other_cpus:
        cpu = str(target.attrs.get("mcpu", ""))
        quiet = all(already_warned(tuned, cpu) for tuned in other_cpus)
        (logger.info if quiet else logger.warning)(
            "source logs tuned for another CPU than %s (%s): their schedules are timed on the "
            "target, but may be slower than ones tuned for it (scripts/rebuild_corpus.py tunes "
            "the corpus for it)",
            target.attrs.get("mcpu", "no -mcpu"),
            "; ".join(f"{cpu}: {', '.join(models)}" for cpu, models in other_cpus.items()),
        )
    return sources


def _index_log(log: TuningLog, top_n: int) -> list[dict]:
    """Validate the log, pick the ``top_n`` fastest valid records of each workload and store
    them as its index (a corpus that cannot be written to is read again next time).

    Records are picked from the log's JSON before any is decoded: a log holds about 64 records
    per workload, and only the picked ones' workloads are classified and described.
    """
    log.validate(repair=False)
    workloads = json_lines(log.workloads_path)
    by_workload: dict[int, list[tuple[float, list]]] = defaultdict(list)
    for index, record_json in json_lines(log.records_path):
        secs = [float(s) for s in record_json[1] or []]
        run_s = statistics.median(secs) if secs else math.inf
        if run_s < FAILED_RUN_S:
            by_workload[index].append((run_s, record_json))
    entries = []
    for index, records in by_workload.items():
        mod = ms.database.Workload.from_json(workloads[index]).mod
        records.sort(key=lambda r: r[0])
        entries.append(
            source_index.workload_entry(
                workloads[index],
                tvm_ffi.structural_hash(mod),
                kernel_class(mod),
                describe(mod),
                records[:top_n],
            )
        )
    try:
        source_index.write_index(log.path, top_n, entries)
    except OSError as err:
        logger.warning("%s: cannot store the source index (%s)", log.path, err)
    return entries
