"""Which common networks import, by which route: torchvision's classification networks and the
known Hugging Face encoders, each through the legacy ONNX exporter, the dynamo ONNX exporter and
torch.export, then through ``load_network`` and ``extract_tasks`` as ``recommender tasks`` does.

    nice -n 19 python scripts/import_matrix.py [--routes onnx,pt2,onnx-dynamo] [--only a,b]
    python scripts/import_matrix.py --report   # docs/import_matrix.md from the JSON only

Each (network, route) runs in its own process group with a timeout and a memory cap, so a hang,
a crash or an out-of-memory is a recorded failure and no process outlives it. Results go to
``docs/results/import_matrix.json`` as they come; a rerun skips what is there
(``--retry-failed`` runs the failures again). The legacy ONNX route also compares simplifiers
on the same file (none, onnxslim, onnx-simplifier): does TVM's import give static shapes?
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs/results/import_matrix.json"
ROUTES = ("onnx", "pt2", "onnx-dynamo")
SEQ_LEN = 128


def networks() -> list[str]:
    """torchvision's classification networks, then ``hf:`` names (in that order)."""
    from recommender.networks import huggingface, torchvision_models

    hf = [huggingface.PREFIX + name for name in huggingface.KNOWN]
    return torchvision_models.names() + hf


def _torch_model(network: str):
    """The module in eval mode with seeded random weights, its example input and input name."""
    from recommender.networks import huggingface, torchvision_models

    if huggingface.is_hf_name(network):
        model, ids = huggingface.torch_module(network, seq_len=SEQ_LEN)
        return model, ids, "input_ids"
    model, image = torchvision_models.torch_module(torchvision_models.PREFIX + network)
    return model, image, "image"


def _export(network: str, route: str, folder: Path) -> Path:
    import torch

    model, example, input_name = _torch_model(network)
    # not under torch.no_grad(): there nn.MultiheadAttention takes its fast path, a fused
    # aten::_native_multi_head_attention that the legacy ONNX exporter refuses (ViT)
    if route == "pt2":
        path = folder / f"{_stem(network)}.pt2"
        torch.export.save(torch.export.export(model, (example,)), str(path))
        return path
    path = folder / f"{_stem(network)}.onnx"
    torch.onnx.export(
        model,
        (example,),
        str(path),
        input_names=[input_name],
        opset_version=17 if route == "onnx" else 18,
        dynamo=route == "onnx-dynamo",
    )
    return path


def _stem(network: str) -> str:
    return network.removeprefix("hf:").replace("-", "_")


def _compare_simplifiers(path: Path) -> dict:
    """Simplify the same file with each tool; TVM imports it to static shapes or not."""
    import onnx
    import onnxsim
    import onnxslim
    from tvm.relax.frontend.onnx import from_onnx

    from recommender.networks.onnx_prepare import check_static_shapes

    tools = {
        "none": lambda m: m,
        "onnxslim": onnxslim.slim,
        "onnxsim": lambda m: onnxsim.simplify(m)[0],
    }
    found = {}
    for tool, simplify in tools.items():
        start = time.perf_counter()
        try:
            model = simplify(onnx.load(str(path)))
            seconds = time.perf_counter() - start
            check_static_shapes(from_onnx(model, keep_params_in_input=True), path=path)
            found[tool] = {"ok": True, "simplify_s": round(seconds, 2)}
        except Exception as err:  # any tool or importer failure is the datum
            found[tool] = {"ok": False, "reason": _reason(err)}
    return found


def work(network: str, route: str, out: Path) -> None:
    """One (network, route) in this process; writes its record as JSON to ``out``."""
    from recommender.core.targets import host_target
    from recommender.networks.frontends import load_network
    from recommender.tasks.extract import extract_tasks

    record: dict = {"network": network, "route": route, "ok": False}
    stage = "export"
    try:
        with tempfile.TemporaryDirectory() as folder:
            start = time.perf_counter()
            path = _export(network, route, Path(folder))
            record["export_s"] = round(time.perf_counter() - start, 2)
            if route == "onnx":
                record["simplifiers"] = _compare_simplifiers(path)
            stage = "import"
            start = time.perf_counter()
            loaded = load_network(str(path))
            record["import_s"] = round(time.perf_counter() - start, 2)
        stage = "tasks"
        start = time.perf_counter()
        tasks = extract_tasks(loaded, host_target(), cache=False)
        record["tasks_s"] = round(time.perf_counter() - start, 2)
        record.update(
            ok=True,
            tasks=len(tasks),
            kernel_classes=len({t.kernel_class.key for t in tasks}),
            anchor_classes=len({t.kernel_class.anchor for t in tasks} - {None}),
            anchors=sorted({t.descriptor.anchor for t in tasks}),
        )
    except Exception as err:  # every failure is the datum, with the stage it happened in
        record.update(stage=stage, reason=_reason(err))
        traceback.print_exc()
    out.write_text(json.dumps(record))


