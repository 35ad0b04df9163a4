"""The transfer-benefit dataset: every same-class (source record, target kernel) pair, measured.

For each target network, each of its kernels gets its pool of the *other* networks' records
(``transfer.candidate.SourceIndex.pool``: every same-class record and, at the anchor level,
those of the nearest workloads with the same anchor block; the ``top_n`` best per source
workload, not only the best: the model must learn what transfers, not only what was best at
home). Each candidate is applied, featurised (schema
in ``features``), checked and timed, together with the untuned kernel in the same batch.

Stored per (kernel, source model) as ``<dir>/<network>/<task index>-<source>.npz`` (features,
times, status, source labels, networks and the keys of the source records it measured) plus
``<dir>/provenance.json``; every chunk measured is also appended to
``<dir>/<network>/journal.jsonl`` (``transfer.journal``), with the seconds it took, so the
evaluation's exhaustive runs over the same pool read these measurements instead of timing them
again (and still report what the timing cost), and so does the build itself: a kernel that
another network has too (ResNet-34 has all of ResNet-18's) is applied and featurised for its own
rows but timed once. A build measures only the records a file lacks
and drops the rows of records no longer among the source log's ``top_n`` (a resumed collection
outran them), so an interrupted build resumes where it stopped and a newly logged network only
adds files.
``load_dataset`` merges a kernel's files.

The paper's exhaustive transfer with every other network as source measures exactly the rank-0
pairs of one target network; ``add_transfer_run`` keeps such a run's measurements as rows, so the
evaluation and the dataset do not time the same pairs twice.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import logging
import platform
from collections.abc import Collection
from pathlib import Path

import numpy as np
import tvm
from tqdm import tqdm

from ..core.errors import InputError
from ..core.targets import RemoteDevice, target_key
from ..logs.sources import load_sources
from ..logs.tuning_log import cpu_model
from ..networks.network import Network
from ..networks.zoo import families
from ..tasks.extract import extract_tasks
from ..transfer.candidate import Candidate, KernelResult, SourceIndex
from ..transfer.exhaustive import TransferRun
from ..transfer.journal import JOURNAL, Journal
from ..transfer.timing import CHUNK, measure_kernels
from .features import FEATURE_NAMES, SCHEMA_VERSION, featurize
from .kernel_data import MIGRATES, KernelData

logger = logging.getLogger(__name__)


DEFAULT_TOP_N = 3


def _provenance(
    directory: Path,
    target: tvm.target.Target,
    top_n: int | None,
    training_targets: list[str] = (),
) -> None:
    """Check the dataset's provenance against this build (``top_n`` None: any), or start it;
    it lists the networks measured as training targets only."""
    path = directory / "provenance.json"
    expected = {
        "schema": SCHEMA_VERSION,
        "features": len(FEATURE_NAMES),
        "tvm": tvm.__version__,
        "target_key": target_key(target),
        "top_n": top_n,
    }
    if path.exists():
        found = json.loads(path.read_text())
        if found.get("schema") in MIGRATES:  # older rows are migrated as they are loaded
            found |= {"schema": SCHEMA_VERSION, "features": len(FEATURE_NAMES)}
        for key, value in expected.items():
            if value is not None and found.get(key) != value:
                raise InputError(f"built with {key}={found.get(key)}, expected {value}", path=path)
        listed = set(found.get("training_targets", []))
        if set(training_targets) - listed:  # written as read: a migrated schema stays as it was
            raw = json.loads(path.read_text())
            raw["training_targets"] = sorted(listed | set(training_targets))
            path.write_text(json.dumps(raw, indent=1) + "\n")
        return
    directory.mkdir(parents=True, exist_ok=True)
    expected.update(
        top_n=top_n or DEFAULT_TOP_N,
        target=json.loads(str(target)),
        machine={"cpu": cpu_model(), "arch": platform.machine()},
        started=datetime.date.today().isoformat(),
        training_targets=sorted(training_targets),
    )
    path.write_text(json.dumps(expected, indent=1) + "\n")


def build_dataset(
    networks: dict[str, Network],
    logs: dict[str, Path],
    directory: Path,
    target: tvm.target.Target,
    *,
    top_n: int = DEFAULT_TOP_N,
    remote: RemoteDevice | None = None,
    progress: bool = True,
    training_targets: Collection[str] = (),
) -> list[Path]:
    """Measure every same-class pair for every network (leave-one-model-out sources). The
    ``training_targets`` among them have no log and are never held out (``training_targets``
    below reads them back).

    One file per (target kernel, source model), so a log added to the corpus later only adds
    files, and a file only gets the records it lacks. Every network's pools are read first, so
    the progress bar counts (and estimates the time of) the whole build, which takes hours.
    Returns the files written or present.
    """
    _provenance(directory, target, top_n, list(training_targets))
    sources = load_sources(logs, target, top_n=top_n)
    family_of = families(networks)
    written: list[Path] = []
    plans = []  # per network: its kernels with the files they lack records in
    for name, network in networks.items():
        others = SourceIndex(s for s in sources if s.model != name)
        todo = _missing(network, target, others, sorted(logs), directory / name, written)
        plans.append((name, todo))
    pending = sum(len(m) for _, todo in plans for _, files in todo for _, m, _ in files)
    with tqdm(total=pending, desc="dataset", unit="cand", disable=not progress) as bar:
        for name, todo in plans:
            if not todo:
                continue
            bar.set_description(f"dataset {name}")
            # the other networks' journals too: a kernel another network shares is timed once
            others = dataset_journals(directory, target, besides=name)
            journal = Journal(directory / name / JOURNAL, target, others)
            on_chunk = journal.append if journal.fits() else None
            if on_chunk is None:
                logger.warning("%s: made for another target, not written", journal.path)
            for batch in _batches(todo):
                kernels = [  # one per kernel, its untuned workload timed once for all its files
                    KernelResult(
                        task,
                        [Candidate(s, task.mod, target, lv) for _, m, _ in files for s, lv in m],
                    )
                    for task, files in batch
                ]
                if on_chunk is not None:
                    journal.restore(kernels)
                measure_kernels(kernels, target, remote=remote, on_chunk=on_chunk)
                for (_, files), kernel in zip(batch, kernels):
                    candidates = iter(kernel.candidates)
                    for path, missing, held in files:
                        part = [next(candidates) for _ in missing]
                        rows = _kernel_data(
                            name, dataclasses.replace(kernel, candidates=part), family_of, target
                        )
                        _with_rows(held, rows).save(path)
                        written.append(path)
                        bar.update(len(missing))
    return written


def _missing(
    network: Network,
    target: tvm.target.Target,
    others: SourceIndex,
    models: list[str],
    out: Path,
    written: list[Path],
) -> list:
    """``network``'s kernels whose files in ``out`` lack records of their pool (``others``):
    per kernel, (task, [(file, missing (source, level) pairs, rows held)]). Complete files go to
    ``written``; the rows of records that left the pool are dropped from them."""
    out.mkdir(exist_ok=True)
    todo = []
    for index, task in enumerate(extract_tasks(network, target)):
        pool = others.pool(task)
        files = []
        for model in models:
            same = [(s, level) for s, level in pool if s.model == model]
            path = out / f"{index:03d}-{model}.npz"
            if not same:  # the source log no longer has records of this class
                path.unlink(missing_ok=True)
                continue
            held, stale = _held_rows(path, {s.trace_key for s, _ in same})
            missing = [(s, lv) for s, lv in same if not held or s.trace_key not in held.records]
            if missing:
                files.append((path, missing, held))
                continue
            if stale:
                held.save(path)
            written.append(path)
        if files:
            todo.append((task, files))
    return todo


def add_transfer_run(run: TransferRun, directory: Path, family_of: dict[str, str]) -> list[Path]:
    """Keep the measurements of an exhaustive transfer run on ``run.network`` as dataset rows
    (records already in the dataset keep their rows; the default level's design-space samples
    have no source and are not rows). Returns the files it added rows to.

    Raises InputError if the dataset was built for another target, schema or TVM version.
    """
    _provenance(directory, run.target, None)
    out = directory / run.network
    out.mkdir(exist_ok=True)
    written = []
    for index, kernel in enumerate(run.kernels):
        by_model: dict[str, list] = {}
        for candidate in kernel.candidates:
            if candidate.source is None:  # a design-space sample, not a transfer pair
                continue
            by_model.setdefault(candidate.source.model, []).append(candidate)
        for model, candidates in sorted(by_model.items()):
            path = out / f"{index:03d}-{model}.npz"
            held, _ = _held_rows(path, None)
            known = set(held.records) if held else set()
            new = [c for c in candidates if c.source.trace_key not in known]
            if not new:
                continue
            part = dataclasses.replace(kernel, candidates=new)
            _with_rows(held, _kernel_data(run.network, part, family_of, run.target)).save(path)
            written.append(path)
    return written


def dataset_journals(directory: Path, target: tvm.target.Target, besides: str = "") -> list[Path]:
    """The journals of the dataset's networks (but ``besides``) made for ``target``."""
    fits = Journal(directory / JOURNAL, target).fits
    return [
        p for p in sorted(directory.glob(f"*/{JOURNAL}")) if p.parent.name != besides and fits(p)
    ]


