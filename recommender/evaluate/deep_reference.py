"""A deeper MetaSchedule reference: a network's corpus log continued to more trials per task.

The evaluation's reference is MetaSchedule at the corpus's budget (64 trials per task). How far
that is from a well-tuned build, and what each method's share is against one, is measured on
networks whose log is continued to ``FACTOR`` times the budget
(``scripts/tune_deep_reference.py``). The continued log is the corpus's
``datasets/logs_deep/NETWORK``, beside its ``datasets/logs``: a copy of the corpus log,
resumed by ``recommender collect``, so its first trials are the reference's own and
MetaSchedule's search goes on from them. The evaluation builds it and times it in the same
interleaved rounds as every other build (``comparison.compare``), and the page reports every
method against it.
"""

from __future__ import annotations

import shutil
import statistics
from pathlib import Path

from ..core import paths
from ..core.errors import InputError
from ..logs.tuning_log import PROVENANCE, TuningLog

FACTOR = 4  # the "at least 4x the corpus's trials per task"


def deep_logs(logs: Path | None = None) -> Path:
    """Where the deep logs of the corpus whose logs are ``logs`` live: beside them."""
    return (logs or paths.logs()).with_name("logs_deep")


def deep_log(name: str, deep: Path) -> Path | None:
    """The network's deep log under ``deep``, if it has one."""
    return deep / name if (deep / name / PROVENANCE).exists() else None


def start(name: str, trials_per_task: int, logs: Path | None = None) -> Path:
    """The network's deep log, copied from its log under ``logs`` (default: the corpus's) the
    first time; that log must have its whole budget of ``trials_per_task`` (the deep log
    continues a finished search)."""
    deep = deep_logs(logs) / name
    if (deep / PROVENANCE).exists():
        return deep
    source = TuningLog.open((logs or paths.logs()) / name)
    budget = source.provenance().get("budget", {})
    if budget.get("trials_per_task") != trials_per_task or source.trials_left(
        budget.get("trials_total", 0)
    ):
        raise InputError(
            f"not tuned to its budget of {trials_per_task} trials per task yet "
            f"(rebuild_corpus.py finishes it); a deep reference continues a finished log",
            path=source.path,
        )
    deep.parent.mkdir(parents=True, exist_ok=True)
    tmp = deep.with_name(f"{name}.copying")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(source.path, tmp, ignore=shutil.ignore_patterns("sources.json.gz", "*.tmp"))
    tmp.replace(deep)
    return deep


def deep_cell(deep_s: float, latency_s: float, untuned_s: float) -> dict:
    """A build (a method's or the corpus's MetaSchedule) against the deep reference: its
    latency ratio t_deep / t, and its share of the deep reference's speedup over untuned."""
    speedup, deep_speedup = untuned_s / latency_s, untuned_s / deep_s
    share = (speedup - 1) / (deep_speedup - 1) if deep_speedup > 1 else None
    return {
        "latency_ratio_deep_over_method": round(deep_s / latency_s, 4),
        "share_of_deep_speedup": None if share is None else round(share, 4),
    }


def deep_means(rows: list[dict], methods: list[str]) -> dict:
    """Over the networks with a deep reference: per method (and for ``metaschedule``, the
    corpus's log) the geometric mean and worst latency ratio against it, and the mean share of
    its speedup; ``networks`` names them. Empty without any."""
    deep_rows = [r for r in rows if "metaschedule_deep" in r]
    if not deep_rows:
        return {}
    out: dict = {"networks": [r["network"] for r in deep_rows], "methods": {}}
    cells = {"metaschedule": [(r["network"], r["metaschedule_deep"]["corpus"]) for r in deep_rows]}
    for name in methods:
        cells[name] = [
            (r["network"], r["methods"][name])
            for r in deep_rows
            if "latency_ratio_deep_over_method" in r["methods"].get(name, {})
        ]
    for name, timed in cells.items():
        if not timed:
            continue
        ratios = {net: c["latency_ratio_deep_over_method"] for net, c in timed}
        worst = min(ratios, key=ratios.get)
        shares = [c["share_of_deep_speedup"] for _, c in timed if c["share_of_deep_speedup"]]
        out["methods"][name] = {
            "networks": len(timed),
            "latency_ratio_geomean": round(statistics.geometric_mean(ratios.values()), 4),
            "latency_ratio_worst": ratios[worst],
            "latency_ratio_worst_network": worst,
            "share_of_deep_speedup": round(statistics.mean(shares), 4) if shares else None,
        }
    return out


def page_section(results: dict) -> list[str]:
    """The page's section on the deep reference (nothing when no network has one)."""
    deep = results.get("means_deep") or {}
    if not deep:
        return []
    per_network = [
        f"| {r['network']} | {r['metaschedule']['ms']:.2f} | {r['metaschedule_deep']['ms']:.2f} "
        f"({r['metaschedule_deep']['budget'].get('trials_per_task', '?')} trials/task, "
        f"{r['metaschedule_deep']['tuning_s'] / 60:.0f} min) | "
        f"{r['metaschedule_deep']['corpus']['latency_ratio_deep_over_method']:.3f} |"
        for r in results["networks"]
        if "metaschedule_deep" in r
    ]
    methods = [_method_line(name, m) for name, m in deep["methods"].items()]
    return [
        f"## Against a deeper MetaSchedule ({len(deep['networks'])} networks)",
        "",
        "The reference above is MetaSchedule at the corpus's budget. Here the same log was "
        f"continued to {FACTOR}x its trials per task (`scripts/tune_deep_reference.py`), built "
        "and timed in the same interleaved rounds:",
        "",
        "| network | MetaSchedule ms (corpus log) | deeper MetaSchedule ms | t_deep / t_corpus |",
        "| --- | --- | --- | --- |",
        *per_network,
        "",
        "| method | t_deep / t: geomean (worst) | share of the deeper speedup | networks |",
        "| --- | --- | --- | --- |",
        *methods,
        "",
    ]


def _method_line(name: str, m: dict) -> str:
    share = m["share_of_deep_speedup"]
    return (
        f"| {name} | {m['latency_ratio_geomean']:.3f} ({m['latency_ratio_worst']:.3f} "
        f"{m['latency_ratio_worst_network']}) | "
        f"{'-' if share is None else f'{100 * share:.1f}%'} | {m['networks']} |"
    )
