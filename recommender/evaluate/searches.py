"""Each method's search on a held-out network: its schedules chosen without the network's own
log, kept on disk so that a rerun continues."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from pathlib import Path

import tvm

from ..core.errors import InputError, RecommenderError
from ..core.targets import RemoteDevice, same_cpu, target_key
from ..learn import model_files
from ..learn.dataset import add_transfer_run, load_dataset
from ..learn.fit import fit_and_save
from ..learn.training import training_set
from ..logs.sources import load_sources, log_dir, resolve_sources
from ..logs.tuning_log import PROVENANCE, TuningLog
from ..networks.network import Network
from ..networks.zoo import families
from ..recommend.report import recommendation_summary
from ..recommend.search import recommend
from ..transfer.database import write_records
from ..transfer.exhaustive import TransferRun, transfer_tune
from ..transfer.journal import JOURNAL, Journal
from ..transfer.report import summary
from .methods import Method

logger = logging.getLogger(__name__)


def read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except json.JSONDecodeError:
        logger.warning("%s: unreadable, recomputing it", path)
        return None


def write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    tmp.replace(path)


def held_out_model(
    network: str, dataset_dir: Path, out_dir: Path, target: tvm.target.Target
) -> model_files.CostModel:
    """The cost model that never saw ``network``: trained without its kernels and without rows
    whose source schedule came from it (saved in ``out_dir`` and reused on a rerun).

    A saved model trained on another state of the dataset is refused: the searches beside it
    were ranked by it, so mixing them with a new model would mix two experiments.
    """
    kernels = [k for k in load_dataset(dataset_dir) if k.network != network]
    data = training_set(kernels, exclude_source=network)
    if (out_dir / "metadata.json").is_file():
        model = model_files.load(out_dir, target=target)
        trained_on = model.metadata.get("training_data", {}).get("hash")
        if trained_on != data.data_hash():
            raise RecommenderError(  # not an InputError: ``search`` would skip the method
                f"{out_dir}: trained on another state of {dataset_dir} (hash {trained_on}, "
                f"now {data.data_hash()}); evaluate into a new --out, or delete {out_dir.parent}"
            )
        return model
    return fit_and_save(
        kernels,
        out_dir,
        target,
        describe={"directory": str(dataset_dir), "held_out": network},
        exclude_source=network,
        what=f"the transfer-benefit dataset without {network}",
    )


def search(
    name: str,
    method: Method,
    target: tvm.target.Target,
    out_dir: Path,
    *,
    load: Callable[[], Network],
    model_for: Callable[[str], model_files.CostModel],
    logs: Path | None = None,
    log_sizes: dict[str, int],
    remote: RemoteDevice | None = None,
    progress: bool = True,
    keep_in: Path | None = None,
) -> dict:
    """Run ``method`` on network ``name`` (``load``ed only if the search runs), or read its
    earlier run; returns its search report, or ``{"skipped": why}`` (not kept: a rerun tries
    again, e.g. once a source log exists).

    The exhaustive run over every other network measures the rank-0 pairs of the
    transfer-benefit dataset; with ``keep_in`` (a dataset dir) they are added to it. Pairs
    measured by another exhaustive run beside ``out_dir`` are not timed again. An earlier
    run made from other states of the source logs (a log resumed or added since; ``log_sizes``:
    records per log) is redone.
    """
    try:
        names = resolve_sources(method.sources, name, logs)
        source_logs = {n: log_dir(n, logs) for n in names}
    except InputError as err:
        return {"skipped": str(err)}
    sizes = {n: log_sizes[n] for n in names}
    report_path = out_dir / "search.json"
    done = read_json(report_path)
    if done is not None:
        if done.get("source_records") == sizes and done.get("method") == method.to_json():
            return done
        logger.warning(
            "%s: made by %s from source logs of %s records, now %s and %s; searching again",
            report_path,
            done.get("method"),
            done.get("source_records"),
            method.to_json(),
            sizes,
        )
    network = load()
    sources = load_sources(source_logs, target, top_n=method.top_n)
    if method.budget is None:
        report = _exhaustive(network, method, sources, target, out_dir, remote, progress, keep_in)
    else:
        try:
            model = model_for(network.name)
        except InputError as err:
            return {"skipped": f"no held-out cost model: {err}"}
        result = recommend(
            network,
            target,
            sources,
            model,
            method.budget,
            family_of=families({network.name: network}),
            remote=remote,
            progress=progress,
            levels=method.levels,
        )
        write_records(result.picks, target, out_dir)
        report = recommendation_summary(result, {})
    report.update(method=method.to_json(), sources=names, source_records=sizes)
    write_json(report_path, report)
    return report


def _exhaustive(network, method, sources, target, out_dir, remote, progress, keep_in) -> dict:
    """The paper's algorithm: every candidate timed, measurements journaled as they are made
    (those of other exhaustive runs beside ``out_dir`` read, not timed again)."""
    beside = [p for p in out_dir.parent.glob(f"*/{JOURNAL}") if p.parent != out_dir]
    run = transfer_tune(
        network,
        target,
        sources,
        remote=remote,
        progress=progress,
        journal=Journal(out_dir / JOURNAL, target, beside),
        database_dir=out_dir,
        levels=method.levels,
    )
    if keep_in is not None and method.sources == "all":
        _keep_measurements(run, keep_in, families({network.name: network}))
    report = summary(run, {})
    report["candidates_timed"] = sum(c.run_s is not None for k in run.kernels for c in k.candidates)
    return report


def log_record_counts(source_logs: dict[str, Path], target: tvm.target.Target) -> dict[str, int]:
    """Records per log: what a cached search is checked against.

    Each log is also a network's full-MetaSchedule reference, its tuning time the clock of
    the time to match: it must have been tuned on ``target``'s CPU.
    """
    sizes = {}
    for name, path in source_logs.items():
        log = TuningLog(path)  # read in full later, by the searches and the comparison
        log.unpack()
        tuned_for = log.provenance().get("target_key")
        if not same_cpu(tuned_for, target):
            raise InputError(
                f"tuned for {tuned_for}, not for this evaluation's {target_key(target)}: "
                "MetaSchedule's log is the reference and its clock, so it must come from this "
                "CPU (run where the corpus was tuned, or rebuild the corpus with "
                "scripts/rebuild_corpus.py)",
                path=path / PROVENANCE,
            )
        log.check_compatible(target, other_cores=True)
        sizes[name] = log.record_count()
    return sizes


def search_digest(report: dict) -> str:
    """What a comparison records of each search it timed: a search redone with another result
    makes it compare again."""
    return hashlib.sha256(json.dumps(report, sort_keys=True).encode()).hexdigest()[:16]


def _keep_measurements(run: TransferRun, dataset_dir: Path, family_of: dict[str, str]) -> None:
    try:
        added = add_transfer_run(run, dataset_dir, family_of)
    except InputError as err:  # e.g. the edge profile's target: its timings are not the data's
        logger.info("%s: measurements not added to the dataset (%s)", run.network, err)
        return
    logger.info("%s: measurements added to %d dataset files", run.network, len(added))
