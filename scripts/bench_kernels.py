"""Kernel-level benchmark: the zoo's heavy kernels as TVM's schedules run them, against ONNX
Runtime and PyTorch eager running the same operator, under this CPU's measured fp32 peak.

    .venv/bin/python scripts/bench_kernels.py [--share 0.8] [--corpus NAME]
        [--database NAME=LOG_DIR ...]

Workloads: the unique kernels holding ``--share`` of the zoo's tuned time in the corpus chosen
for this CPU (or ``--corpus``), its networks prepared in its configuration. TVM variants: every
corpus of this architecture and configuration (its best record of the workload) and each
``--database`` (a tuning log directory, e.g. one of ``tune_kernels.py --space`` or
``--prepack``: a schedule that rewrites its weight's layout is checked with the rewrite and
timed without it, the weight prepacked as a built network passes it). Writes
``docs/results/kernels_<cpu>.json`` (``kernels_<cpu>_<corpus>.json`` for a corpus named other
than the CPU) after every workload (a rerun times only the workloads it lacks; ``--fresh``
starts over), then a page (``.md``) and a roofline-style figure (``.png``) beside it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections import Counter
from pathlib import Path

import tvm
from tqdm import tqdm

from recommender.core import corpora, paths
from recommender.core.corpora import CHECKOUT
from recommender.core.targets import host_target, use_target_threads
from recommender.evaluate.kernel_bench import (
    NO_RECORD,
    bench_workload,
    best_by_workload,
    geomean,
    gflops,
    heavy_workloads,
    ratio_to,
)
from recommender.evaluate.peak import fp32_peak_gflops
from recommender.logs.sources import logged_models

RUNTIMES = ("onnxruntime", "pytorch")


def main() -> int:
    args = _parser().parse_args()
    target = host_target()
    threads = use_target_threads(target)
    cpu = str(target.attrs["mcpu"])
    chosen = corpora.choose(target, explicit=args.corpus).corpus
    paths.use_corpus(chosen.root)  # its configuration prepares the networks
    named = "" if chosen.name == cpu else f"_{chosen.name}"
    out = args.out or CHECKOUT / "docs" / "results" / f"kernels_{cpu}{named}.json"
    logs_of = {  # corpora of another configuration have none of these kernels
        c.name: c.logs for c in corpora.find_corpora() if c.configuration == chosen.configuration
    }
    logs_of = {name: logs for name, logs in logs_of.items() if logged_models(logs)}
    print(
        f"corpus for the workloads: {chosen.name} ({chosen.configuration}); "
        f"TVM on {threads} threads",
        file=sys.stderr,
    )

    def corpus_logs(name: str) -> dict[str, Path]:
        return {model: logs_of[name] / model for model in logged_models(logs_of[name])}

    heavy, total_s = heavy_workloads(  # a --database may be tuned with prepacked weights
        corpus_logs(chosen.name), target, args.share, layout_free=bool(args.database)
    )
    databases = {f"ms-{name}": best_by_workload(corpus_logs(name), target) for name in logs_of}
    for spec in args.database:
        name, _, path = spec.partition("=")
        databases[name] = best_by_workload({name: Path(path)}, target)
    result = _previous(out, args.fresh) or {"workloads": {}}
    result["meta"] = {
        "cpu": cpu,
        "target": str(target),
        "tvm_threads": threads,
        "workload_corpus": chosen.name,
        "configuration": chosen.configuration.to_json(),
        "share": args.share,
        "zoo_tuned_ms": total_s * 1e3,
        "variants": sorted(databases) + list(RUNTIMES),
        "versions": _versions(),
        "command": " ".join(["python", *sys.argv]),
        **fp32_peak_gflops(target),
    }
    onnx_dir = paths.cache_root() / "onnx-ops"  # one-operator models, remade each run
    for h in tqdm(heavy[: args.limit], desc="kernels", unit="kernel"):
        if str(h.key) in result["workloads"]:
            continue
        row = h.to_json(total_s) | bench_workload(h, databases, target, threads, onnx_dir)
        result["workloads"][str(h.key)] = row
        _write(out, result)
    result["summary"] = _summary(list(result["workloads"].values()), result["meta"])
    _write(out, result)
    page = _markdown(result)
    out.with_suffix(".md").write_text(page)
    print(page)
    _figure(result, out.with_suffix(".png"))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--share", type=float, default=0.8, help="of the zoo's tuned time")
    parser.add_argument("--corpus", default=None, help="whose kernels (default: the host's)")
    parser.add_argument("--database", action="append", default=[], metavar="NAME=LOG_DIR")
    parser.add_argument("--limit", type=int, default=None, help="only the N heaviest")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--fresh", action="store_true", help="forget the JSON's workloads")
    return parser


def _previous(out: Path, fresh: bool) -> dict | None:
    if fresh or not out.exists():
        return None
    try:
        return json.loads(out.read_text())
    except json.JSONDecodeError as err:
        sys.exit(f"{out} is not valid JSON ({err}); move it away or pass --fresh")


def _write(out: Path, result: dict) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    partial.write_text(json.dumps(result, indent=1) + "\n")
    partial.replace(out)


def _versions() -> dict[str, str]:
    versions = {"tvm": tvm.__version__}
    for module in ("onnxruntime", "torch"):
        with contextlib.suppress(ImportError):
            versions[module] = __import__(module).__version__
    return versions


BEST_TVM = "best TVM record"


def _summary(rows: list[dict], meta: dict) -> dict:
    """Per variant (and the best TVM variant of each kernel): kernels timed, geometric mean and
    worst of its speed relative to each runtime, and the median fraction of the fp32 peak."""
    tvm_variants = [v for v in meta["variants"] if v not in RUNTIMES]
    rows = [
        row | {"ms": row["ms"] | {BEST_TVM: min(row["ms"][v] for v in timed)}}
        if (timed := [v for v in tvm_variants if v in row["ms"]])
        else row
        for row in rows
    ]
    summary = {}
    for variant in [*meta["variants"], BEST_TVM]:
        entry = {"workloads": sum(variant in r["ms"] for r in rows)}
        for runtime in RUNTIMES:
            if variant == runtime:
                continue
            ratios = list(ratio_to(rows, variant, runtime))
            entry[f"vs_{runtime}_geomean"] = geomean(ratios)
            entry[f"vs_{runtime}_worst"] = min(ratios, default=None)
            entry[f"vs_{runtime}_workloads"] = len(ratios)
        fractions = [gflops(r)[variant] / meta["peak_gflops"] for r in rows if variant in gflops(r)]
        entry["peak_fraction_median"] = (
            sorted(fractions)[len(fractions) // 2] if fractions else None
        )
        summary[variant] = entry
    return summary


def _markdown(result: dict) -> str:
    """The benchmark as a page: the summary first, then every kernel."""
    meta, variants = result["meta"], result["meta"]["variants"]
    held = sum(w["share_of_zoo"] for w in result["workloads"].values())  # --limit: less
    lines = [
        f"# Heavy kernels on {meta['cpu']}: TVM schedules against ONNX Runtime and PyTorch",
        "",
        f"Written by `{meta['command']}`; raw data in the JSON beside",
        f"this page. {len(result['workloads'])} unique kernels holding {held:.0%} of the "
        f"zoo's tuned time (corpus `{meta['workload_corpus']}`); TVM on {meta['tvm_threads']} "
        f"threads, ONNX Runtime and PyTorch on as many; measured fp32 peak "
        f"{meta['peak_gflops']:.0f} GFLOP/s (an FMA loop on every core). Each contender runs in "
        f"a worker process of its own, rounds taken in turn, medians of {_rounds(result)} rounds.",
        "",
        "| variant | speed vs ONNX Runtime: geomean (worst) | vs PyTorch eager | kernels | "
        "median fraction of peak |",
        "| --- | --- | --- | --- | --- |",
    ]
    for variant, entry in result["summary"].items():
        fraction = entry["peak_fraction_median"]
        lines.append(
            f"| {variant} | {_versus(entry, 'onnxruntime')} | {_versus(entry, 'pytorch')} | "
            f"{entry['workloads']} | {'-' if fraction is None else f'{fraction:.0%}'} |"
        )
    lines += [
        "",
        "Speed ratio = the runtime's time / the variant's (above 1: the variant is faster).",
        "",
        "ms per run (GFLOP/s of the convolution or matmul):",
        "",
        "| kernel | share of zoo time | " + " | ".join(variants) + " |",
        "| --- | --- |" + " --- |" * len(variants),
    ]
    for row in result["workloads"].values():
        rates = gflops(row)
        cells = [
            f"{row['ms'][v]:.3f} ({rates[v]:.0f})"
            if v in rates
            else f"{row['ms'][v]:.3f}"
            if v in row["ms"]
            else "-"
            for v in variants
        ]
        shape = "x".join(map(str, row["anchor_extents"]))
        kernel = f"`{row['kernel_class']}` {shape}"
        lines.append(f"| {kernel} | {row['share_of_zoo']:.1%} | " + " | ".join(cells) + " |")
    unrecorded = Counter(
        name
        for row in result["workloads"].values()
        for name, why in row["failures"].items()
        if why == NO_RECORD
    )
    failures = [
        f"- `{row['kernel_class']}` {name}: {why}"
        for row in result["workloads"].values()
        for name, why in row["failures"].items()
        if why != NO_RECORD
    ] + [f"- {name}: no record of {n} of the kernels" for name, n in unrecorded.items()]
    if failures:
        lines += ["", "Not timed:", "", *failures]
    return "\n".join(lines) + "\n"


def _rounds(result: dict) -> int:
    return max((row["rounds"] for row in result["workloads"].values()), default=0)


def _versus(entry: dict, runtime: str) -> str:
    g = entry.get(f"vs_{runtime}_geomean")
    return "-" if g is None else f"{g:.2f} ({entry[f'vs_{runtime}_worst']:.2f})"


def _figure(result: dict, path: Path) -> None:
    """GFLOP/s against arithmetic intensity (FLOPs per byte of the kernel's parameters), every
    variant a marker, the measured fp32 peak a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    meta = result["meta"]
    fig, ax = plt.subplots(figsize=(8, 5))
    for variant in meta["variants"]:
        points = [
            (row["flops"] / row["bytes"], gflops(row)[variant])
            for row in result["workloads"].values()
            if variant in gflops(row) and row.get("bytes")
        ]
        if points:
            ax.scatter(*zip(*points), label=variant, s=18)
    ax.axhline(meta["peak_gflops"], color="black", linestyle="--", linewidth=1)
    ax.text(
        0.02, meta["peak_gflops"] * 1.03, "measured fp32 peak", transform=ax.get_yaxis_transform()
    )
    ax.set(
        xscale="log",
        xlabel="FLOPs per byte of parameters",
        ylabel="GFLOP/s",
        title=f"Heavy zoo kernels on {meta['cpu']} ({meta['tvm_threads']} threads)",
    )
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
