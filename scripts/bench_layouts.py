"""Blocked activation layouts against NCHW on the zoo's heaviest convolutions: each tuned both
ways on this CPU with the same trials, then timed interleaved with ONNX Runtime and PyTorch.

    .venv/bin/python scripts/bench_layouts.py [--top 6] [--trials-per-task 64] [--block 16]
        [--corpus NAME]

The convolutions are the heaviest ungrouped ones of the networks logged in the corpus chosen for
this CPU (or ``--corpus``), by its tuned times. Each is rebuilt from its shapes as a conv2d + bias
Relax module (``kernel_ops.relax_convolution``) and lowered twice: as it is (NCHW) and with
its convolution blocked (NCHW{block}c, ``tasks.layouts``). Only the convolution's kernel is tuned
and timed: in a network the layout transforms around it are paid at the network's boundaries
(the weights' once, at load time), not once per convolution. The tuning logs go to
``datasets/kernel_variants/<cpu>/layouts-<T>/<layout>/`` and the results to
``docs/results/layouts_<cpu>.json`` and ``.md``, as they come: run again, it continues.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

import tvm
from tqdm import tqdm

from recommender.core import corpora, paths
from recommender.core.configuration import Configuration
from recommender.core.corpora import CHECKOUT
from recommender.core.targets import host_target, use_target_threads
from recommender.evaluate.kernel_bench import (
    best_by_workload,
    geomean,
    gflops,
    heavy_workloads,
    ratio_to,
    time_variants,
)
from recommender.evaluate.kernel_ops import relax_convolution, runtime_op
from recommender.logs.collect import collect_tasks
from recommender.logs.sources import logged_models
from recommender.networks.network import Network, inputs_of
from recommender.tasks.extract import Task, extract_tasks
from recommender.tasks.layouts import BLOCK

RUNTIMES = ("onnxruntime", "pytorch")


def convolution_task(
    mod: tvm.IRModule, target: tvm.target.Target, name: str, configuration: Configuration
) -> Task:
    """The one kernel of ``mod`` prepared by ``configuration`` with an anchor (the convolution),
    named ``name``."""
    network = Network(name, mod, inputs_of(mod))
    tasks = extract_tasks(network, target, configuration=configuration, cache=False)
    [task] = [t for t in tasks if t.kernel_class.anchor]
    return dataclasses.replace(task, name=name, weight=1)


def main() -> int:
    args = _parser().parse_args()
    target = host_target()
    threads = use_target_threads(target)
    cpu = str(target.attrs["mcpu"])
    corpus = corpora.choose(target, args.corpus).corpus
    logs = corpus.logs
    heavy, total_s = heavy_workloads({m: logs / m for m in logged_models(logs)}, target, 1.0)
    convolutions = []
    for h in heavy:
        op = runtime_op(h.task.mod)
        if op is not None and op.kind == "conv2d" and op.attr("groups") == 1:
            convolutions.append((h, op))
    convolutions = convolutions[: args.top]
    configurations = {  # by log dir
        "nchw": Configuration(),
        f"nchw{args.block}c": Configuration(layout=f"NCHW{args.block}c"),
    }
    tasks = {
        variant: [
            convolution_task(relax_convolution(op), target, str(h.key), configuration)
            for h, op in convolutions
        ]
        for variant, configuration in configurations.items()
    }
    root = CHECKOUT / "datasets" / "kernel_variants" / cpu / f"layouts-{args.trials_per_task}"
    for variant, layout_tasks in tasks.items():
        print(
            f"tuning {len(layout_tasks)} convolutions in {variant} on {threads} threads",
            file=sys.stderr,
        )
        collect_tasks(
            f"layouts-{variant}",
            layout_tasks,
            target,
            root / variant,
            trials_per_task=args.trials_per_task,
            configuration=configurations[variant],
        )
    best = {layout: best_by_workload({layout: root / layout}, target) for layout in tasks}

    out = CHECKOUT / "docs" / "results" / f"layouts_{cpu}.json"
    result = json.loads(out.read_text()) if out.exists() else {"convolutions": {}}
    result["meta"] = {
        "cpu": cpu,
        "target": str(target),
        "tvm_threads": threads,
        "trials_per_task": args.trials_per_task,
        "workload_corpus": corpus.name,
        "workload_networks": list(logged_models(logs)),
        "layouts": list(tasks),
        "logs": str(root.relative_to(CHECKOUT)),
        "command": " ".join(["python", *sys.argv]),
    }
    onnx_dir = paths.cache_root() / "onnx-ops"
    for i, (h, op) in enumerate(tqdm(convolutions, desc="timing", unit="conv")):
        if str(h.key) in result["convolutions"]:
            continue
        variants = {}
        for layout, layout_tasks in tasks.items():
            record = best[layout].get(int(layout_tasks[i].structural_key))
            if record is not None:
                variants[layout] = (layout_tasks[i].mod, record.trace)
        row = time_variants(str(h.key), variants, op, target, threads, onnx_dir)
        result["convolutions"][str(h.key)] = h.to_json(total_s) | row
        out.write_text(json.dumps(result, indent=1) + "\n")
    rows = list(result["convolutions"].values())
    result["summary"] = {
        layout: {
            "vs_onnxruntime_geomean": geomean(list(ratio_to(rows, layout, "onnxruntime"))),
            "vs_pytorch_geomean": geomean(list(ratio_to(rows, layout, "pytorch"))),
            "vs_nchw_geomean": geomean(list(ratio_to(rows, layout, "nchw"))),
        }
        for layout in [*tasks, *RUNTIMES]
    }
    out.write_text(json.dumps(result, indent=1) + "\n")
    page = _markdown(result)
    out.with_suffix(".md").write_text(page)
    print(page)
    return 0


def _markdown(result: dict) -> str:
    meta = result["meta"]
    variants = [*meta["layouts"], *RUNTIMES]
    lines = [
        f"# Blocked layouts vs NCHW, {meta['cpu']}",
        "",
        f"Written by `{meta['command']}`.",
        "",
        f"The heaviest ungrouped convolutions of {', '.join(meta['workload_networks'])} (by the",
        f"`{meta['workload_corpus']}` corpus's tuned times), each tuned in every layout with",
        f"{meta['trials_per_task']} trials on {meta['tvm_threads']} threads, checked against its",
        "unscheduled kernel, then timed in interleaved rounds (median) with ONNX Runtime and",
        "PyTorch eager running the same conv + bias. GFLOP/s; the layout transforms around a",
        "blocked convolution are not timed (a network pays them at its boundaries).",
        "",
        "| convolution (input, weight) | stride | share of their time | "
        + " | ".join(variants)
        + " |",
        "| --- | --- | --- | " + " | ".join("---" for _ in variants) + " |",
    ]
    for row in result["convolutions"].values():
        speeds = gflops(row)
        shapes = " ".join("x".join(map(str, s)) for s in row["op"]["shapes"][:2])
        cells = [f"{speeds[v]:.0f}" if v in speeds else "failed" for v in variants]
        lines.append(
            f"| {shapes} | {row['op']['stride']} | {row['share_of_zoo']:.1%} | "
            + " | ".join(cells)
            + " |"
        )
    lines += [
        "",
        "| variant | vs ONNX Runtime (geomean) | vs PyTorch | vs NCHW |",
        "| --- | --- | --- | --- |",
    ]
    for name, summary in result["summary"].items():
        cells = [
            summary[k] for k in ("vs_onnxruntime_geomean", "vs_pytorch_geomean", "vs_nchw_geomean")
        ]
        lines.append(
            f"| {name} | " + " | ".join("" if c is None else f"{c:.2f}" for c in cells) + " |"
        )
    failures = [
        (key, name, why)
        for key, row in result["convolutions"].items()
        for name, why in row["failures"].items()
    ]
    if failures:
        lines += ["", "Failures:", ""] + [f"- {key} {name}: {why}" for key, name, why in failures]
    return "\n".join(lines) + "\n"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=6, help="the N heaviest convolutions")
    parser.add_argument("--trials-per-task", type=int, default=64)
    parser.add_argument("--block", type=int, default=BLOCK, help="channels per block")
    parser.add_argument("--corpus", default=None, help="whose networks and times rank the convs")
    return parser


if __name__ == "__main__":
    sys.exit(main())
