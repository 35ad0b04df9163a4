"""Transfer levels, before and after: the recommender exact-only, with anchor-level candidates,
and with the default level too (MetaSchedule's design space for kernels no source reaches), on
the corpus chosen for this host, timed end to end in one interleaved run.

    python scripts/bench_anchor.py [MODEL ...] [--corpus NAME] [--out DIR]

Per network and variant (``top-0``/``top-3``; exact-only, + anchor, + default): the recommender
chooses schedules from the other networks' logs with the corpus's cost model (searches are
kept in ``DIR/MODEL/VARIANT`` and reused on a rerun); then untuned, every variant and the
network's own log (MetaSchedule at the corpus's budget, tuned on the corpus's CPU, replayed
here: the reference of the latency ratio) are built, checked against the untuned build and
timed in alternating rounds, with PyTorch eager and ONNX Runtime when installed (each in a
worker of its own). When the corpus is another CPU's and this CPU's own corpus has a complete
log of the network, MetaSchedule tuned here (in its corpus's configuration) is timed in the
same rounds and is the reference of a second ratio. Coverage (the share of FLOPs in
kernels with a valid candidate) comes from each search's report, and so do the kernels that
took a default-level schedule (untuned and chosen times). Writes
``docs/results/anchor_transfer_<cpu>.json`` after every network (``..._<cpu>_from_<corpus>.json``
when the corpus is another CPU's, so that no file mixes two corpora). Run it alone on the
machine.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

from recommender.core import corpora, paths
from recommender.core.corpora import Corpus
from recommender.core.targets import host_target, use_target_threads
from recommender.evaluate import endtoend
from recommender.evaluate.comparison import baselines
from recommender.evaluate.searches import read_json, write_json
from recommender.evaluate.workflows import load_cost_model
from recommender.learn.feature_cache import FeatureCache
from recommender.logs.collect import complete_log
from recommender.logs.sources import load_sources, log_dir, resolve_sources
from recommender.logs.tuning_log import TuningLog
from recommender.networks.zoo import families, load_zoo_network
from recommender.recommend.report import recommendation_summary
from recommender.recommend.search import Budget, recommend
from recommender.tasks.extract import prepare
from recommender.transfer.apply import Level
from recommender.transfer.candidate import LEVELS
from recommender.transfer.database import write_records

VARIANTS = {
    "top-0 exact": (Budget(top_k=0), (Level.EXACT,)),
    "top-0 anchor": (Budget(top_k=0), (Level.EXACT, Level.ANCHOR)),
    "top-3 exact": (Budget(top_k=3), (Level.EXACT,)),
    "top-3 anchor": (Budget(top_k=3), (Level.EXACT, Level.ANCHOR)),
    "top-0 default": (Budget(top_k=0), LEVELS),
    "top-3 default": (Budget(top_k=3), LEVELS),
}
OWN_LOG = "own log (reference)"
HERE = "MetaSchedule tuned here"


def search(name: str, variant: str, target, out: Path) -> dict:
    """The variant's search report, from ``out`` when it was made before."""
    report = read_json(out / "search.json")
    if report is not None:
        return report
    budget, levels = VARIANTS[variant]
    network = load_zoo_network(name)
    started = time.perf_counter()
    logs = {n: log_dir(n) for n in resolve_sources("all", name)}
    sources = load_sources(logs, target, top_n=3)
    result = recommend(
        network,
        target,
        sources,
        load_cost_model(None, target),
        budget,
        family_of=families({name: network}),
        cache=FeatureCache(),
        levels=levels,
    )
    write_records(result.picks, target, out)
    report = recommendation_summary(result, {})
    report["wall_s"] = round(time.perf_counter() - started, 1)
    write_json(out / "search.json", report)
    return report


