"""Each method's search on a held-out network: its schedules chosen without the network's own
log, kept on disk so that a rerun continues."""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path

import tvm

from ..core.errors import InputError, RecommenderError
from ..core.targets import RemoteDevice, same_cpu, target_key
from ..learn import model_files
from ..learn.dataset import add_transfer_run, dataset_journals, load_dataset, training_targets
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
from . import endtoend
from .methods import Method

logger = logging.getLogger(__name__)

BUILDS = "builds"  # beside the methods' dirs: the compiled networks, until compared


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
    network: str,
    dataset_dir: Path,
    out_dir: Path,
    target: tvm.target.Target,
    pool_with: tuple[Path, ...] = (),
) -> tuple[model_files.CostModel, float]:
    """The cost model that never saw ``network``: trained without its kernels and without rows
    whose source schedule came from it, on ``dataset_dir`` and the ``pool_with`` datasets of
    other CPUs (saved in ``out_dir`` and reused on a rerun); and the seconds training it took
    here (0 when read back). Training is reported apart from search time: a user ships a
    trained model, as the paper amortises the source networks' tuning.

    A saved model trained on another state of the dataset is refused: the searches beside it
    were ranked by it, so mixing them with a new model would mix two experiments. One saved in
    an older format (``model_files.FORMAT``) is trained again, on the dataset as it is now:
    ``search`` redoes every search ranked by such a model.
    """
    datasets = (dataset_dir, *pool_with)
    kernels = [k for d in datasets for k in load_dataset(d) if k.network != network]
    data = training_set(kernels, exclude_source=network)
    if (out_dir / "metadata.json").is_file():
        model = model_files.load(out_dir, target=target)
        trained_on = model.metadata.get("training_data", {}).get("hash")
        if model.format != model_files.FORMAT:  # its searches are redone too: train it anew
            logger.warning("%s: saved in model format %d; training it again", out_dir, model.format)
        elif trained_on != data.data_hash():
            raise RecommenderError(  # not an InputError: ``search`` would skip the method
                f"{out_dir}: trained on another state of {', '.join(map(str, datasets))} "
                f"(hash {trained_on}, "
                f"now {data.data_hash()}); evaluate into a new --out, or delete {out_dir.parent}"
            )
        else:
            return model, 0.0
    start = time.perf_counter()
    model = fit_and_save(
        kernels,
        out_dir,
        target,
        describe={
            "directory": str(dataset_dir),
            "held_out": network,
            **({"pooled": [str(d) for d in datasets]} if pool_with else {}),
        },
        exclude_source=network,
        what=f"the transfer-benefit dataset without {network}",
        training_only=set().union(*map(training_targets, datasets)),
    )
    return model, time.perf_counter() - start


def method_dir(net_dir: Path, method: Method) -> Path:
    """Where ``method``'s state on a network lives; state left under a former name of the
    method is moved there first, so a renamed method resumes from it."""
    own = net_dir / method.name
    for former in method.formerly:
        if not own.exists() and (net_dir / former).is_dir():
            logger.info("%s: renamed to %s", net_dir / former, own)
            (net_dir / former).rename(own)
    return own


