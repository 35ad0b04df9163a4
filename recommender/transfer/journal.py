"""The measurements of an exhaustive transfer run, written as they are made.

Timing every candidate of a large network against every other network's log takes an hour or
more; a run stopped part way (a session's end, a killed job) must not time them again. Each
chunk of measurements is appended as one JSON line with the seconds it took, so a rerun
restores them, times only the rest, and still reports the whole search time.

Measurements are keyed by the target kernel's structure and the source record (model,
workload, trace), so they stay valid when the set of sources changes (a log resumed since).
``recommender dataset build`` keeps one for each network it measures, in the same protocol: the
evaluation's exhaustive runs read it and time only what the dataset lacks.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path

import tvm

from ..backend.measure import Measurement, Stage
from ..core.errors import InputError
from .candidate import Candidate, Job, KernelResult, outcome

logger = logging.getLogger(__name__)

JOURNAL = "journal.jsonl"  # its name in a run's output dir
UNTUNED = "untuned"


def _job_key(kernel: KernelResult, candidate: Candidate | None) -> str:
    kernel_key = kernel.task.structural_key
    if candidate is None:
        return f"{kernel_key}/{UNTUNED}"
    if candidate.source is None:  # the default level: the design-space sample's number
        return f"{kernel_key}/{candidate.level.value}:{candidate.space}"
    return f"{kernel_key}/{candidate.source.id.key}"


class Journal:
    """Append-only JSON lines: a header naming the target and TVM version, then one line per
    measured chunk (``{"seconds": s, "measured": {job key: [run_s, stage, error]}}``).

    ``beside``: journals of other runs on the same target, read but never written (the
    exhaustive run over every other network measures a superset of the paper's pairs; keys name
    the kernel's structure, not its network, so a kernel two networks share is timed once).
    """

    def __init__(self, path: Path, target: tvm.target.Target, beside: Iterable[Path] = ()):
        self.path, self.beside = path, list(beside)
        self.header = {"target": str(target), "tvm": tvm.__version__}
        self._measured: dict[str, tuple[list, float]] | None = None  # read at the first restore

    def fits(self, path: Path | None = None) -> bool:
        """Whether the journal at ``path`` (default: this one) is new or was made for this
        run's target and TVM version: a journal of another profile is left alone, not read."""
        path = path or self.path
        try:
            with path.open() as f:
                first = f.readline()
        except FileNotFoundError:
            return True
        try:
            return not first or json.loads(first) == self.header
        except json.JSONDecodeError:
            return False

    def restore(self, kernels: list[KernelResult]) -> float:
        """Put the journals' measurements back on ``kernels``; returns the seconds they took
        (each chunk's time shared evenly among its measurements, counting only those restored).

        The journals are read once, at the first call: later calls (one per batch of kernels)
        restore from the same reading; what this run appends since is on its candidates already.
        A last line cut short by an interruption is dropped (its chunk is timed again)."""
        if self._measured is None:
            self._measured = {}  # job key: (measurement, its share of time)
            for path in [*self.beside, self.path]:  # this run's own measurements win
                self._measured |= self._read(path, own=path == self.path)
        restored, seconds = 0, 0.0
        for kernel, candidate in _jobs(kernels):
            found = self._measured.get(_job_key(kernel, candidate))
            if found is not None:
                restored, seconds = restored + 1, seconds + found[1]
                if candidate is None:
                    kernel.untuned = _measurement(found[0])
                else:
                    candidate.measurement = _measurement(found[0])
        logger.info("%s: %d measurements restored (%.0f s of timing)", self.path, restored, seconds)
        return seconds

    def _read(self, path: Path, own: bool) -> dict[str, tuple[list, float]]:
        """One journal's measurements; only this run's ``own`` journal is repaired."""
        if not path.exists():
            return {}
        lines = path.read_text().splitlines()
        try:
            header = json.loads(lines[0]) if lines else None
        except json.JSONDecodeError:
            header = None
        if header is None and len(lines) <= 1:  # stopped while writing its first line
            if own:
                path.unlink()
            return {}
        if header != self.header:
            raise InputError(
                f"made for {header} but this run is {self.header}; delete it to start over",
                path=path,
            )
        measured: dict[str, tuple[list, float]] = {}
        for number, line in enumerate(lines[1:], start=2):
            try:
                chunk = json.loads(line)
                share = chunk["seconds"] / max(len(chunk["measured"]), 1)
                entries = [(key, (m, share)) for key, m in chunk["measured"].items()]
            except (ValueError, KeyError, TypeError, AttributeError):
                if number < len(lines):
                    raise InputError("not a measured chunk", path=path, line=number) from None
                if own:
                    logger.warning("%s: last line cut short, its chunk is timed again", path)
                    path.write_text("".join(f"{kept}\n" for kept in lines[:-1]))
                break
            measured.update(entries)
        return measured

    def append(self, jobs: list[Job], seconds: float) -> None:
        """Write one measured chunk (the header first if the file is new)."""
        measured = {}
        for kernel, candidate in jobs:
            m = outcome((kernel, candidate))
            measured[_job_key(kernel, candidate)] = [m.run_s, m.stage.value, m.error]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as f:
            if f.tell() == 0:
                f.write(json.dumps(self.header) + "\n")
            f.write(json.dumps({"seconds": seconds, "measured": measured}) + "\n")


def _jobs(kernels: Iterable[KernelResult]) -> Iterable[Job]:
    for kernel in kernels:
        yield kernel, None
        yield from ((kernel, c) for c in kernel.candidates)


def _measurement(stored: list) -> Measurement:
    run_s, stage, error = stored
    return Measurement(run_s, Stage(stage), error)
