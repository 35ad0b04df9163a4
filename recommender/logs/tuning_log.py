"""A tuning log: one network's MetaSchedule JSON work dir, plus what MetaSchedule does not store.

The two files TVM writes (``database_workload.json``, ``database_tuning_record.json``) stay
standard, so TVM's own ``JSONDatabase`` and ``compile_relax`` read the directory as it is.
Beside them:

- ``provenance.json``: TVM version, target, machine, budgets and sessions; a directory written
  for another target or TVM version is refused rather than mixed.
- ``timestamps.jsonl``: one line per tuning record, in the same order, with the tuning time
  elapsed when it was measured (summed over sessions), so MetaSchedule's best-so-far curve can
  be rebuilt for "time to match" comparisons.

Appends are line by line, so an interrupted run loses at most a half-written last line, which
``open`` moves aside (to ``*.torn``) instead of failing.

Shipped logs are stored gzipped (``packing``: ``NAME.gz``, about 25x smaller); the plain files
TVM reads are recreated from them on first use and packed again when a collection stops.
"""

from __future__ import annotations

import json
import logging
import platform
from dataclasses import dataclass
from pathlib import Path

import tvm
from tvm.s_tir import meta_schedule as ms

from ..backend import fp32_intrinsics
from ..core import paths
from ..core.configuration import Configuration
from ..core.errors import InputError
from ..core.targets import same_arch, same_cpu, target_key
from . import packing, search_space

logger = logging.getLogger(__name__)

WORKLOADS = "database_workload.json"
RECORDS = "database_tuning_record.json"
PROVENANCE = "provenance.json"
TIMESTAMPS = "timestamps.jsonl"
PACKED = (WORKLOADS, RECORDS, TIMESTAMPS)  # stored as NAME.gz in git
FAILED_RUN_S = 1e9  # MetaSchedule stores 1e10 s for a candidate that failed to build or run


@dataclass(frozen=True)
class Stamp:
    """When a record was measured: tuning seconds since the log was started, and its task."""

    elapsed_s: float
    task: str | None
    run_s: float | None


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _read_json_lines(path: Path, *, repair: bool) -> list:
    """Parse a JSON-lines file; a torn last line is moved aside when ``repair`` is set."""
    if not path.exists():
        return []
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as err:
            last = number == len(lines) or (number == len(lines) - 1 and not lines[-1])
            if not (last and repair and not raw.endswith(b"\n")):
                raise InputError(f"corrupt JSON line ({err.msg})", path=path, line=number) from None
            torn = path.with_name(path.name + ".torn")
            with torn.open("ab") as out:
                out.write(line + b"\n")
            path.write_bytes(raw[: len(raw) - len(line)])
            logger.warning("%s:%d: moved a half-written last line to %s", path, number, torn)
    return rows


def json_lines(path: Path) -> list:
    """Every row of a JSON-lines file (an error names the line of one that does not parse)."""
    return _read_json_lines(path, repair=False)


