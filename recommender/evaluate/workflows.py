"""End-to-end procedures behind the CLI commands: from a model name to files and a report."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import tvm

from ..core import paths
from ..core.errors import InputError, RecommenderError
from ..core.targets import RemoteDevice, is_host_compatible
from ..learn import model_files
from ..learn.feature_cache import FeatureCache
from ..logs.sources import load_sources
from ..logs.tuning_log import TuningLog
from ..networks.network import Network
from ..networks.zoo import families
from ..recommend.report import recommendation_summary
from ..recommend.search import Budget, recommend
from ..recommend.warm_start import compare_curves, plot_curves, then_tune
from ..tasks.extract import prepare
from ..transfer.apply import Level
from ..transfer.candidate import LEVELS
from ..transfer.database import write_records
from ..transfer.exhaustive import transfer_tune
from ..transfer.journal import JOURNAL, Journal
from ..transfer.report import UNTUNED_NOTE, summary
from . import endtoend
from .baselines import MetaScheduleBuilds
from .metrics import paper_metrics

logger = logging.getLogger(__name__)


def database_configuration() -> dict:
    """How the network was prepared before its kernels were extracted (the corpus's
    configuration): the database's records match only a module prepared the same way,
    ``recommender.tasks.extract.prepare(mod, target, Configuration(**this))``."""
    return paths.configuration().to_json()


def transfer_tune_to_dir(
    network: Network,
    target: tvm.target.Target,
    source_logs: dict[str, Path],
    out_dir: Path,
    *,
    top_n: int = 1,
    remote: RemoteDevice | None = None,
    progress: bool = True,
    levels: tuple[Level, ...] = LEVELS,
) -> dict:
    """The paper's transfer-tuning of ``network`` from the logs of ``source_logs`` (model: dir),
    with candidates at ``levels`` (``(Level.EXACT,)``: the paper's algorithm as published).

    ``out_dir`` receives TVM's two database files (usable by ``compile_relax``), the compiled
    network ``<name>.so``, and ``report.json``. The tuned build must compute what the untuned
    build computes, or nothing but the report is kept.
    """
    sources = load_sources(source_logs, target, top_n=top_n)
    journal = Journal(out_dir / JOURNAL, target)
    run = transfer_tune(
        network,
        target,
        sources,
        remote=remote,
        progress=progress,
        journal=journal,
        database_dir=out_dir,
        levels=levels,
    )
    every = endtoend.Builds(run.prepared, target)
    every.want("untuned")
    every.want("transfer", out_dir)
    untuned, tuned = every.get("untuned"), every.get("transfer")
    problem = endtoend.outputs_match(untuned, tuned, network)
    if problem:
        raise RecommenderError(f"{network.name}: the tuned build is wrong ({problem})")
    times = endtoend.time_interleaved({"untuned": untuned, "transfer": tuned}, network)
    library = every.export("transfer", out_dir / f"{network.name}.so")
    report = summary(run, times)
    report.update(
        sources=sorted(source_logs),
        top_n=top_n,
        levels=[level.value for level in levels],
        library=str(library),
        database=str(out_dir),
        configuration=database_configuration(),
    )
    (out_dir / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    return report


def compare_with_metaschedule(
    network: Network, target: tvm.target.Target, transfer_dir: Path, log_path: Path
) -> dict:
    """The paper's table for one network: transfer-tuning against MetaSchedule's own log.

    Builds (all timed in one interleaved run): untuned, transfer-tuned (from ``transfer_dir``,
    written by ``transfer-tune``), MetaSchedule at the end of its budget, and MetaSchedule with
    the records it had after the same wall time as transfer-tuning's search. Then bisects the
    log's stamps for MetaSchedule's time to match the transfer-tuned latency.
    """
    report_path = transfer_dir / "report.json"
    try:
        transfer_report = json.loads(report_path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise InputError(f"no usable transfer report ({err})", path=report_path) from None
    search_s = transfer_report["search_s"]
    log = TuningLog.open(log_path, target=target)
    prepared = prepare(network.mod, target)
    every = endtoend.Builds(prepared, target)
    metaschedule = MetaScheduleBuilds(network, prepared, target, log, every)
    every.want("untuned")
    every.want("transfer", transfer_dir)
    metaschedule.want([metaschedule.tuning_s, search_s])
    builds = {
        "untuned": every.get("untuned"),
        "transfer": every.get("transfer"),
        "metaschedule": metaschedule.at(metaschedule.tuning_s),
        "metaschedule_same_time": metaschedule.at(search_s),
    }
    times = endtoend.time_interleaved(builds, network)
    match_s = metaschedule.times_to_match({"transfer": (builds["transfer"], 0.0, None)})["transfer"]
    untuned, full = times["untuned"], times["metaschedule"]
    metrics = paper_metrics(
        untuned_s=untuned,
        latency_s=times["transfer"],
        full_s=full,
        search_s=search_s,
        match_s=match_s,
    )
    return {
        "network": network.name,
        "end_to_end_ms": {k: round(v * 1e3, 4) for k, v in times.items()},
        "max_speedup": round(untuned / full, 3),
        **metrics,
        "metaschedule_budget": log.provenance().get("budget", {}),
        "metaschedule_tuning_s": round(metaschedule.tuning_s, 1),
        "note": UNTUNED_NOTE,
    }


def load_cost_model(model_dir: Path | None, target: tvm.target.Target) -> model_files.CostModel:
    """The given cost model, or the shipped default; missing ones say how to make them."""
    model_dir = model_dir or paths.default_model()
    if not (model_dir / "metadata.json").is_file():
        raise InputError(
            "no cost model here; train one with `recommender dataset build` then "
            "`recommender train --out DIR`, or pass --model-dir DIR",
            path=model_dir,
        )
    return model_files.load(model_dir, target=target)


def recommend_to_dir(
    network: Network,
    target: tvm.target.Target,
    source_logs: dict[str, Path],
    model: model_files.CostModel,
    budget: Budget,
    out_dir: Path,
    *,
    top_n: int = 3,
    then_tune_trials: int = 0,
    population: int = 512,
    remote: RemoteDevice | None = None,
    cache: FeatureCache | None = None,
    progress: bool = True,
) -> dict:
    """Recommend schedules for ``network``; write the database, library and ``report.json``.

    With ``then_tune_trials``, MetaSchedule then tunes on from the recommendation (resumable
    log in ``out_dir/then_tune``), and its curve is plotted beside MetaSchedule's from-scratch
    log when the network has one. Every build must compute what the untuned build computes
    (checked on this host when the target runs here), or nothing but an error is produced.
    """
    if remote is not None:
        remote.check()
    sources = load_sources(source_logs, target, top_n=top_n)
    result = recommend(
        network,
        target,
        sources,
        model,
        budget,
        family_of=families({network.name: network}),
        remote=remote,
        cache=cache,
        progress=progress,
    )
    write_records(result.picks, target, out_dir)
    every = endtoend.Builds(result.prepared, target)
    wanted = ["recommended"]
    every.want("recommended", out_dir)
    extra = {}
    if then_tune_trials:
        extra["then_tune"] = _then_tune(
            network, result, out_dir, then_tune_trials, remote, population, progress
        )
        wanted.append("then_tuned")
        every.want("then_tuned", TuningLog.open(out_dir / "then_tune", target=target).database())
    times = {}
    if is_host_compatible(target) and remote is None:
        times = _checked_times(every, wanted, network)
    else:
        result.notes.append("end-to-end timing runs on this host only: not timed for this target")
    library = every.export("recommended", out_dir / f"{network.name}.so")
    report = recommendation_summary(result, times)
    report.update(
        extra,
        sources=sorted(source_logs),
        top_n=top_n,
        corpus=str(paths.root()),
        cost_model={
            "directory": str(model.directory),
            "trained_on": model.metadata.get("training_data"),
        },
        library=str(library),
        database=str(out_dir),
        configuration=database_configuration(),
    )
    (out_dir / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    return report


def _then_tune(network, result, out_dir, trials, remote, population, progress) -> dict:
    """MetaSchedule on from the recommendation (resumable), and its curve beside MetaSchedule's
    from-scratch one where the corpus has a comparable log."""
    warm_dir = out_dir / "then_tune"
    summary = then_tune(
        network, result, warm_dir, trials, remote=remote, population=population, progress=progress
    )
    curves, missing = compare_curves(network, result.target, warm_dir, paths.logs() / network.name)
    plot_curves(curves, out_dir / "curves.png", f"{network.name}: estimated network time")
    return {
        "log": str(warm_dir),
        "status": summary.status,
        "trials": summary.trials_before + summary.trials_this_run,
        "wall_s": round(summary.wall_s, 1),
        "curves": {k: [[round(t, 1), v] for t, v in c] for k, c in curves.items()},
        "plot": str(out_dir / "curves.png"),
        "curve_missing": missing,
    }


def _checked_times(every: endtoend.Builds, wanted: list[str], network: Network) -> dict:
    """End-to-end times of the ``wanted`` builds and the untuned one, interleaved, after each
    was checked against the untuned outputs (a wrong build is an error, never a number)."""
    every.want("untuned")
    builds = {name: every.get(name) for name in ["untuned", *wanted]}
    reference = endtoend.ReferenceOutputs(builds["untuned"], network)
    for name in wanted:
        problem = reference.mismatch(builds[name])
        if problem:
            raise RecommenderError(f"{network.name}: the {name} build is wrong ({problem})")
    return endtoend.time_interleaved(builds, network)
