"""A MetaSchedule work dir tuned elsewhere, added to a corpus as a source log.

Users have tuning logs of their own networks: the JSON database MetaSchedule writes
(``database_workload.json`` and ``database_tuning_record.json``, from ``tune_relax``,
``tune_tir`` or ``JSONDatabase``). Imported, such a log is a source like the corpus's own:
``recommend --sources all`` ranks its records for every kernel of the same class. What
MetaSchedule does not store is filled in and checked: the target (the records name it, or it is
given), the TVM version (every workload must parse with this one; records whose trace does not
are dropped and counted) and the configuration the network was prepared in (checked against
what the workloads show: blocked convolutions, exact ``exp``/``erf``/``tanh`` calls). An
imported log has no stamps, so it is never the evaluation's MetaSchedule reference.
"""

from __future__ import annotations

import datetime
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import tvm
from tqdm import tqdm
from tvm.s_tir import meta_schedule as ms

from ..backend import fp32_intrinsics
from ..backend.fixes import register_cpu_tensor_intrinsics
from ..core.configuration import Configuration, block_of
from ..core.errors import InputError
from ..core.targets import target_arch, target_key
from ..tasks.workload import blocks_of
from .tuning_log import PROVENANCE, RECORDS, WORKLOADS, TuningLog, json_lines

EXACT_CALLS = ("T.exp(", "T.erf(", "T.tanh(", "T.sigmoid(")  # what fast math replaces


@dataclass(frozen=True)
class ForeignLog:
    """A MetaSchedule work dir as read: its workloads parsed, its record rows, its target."""

    work_dir: Path
    workloads: list[ms.database.Workload]
    rows: list[list]
    target: tvm.target.Target


@dataclass(frozen=True)
class Imported:
    path: Path
    workloads: int
    records: int
    dropped: int  # records whose trace does not parse with this TVM


def read_foreign_log(work_dir: Path, target: tvm.target.Target | None = None) -> ForeignLog:
    """Read the MetaSchedule database in ``work_dir``. ``target``: the one it was tuned for,
    needed when its records do not name one, checked against them when they do.

    Raises InputError for a missing or corrupt file, a workload this TVM cannot parse, or
    records of several targets or of another target than given.
    """
    log = TuningLog(work_dir)
    for required in (log.workloads_path, log.records_path):
        if not required.is_file():
            raise InputError("not a MetaSchedule work dir: file missing", path=required)
    log.validate(repair=False)  # every line JSON, every record naming a stored workload
    rows = json_lines(log.records_path)
    return ForeignLog(
        work_dir,
        _workloads(log.workloads_path),
        rows,
        _target_of(rows, target, log.records_path),
    )


def import_log(
    log: ForeignLog, dest: Path, configuration: Configuration, *, progress: bool = True
) -> Imported:
    """Write ``log`` to ``dest`` (a new log directory of a corpus of ``configuration``) with the
    provenance a corpus log has, without the records whose trace this TVM cannot parse.

    Raises InputError for an existing ``dest``, a configuration the workloads contradict, or a
    log none of whose records parse.
    """
    if dest.exists():
        raise InputError("the corpus has a log of this name already; choose another", path=dest)
    source = TuningLog(log.work_dir)
    _check_configuration(log.workloads, configuration, source.workloads_path)
    register_cpu_tensor_intrinsics(log.target)  # traces tensorized with them name them
    fp32_intrinsics.register()
    rows = tqdm(log.rows, desc="parsing records", unit="rec", disable=not progress)
    kept = [row for row in rows if _parses(row, log.workloads)]  # a replay each: ~5 ms
    if log.rows and not kept:
        raise InputError(
            f"none of the {len(log.rows)} records parses with TVM {tvm.__version__}: "
            "a log of another TVM version?",
            path=source.records_path,
        )
    dest.mkdir(parents=True)
    shutil.copyfile(source.workloads_path, dest / WORKLOADS)
    (dest / RECORDS).write_text("".join(json.dumps(row) + "\n" for row in kept))
    dropped = len(log.rows) - len(kept)
    provenance = {
        "network": dest.name,
        "tvm": tvm.__version__,
        "target": json.loads(str(log.target)),
        "target_key": target_key(log.target),
        "configuration": configuration.to_json(),
        "machine": {"arch": target_arch(log.target)},
        "imported": {
            "from": str(log.work_dir.resolve()),
            "on": datetime.date.today().isoformat(),
            "dropped_records": dropped,
        },
        "sessions": [],
    }
    (dest / PROVENANCE).write_text(json.dumps(provenance, indent=1) + "\n")
    TuningLog(dest).pack()
    return Imported(dest, len(log.workloads), len(kept), dropped)


