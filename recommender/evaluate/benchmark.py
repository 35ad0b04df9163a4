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
transfers from every other network time pairs of the transfer-benefit dataset (the recommender's
pool holds the paper's), so their measurements are added to the dataset the held-out models
then train on.

Search time runs from the command's start to the compiled network: reading the source logs,
loading the network and the cost model, choosing, compiling (each phase in the search's
``phases_s``; ``searches.search``). MetaSchedule's clock is its log's, from its first batch.
Training the held-out cost models is reported apart (``held_out_training_s``); pre-tuning the
source networks is amortised, as in the paper.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import tvm

from ..core import paths
from ..core.paths import CHECKOUT
from ..core.targets import RemoteDevice
from ..logs.sources import log_dir, logged_models
from ..logs.tuning_log import TuningLog, cpu_model
from ..networks.network import Network
from ..networks.zoo import load_zoo_network, zoo_names
from ..transfer.report import UNTUNED_NOTE
from . import repeat
from .comparison import compare
from .deep_reference import deep_log, deep_logs, deep_means
from .methods import METHODS
from .metrics import common_networks, means
from .searches import (
    BUILDS,
    held_out_model,
    log_record_counts,
    method_dir,
    read_json,
    search,
    search_digest,
    write_json,
)

logger = logging.getLogger(__name__)


@dataclass
class Evaluation:
    """One evaluation run's settings and the networks it loads (one at a time: memory)."""

    methods: list[str]
    out: Path
    target: tvm.target.Target
    dataset_dir: Path
    logs: Path
    load_network: Callable[[str], Network]
    grid_points: int
    refine: bool
    remote: RemoteDevice | None
    progress: bool
    deep_logs: Path
    pool_with: tuple[Path, ...] = ()  # other CPUs' datasets the held-out models train on too
    recompare: bool = False  # compare the networks run again even where nothing changed
    log_sizes: dict[str, int] = field(default_factory=dict)
    _loaded: dict[str, tuple[Network, float]] = field(default_factory=dict)

    def network(self, name: str) -> Network:
        """The network, loaded when first needed; only the last one is kept."""
        return self.loaded(name)[0]

    def loaded(self, name: str) -> tuple[Network, float]:
        """The network and the seconds its loading took, counted in every method's search
        time (each would load it alone), though it is loaded once for all of them."""
        if name not in self._loaded:
            self._loaded.clear()
            start = time.perf_counter()
            network = self.load_network(name)
            self._loaded[name] = network, time.perf_counter() - start
        return self._loaded[name]

    def search_all(self, name: str, chosen: list[str]) -> dict[str, dict]:
        """Each chosen method's search on ``name`` (read back when done before)."""
        net_dir = self.out / name
        reports = {}
        for method in chosen:
            logger.info("%s: %s", name, method)
            reports[method] = search(
                name,
                METHODS[method],
                self.target,
                method_dir(net_dir, METHODS[method]),
                load=lambda: self.loaded(name),
                model_for=lambda held_out: held_out_model(
                    held_out, self.dataset_dir, net_dir / "model", self.target, self.pool_with
                ),
                logs=self.logs,
                log_sizes=self.log_sizes,
                remote=self.remote,
                progress=self.progress,
                keep_in=self.dataset_dir,
                pooled_with=tuple(_named(d) for d in self.pool_with),
            )
        return reports

    def read_back(self, name: str) -> dict[str, dict] | None:
        """Each method's search report on ``name`` as kept on disk (a method without one: as
        skipped, for the reason its comparison recorded), or None if one was made by another
        version of its method. ``row`` checks them against the comparison."""
        skipped = (read_json(self.out / name / "compare.json") or {}).get("skipped", {})
        reports = {}
        for method in self.methods:
            report = read_json(method_dir(self.out / name, METHODS[method]) / "search.json")
            if report is None:
                report = {"skipped": skipped.get(method, "no search on disk")}
            elif not METHODS[method].made(report.get("method")):
                return None
            reports[method] = report
        return reports

    def row(self, name: str, *, run: bool = True) -> dict | None:
        """The network's comparison of every method, compared again only when a search or the
        grid changed since. Without ``run`` (a network this run was not asked for), what is on
        disk only: None unless every search and their comparison are there and agree."""
        net_dir = self.out / name
        reports = self.search_all(name, self.methods) if run else self.read_back(name)
        if reports is None:
            return None
        done = {m: net_dir / m for m, r in reports.items() if "skipped" not in r}
        deep = deep_log(name, self.deep_logs)
        compared = {
            "searches": {m: search_digest(reports[m]) for m in done},
            "grid_points": self.grid_points,
            "refine": self.refine,
            # a deep reference tuned (or continued) since is compared anew
            **({"deep_records": TuningLog(deep).record_count()} if deep else {}),
        }
        before = read_json(net_dir / "compare.json")
        changed = before is None or before.get("compared") != compared
        if changed and not run:
            return None
        fresh = changed or (run and self.recompare)
        row = before
        if fresh:
            row = compare(
                self.network(name),
                self.target,
                done,
                self.logs / name,
                grid_points=self.grid_points,
                refine=self.refine,
                keep=net_dir / BUILDS,  # the searches' compiled networks are there
                deep_log_path=deep,
            )
            row["compared"] = compared
            repeat.record(name, before, row)
        row["skipped"] = {m: r["skipped"] for m, r in reports.items() if "skipped" in r}
        if fresh:  # kept with the skipped methods' reasons, which a read-back reports
            write_json(net_dir / "compare.json", row)
            shutil.rmtree(net_dir / BUILDS, ignore_errors=True)  # up to 100s of MB per build
        row["searches"] = {
            m: {
                "phases_s": r.get("phases_s"),
                "sources": r.get("sources"),
                "held_out_training_s": r.get("held_out_training_s"),
            }
            for m, r in reports.items()
            if m in done
        }
        return row

    def results(self, rows: list[dict], not_evaluated: dict[str, str]) -> dict:
        """Every number so far, written to ``OUT/results.json``."""
        results = {
            "machine": {"cpu": cpu_model(), "cores": int(self.target.attrs["num-cores"])},
            "target": str(self.target),
            "candidates_timed_on": str(self.remote) if self.remote else "this host",
            "tvm": tvm.__version__,
            "date": time.strftime("%Y-%m-%d"),
            "methods": [{**METHODS[m].to_json(), "label": METHODS[m].label} for m in self.methods],
            "networks": rows,
            "not_evaluated": not_evaluated,
            "means": means(rows, self.methods),
            "means_deep": deep_means(rows, self.methods),
            "means_over": dict(zip(("networks", "left_out"), common_networks(rows, self.methods))),
            "held_out_models_trained_on": [_named(d) for d in (self.dataset_dir, *self.pool_with)],
            "note": UNTUNED_NOTE,
        }
        write_json(self.out / "results.json", results)
        return results


def _named(dataset: Path) -> str:
    """A dataset as its checkout-relative path where it is in the checkout: the same in every
    checkout of the repository (an evaluation may run from a worktree)."""
    resolved = dataset.resolve()
    return str(resolved.relative_to(CHECKOUT) if resolved.is_relative_to(CHECKOUT) else resolved)


def evaluate(
    networks: list[str],
    methods: list[str],
    out: Path,
    target: tvm.target.Target,
    *,
    dataset_dir: Path | None = None,
    pool_with: tuple[Path, ...] = (),
    logs: Path | None = None,
    load_network: Callable[[str], Network] = load_zoo_network,
    grid_points: int = 8,
    refine: bool = True,
    remote: RemoteDevice | None = None,
    progress: bool = True,
    on_results: Callable[[dict], None] | None = None,
    deep: Path | None = None,
    recompare: bool = False,
) -> dict:
    """Search with every method and compare, network by network; ``OUT/results.json`` holds
    every number. Finished searches and comparisons are read back, so a rerun continues; with
    ``recompare``, the named networks are compared again all the same (``repeat``: how far
    their unchanged builds move).

    The results so far are written (and passed to ``on_results``) after every network's
    comparison, the networks still to come listed as not evaluated: a run stopped after hours
    leaves a true partial page.

    The exhaustive run over every other network adds its measurements to ``dataset_dir``, which
    the held-out models train on (with ``pool_with``, other CPUs' datasets). While the dataset
    lacks a network, the methods without a cost model run first on every network, so that the
    models train on the whole of it (a model saved earlier on less data is refused, see
    ``held_out_model``); once it holds every network
    (the shipped corpus), each network is searched and compared in turn, so its row is done
    after its own searches rather than after every network's exhaustive runs.

    A network with a log under ``deep`` (default: the corpus's deep logs, beside ``logs``) is
    also compared with that deeper MetaSchedule (``deep_reference``).
    """
    run = Evaluation(
        methods,
        out,
        target,
        dataset_dir or paths.transfer(),
        logs or paths.logs(),
        load_network,
        grid_points,
        refine,
        remote,
        progress,
        deep or deep_logs(logs),
        pool_with,
        recompare=recompare,
    )
    logged = [n for n in networks if n in logged_models(run.logs)]
    not_evaluated = {
        n: f"no tuning log (run `recommender collect {n}`)" for n in networks if n not in logged
    }
    every_log = {n: log_dir(n, run.logs) for n in logged_models(run.logs)}
    run.log_sizes = log_record_counts(every_log, target)
    if any(not (run.dataset_dir / name).is_dir() for name in logged):
        # every other network first: the paper's pairs are among its pairs, and not timed twice
        exhaustive = sorted(  # the largest pool first: the others read its measurements
            (m for m in methods if METHODS[m].budget is None),
            key=lambda m: (METHODS[m].sources != "all", -METHODS[m].top_n, -len(METHODS[m].levels)),
        )
        for name in logged:
            run.search_all(name, exhaustive)  # read back unless missing or stale
    # the networks not named keep their finished rows: a rerun of a few never shrinks the page
    zoo = zoo_names()
    order = sorted(every_log, key=lambda n: zoo.index(n) if n in zoo else len(zoo))
    rows = {n: row for n in order if n not in logged and (row := run.row(n, run=False))}
    begun = [n for n in order if n not in logged and n not in rows and (out / n).is_dir()]
    not_evaluated |= {n: "not evaluated yet: rerun to continue" for n in begun}
    for i, name in enumerate(logged):
        rows[name] = run.row(name)
        to_come = {n: "not evaluated yet: rerun to continue" for n in logged[i + 1 :]}
        results = run.results([rows[n] for n in order if n in rows], {**not_evaluated, **to_come})
        if on_results is not None:
            on_results(results)  # a true partial page, should the run stop before the end
    if not logged:
        results = run.results([rows[n] for n in order if n in rows], not_evaluated)
        if on_results is not None:
            on_results(results)
    return results
