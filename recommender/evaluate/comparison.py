"""One network's comparison: untuned, full MetaSchedule, every method and MetaSchedule's curve
built and timed in one interleaved run, then MetaSchedule's time to match each method."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

import tvm

from ..logs.tuning_log import TuningLog
from ..networks.network import Network
from ..networks.zoo import zoo_names
from ..tasks.extract import prepare
from ..transfer.report import UNTUNED_NOTE
from . import endtoend
from .baselines import MetaScheduleBuilds
from .deep_reference import deep_cell
from .isolated import RoundFailed, in_worker
from .metrics import method_row

logger = logging.getLogger(__name__)

BASELINES = ("pytorch_eager", "onnxruntime")  # keys of the comparison, in the page's order
INSTALL_HINT = "install the zoo extra: pip install -e '.[zoo]', see README"


def compare(
    network: Network,
    target: tvm.target.Target,
    method_dirs: dict[str, Path],
    log_path: Path,
    *,
    grid_points: int = 8,
    refine: bool = True,
    keep: Path | None = None,
    deep_log_path: Path | None = None,
) -> dict:
    """Build and time untuned, full MetaSchedule (the log at ``log_path``), each method and
    MetaSchedule's curve in one interleaved run; then bisect its time to match each method.
    With ``deep_log_path`` (``deep_reference``), MetaSchedule continued to a larger budget is
    built and timed in the same rounds, and every method is compared with it too.

    With ``keep``, the builds are kept there (``endtoend.Builds``): a comparison stopped
    midway is timed again on rerun, but not built again.

    The log may come from the same CPU with more cores than ``target`` (the edge profile):
    MetaSchedule's schedules are then timed on ``target``'s cores like every other build.
    So are the baselines (``baselines``: PyTorch eager, ONNX Runtime), in the same rounds.
    """
    log = TuningLog.open(log_path, target=target, other_cores=True)
    prepared = prepare(network.mod, target)
    every = endtoend.Builds(prepared, target, keep=keep)
    metaschedule = MetaScheduleBuilds(network, prepared, target, log, every)
    searches = {m: json.loads((d / "search.json").read_text()) for m, d in method_dirs.items()}
    grid = metaschedule.grid(grid_points)
    deep, deep_budget = None, {}
    if deep_log_path is not None:
        deep_log = TuningLog.open(deep_log_path, target=target, other_cores=True)
        deep = MetaScheduleBuilds(network, prepared, target, deep_log, every)
        deep_budget = deep_log.provenance().get("budget", {})
        deep.want([deep.tuning_s])
    every.want("untuned")
    for name, directory in method_dirs.items():
        every.want(name, directory)
    metaschedule.want([metaschedule.tuning_s, *grid, *(r["search_s"] for r in searches.values())])
    every.build_wanted()  # all of them side by side, before anything is timed
    untuned = every.get("untuned")
    builds = {"untuned": untuned, "metaschedule": metaschedule.at(metaschedule.tuning_s)}
    if deep is not None:
        builds["metaschedule_deep"] = deep.at(deep.tuning_s)
    reference = endtoend.ReferenceOutputs(untuned, network)
    right, wrong = reference.partition({name: every.get(name) for name in method_dirs})
    builds |= right
    probes = {f"ms@{s}": metaschedule.at(s) for s in grid}
    probes |= {
        f"ms_same_time:{m}": metaschedule.at(searches[m]["search_s"])
        for m in method_dirs
        if m in builds
    }
    others, missing = baselines(network.name, int(target.attrs["num-cores"]))
    times = _time_unique({**builds, **probes}, network, others)
    eager_s, ort_s = times.get("pytorch_eager"), times.get("onnxruntime")
    curve = [(s, times[f"ms@{s}"]) for s in grid]
    untuned_s, full_s = times["untuned"], times["metaschedule"]
    max_speedup = untuned_s / full_s
    timed = {m: (builds[m], times[m]) for m in method_dirs if m not in wrong}
    matches = _times_to_match(metaschedule, timed, curve, refine)
    deep_s = times.get("metaschedule_deep")
    rows = {
        name: {"wrong": wrong[name]}
        if name in wrong
        else ({} if deep_s is None else deep_cell(deep_s, times[name], untuned_s))
        | method_row(
            searches[name],
            times[name],
            times[f"ms_same_time:{name}"],
            untuned_s,
            full_s,
            matches[name],
            eager_s,
            ort_s,
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
        **{key: _baseline_cell(times.get(key), missing.get(key)) for key in BASELINES},
        **(
            {}
            if deep is None
            else {"metaschedule_deep": _deep_row(deep, deep_budget, deep_s, full_s, untuned_s)}
        ),
        "curve": [[round(s, 1), round(t * 1e3, 3)] for s, t in curve],
        "time_to_match": "bisected between grid points" if refine else "grid point (upper bound)",
        "methods": rows,
        "note": UNTUNED_NOTE,
    }


def _deep_row(
    deep: MetaScheduleBuilds, budget: dict, deep_s: float, full_s: float, untuned_s: float
) -> dict:
    """The deep reference's entry; ``corpus`` compares the corpus's log with it."""
    return {
        "ms": round(deep_s * 1e3, 3),
        "speedup": round(untuned_s / deep_s, 3),
        "tuning_s": round(deep.tuning_s, 1),
        "records": len(deep.timed),
        "budget": budget,
        "corpus": deep_cell(deep_s, full_s, untuned_s),
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


def baselines(name: str, threads: int) -> tuple[dict[str, Callable[[], float]], dict[str, str]]:
    """The timers of what a user would run instead of TVM (``BASELINES``), each in a worker
    process of its own (``isolated``: in this process their thread pools and TVM's slow each
    other down), timed in the same interleaved rounds as the builds; and for each one missing,
    why. A first round runs here: a failed export or session is a reason, not an error (the
    baseline must not cost an evaluation that ran for an hour)."""
    timers, missing = {}, {}
    for key, make in (("pytorch_eager", pytorch_eager), ("onnxruntime", onnxruntime)):
        timer, why = make(name, threads)
        if timer is not None:
            try:
                timer()
            except RoundFailed as err:
                logger.warning("%s baseline of %s: %s", key, name, err)
                timer, why = None, str(err)[:300]
        if timer is None:
            missing[key] = why
        else:
            timers[key] = timer
    return timers, missing


def _baseline_cell(seconds: float | None, why: str | None) -> dict:
    """A baseline's entry in the comparison: its milliseconds, or why it was not timed."""
    return {"ms": round(seconds * 1e3, 3)} if seconds else {"not_timed": why}


