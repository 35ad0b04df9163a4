"""Whole-network builds and timings: untuned, or with a MetaSchedule database applied.

Untuned means the plain Relax build of the same lowered module (naive single-threaded loops,
far weaker than TVM's old TOPI schedules): every speedup against it says so.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Hashable
from pathlib import Path

import numpy as np
import tvm
import tvm_ffi
from tvm import relax
from tvm.s_tir import meta_schedule as ms

from ..backend.verify import compare
from ..backend.workers import run_jobs
from ..core.errors import RecommenderError
from ..core.interrupts import checkpoint
from ..networks.network import Network

TIMING_REPEATS = 5
SLOW_RUN_S = 1.0  # builds slower than this per run are timed without warm-up after round 1
BUILD_TIMEOUT_S = 3600.0


def build(prepared: tvm.IRModule, target: tvm.target.Target, database=None):
    """Compile a network (``tasks.prepare``d); tasks without a record stay unscheduled."""
    database = database if database is not None else ms.database.MemoryDatabase()
    return ms.relax_integration.compile_relax(database, prepared, target, params=None)


class Builds:
    """Builds of one prepared network with several databases, memoised by key and compiled in
    worker processes, one per core.

    ``compile_relax`` and the code generation of the first VM are single-threaded (about 40 s
    for ResNet-18, see docs/tvm.md), so builds wanted together (``want``, then ``build_wanted``)
    run side by side. Each worker reads the network (saved once as Relax JSON) on its first
    build and returns a shared library, which ``get`` loads here without code generation (and
    ``export`` copies: a build for another device's target is exported, never loaded).

    With ``keep`` (a directory), libraries are also kept there under a digest of what they are
    made of (network, target, TVM version, database records): a run stopped midway rebuilds
    nothing it had built (``compiled`` counts what this object compiled).
    """

    def __init__(self, prepared: tvm.IRModule, target: tvm.target.Target, keep: Path | None = None):
        self.prepared, self.target, self.keep = prepared, target, keep
        self.compiled = 0
        self._libraries: dict[Hashable, Path] = {}
        self._loaded: dict[Hashable, tvm.runtime.Module] = {}
        self._wanted: dict[Hashable, ms.database.Database | Path | None] = {}
        self._tmp: tempfile.TemporaryDirectory | None = None
        self._count = 0
        self._network_digest: str | None = None

    def want(self, key: Hashable, database: ms.database.Database | Path | None = None) -> None:
        """Ask for the build with ``database`` (a database, a JSON work dir, or None: untuned)."""
        if key not in self._libraries:
            self._wanted.setdefault(key, database)

    def __contains__(self, key: Hashable) -> bool:
        """Whether the build of ``key`` is made or wanted."""
        return key in self._libraries or key in self._wanted

    def get(self, key: Hashable) -> tvm.runtime.Module:
        """The build of ``key``, loaded (building everything wanted first)."""
        self._build(key)
        if key not in self._loaded:
            checkpoint()  # loading a VGG-16 build (550 MB of weights) takes seconds
            self._loaded[key] = tvm.runtime.load_module(str(self._libraries[key]))
        return self._loaded[key]

    def build_wanted(self) -> None:
        if not self._wanted:
            return
        checkpoint()
        work = self._work_dir()
        jobs, building = [], []
        for key, database in self._wanted.items():
            self._count += 1
            database_dir = _database_dir(database, work / f"db{self._count}")
            kept = self._kept_path(database_dir)
            if kept is not None and kept.exists():
                self._libraries[key] = kept
                continue
            building.append((key, kept))
            jobs.append(
                (
                    str(work / "network.json"),
                    json.loads(str(self.target)),
                    database_dir,
                    str(work / f"build{self._count}.so"),
                )
            )
        outcomes = run_jobs("network-build", None, BUILD_TIMEOUT_S, _build_library, jobs, "build")
        failed = []
        for (key, kept), (path, error) in zip(building, outcomes):
            if error:
                failed.append(f"{key!r}: {error}")
            else:
                self.compiled += 1
                self._libraries[key] = _kept_copy(Path(path), kept) if kept else Path(path)
            checkpoint()  # a batch of VGG-16 builds takes minutes; the finished ones are kept
        self._wanted.clear()
        if failed:  # raised once the others are kept: a retry rebuilds only what failed
            raise RecommenderError("network build failed: " + "; ".join(failed))

    def export(self, key: Hashable, path: Path) -> Path:
        """Copy the build of ``key`` as a shared library loadable with
        ``tvm.runtime.load_module`` (a loaded library cannot be exported again)."""
        self._build(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self._libraries[key], path)
        return path

    def _build(self, key: Hashable) -> None:
        if key not in self:
            raise KeyError(f"no build of {key!r} was wanted")
        self.build_wanted()

    def _kept_path(self, database_dir: str | None) -> Path | None:
        """Where the library of this database is kept, named by what it is made of."""
        if self.keep is None:
            return None
        if self._network_digest is None:
            self._network_digest = str(tvm_ffi.structural_hash(self.prepared))
        digest = hashlib.sha256(
            "|".join([self._network_digest, str(self.target), tvm.__version__]).encode()
        )
        for name in ("database_workload.json", "database_tuning_record.json"):
            digest.update(Path(database_dir, name).read_bytes() if database_dir else b"untuned")
        return self.keep / f"{digest.hexdigest()[:24]}.so"

    def _work_dir(self) -> Path:
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="recommender-builds-")
            path = Path(self._tmp.name)
            (path / "network.json").write_text(tvm.ir.save_json(self.prepared))
        return Path(self._tmp.name)


def _kept_copy(library: Path, kept: Path) -> Path:
    """``library`` copied to ``kept`` whole or not at all (a run may stop during the copy)."""
    kept.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(library, kept.with_suffix(".tmp"))
    return kept.with_suffix(".tmp").replace(kept)


def _database_dir(database: ms.database.Database | Path | None, directory: Path) -> str | None:
    """A JSON work dir holding ``database``'s records (a work dir is used as it is)."""
    if database is None:
        return None
    if isinstance(database, Path):
        return str(database)
    directory.mkdir(parents=True)
    copy = ms.database.JSONDatabase(work_dir=str(directory))
    for record in database.get_all_tuning_records():
        workload = copy.commit_workload(record.workload.mod)
        copy.commit_tuning_record(
            ms.database.TuningRecord(
                record.trace, workload, record.run_secs, record.target, record.args_info
            )
        )
    return str(directory)


_loaded: dict[str, tvm.IRModule] = {}  # in a build worker: the network it last read


def _build_library(network_json: str, target: dict, database_dir: str | None, out: str) -> str:
    if network_json not in _loaded:
        _loaded.clear()
        _loaded[network_json] = tvm.ir.load_json(Path(network_json).read_text())
    database = ms.database.JSONDatabase(work_dir=database_dir) if database_dir else None
    build(_loaded[network_json], tvm.target.Target(target), database).export_library(out)
    return out


def _vm(executable) -> relax.VirtualMachine:
    return relax.VirtualMachine(executable, tvm.cpu())


def run(executable, inputs: list[np.ndarray]) -> list[np.ndarray]:
    out = _vm(executable)["main"](*[tvm.runtime.tensor(a) for a in inputs])
    outs = out if isinstance(out, (list, tuple, tvm.ir.Array)) else [out]
    return [o.numpy() for o in outs]


class ReferenceOutputs:
    """What ``reference`` computes on the network's seeded random inputs, run once for every
    build checked against it (an untuned BERT runs 75 s; an evaluation checks seven builds)."""

    def __init__(self, reference, network: Network):
        self.inputs = network.random_inputs()
        self.outputs = run(reference, self.inputs)

    def mismatch(self, candidate) -> str | None:
        """None when ``candidate`` computes the reference's outputs, else what differs."""
        for expected, got in zip(self.outputs, run(candidate, self.inputs)):
            problem = compare(got, expected, str(expected.dtype))
            if problem:
                return problem
        return None

    def partition(self, builds: dict) -> tuple[dict, dict[Hashable, str]]:
        """The ``builds`` that compute the reference's outputs, and what differs in each of the
        others: a wrong build's speed is never reported."""
        right, wrong = {}, {}
        for key, build in builds.items():
            problem = self.mismatch(build)
            if problem:
                wrong[key] = problem
            else:
                right[key] = build
        return right, wrong


def outputs_match(reference, candidate, network: Network) -> str | None:
    """None when ``candidate`` computes what ``reference`` does on seeded random inputs."""
    return ReferenceOutputs(reference, network).mismatch(candidate)


def time_interleaved(
    executables: dict[str, object],
    network: Network,
    *,
    repeats: int = TIMING_REPEATS,
    others: dict[str, Callable[[], float]] | None = None,
    slow_s: float = SLOW_RUN_S,
) -> dict[str, float]:
    """Median end-to-end seconds of each build, measured in alternating rounds.

    The machine is shared and noisy: rounds alternate between builds so drift hits all alike.
    A round is one ``time_evaluator`` call (1 warm-up, then runs for at least 200 ms), except
    for a build whose first round ran longer than ``slow_s`` per run (an untuned BERT takes
    75 s): its later rounds are one plain run each, as a warm-up would only double their cost.
    ``others`` are timed in the same rounds: each call is one round, returning seconds per run
    (PyTorch eager, say).
    """
    inputs = [tvm.runtime.tensor(a) for a in network.random_inputs()]
    dev = tvm.cpu()
    timers: dict[str, Callable[[], float]] = {}
    plain_runs: dict[str, Callable[[], float]] = {}
    for name, exe in executables.items():
        vm = _vm(exe)
        vm.set_input("main", *inputs)
        evaluator = vm.time_evaluator("invoke_stateful", dev, number=1, repeat=1, min_repeat_ms=200)
        timers[name] = lambda evaluator=evaluator: evaluator("main").mean
        plain_runs[name] = lambda vm=vm: _seconds(lambda: vm.invoke_stateful("main"))
    timers |= others or {}
    samples: dict[str, list[float]] = {name: [] for name in timers}
    for _ in range(repeats):
        checkpoint()
        for name, timer in timers.items():
            samples[name].append(timer())
            if len(samples[name]) == 1 and samples[name][0] > slow_s and name in plain_runs:
                timers[name] = plain_runs[name]
    return {name: statistics.median(values) for name, values in samples.items()}


def _seconds(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start