def search(
    name: str,
    method: Method,
    target: tvm.target.Target,
    out_dir: Path,
    *,
    load: Callable[[], tuple[Network, float]],
    model_for: Callable[[str], tuple[model_files.CostModel, float]],
    logs: Path | None = None,
    log_sizes: dict[str, int],
    remote: RemoteDevice | None = None,
    progress: bool = True,
    keep_in: Path | None = None,
    pooled_with: tuple[str, ...] = (),
) -> dict:
    """Run ``method`` on network ``name`` or read its earlier run; returns its search report,
    or ``{"skipped": why}`` (not kept: a rerun tries again, e.g. once a source log exists).
    ``pooled_with``: the other CPUs' datasets the held-out model trains on too; a ranked search
    made with others is redone.

    ``load`` gives the network (loaded only if the search runs) and the seconds loading it
    took; ``model_for`` the held-out cost model and the seconds training it took (0 if read
    back). Search time runs from the command's start to the compiled network, as a user would
    wait for it: reading the source logs, loading the network and the cost model, choosing
    (extract, rank or apply, time, check) and compiling, each phase in ``phases_s``; training
    the held-out model is ``held_out_training_s``, not search time. ``schedules_s`` is the
    choosing alone (what ``search_s`` counted before). The compiled network is kept beside
    ``out_dir`` (``builds/``), where the comparison finds it.

    The exhaustive runs over every other network measure pairs of the transfer-benefit
    dataset; with ``keep_in`` (a dataset dir) they are added to it. Pairs measured by another
    exhaustive run beside ``out_dir`` or by ``recommender dataset build`` (its journal of the
    network, same target) are not timed again (their recorded time is counted). An
    earlier run made from other states of the source logs (a log resumed or added since;
    ``log_sizes``: records per log) is redone, as is a ranked search made with a cost model of
    an older format (``model_files.FORMAT``).
    """
    try:
        names = resolve_sources(method.sources, name, logs)
        source_logs = {n: log_dir(n, logs) for n in names}
    except InputError as err:
        return {"skipped": str(err)}
    sizes = {n: log_sizes[n] for n in names}
    report_path = out_dir / "search.json"
    done = read_json(report_path)
    ranked = method.budget is not None
    if done is not None:
        pooled = pooled_with if ranked else ()
        model_format = model_files.FORMAT if ranked else None
        if (
            done.get("source_records") == sizes
            and method.made(done.get("method"))
            and tuple(done.get("pooled_with", ())) == pooled
            and done.get("cost_model_format", 1 if ranked else None) == model_format
        ):
            return done
        logger.warning(
            "%s: made by %s from source logs of %s records pooled with %s (cost model format "
            "%s), now %s, %s and %s (%s); searching again",
            report_path,
            done.get("method"),
            done.get("source_records"),
            done.get("pooled_with", []),
            done.get("cost_model_format"),
            method.to_json(),
            sizes,
            list(pooled),
            model_format,
        )
    phases, trained_s = {}, 0.0
    start = time.perf_counter()
    sources = load_sources(source_logs, target, top_n=method.top_n)
    phases["read_sources"] = time.perf_counter() - start
    network, phases["load_network"] = load()
    if method.budget is None:
        report, prepared = _exhaustive(
            network, method, sources, target, out_dir, remote, progress, keep_in
        )
    else:
        start = time.perf_counter()
        try:
            model, trained_s = model_for(network.name)
        except InputError as err:
            return {"skipped": f"no held-out cost model: {err}"}
        phases["load_model"] = time.perf_counter() - start - trained_s
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
        report, prepared = recommendation_summary(result, {}), result.prepared
    start = time.perf_counter()
    builds = endtoend.Builds(prepared, target, keep=out_dir.parent / BUILDS)
    builds.want(method.name, out_dir)
    builds.build_wanted()
    phases["compile"] = time.perf_counter() - start
    phases = {k: round(v, 2) for k, v in phases.items()} | report["phases_s"]
    report.update(
        schedules_s=report["search_s"],
        search_s=round(sum(phases.values()), 2),
        phases_s=phases,
        held_out_training_s=round(trained_s, 2),
        method=method.to_json(),
        sources=names,
        source_records=sizes,
        **(
            {"pooled_with": list(pooled_with), "cost_model_format": model_files.FORMAT}
            if ranked
            else {}
        ),
    )
    write_json(report_path, report)
    return report


def _exhaustive(
    network, method, sources, target, out_dir, remote, progress, keep_in
) -> tuple[dict, tvm.IRModule]:
    """The paper's algorithm: every candidate timed, measurements journaled as they are made
    (those of other exhaustive runs beside ``out_dir`` and of the dataset ``keep_in`` on this
    target read, not timed again); its report and the prepared network."""
    beside = [p for p in out_dir.parent.glob(f"*/{JOURNAL}") if p.parent != out_dir]
    if keep_in is not None:  # every network's: the dataset times a kernel two networks share once
        beside += dataset_journals(keep_in, target)
    journal = Journal(out_dir / JOURNAL, target, beside)
    run = transfer_tune(
        network,
        target,
        sources,
        remote=remote,
        progress=progress,
        journal=journal,
        database_dir=out_dir,
        levels=method.levels,
    )
    if keep_in is not None and method.sources == "all":
        _keep_measurements(run, keep_in, families({network.name: network}))
    report = summary(run, {})
    report["candidates_timed"] = sum(c.run_s is not None for k in run.kernels for c in k.candidates)
    return report, run.prepared


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