def pytorch_eager(name: str, threads: int) -> tuple[Callable[[], float] | None, str | None]:
    """A timing round of the zoo network in PyTorch eager, or why there is none."""

    def timer_maker():
        from ..networks import torch_zoo

        return torch_zoo.eager_timer

    return _zoo_baseline("pytorch_eager", name, threads, timer_maker)


def onnxruntime(name: str, threads: int) -> tuple[Callable[[], float] | None, str | None]:
    """A timing round of the zoo network in ONNX Runtime (exported to ONNX once, cached), or
    why there is none."""

    def timer_maker():
        from ..networks import onnxruntime_baseline

        return onnxruntime_baseline.ort_timer

    return _zoo_baseline("onnxruntime", name, threads, timer_maker)


def _zoo_baseline(
    contender: str, name: str, threads: int, timer_maker: Callable[[], Callable]
) -> tuple[Callable[[], float] | None, str | None]:
    """``contender``'s timing round of the zoo network ``name`` in its own worker, or why there
    is none (not a zoo network, or its extra not installed here)."""
    if name not in zoo_names():
        return None, "not a zoo network"
    try:
        make = timer_maker()
    except ImportError as err:
        return None, f"{err.name} is not installed ({INSTALL_HINT})"
    return in_worker(contender, name, make, (name, threads)), None


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
