"""The evaluation's results page: tables in Markdown, two figures and the JSON of every number."""

from __future__ import annotations

import json
from pathlib import Path

from . import deep_reference, repeat
from .deep_reference import deep_means
from .methods import METHODS, current_name
from .metrics import common_networks, means, time_to_match

PAPER = (
    "the paper (Ansor, server CPU): 49.13% mean share of the maximum speedup, 6.5x time to match"
)


def _fmt(value, spec: str = ".2f", suffix: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{suffix}"


def _pct(share: float | None) -> str:
    return _fmt(None if share is None else 100 * share, ".1f", "%")


def upgrade(results: dict) -> dict:
    """``results`` (an evaluation's JSON, possibly written by an earlier version) with today's
    method names and labels and its means recomputed from the per-network rows: the page is
    always made from the raw cells, so a new metric applies to old runs alike."""
    rows = []
    for row in results["networks"]:
        row = dict(row)
        for key in ("methods", "skipped", "searches"):
            if key in row:
                row[key] = {current_name(m): v for m, v in row[key].items()}
        rows.append(row)
    methods = []
    for method in results["methods"]:
        method = {**method, "name": current_name(method["name"])}
        known = METHODS.get(method["name"])
        if known is not None and known.made({k: v for k, v in method.items() if k != "label"}):
            method["label"] = known.label
        methods.append(method)
    names = [m["name"] for m in methods]
    kept, left_out = common_networks(rows, names)
    return {
        **results,
        "methods": methods,
        "networks": rows,
        "means": means(rows, names),
        "means_over": {"networks": kept, "left_out": left_out},
        "means_deep": deep_means(rows, names),
    }


def means_table(results: dict) -> list[str]:
    """Per method, over the same networks: latency ratio first, then the share of the maximum
    speedup (capped, uncapped), search time and time to match (the paper's rule; matched
    only beside it), and the runtimes a user could pick instead."""
    lines = [
        "| method | t_MetaSchedule / t: geomean (worst) | share of max speedup: capped at 100% "
        "(uncapped) | search s | MetaSchedule time to match / search: paper's rule "
        "(networks capped) | matched only (networks) | vs PyTorch eager | vs ONNX Runtime |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for method in results["methods"]:
        m = results["means"].get(method["name"], {})
        if "latency_ratio_geomean" not in m:
            lines.append(f"| {method['name']} | not timed on these networks |")
            continue
        lines.append(
            f"| {method['name']} | {m['latency_ratio_geomean']:.3f} "
            f"({m['latency_ratio_worst']:.3f} {m['latency_ratio_worst_network']}) | "
            f"{_pct(m.get('share_of_max_speedup'))} "
            f"({_pct(m.get('share_of_max_speedup_uncapped'))}) | "
            f"{_fmt(m.get('search_s'), '.0f')} | "
            f"{_fmt(m.get('time_to_match_over_search'), '.1f', 'x')} "
            f"({m['time_to_match_capped']} capped) | "
            f"{_fmt(m.get('time_to_match_over_search_matched'), '.1f', 'x')} "
            f"({m['time_to_match_matched']}) | "
            f"{_fmt(m.get('speedup_over_pytorch_eager'), '.2f', 'x')} | "
            f"{_fmt(m.get('speedup_over_onnxruntime'), '.2f', 'x')} |"
        )
    return lines


def method_list(results: dict) -> list[str]:
    """What each method is, as it was run."""
    lines = []
    for m in results["methods"]:
        levels = " and ".join(m.get("levels", ["exact"]))  # runs before the anchor level: exact
        what = m.get("label") or f"sources {m['sources']}, budget {m['budget']}, {levels} level"
        lines.append(f"- `{m['name']}`: {what} (records per source workload: {m['top_n']}).")
    return lines


def network_table(row: dict) -> list[str]:
    meta = row["metaschedule"]
    lines = [
        f"### {row['network']}",
        "",
        f"Untuned {row['untuned_ms']:.2f} ms; full MetaSchedule {meta['ms']:.2f} ms "
        f"({meta['speedup']:.2f}x, {meta['records']} records in {meta['tuning_s'] / 60:.1f} min "
        f"of tuning, budget {meta['budget']}); {_baselines(row)}.",
        "",
        f"MetaSchedule's time to match: {row.get('time_to_match', 'bisected')}; where it never "
        f"matches, its last stamp ({meta['tuning_s']:.0f} s) stands in, marked >=.",
        "",
        "| method | ms | t_max / t | speedup | share of max | search s | timed | "
        "MetaSchedule at same time | MetaSchedule time to match | / search | vs eager | "
        "vs ONNX Runtime |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, cell in row["methods"].items():
        if "wrong" in cell:
            lines.append(f"| {name} | wrong build, not timed: {cell['wrong']} |")
            continue
        match = cell["metaschedule_time_to_match_s"]
        ratio, capped = time_to_match(cell, meta["tuning_s"])
        lines.append(
            f"| {name} | {cell['ms']:.2f} | {cell['latency_ratio_max_over_method']:.2f} | "
            f"{cell['speedup']:.2f}x | {_pct(cell['share_of_max_speedup'])} | "
            f"{cell['search_s']:.0f} | {_fmt(cell['candidates_timed'], 'd')} | "
            f"{cell['metaschedule_same_time_speedup']:.2f}x | "
            f"{'not matched' if match is None else f'{match:.0f} s'} | "
            f"{'>=' if capped and ratio else ''}{_fmt(ratio, '.1f', 'x')} | "
            f"{_fmt(cell.get('speedup_over_pytorch_eager'), '.2f', 'x')} | "
            f"{_fmt(cell.get('speedup_over_onnxruntime'), '.2f', 'x')} |"
        )
    for name, why in row.get("skipped", {}).items():
        lines.append(f"| {name} | skipped: {why} |")
    return lines + [*repeat.network_line(row), *_phases(row), ""]


def _phases(row: dict) -> list[str]:
    """Each method's search time by phase, and the held-out model's training (apart)."""
    searches = row.get("searches", {})
    if not searches:
        return []
    lines = ["", "Search time by phase (s):", ""]
    for name, search in searches.items():
        phases = ", ".join(f"{k} {v:.1f}" for k, v in (search.get("phases_s") or {}).items())
        training = search.get("held_out_training_s")
        trained = f"; training the held-out model {training:.1f} s, apart" if training else ""
        lines.append(f"- {name}: {phases}{trained}")
    return lines


def pooled_note(results: dict) -> str:
    """Which other CPUs' datasets the held-out models were trained on too, if any."""
    pooled = results.get("held_out_models_trained_on", [])[1:]
    return f" (pooled with {', '.join(f'`{d}`' for d in pooled)})" if pooled else ""


def search_time_note(results: dict) -> str:
    """What the search times of these results count: runs before search time began at the
    command's start counted choosing only."""
    phases = [
        set(s.get("phases_s") or {})
        for r in results["networks"]
        for s in r.get("searches", {}).values()
    ]
    if phases and all("read_sources" in p for p in phases):
        return (
            "Search time runs from the command's start to the compiled network: reading the "
            "source logs, loading the network and the cost model, choosing (extracting, ranking "
            "or applying, timing, checking) and compiling; training the held-out cost model is "
            "shown apart, per network."
        )
    return (
        "Search time counts choosing only (ranking, applying, building, checking and timing "
        "candidates), as these runs recorded it: reading the source logs, loading the network "
        "and cost model and compiling the network are not in it, so it understates what a "
        "user waits for (reading ten logs took 16-20 s before the source index)."
    )


BASELINE_NAMES = {"pytorch_eager": "PyTorch eager", "onnxruntime": "ONNX Runtime"}


def _baselines(row: dict) -> str:
    """Each baseline's time, or why it was not timed (rows written before it existed lack it)."""
    texts = []
    for key, label in BASELINE_NAMES.items():
        cell = row.get(key, {"not_timed": "not measured in this run"})
        if "ms" in cell:
            texts.append(f"{label} {cell['ms']:.2f} ms")
        else:
            texts.append(f"{label} not timed ({cell['not_timed']})")
    return "; ".join(texts)


def _pyplot():
    """pyplot on a backend that needs no display (imported late: only the page needs it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_speedup_vs_search(results: dict, path: Path) -> None:
    """Per network: MetaSchedule's best-so-far speedup over tuning time, methods as points."""
    plt = _pyplot()

    from matplotlib import ticker

    rows = results["networks"]
    cols = min(3, len(rows))
    fig, axes = plt.subplots(
        (len(rows) + cols - 1) // cols,
        cols,
        figsize=(5 * cols, 3.6 * ((len(rows) + 2) // 3) + 0.6),
        squeeze=False,
        layout="constrained",
    )
    for ax, row in zip(axes.flat, rows):
        untuned = row["untuned_ms"]
        times = [max(s, 1.0) for s, _ in row["curve"]]
        ax.step(
            times,
            [untuned / ms for _, ms in row["curve"]],
            where="post",
            color="gray",
            label="MetaSchedule",
        )
        for key, style in (("pytorch_eager", ":"), ("onnxruntime", "-.")):
            baseline_ms = row.get(key, {}).get("ms")
            if baseline_ms:
                label = BASELINE_NAMES[key]
                ax.axhline(untuned / baseline_ms, color="black", linestyle=style, label=label)
        for name, cell in row["methods"].items():
            if "speedup" in cell:
                ax.scatter(max(cell["search_s"], 1.0), cell["speedup"], label=name, zorder=3)
        ax.set_xscale("log")  # labelled at 1, 2, 5 x 10^n: a decade or less spans some plots
        ax.xaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(ticker.NullFormatter())
        ax.set_title(row["network"])
        ax.set_xlabel("search / tuning time (s)")
        ax.set_ylabel("speedup over untuned")
    for ax in list(axes.flat)[len(rows) :]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 5), fontsize=8)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_share_of_max(results: dict, path: Path) -> None:
    """Per network and method: the share of full MetaSchedule's speedup reached."""
    plt = _pyplot()
    import numpy as np

    rows = results["networks"]
    names = [m["name"] for m in results["methods"]]
    width = 0.8 / max(len(names), 1)
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(rows) + 2), 4.6), layout="constrained")
    for i, name in enumerate(names):
        shares = [100 * (r["methods"].get(name, {}).get("share_of_max_speedup") or 0) for r in rows]
        ax.bar(np.arange(len(rows)) + i * width, shares, width, label=name)
    ax.axhline(49.13, color="black", linestyle="--", linewidth=1, label="paper mean (49.13%)")
    ax.set_xticks(np.arange(len(rows)) + 0.4 - width / 2, [r["network"] for r in rows])
    ax.set_ylabel("share of the maximum speedup (%)")
    fig.legend(loc="outside lower center", ncol=min(len(names) + 1, 8), fontsize=8)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_page(results: dict, page: Path, command: str) -> Path:
    """``page`` (Markdown), its figures and every number (``evaluate.json``, ``upgrade``d) in
    the directory of the same name (``docs/results.md`` -> ``docs/results/``); returns the
    page's path. ``command`` is what wrote the page: the evaluation, or a rewrite from its
    JSON (``recommender evaluate --page P --from-results JSON``)."""
    results = upgrade(results)
    figures = page.with_suffix("")
    figures.mkdir(parents=True, exist_ok=True)
    (figures / "evaluate.json").write_text(json.dumps(results, indent=1) + "\n")
    plot_speedup_vs_search(results, figures / "speedup_vs_search.png")
    plot_share_of_max(results, figures / "share_of_max.png")
    cores = results["machine"]["cores"]
    over = results["means_over"]
    left_out = [f"- {name}: {why}" for name, why in over["left_out"].items()]
    lines = [
        "# Evaluation: transfer-tuning and the recommender against MetaSchedule",
        "",
        f"Timed on {results['date']}: {results['machine']['cpu']}, "
        f"{cores} core{'s' * (cores != 1)}, TVM {results['tvm']}, target `{results['target']}`; "
        f"candidates timed on {results['candidates_timed_on']}. Page written by `{command}`.",
        "",
        "Protocol: leave-one-model-out. A network's own log is never a source; the recommender's "
        "cost model is retrained without the network's kernels and without rows whose source "
        "came from it, on the transfer-benefit dataset, to which the exhaustive runs over every "
        f"other network add what they measured{pooled_note(results)}. Every build "
        "is checked against the untuned outputs before it is timed; "
        "all builds of a network are timed in one interleaved run (medians of 5 rounds). "
        f"{search_time_note(results)} MetaSchedule's figures come "
        "from the network's own log in the corpus, rebuilt at any tuning time from its stamps; "
        "its clock starts at its first batch.",
        "",
        f"Note: {results['note']}. PyTorch eager (what users run without a compiler) is the "
        "zoo's own torchvision/transformers module on the same input, as many threads as the "
        "target has cores, timed in the same interleaved rounds when torch is installed. ONNX "
        "Runtime is that module exported to ONNX (legacy exporter, opset 17) and run by its CPU "
        "execution provider with every graph optimisation, as many intra-op threads as the "
        "target has cores and one inter-op thread, in the same rounds, when it is installed.",
        "",
        f"Every number: [`{figures.name}/evaluate.json`]({figures.name}/evaluate.json).",
        "",
        "## Methods",
        "",
        *method_list(results),
        "",
        f"## Means over the {len(over['networks'])} networks every method was timed on",
        "",
        *(["Left out (for every method alike):", "", *left_out, ""] if left_out else []),
        *means_table(results),
        "",
        "Latency ratio t_MetaSchedule / t: above 1 the method's network runs faster than "
        "MetaSchedule's whole log. Share of the maximum speedup = (S - 1) / (S_max - 1) against "
        "that log (its budget is on each network's line): capped, a network where the method "
        "beat the log counts 100%; uncapped, more. Time to match by the paper's rule: where "
        "MetaSchedule never matches, its last stamp stands in (a lower bound); matched only: "
        "over the networks where it does match. Baselines: geometric means.",
        "",
        f"For comparison, {PAPER}.",
        "",
        *deep_reference.page_section(results),
        *repeat.page_section(results),
        f"![speedup vs search time]({figures.name}/speedup_vs_search.png)",
        "",
        f"![share of the maximum speedup]({figures.name}/share_of_max.png)",
        "",
        "## Per network",
        "",
    ]
    for row in results["networks"]:
        lines += network_table(row)
    if results["not_evaluated"]:
        lines += ["## Not evaluated", ""]
        lines += [f"- {name}: {why}" for name, why in results["not_evaluated"].items()]
        lines.append("")
    page.write_text("\n".join(lines))
    return page