def _workloads(path: Path) -> list[ms.database.Workload]:
    workloads = []
    for number, row in enumerate(json_lines(path), start=1):
        try:
            workloads.append(ms.database.Workload.from_json(row))
        except Exception as err:  # noqa: BLE001 - TVM raises its own error kinds
            raise InputError(
                f"workload does not parse with TVM {tvm.__version__} ({type(err).__name__}): "
                "a log of another TVM version?",
                path=path,
                line=number,
            ) from None
    return workloads


def _target_of(rows: list, given: tvm.target.Target | None, path: Path) -> tvm.target.Target:
    """The one target the records were tuned for (``given`` when they name none)."""
    named = {json.dumps(_target_json(row), sort_keys=True) for row in rows} - {"null"}
    if len(named) > 1:
        raise InputError(f"records of {len(named)} targets; a log is one target's", path=path)
    if not named:
        if given is None:
            raise InputError("the records name no target: give the one tuned for (--target)")
        return given
    try:
        tuned_for = tvm.target.Target(json.loads(named.pop()))
    except Exception as err:  # noqa: BLE001 - TVM's own error kinds
        raise InputError(f"the records' target is not one TVM knows ({err})", path=path) from None
    if given is not None and target_key(given) != target_key(tuned_for):
        raise InputError(
            f"tuned for {target_key(tuned_for)}, not the --target given, {target_key(given)}",
            path=path,
        )
    return tuned_for


def _target_json(row: list) -> dict | None:
    """The target a record row names (MetaSchedule's record: trace, run times, target, args)."""
    record = row[1]
    return record[2] if isinstance(record, list) and len(record) > 2 else None


def _parses(row: list, workloads: list[ms.database.Workload]) -> bool:
    try:
        ms.database.TuningRecord.from_json(row[1], workloads[row[0]])
    except Exception:  # noqa: BLE001 - a trace of instructions this TVM does not know
        return False
    return True


def _blockable(block_info, block: int) -> bool:
    """An unblocked convolution whose channels ``block`` divides, from its iteration extents
    (n, out channels, h, w, in channels per group, kh, kw): ``conv2d_nchw``, or a depthwise
    ``group_conv2d_nchw`` (one input channel per group); other grouped ones stay unblocked."""
    extents = block_info.extents
    if len(extents) != 7:
        return False
    if block_info.name == "conv2d_nchw":
        return extents[1] % block == 0 and extents[4] % block == 0
    if block_info.name == "group_conv2d_nchw":
        return extents[4] == 1 and extents[1] % block == 0
    return False


def _check_configuration(
    workloads: list[ms.database.Workload], configuration: Configuration, path: Path
) -> None:
    """Refuse a configuration the workloads contradict: blocked convolutions in a native log;
    in a blocked one, an unblocked convolution whose channels the block divides (the
    configuration would have blocked it; ``tasks.layouts``); exact ``exp``/``erf``/``tanh``
    calls in a fast-math one."""
    blocks = [b for w in workloads for b in blocks_of(w.mod)]
    blocked = sorted({b.name for b in blocks if "NCHWc" in b.name})
    block = block_of(configuration.layout)
    if blocked and block is None:
        raise InputError(
            f"its convolutions are blocked ({', '.join(blocked)}), but the configuration is "
            f"{configuration}: give the log's own (--layout NCHW{{n}}c), into a corpus of it "
            "(--corpus NAME)",
            path=path,
        )
    divisible = next((b for b in blocks if block and _blockable(b, block)), None)
    if divisible is not None:
        raise InputError(
            f"its convolution {divisible.name} {divisible.extents} is unblocked, but the "
            f"configuration ({configuration}) blocks one of its channels: the log is native "
            "(--layout native), for a corpus of it (--corpus NAME)",
            path=path,
        )
    if configuration.fast_math:
        exact = next((c for w in workloads for c in EXACT_CALLS if c in w.mod.script()), None)
        if exact:
            raise InputError(
                f"its kernels call {exact[:-1]} (exact math), but the configuration is "
                f"{configuration}: import it without --fast-math, into a corpus of its own "
                "(--corpus NAME)",
                path=path,
            )