def _reason(err: BaseException) -> str:
    """The first line, without the temporary folder the model file was exported to."""
    lines = [line for line in str(err).splitlines() if line.strip()]
    return f"{type(err).__name__}: {_untemp(lines[0][:400]) if lines else ''}"


def _untemp(text: str) -> str:
    return re.sub(r"/tmp/tmp\w+/", "", text)


def run_one(network: str, route: str, timeout_s: float, memory_gb: float) -> dict:
    """``work`` in a child process group; a timeout, memory cap or crash becomes the record."""
    import psutil

    with tempfile.TemporaryDirectory() as folder:
        out, log = Path(folder) / "record.json", Path(folder) / "log.txt"
        with log.open("w") as sink:
            child = subprocess.Popen(
                [sys.executable, __file__, "--worker", network, route, str(out)],
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: killed whole
            )
            start, reason = time.perf_counter(), None
            while child.poll() is None:
                time.sleep(1.0)
                elapsed = time.perf_counter() - start
                if elapsed > timeout_s:
                    reason = f"timeout: still running after {timeout_s:.0f} s"
                elif _tree_rss_gb(psutil, child.pid) > memory_gb:
                    reason = f"memory: over {memory_gb:.0f} GB resident"
                if reason:
                    os.killpg(child.pid, signal.SIGKILL)
                    child.wait()
        with log.open() as lines:
            tail = [line.strip() for line in lines if line.strip()][-1:]
        if reason is None and out.exists():
            return json.loads(out.read_text())
        reason = reason or f"crashed: exit code {child.returncode}; last output: {tail}"
        return {"network": network, "route": route, "ok": False, "stage": "?", "reason": reason}


def _tree_rss_gb(psutil, pid: int) -> float:
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
        return sum(p.memory_info().rss for p in procs) / 2**30
    except psutil.Error:
        return 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", nargs=3, metavar=("NETWORK", "ROUTE", "OUT"))
    parser.add_argument("--routes", default=",".join(ROUTES))
    parser.add_argument("--only", default=None, help="comma-separated networks")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per job")
    parser.add_argument("--memory-gb", type=float, default=16.0)
    parser.add_argument("--retry-failed", action="store_true")
    parser.add_argument("--report", action="store_true", help="only write the markdown")
    args = parser.parse_args()
    if args.worker:
        network, route, out = args.worker
        work(network, route, Path(out))
        return 0
    from tqdm import tqdm

    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    if not args.report:
        names = args.only.split(",") if args.only else networks()
        jobs = [(n, r) for r in args.routes.split(",") for n in names]
        todo = [
            job
            for job in jobs
            if f"{job[0]}|{job[1]}" not in results
            or (args.retry_failed and not results[f"{job[0]}|{job[1]}"]["ok"])
        ]
        bar = tqdm(todo, unit="job")
        for network, route in bar:
            bar.set_description(f"{route} {network}")
            results[f"{network}|{route}"] = run_one(network, route, args.timeout, args.memory_gb)
            RESULTS.parent.mkdir(parents=True, exist_ok=True)
            tmp = RESULTS.with_suffix(".tmp")
            tmp.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
            tmp.replace(RESULTS)
    (ROOT / "docs/import_matrix.md").write_text(report(results))
    return 0