def compare(name: str, target, out: Path, reports: dict[str, dict], here: Corpus | None) -> dict:
    network = load_zoo_network(name)
    builds = endtoend.Builds(prepare(network.mod, target), target)
    builds.want("untuned")
    for variant in reports:
        builds.want(variant, out / variant)
    builds.want(OWN_LOG, TuningLog.open(log_dir(name)).path)  # opening unpacks the gzipped files
    builds.build_wanted()
    made = {k: builds.get(k) for k in [*reports, OWN_LOG]}
    log_here = here and complete_log(here.logs / name, target, here.configuration)
    if log_here:
        tuned_here = endtoend.Builds(prepare(network.mod, target, here.configuration), target)
        tuned_here.want(HERE, log_here.path)
        made[HERE] = tuned_here.get(HERE)
    reference = endtoend.ReferenceOutputs(builds.get("untuned"), network)
    executables, wrong = reference.partition(made)
    executables["untuned"] = builds.get("untuned")
    others, _ = baselines(name, int(target.attrs["num-cores"]))
    times = endtoend.time_interleaved(executables, network, others=others)
    ratios = {
        key: {v: round(times[base] / times[v], 4) for v in reports if v in times}
        for key, base in (("own_log", OWN_LOG), ("tuned_here", HERE))
        if base in times
    }
    return {
        "network": name,
        "ms": {k: round(v * 1e3, 3) for k, v in times.items()},
        **{f"latency_ratio_{key}_over_method": r for key, r in ratios.items()},
        "coverage": {v: r.get("coverage") for v, r in reports.items()},
        "search_s": {v: r.get("search_s") for v, r in reports.items()},
        "default_level_kernels": {v: _default_level(r) for v, r in reports.items()},
        "wrong": wrong,
    }


def _default_level(report: dict) -> list[dict]:
    """The kernels that took a default-level schedule: weight, untuned and chosen ms."""
    return [
        {
            "task": k["task"],
            "weight": k["weight"],
            "untuned_ms": k["untuned_ms"],
            "chosen_ms": k["chosen"]["measured_ms"],
        }
        for k in report["kernels"]
        if k["level"] == Level.DEFAULT.value
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="*", default=["resnet18"], help="zoo networks")
    parser.add_argument("--corpus", default=None, help="corpus name or path (default: chosen)")
    parser.add_argument("--out", type=Path, default=Path("out/bench_anchor"), help="state dir")
    args = parser.parse_args()
    target = host_target()
    use_target_threads(target)
    choice = corpora.choose(target, explicit=args.corpus)
    paths.use_corpus(choice.corpus.root, choice.model)
    cpu = str(target.attrs["mcpu"])
    here = None if choice.exact else {c.name: c for c in corpora.find_corpora()}.get(cpu)
    stem = cpu if choice.corpus.name == cpu else f"{cpu}_from_{choice.corpus.name}"
    result_path = paths.CHECKOUT / "docs" / "results" / f"anchor_transfer_{stem}.json"
    results = read_json(result_path) or {"networks": {}}
    results |= {"cpu": cpu, "corpus": choice.corpus.name, "corpus_why": choice.why}
    for name in args.models:
        out = args.out / choice.corpus.name / name
        reports = {v: search(name, v, target, out / v.replace(" ", "_")) for v in VARIANTS}
        row = compare(name, target, out, {v.replace(" ", "_"): r for v, r in reports.items()}, here)
        results["networks"][name] = row
        write_json(result_path, results)
        print(f"{name} ({choice.corpus.name} corpus on {cpu}):")
        for key, ms in row["ms"].items():
            ratios = [
                f"{reference} / it {row[f'latency_ratio_{reference}_over_method'][key]:.3f}"
                for reference in ("own_log", "tuned_here")
                if key in row.get(f"latency_ratio_{reference}_over_method", {})
            ]
            print(f"  {key:24s} {ms:10.2f} ms  " + ", ".join(ratios))
    for reference in ("own_log", "tuned_here"):
        field = f"latency_ratio_{reference}_over_method"
        rows = [r[field] for r in results["networks"].values() if field in r]
        for variant in VARIANTS:
            key = variant.replace(" ", "_")
            values = [r[key] for r in rows if key in r]
            if values:
                geo = math.exp(sum(map(math.log, values)) / len(values))
                print(
                    f"{variant}, {reference} / it: geometric mean {geo:.3f}, "
                    f"worst {min(values):.3f} ({len(values)})"
                )
    print(f"written: {result_path}")


if __name__ == "__main__":
    main()
