"""The evaluation's results page: tables in Markdown, two figures and the JSON of every number."""

from __future__ import annotations

import json
from pathlib import Path

PAPER = (
    "the paper (Ansor, server CPU): 49.13% mean share of the maximum speedup, 6.5x time to match"
)


def _fmt(value, spec: str = ".2f", suffix: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{suffix}"


def means_table(results: dict) -> list[str]:
    lines = [
        "| method | networks | speedup | share of max speedup | search s | "
        "MetaSchedule time to match / search | speedup over PyTorch eager | "
        "speedup over ONNX Runtime |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for method in results["methods"]:
        m = results["means"].get(method["name"], {})
        share = m.get("share_of_max_speedup")
        lines.append(
            f"| {method['name']} | {m.get('networks', 0)} | {_fmt(m.get('speedup'), '.2f', 'x')} | "
            f"{_fmt(None if share is None else 100 * share, '.1f', '%')} | "
            f"{_fmt(m.get('search_s'), '.0f')} | "
            f"{_fmt(m.get('time_to_match_over_search'), '.1f', 'x')} "
            f"(median {_fmt(m.get('time_to_match_over_search_median'), '.1f', 'x')}) | "
            f"{_fmt(m.get('speedup_over_pytorch_eager'), '.2f', 'x')} | "
            f"{_fmt(m.get('speedup_over_onnxruntime'), '.2f', 'x')} |"
        )
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
        f"MetaSchedule's time to match: {row.get('time_to_match', 'bisected')}.",
        "",
        "| method | ms | speedup | share of max | t_max / t | search s | timed | "
        "MetaSchedule at same time | MetaSchedule time to match | / search | vs eager | "
        "vs ONNX Runtime |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, cell in row["methods"].items():
        if "wrong" in cell:
            lines.append(f"| {name} | wrong build, not timed: {cell['wrong']} |")
            continue
        share = cell["share_of_max_speedup"]
        match = cell["metaschedule_time_to_match_s"]
        lines.append(
            f"| {name} | {cell['ms']:.2f} | {cell['speedup']:.2f}x | "
            f"{_fmt(None if share is None else 100 * share, '.1f', '%')} | "
            f"{cell['latency_ratio_max_over_method']:.2f} | {cell['search_s']:.0f} | "
            f"{_fmt(cell['candidates_timed'], 'd')} | "
            f"{cell['metaschedule_same_time_speedup']:.2f}x | "
            f"{'not matched' if match is None else f'{match:.0f} s'} | "
            f"{_fmt(cell['time_to_match_over_search'], '.1f', 'x')} | "
            f"{_fmt(cell.get('speedup_over_pytorch_eager'), '.2f', 'x')} | "
            f"{_fmt(cell.get('speedup_over_onnxruntime'), '.2f', 'x')} |"
        )
    for name, why in row.get("skipped", {}).items():
        lines.append(f"| {name} | skipped: {why} |")
    return lines + [""]


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
    """``page`` (Markdown), its figures and every number (``evaluate.json``) in the directory
    of the same name (``docs/results.md`` -> ``docs/results/``); returns the page's path."""
    figures = page.with_suffix("")
    figures.mkdir(parents=True, exist_ok=True)
    (figures / "evaluate.json").write_text(json.dumps(results, indent=1) + "\n")
    plot_speedup_vs_search(results, figures / "speedup_vs_search.png")
    plot_share_of_max(results, figures / "share_of_max.png")
    cores = results["machine"]["cores"]
    lines = [
        "# Evaluation: transfer-tuning and the recommender against MetaSchedule",
        "",
        f"Made by `{command}` on {results['date']}: {results['machine']['cpu']}, "
        f"{cores} core{'s' * (cores != 1)}, TVM {results['tvm']}, target `{results['target']}`; "
        f"candidates timed on {results['candidates_timed_on']}.",
        "",
        "Protocol: leave-one-model-out. A network's own log is never a source; the recommender's "
        "cost model is retrained without the network's kernels and without rows whose source "
        "came from it, on the transfer-benefit dataset, whose rank-0 pairs are what the "
        "exhaustive runs (`transfer-all`) measured. Every build "
        "is checked against the untuned outputs before it is timed; "
        "all builds of a network are timed in one interleaved run (medians of 5 rounds). "
        "Search time counts ranking, applying, building, checking and timing candidates; task "
        "extraction and log reading are left out for every method. MetaSchedule's figures come "
        "from the network's own log in the corpus, rebuilt at any tuning time from its stamps.",
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
        "## Means over networks",
        "",
        *means_table(results),
        "",
        f"For comparison, {PAPER}.",
        "",
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