def report(results: dict) -> str:
    """docs/import_matrix.md: shares per route, the simplifier comparison, every record."""
    from recommender.networks import huggingface

    records = list(results.values())
    routes = [r for r in ROUTES if any(rec["route"] == r for rec in records)]
    lines = [
        "# Import matrix",
        "",
        "Written by `scripts/import_matrix.py` from `docs/results/import_matrix.json`: each",
        "network exported at batch 1 (224x224 images, 299 for Inception v3; 128 tokens), then",
        "`load_network` and `extract_tasks` on this host's target, as `recommender tasks` does.",
        "Routes: `onnx` = `torch.onnx.export(dynamo=False, opset 17)`, `onnx-dynamo` = the dynamo",
        "exporter (opset 18), `pt2` = `torch.export.export` saved as `.pt2`. Times in seconds:",
        "export (PyTorch), import (TVM: ONNX prepare + importer + weights bound), tasks",
        "(lowering + extraction). A cell: networks imported (tasks extracted) of those tried;",
        "then of those the exporter could export.",
        "",
        "| group | " + " | ".join(routes) + " |",
        "| --- |" + " --- |" * len(routes),
    ]
    for group, hf in (("torchvision", False), ("transformers", True)):
        cells = []
        for route in routes:
            done = [
                r
                for r in records
                if r["route"] == route and huggingface.is_hf_name(r["network"]) == hf
            ]
            ok = sum(r["ok"] for r in done)
            traced = sum(r.get("stage") != "export" for r in done)
            cells.append(
                f"{ok}/{len(done)} ({100 * ok / max(len(done), 1):.0f}%); "
                f"{ok}/{traced} of those exported"
            )
        lines.append(f"| {group} | " + " | ".join(cells) + " |")
    networks_seen = {r["network"] for r in records}
    for route in routes:
        ran = sum(r["route"] == route for r in records)
        if ran < len(networks_seen):
            lines += ["", f"`{route}` ran on {ran} of the {len(networks_seen)} networks so far."]
    lines += _simplifier_table(records)
    lines += ["", "## Every network", ""]
    lines += ["| network | route | ok | tasks | kernel classes | export s | import s | tasks s |"]
    lines += ["| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in sorted(records, key=lambda r: (r["network"], routes.index(r["route"]))):
        mark = "*" if r.get("prepared_with") == "onnxslim" else ""
        lines.append(
            f"| {r['network']} | {r['route']} | {'yes' if r['ok'] else 'no'} | "
            f"{r.get('tasks', '')} | {r.get('kernel_classes', '')} | {r.get('export_s', '')} | "
            f"{r.get('import_s', '')}{mark} | {r.get('tasks_s', '')} |"
        )
    if any(r.get("prepared_with") == "onnxslim" for r in records):
        lines += [
            "",
            "\\* measured while `load_network` simplified with onnxslim, before the comparison",
            "chose onnx-simplifier (the simplifier table shows both on the same file).",
        ]
    failures = [r for r in records if not r["ok"]]
    lines += ["", f"## Failures ({len(failures)})", ""]
    lines += ["| network | route | stage | reason |", "| --- | --- | --- | --- |"]
    for r in sorted(failures, key=lambda r: (r["route"], r["network"])):
        reason = _untemp(r["reason"]).replace("|", "\\|")
        lines.append(f"| {r['network']} | {r['route']} | {r['stage']} | {reason} |")
    return "\n".join(lines) + "\n"


def _simplifier_table(records: list[dict]) -> list[str]:
    """How many legacy-ONNX files import to static shapes after each simplifier, how fast."""
    compared = [r["simplifiers"] for r in records if "simplifiers" in r]
    if not compared:
        return []
    lines = [
        "",
        "## Simplifiers on the legacy ONNX files",
        "",
        "TVM's importer on the file as exported (`none`), after `onnxslim.slim` and after",
        "`onnxsim.simplify`: does every tensor get a static shape? Plain `from_onnx` with",
        "weights as parameters, without `onnx_prepare.integers_as_constants`: the Reshape",
        "failures below are shapes held in integer initializers, which that step fixes.",
        "",
        "| simplifier | static after import | total simplify s | slowest s |",
        "| --- | --- | --- | --- |",
    ]
    for tool in ("none", "onnxslim", "onnxsim"):
        runs = [c[tool] for c in compared if tool in c]
        ok = [run for run in runs if run["ok"]]
        seconds = [run["simplify_s"] for run in ok]
        lines.append(
            f"| {tool} | {len(ok)}/{len(runs)} | {sum(seconds):.1f} "
            f"| {max(seconds, default=0):.1f} |"
        )
    for tool in ("none", "onnxslim", "onnxsim"):
        failed = [
            (r["network"], r["simplifiers"][tool]["reason"])
            for r in records
            if "simplifiers" in r and not r["simplifiers"][tool]["ok"]
        ]
        if failed:
            lines += ["", f"`{tool}` failures:", ""]
            lines += [f"- {network}: {_untemp(why)}" for network, why in failed]
    return lines


if __name__ == "__main__":
    sys.exit(main())