def _held_rows(path: Path, wanted: set[str] | None) -> tuple[KernelData | None, bool]:
    """The rows of the kernel file at ``path`` whose source record is in ``wanted`` (None: all),
    and whether any were dropped. None when there is no usable file: absent, unreadable, of
    another schema, or too old to name its records; it is then measured afresh."""
    try:
        held = KernelData.load(path)
    except InputError:
        return None, False
    if not held.records:
        return None, False
    if wanted is None:
        return held, False
    keep = np.array([r in wanted for r in held.records], dtype=bool)
    return held.rows(keep), not keep.all()


def _with_rows(held: KernelData | None, new: KernelData) -> KernelData:
    return KernelData.merge([held, new]) if held and len(held.run_s) else new


def _batches(todo: list, size: int = 2 * CHUNK):
    """Kernels grouped to about ``size`` candidates: worker pools start once per chunk, not per
    kernel, and a finished group is saved before the next starts."""
    batch, count = [], 0
    for item in todo:
        batch.append(item)
        count += sum(len(missing) for _, missing, _ in item[1])
        if count >= size:
            yield batch
            batch, count = [], 0
    if batch:
        yield batch


def _kernel_data(
    name: str, kernel: KernelResult, family_of: dict[str, str], target: tvm.target.Target
) -> KernelData:
    task = kernel.task
    applied = [c for c in kernel.candidates if c.applied.ok]
    features = np.zeros((len(kernel.candidates), len(FEATURE_NAMES)))
    if applied:
        matrix = featurize(
            task,
            [(c.source, c.applied, c.level) for c in applied],
            target,
            family_of=family_of,
            target_family=family_of.get(name, ""),
        )
        rows = [i for i, c in enumerate(kernel.candidates) if c.applied.ok]
        features[rows] = matrix
    run_s = np.array([c.run_s if c.run_s is not None else np.nan for c in kernel.candidates])
    status = np.array([c.failure.stage.code if c.failure else 0 for c in kernel.candidates])
    untuned = kernel.untuned_s if kernel.untuned_s is not None else np.nan
    return KernelData(
        network=name,
        task=task.name,
        kernel_class=task.kernel_class.key,
        weight=task.weight,
        untuned_s=float(untuned),
        features=features,
        run_s=run_s,
        status=status,
        sources=[c.source.label for c in kernel.candidates],
        records=[c.source.trace_key for c in kernel.candidates],
        source_models=[c.source.model for c in kernel.candidates],
    )