class TuningLog:
    """One network's tuning work dir. ``TuningLog.open`` validates; ``database()`` reads via TVM.

    Parameters
    ----------
    path : Path
        The work dir.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)

    @property
    def records_path(self) -> Path:
        return self.path / RECORDS

    @property
    def workloads_path(self) -> Path:
        return self.path / WORKLOADS

    @classmethod
    def create_or_resume(
        cls,
        path: str | Path,
        *,
        target: tvm.target.Target,
        network: str,
        budget: dict,
        configuration: Configuration | None = None,
        space: str = search_space.DEFAULT,
    ) -> TuningLog:
        """Open an existing log for ``target``, ``configuration`` and search ``space``
        (validated and repaired) or start a new one; ``configuration``: the one its tasks were
        prepared by (default: the corpus's)."""
        config = paths.configuration() if configuration is None else configuration
        log = cls(path)
        log.path.mkdir(parents=True, exist_ok=True)
        log.unpack()
        if (log.path / PROVENANCE).exists():
            log.check_compatible(target, configuration=config)
            provenance = log.provenance()
            tuned_in = provenance.get("space", search_space.DEFAULT)
            if tuned_in != space:
                raise InputError(
                    f"tuned in search space {tuned_in!r}, not {space!r}: records of two spaces "
                    "are never mixed (tune into another directory)",
                    path=log.path,
                )
            log.validate(repair=True)
            log.stamp_unstamped_records()
            provenance["budget"] = budget
        else:
            if log.records_path.exists():
                raise InputError(
                    f"holds tuning records but no {PROVENANCE}; refusing to mix runs", path=log.path
                )
            provenance = {
                "network": network,
                "tvm": tvm.__version__,
                "target": json.loads(str(target)),
                "target_key": target_key(target),
                "configuration": config.to_json(),
                "machine": {"cpu": cpu_model(), "arch": platform.machine()},
                "budget": budget,
                "sessions": [],
            }
            if space != search_space.DEFAULT:  # a log without one was tuned in the default
                provenance["space"] = space
        log.write_provenance(provenance)
        return log

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        target: tvm.target.Target | None = None,
        other_cores: bool = False,
        other_cpu: bool = False,
        validate: bool = True,
        configuration: Configuration | None = None,
    ) -> TuningLog:
        """Open a log for reading, checking its files (and its target and configuration, when a
        target is given: see ``check_compatible``). ``validate=False`` leaves parsing every line
        to the caller."""
        log = cls(path)
        log.unpack()
        for required in (log.path / PROVENANCE, log.records_path, log.workloads_path):
            if not required.exists():
                raise InputError("not a tuning log: file missing", path=required)
        if target is not None:
            log.check_compatible(
                target, other_cores=other_cores, other_cpu=other_cpu, configuration=configuration
            )
        if validate:
            log.validate(repair=False)
        return log

    def pack(self) -> None:
        """Write ``NAME.gz`` beside each plain file (``packing.pack``)."""
        packing.pack(self.path, PACKED)

    def unpack(self) -> None:
        """Recreate the plain files from their ``NAME.gz`` where needed (``packing.unpack``)."""
        packing.unpack(self.path, PACKED)

    def provenance(self) -> dict:
        path = self.path / PROVENANCE
        try:
            return json.loads(path.read_text())
        except json.JSONDecodeError as err:
            raise InputError(f"corrupt provenance ({err.msg})", path=path) from None

    def write_provenance(self, provenance: dict) -> None:
        tmp = self.path / (PROVENANCE + ".tmp")
        tmp.write_text(json.dumps(provenance, indent=1) + "\n")
        tmp.replace(self.path / PROVENANCE)

    def check_compatible(
        self,
        target: tvm.target.Target,
        *,
        other_cores: bool = False,
        other_cpu: bool = False,
        configuration: Configuration | None = None,
    ) -> None:
        """Refuse a log from another TVM version, target or configuration: its times would not
        compare, or its kernels are not the ones a network prepared by ``configuration``
        (default: the corpus's) has.

        ``other_cores`` accepts the same CPU with another core count (a reference timed again
        on fewer cores); ``other_cpu`` any CPU of the architecture (transfer sources: only
        their schedules are used, and timed again on ``target``).
        """
        provenance = self.provenance()
        where = self.path / PROVENANCE
        if provenance.get("tvm") != tvm.__version__:
            raise InputError(
                f"written by TVM {provenance.get('tvm')}, this is TVM {tvm.__version__}", path=where
            )
        config = paths.configuration() if configuration is None else configuration
        tuned = Configuration.from_json(provenance.get("configuration"), where=where)
        if tuned != config:
            message = f"tuned with configuration {tuned}, this corpus's is {config}"
            raise InputError(message + ": logs of two configurations are never mixed", path=where)
        expected, got = target_key(target), provenance.get("target_key")
        if got == expected or (other_cores and same_cpu(got, target)):
            return
        arch = provenance.get("machine", {}).get("arch")
        if other_cpu and same_arch(got, target, arch):
            return
        raise InputError(f"written for target {got}, expected {expected}", path=where)

    def validate(self, *, repair: bool) -> tuple[int, int]:
        """Check every line parses and every record names a stored workload.

        Returns the number of workloads and records. A half-written last line is moved aside
        when ``repair`` is set (a resumed collection), and is an error otherwise.
        """
        workloads = _read_json_lines(self.workloads_path, repair=repair)
        records = _read_json_lines(self.records_path, repair=repair)
        for number, row in enumerate(workloads, start=1):
            if not (isinstance(row, list) and len(row) == 2):
                raise InputError(
                    "workload line is not [hash, module]", path=self.workloads_path, line=number
                )
        for number, row in enumerate(records, start=1):
            if not (isinstance(row, list) and len(row) == 2 and isinstance(row[0], int)):
                raise InputError(
                    "record line is not [workload index, record]",
                    path=self.records_path,
                    line=number,
                )
            if not 0 <= row[0] < len(workloads):
                raise InputError(
                    f"record names workload {row[0]}, but {self.workloads_path.name} holds "
                    f"{len(workloads)}",
                    path=self.records_path,
                    line=number,
                )
        return len(workloads), len(records)

    def database(self) -> ms.database.JSONDatabase:
        """The log as TVM's own ``JSONDatabase`` (structural workload equality)."""
        fp32_intrinsics.register()  # decoding a record tuned in a micro-kernel space needs them
        self.path.mkdir(parents=True, exist_ok=True)
        return ms.database.JSONDatabase(
            path_workload=str(self.workloads_path),
            path_tuning_record=str(self.records_path),
            module_equality="structural",
        )

    def record_count(self) -> int:
        if not self.records_path.exists():
            return 0
        with self.records_path.open("rb") as f:
            return sum(1 for line in f if line.strip())

    def search_ended(self, total: int) -> bool:
        """Whether a session aiming at ``total`` trials or more finished on its own.

        MetaSchedule stops early when no task has an unmeasured candidate left or every task is
        at its cap; a rerun would only restart the per-task caps, not continue the same search.
        """
        sessions = self.provenance()["sessions"] if (self.path / PROVENANCE).exists() else []
        return any(
            s["status"] == "finished" and s.get("budget_trials", 0) >= total for s in sessions
        )

    def trials_left(self, total: int, done: int | None = None) -> int:
        """Trials still to run toward a budget of ``total``; 0 once the search ended.

        ``done`` is the record count when the caller has it already.
        """
        if self.search_ended(total):
            return 0
        return max(total - (self.record_count() if done is None else done), 0)

    def append_stamps(self, stamps: list[Stamp]) -> None:
        with (self.path / TIMESTAMPS).open("a") as f:
            for s in stamps:
                f.write(
                    json.dumps(
                        {"elapsed_s": round(s.elapsed_s, 3), "task": s.task, "run_s": s.run_s}
                    )
                    + "\n"
                )

    def stamp_unstamped_records(self) -> None:
        """Give records committed just before a kill (stamps not yet written) the last time.

        Keeps ``timestamps.jsonl`` aligned line by line with the records file.
        """
        stamps = self.stamps()
        records = _read_json_lines(self.records_path, repair=False)
        if len(stamps) >= len(records):
            return
        last = stamps[-1].elapsed_s if stamps else 0.0
        missing = []
        for _, (_trace, run_secs, *_rest) in records[len(stamps) :]:
            run_s = sorted(run_secs)[len(run_secs) // 2] if run_secs else None
            ok = run_s is not None and run_s < FAILED_RUN_S
            missing.append(Stamp(last, None, run_s if ok else None))
        self.append_stamps(missing)
        logger.warning(
            "%s: stamped %d records left unstamped by an interrupted run", self.path, len(missing)
        )

    def stamps(self) -> list[Stamp]:
        rows = _read_json_lines(self.path / TIMESTAMPS, repair=False)
        return [Stamp(r["elapsed_s"], r["task"], r["run_s"]) for r in rows]
