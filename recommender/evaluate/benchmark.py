"""The paper's evaluation, network by network, leave-one-model-out, against MetaSchedule.

For a network N with a log in the corpus:

1. **search**: each method chooses schedules for N without N's own log (its sources are the
   other logged networks). The recommender ranks with a cost model trained without N's kernels
   and without rows whose source is N. Each method's database and search report land in
   ``OUT/N/METHOD/`` as soon as it finishes; a rerun skips what is there.
2. **compare**: untuned, full MetaSchedule (N's own log: the maximum speedup), every method,
   and MetaSchedule's best-so-far at a grid of tuning times are built, checked against the
   untuned outputs, and timed in one interleaved run. MetaSchedule's time to match a method is
   then bisected between the grid points that bracket it (each probe timed against the method,
   interleaved). Written to ``OUT/N/compare.json``.

The methods without a cost model run on every network before the others: the exhaustive
transfer from every other network times exactly the rank-0 pairs of the transfer-benefit
dataset, so its measurements are added to the dataset the held-out models then train on.

Search time counts choosing only (ranking, applying, building, checking, timing candidates);
task extraction and reading logs are common to every method, MetaSchedule included, and are
left out. Pre-tuning the source networks is amortised, as in the paper.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import tvm

from ..core import paths
from ..core.errors import InputError, RecommenderError
from ..core.targets import RemoteDevice, same_cpu, target_key
from ..learn import cost_models
from ..learn.dataset import add_transfer_run, load_dataset
from ..learn.evaluation import recall_curve
from ..learn.training import check_trainable, train, training_set
from ..logs.sources import load_sources, log_dir, logged_models, resolve_sources
from ..logs.tuning_log import PROVENANCE, TuningLog, cpu_model
from ..networks.network import Network
from ..networks.zoo import families, load_zoo_network, zoo_names
from ..recommend.report import recommendation_summary
from ..recommend.search import Budget, recommend
from ..tasks.extract import prepare
from ..transfer.database import write_database, write_records
from ..transfer.exhaustive import TransferRun, transfer_tune
from ..transfer.journal import JOURNAL, Journal
from ..transfer.report import UNTUNED_NOTE, summary
from . import endtoend
from .baselines import MetaScheduleBuilds

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Method:
    """One way of choosing schedules: the paper's exhaustive transfer (no budget) or the
    recommender within ``budget``."""

    name: str
    sources: str  # "paper" (the paper's fixed source network) or "all" (every other one)
    budget: Budget | None = None
    top_n: int = 1  # records per source workload

    def to_json(self) -> dict:
        budget = self.budget.to_json() if self.budget else "every candidate"
        return {"name": self.name, "sources": self.sources, "budget": budget, "top_n": self.top_n}


METHODS = {
    m.name: m
    for m in (
        Method("transfer-paper", "paper"),
        Method("transfer-all", "all"),
        Method("top-0", "all", Budget(top_k=0), 3),
        Method("top-1", "all", Budget(top_k=1), 3),
        Method("top-3", "all", Budget(top_k=3), 3),
        Method("budget-30s", "all", Budget(seconds=30.0), 3),
        Method("budget-120s", "all", Budget(seconds=120.0), 3),
    )
}
# --quick: about 20 minutes on 2 cores (a ResNet-18 build costs ~40 s, its searches ~7 min)
QUICK_METHODS = ("transfer-paper", "top-0", "top-3")
QUICK_GRID = 5
QUICK_NETWORKS = ("resnet18", "alexnet")


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except json.JSONDecodeError:
        logger.warning("%s: unreadable, recomputing it", path)
        return None


def _write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    tmp.replace(path)


def held_out_model(
    network: str, dataset_dir: Path, out_dir: Path, target: tvm.target.Target
) -> cost_models.CostModel:
    """The cost model that never saw ``network``: trained without its kernels and without rows
    whose source schedule came from it (saved in ``out_dir`` and reused on a rerun).

    A saved model trained on another state of the dataset is refused: the searches beside it
    were ranked by it, so mixing them with a new model would mix two experiments.
    """
    kernels = [k for k in load_dataset(dataset_dir) if k.network != network]
    data = training_set(kernels, exclude_source=network)
    if (out_dir / "metadata.json").is_file():
        model = cost_models.load(out_dir, target=target)
        trained_on = model.metadata.get("training_data", {}).get("hash")
        if trained_on != data.data_hash():
            raise RecommenderError(  # not an InputError: ``search`` would skip the method
                f"{out_dir}: trained on another state of {dataset_dir} (hash {trained_on}, "
                f"now {data.data_hash()}); evaluate into a new --out, or delete {out_dir.parent}"
            )
        return model
    check_trainable(data, f"the transfer-benefit dataset without {network}")
    model = train(data)
    cost_models.save(
        model,
        out_dir,
        target=target,
        data={
            "directory": str(dataset_dir),
            "held_out": network,
            "networks": sorted({k.network for k in data.kernels}),
            "kernels": data.groups,
            "candidates": len(data.y),
            "hash": data.data_hash(),
        },
        evaluation=recall_curve(kernels),
    )
    return cost_models.load(out_dir, target=target)


def search(
    name: str,
    method: Method,
    target: tvm.target.Target,
    out_dir: Path,
    *,
    load: Callable[[], Network],
    model_for: Callable[[str], cost_models.CostModel],
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
    done = _read_json(report_path)
    if done is not None:
        if done.get("source_records") == sizes:
            return done
        logger.warning(
            "%s: made from source logs of %s records, now %s; searching again",
            report_path,
            done.get("source_records"),
            sizes,
        )
    network = load()
    sources = load_sources(source_logs, target, top_n=method.top_n)
    if method.budget is None:
        beside = [p for p in out_dir.parent.glob(f"*/{JOURNAL}") if p.parent != out_dir]
        journal = Journal(out_dir / JOURNAL, target, beside)
        run = transfer_tune(
            network, target, sources, remote=remote, progress=progress, journal=journal
        )
        write_database(run, out_dir)
        if keep_in is not None and method.sources == "all":
            _keep_measurements(run, keep_in, families({network.name: network}))
        report = summary(run, {})
        timed = sum(c.run_s is not None for k in run.kernels for c in k.candidates)
        report["candidates_timed"] = timed
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
        )
        write_records(result.picks, target, out_dir)
        report = recommendation_summary(result, {})
    report.update(method=method.to_json(), sources=names, source_records=sizes)
    _write_json(report_path, report)
    return report


def _log_record_counts(source_logs: dict[str, Path], target: tvm.target.Target) -> dict[str, int]:
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


def compare(
    network: Network,
    target: tvm.target.Target,
    method_dirs: dict[str, Path],
    log_path: Path,
    *,
    grid_points: int = 8,
    refine: bool = True,
    keep: Path | None = None,
) -> dict:
    """Build and time untuned, full MetaSchedule (the log at ``log_path``), each method and
    MetaSchedule's curve in one interleaved run; then bisect its time to match each method.

    With ``keep``, the builds are kept there (``endtoend.Builds``): a comparison stopped
    midway is timed again on rerun, but not built again.

    The log may come from the same CPU with more cores than ``target`` (the edge profile):
    MetaSchedule's schedules are then timed on ``target``'s cores like every other build.
    """
    log = TuningLog.open(log_path, target=target, other_cores=True)
    prepared = prepare(network.mod)
    every = endtoend.Builds(prepared, target, keep=keep)
    metaschedule = MetaScheduleBuilds(network, prepared, target, log, every)
    searches = {m: json.loads((d / "search.json").read_text()) for m, d in method_dirs.items()}
    grid = metaschedule.grid(grid_points)
    every.want("untuned")
    for name, directory in method_dirs.items():
        every.want(name, directory)
    metaschedule.want([metaschedule.tuning_s, *grid, *(r["search_s"] for r in searches.values())])
    every.build_wanted()  # all of them side by side, before anything is timed
    untuned = every.get("untuned")
    builds = {"untuned": untuned, "metaschedule": metaschedule.at(metaschedule.tuning_s)}
    wrong = {}
    reference = endtoend.ReferenceOutputs(untuned, network)
    for name in method_dirs:
        build = every.get(name)
        problem = reference.mismatch(build)
        if problem:  # never report a wrong build's speed
            wrong[name] = problem
            continue
        builds[name] = build
    probes = {f"ms@{s}": metaschedule.at(s) for s in grid}
    probes |= {
        f"ms_same_time:{m}": metaschedule.at(searches[m]["search_s"])
        for m in method_dirs
        if m in builds
    }
    eager, eager_missing = pytorch_eager(network.name, int(target.attrs["num-cores"]))
    times = _time_unique({**builds, **probes}, network, {"pytorch_eager": eager} if eager else {})
    eager_s = times.get("pytorch_eager")
    curve = [(s, times[f"ms@{s}"]) for s in grid]
    untuned_s, full_s = times["untuned"], times["metaschedule"]
    max_speedup = untuned_s / full_s
    timed = {m: (builds[m], times[m]) for m in method_dirs if m not in wrong}
    matches = _times_to_match(metaschedule, timed, curve, refine)
    rows = {
        name: {"wrong": wrong[name]}
        if name in wrong
        else _method_row(
            searches[name],
            times[name],
            times[f"ms_same_time:{name}"],
            untuned_s,
            full_s,
            matches[name],
            eager_s,
        )
        for name in method_dirs
    }
    return {
        "network": network.name,
        "untuned_ms": round(untuned_s * 1e3, 3),
        "metaschedule": {
            "ms": round(full_s * 1e3, 3),
            "speedup": round(max_speedup, 3),
            "tuning_s": round(metaschedule.tuning_s, 1),
            "records": len(metaschedule.timed),
            "budget": log.provenance().get("budget", {}),
        },
        "pytorch_eager": {"ms": round(eager_s * 1e3, 3)}
        if eager_s
        else {"not_timed": eager_missing},
        "curve": [[round(s, 1), round(t * 1e3, 3)] for s, t in curve],
        "time_to_match": "bisected between grid points" if refine else "grid point (upper bound)",
        "methods": rows,
        "note": UNTUNED_NOTE,
    }


def _time_unique(
    builds: dict[str, object], network: Network, others: dict[str, Callable[[], float]]
) -> dict[str, float]:
    """``time_interleaved`` over distinct executables (equal-time probes often coincide)."""
    unique: dict[int, str] = {}
    for name, build in builds.items():
        unique.setdefault(id(build), name)
    distinct = {n: builds[n] for n in unique.values()}
    times = endtoend.time_interleaved(distinct, network, others=others)
    return {name: times[unique[id(build)]] for name, build in builds.items()} | {
        name: times[name] for name in others
    }


def pytorch_eager(name: str, threads: int) -> tuple[Callable[[], float] | None, str | None]:
    """A timing round of the zoo network in PyTorch eager, or why there is none."""
    if name not in zoo_names():
        return None, "not a zoo network"
    try:
        from ..networks import torch_zoo
    except ImportError as err:
        return None, f"{err.name} is not installed (the zoo extra: see README)"
    return torch_zoo.eager_timer(name, threads), None


def _times_to_match(
    metaschedule: MetaScheduleBuilds,
    methods: dict[str, tuple[object, float]],
    curve: list[tuple[float, float]],
    refine: bool,
) -> dict[str, float | None]:
    """MetaSchedule's time to match each method (name: (build, latency)): the curve brackets
    it; with ``refine`` a bisection between the two grid points narrows it (the upper point
    stands when noise hides the crossing). Without, the upper grid point is the answer: an
    upper bound. None where even the full log is slower."""
    brackets, found = {}, {}
    for name, (build, latency_s) in methods.items():
        previous = 0.0
        found[name] = None
        for stop, seconds in curve:
            if seconds <= latency_s:
                found[name] = stop
                brackets[name] = (build, previous, stop)
                break
            previous = stop
    if refine and brackets:
        refined = metaschedule.times_to_match(brackets)
        found |= {name: refined[name] or found[name] for name in brackets}
    return found


def _method_row(
    search: dict,
    latency_s: float,
    same_time_s: float,
    untuned_s: float,
    full_s: float,
    match_s: float | None,
    eager_s: float | None,
) -> dict:
    speedup, max_speedup = untuned_s / latency_s, untuned_s / full_s
    search_s = search["search_s"]
    return {
        "ms": round(latency_s * 1e3, 3),
        "speedup": round(speedup, 3),
        "share_of_max_speedup": round((speedup - 1) / (max_speedup - 1), 4)
        if max_speedup > 1
        else None,
        "latency_ratio_max_over_method": round(full_s / latency_s, 4),
        "search_s": search_s,
        "candidates_timed": search.get("candidates_timed"),
        "tuned_kernels": search.get("tuned_kernels"),
        "metaschedule_same_time_speedup": round(untuned_s / same_time_s, 3),
        "metaschedule_time_to_match_s": match_s,
        "time_to_match_over_search": round(match_s / search_s, 2) if match_s and search_s else None,
        "speedup_over_pytorch_eager": round(eager_s / latency_s, 3) if eager_s else None,
    }


def means(rows: list[dict], methods: list[str]) -> dict[str, dict]:
    """Per method, the mean (and median) over networks of the headline numbers."""
    out = {}
    for name in methods:
        cells = [r["methods"][name] for r in rows if "speedup" in r["methods"].get(name, {})]
        entry = {"networks": len(cells)}
        for key in (
            "speedup",
            "share_of_max_speedup",
            "search_s",
            "time_to_match_over_search",
            "speedup_over_pytorch_eager",
        ):
            values = [c[key] for c in cells if c.get(key) is not None]
            if values:
                entry[key] = round(statistics.mean(values), 4)
                entry[f"{key}_median"] = round(statistics.median(values), 4)
        out[name] = entry
    return out


def evaluate(
    networks: list[str],
    methods: list[str],
    out: Path,
    target: tvm.target.Target,
    *,
    dataset_dir: Path | None = None,
    logs: Path | None = None,
    load_network: Callable[[str], Network] = load_zoo_network,
    grid_points: int = 8,
    refine: bool = True,
    remote: RemoteDevice | None = None,
    progress: bool = True,
    on_results: Callable[[dict], None] | None = None,
) -> dict:
    """Search with every method and compare, network by network; ``OUT/results.json`` holds
    every number. Finished searches and comparisons are read back, so a rerun continues.

    The results so far are written (and passed to ``on_results``) after every network's
    comparison, the networks still to come listed as not evaluated: a run stopped after hours
    leaves a true partial page.

    The exhaustive run over every other network adds its measurements to ``dataset_dir``, which
    the held-out models train on. While the dataset lacks a network, the methods without a cost
    model run first on every network, so that the models train on the whole of it (a model
    saved earlier on less data is refused, see ``held_out_model``); once it holds every network
    (the shipped corpus), each network is searched and compared in turn, so its row is done
    after its own searches rather than after every network's exhaustive runs.
    """
    dataset_dir, logs = dataset_dir or paths.transfer(), logs or paths.logs()
    logged = [n for n in networks if n in logged_models(logs)]
    not_evaluated = {
        n: f"no tuning log (run `recommender collect {n}`)" for n in networks if n not in logged
    }
    # every other network first: the paper's pairs are among its pairs, and not timed twice
    exhaustive = sorted(
        (m for m in methods if METHODS[m].budget is None), key=lambda m: METHODS[m].sources != "all"
    )
    sizes = _log_record_counts({n: log_dir(n, logs) for n in logged_models(logs)}, target)
    last: dict[str, Network] = {}

    def network_of(name: str) -> Network:
        """The network, loaded when first needed; only the last one is kept (memory)."""
        if name not in last:
            last.clear()
            last[name] = load_network(name)
        return last[name]

    def search_all(name: str, chosen: list[str]) -> dict[str, dict]:
        net_dir = out / name

        def model_for(held_out: str) -> cost_models.CostModel:
            return held_out_model(held_out, dataset_dir, net_dir / "model", target)

        reports = {}
        for method in chosen:
            logger.info("%s: %s", name, method)
            reports[method] = search(
                name,
                METHODS[method],
                target,
                net_dir / method,
                load=lambda: network_of(name),
                model_for=model_for,
                logs=logs,
                log_sizes=sizes,
                remote=remote,
                progress=progress,
                keep_in=dataset_dir,
            )
        return reports

    def publish(rows: list[dict]) -> dict:
        done = {row["network"] for row in rows}
        to_come = {n: "not evaluated yet: rerun to continue" for n in logged if n not in done}
        results = {
            "machine": {"cpu": cpu_model(), "cores": int(target.attrs["num-cores"])},
            "target": str(target),
            "candidates_timed_on": str(remote) if remote else "this host",
            "tvm": tvm.__version__,
            "date": time.strftime("%Y-%m-%d"),
            "methods": [METHODS[m].to_json() for m in methods],
            "networks": rows,
            "not_evaluated": {**not_evaluated, **to_come},
            "means": means(rows, methods),
            "note": UNTUNED_NOTE,
        }
        _write_json(out / "results.json", results)
        if on_results is not None:
            on_results(results)
        return results

    if any(not (dataset_dir / name).is_dir() for name in logged):
        for name in logged:
            search_all(name, exhaustive)  # read back unless missing or stale
    rows = []
    for name in logged:
        reports = search_all(name, methods)
        net_dir = out / name
        done = {m: net_dir / m for m, r in reports.items() if "skipped" not in r}
        # a search redone, or a coarser curve asked for: compare again
        compared = {
            "searches": {m: search_digest(reports[m]) for m in done},
            "grid_points": grid_points,
            "refine": refine,
        }
        row = _read_json(net_dir / "compare.json")
        if row is None or row.get("compared") != compared:
            row = compare(
                network_of(name),
                target,
                done,
                logs / name,
                grid_points=grid_points,
                refine=refine,
                keep=net_dir / "builds",
            )
            row["compared"] = compared
            _write_json(net_dir / "compare.json", row)
            shutil.rmtree(net_dir / "builds", ignore_errors=True)  # up to 100s of MB per build
        row["skipped"] = {m: r["skipped"] for m, r in reports.items() if "skipped" in r}
        row["searches"] = {
            m: {"phases_s": r.get("phases_s"), "sources": r.get("sources")}
            for m, r in reports.items()
            if m in done
        }
        rows.append(row)
        if len(rows) < len(logged):
            publish(rows)  # a true partial page, should the run stop before the end
    return publish(rows)