def load_dataset(directory: Path, *, networks: list[str] | None = None) -> list[KernelData]:
    """Every kernel of a built dataset (optionally only some networks), checked on load."""
    if not (directory / "provenance.json").is_file():
        raise InputError(
            "not a transfer-benefit dataset (no provenance.json); "
            "make one with `recommender dataset build`",
            path=directory,
        )
    files = sorted(f for f in directory.glob("*/*.npz") if not f.name.endswith(".tmp.npz"))
    if networks is not None:
        unknown = set(networks) - {f.parent.name for f in files}
        if unknown:
            raise InputError(f"no kernels of {', '.join(sorted(unknown))}", path=directory)
        files = [f for f in files if f.parent.name in networks]
    if not files:
        raise InputError("the dataset holds no kernels yet", path=directory)
    parts: dict[tuple[str, str], list[KernelData]] = {}
    for f in files:
        parts.setdefault((f.parent.name, f.name.split("-", 1)[0]), []).append(KernelData.load(f))
    return [KernelData.merge(p) for p in parts.values()]


def dataset_provenance(directory: Path) -> dict:
    return json.loads((directory / "provenance.json").read_text())


def training_targets(directory: Path) -> set[str]:
    """The dataset's networks measured as targets only: trained on, never held out."""
    path = directory / "provenance.json"
    return (
        set(dataset_provenance(directory).get("training_targets", [])) if path.is_file() else set()
    )
