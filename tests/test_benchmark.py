"""The evaluation on a tiny corpus: every method against MetaSchedule's own log, resumable."""

import json
import shutil

import numpy as np
import pytest
from tiny import conv_shapes, two_conv_net

from recommender.cli.main import main
from recommender.core.errors import InputError, RecommenderError
from recommender.core.targets import host_target, parse_target
from recommender.evaluate import deep_reference
from recommender.evaluate.benchmark import evaluate
from recommender.evaluate.methods import METHODS as KNOWN
from recommender.evaluate.results_page import write_page
from recommender.evaluate.searches import (
    held_out_model,
    log_record_counts,
    method_dir,
    search,
    search_digest,
)
from recommender.learn import model_files
from recommender.learn.dataset import load_dataset
from recommender.logs.collect import collect
from recommender.logs.tuning_log import TuningLog

METHODS = ["transfer-paper", "transfer-all-best", "transfer-all-pool", "top-0", "top-1"]


@pytest.fixture(scope="module")
def corpus(conv_log, target, tmp_path_factory):
    """Logs of two tiny networks: the source 'tinyconv' and 'twoconv', the network evaluated."""
    logs = tmp_path_factory.mktemp("corpus")
    shutil.copytree(conv_log[0], logs / "tinyconv")
    collect(
        two_conv_net(),
        target,
        logs / "twoconv",
        trials_per_task=4,
        trials_per_iter=4,
        population=16,
        progress=False,
    )
    return logs


def run(
    corpus, tiny_dataset, target, out, networks=("twoconv", "resnet152"), methods=METHODS, **options
) -> dict:
    """``evaluate`` on the tiny corpus, where every network name loads the two-conv network."""
    options = {"grid_points": 3, "load_network": lambda name: two_conv_net(), **options}
    return evaluate(
        list(networks),
        list(methods),
        out,
        target,
        dataset_dir=tiny_dataset,
        logs=corpus,
        progress=False,
        **options,
    )


def not_loaded(name: str):
    raise AssertionError(f"{name} was loaded, but nothing was left to do")


def refuse_training(network: str):
    raise InputError("not trained here")


def cells_report(out, method: str) -> dict:
    return json.loads((out / "twoconv" / method / "search.json").read_text())


def test_every_method_is_compared_with_metaschedule_and_a_rerun_continues(
    corpus, tiny_dataset, target, tmp_path
):
    dataset = tmp_path / "dataset"
    shutil.copytree(tiny_dataset, dataset)
    out = tmp_path / "evaluate"
    results = run(corpus, dataset, target, out)
    assert results["not_evaluated"] == {
        "resnet152": "no tuning log (run `recommender collect resnet152`)"
    }
    [row] = results["networks"]
    assert row["skipped"] == {"transfer-paper": "--sources paper: no paper pairing for 'twoconv'"}
    cells = row["methods"]
    assert set(cells) == {"transfer-all-best", "transfer-all-pool", "top-0", "top-1"}
    assert cells["top-0"]["candidates_timed"] == 0 and cells["top-1"]["candidates_timed"] == 2
    reports = {m: json.loads((out / "twoconv" / m / "search.json").read_text()) for m in cells}
    assert (
        cells["transfer-all-best"]["candidates_timed"] == reports["transfer-all-best"]["candidates"]
    )
    # timing every candidate means every candidate the recommender ranks
    assert reports["transfer-all-pool"]["candidates"] == reports["top-1"]["candidates"]
    assert reports["transfer-all-pool"]["candidates"] > reports["transfer-all-best"]["candidates"]
    # search time: from reading the logs to the compiled network; training apart
    for report in reports.values():
        phases = report["phases_s"]
        assert {"read_sources", "load_network", "extract", "compile"} <= set(phases)
        assert report["search_s"] == pytest.approx(sum(phases.values()), abs=0.02)
        assert report["schedules_s"] <= report["search_s"]  # phases rounded to 10 ms
    assert "load_model" in reports["top-1"]["phases_s"]
    assert reports["top-0"]["held_out_training_s"] > 0  # trained for the first of them
    assert reports["top-1"]["held_out_training_s"] == 0  # read back
    assert row["searches"]["top-0"]["held_out_training_s"] > 0
    # what the exhaustive runs measured became the dataset's rows for twoconv, not timed twice
    # (the paper's pool is within the recommender's)
    pool = reports["transfer-all-pool"]["candidates_timed"]
    kept = load_dataset(dataset, networks=["twoconv"])
    assert sum(len(k.run_s) for k in kept) == pool
    assert all(s.startswith("tinyconv/") for k in kept for s in k.sources)
    assert all(np.isfinite(k.run_s).all() and k.untuned_s > 0 for k in kept)
    tuning_s = row["metaschedule"]["tuning_s"]
    for cell in cells.values():
        assert cell["speedup"] > 0 and cell["search_s"] >= 0
        match = cell["metaschedule_time_to_match_s"]
        assert match is None or 0 < match <= tuning_s + 0.05  # tuning_s is rounded to 0.1 s
    assert row["pytorch_eager"] == {"not_timed": "not a zoo network"}
    assert row["onnxruntime"] == {"not_timed": "not a zoo network"}
    assert all(cell["speedup_over_onnxruntime"] is None for cell in cells.values())
    times = [t for t, _ in row["curve"]]
    assert times == sorted(times) and times[-1] == tuning_s
    # the held-out model never saw twoconv: it was trained on the other shapes only
    model = json.loads((out / "twoconv" / "model" / "metadata.json").read_text())
    assert "twoconv" not in model["training_data"]["networks"]

    stamps = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.json")}
    stamps |= {p: p.stat().st_mtime_ns for p in dataset.rglob("*.npz")}
    published = []  # the CLI writes the page from here, after every network
    again = run(corpus, dataset, target, out, load_network=not_loaded, on_results=published.append)
    assert again["networks"][0]["methods"] == cells  # read back, not measured again
    assert published == [again]
    assert all(p.stat().st_mtime_ns == t for p, t in stamps.items() if p.name != "results.json")
    # a run of other networks keeps this one's finished row, read back, not measured again
    others = run(corpus, dataset, target, out, networks=("resnet152",), load_network=not_loaded)
    assert others["networks"] == again["networks"]

    # a search made from another state of its source logs (since resumed) is done again, and
    # the network compared again if its result changed (here its journal makes it the same);
    # the dataset keeps one row per measured record
    made = out / "twoconv" / "transfer-all-best" / "search.json"
    report = json.loads(made.read_text())
    made.write_text(json.dumps({**report, "source_records": {"tinyconv": 1}}))
    run(corpus, dataset, target, out)
    redone = json.loads(made.read_text())
    assert redone["source_records"] == report["source_records"]
    compared = json.loads((out / "twoconv" / "compare.json").read_text())["compared"]
    assert compared["searches"]["transfer-all-best"] == search_digest(redone)
    assert sum(len(k.run_s) for k in load_dataset(dataset, networks=["twoconv"])) == pool

    # a ranked search is redone when its held-out model pools other CPUs' datasets differently
    sizes = log_record_counts({n: corpus / n for n in ("tinyconv", "twoconv")}, target)
    ranked = dict(
        target=target,
        out_dir=out / "twoconv" / "top-1",
        load=lambda: (two_conv_net(), 0.0),
        model_for=refuse_training,
        logs=corpus,
        log_sizes=sizes,
        progress=False,
    )
    assert search("twoconv", KNOWN["top-1"], **ranked) == cells_report(out, "top-1")
    pooled = search("twoconv", KNOWN["top-1"], **ranked, pooled_with=("corpora/b/datasets/x",))
    assert pooled == {"skipped": "no held-out cost model: not trained here"}
    # and when its held-out model was of an older format (before the slower classifier)
    top1 = out / "twoconv" / "top-1" / "search.json"
    top1.write_text(json.dumps({**json.loads(top1.read_text()), "cost_model_format": 1}))
    older = search("twoconv", KNOWN["top-1"], **ranked)
    assert older == {"skipped": "no held-out cost model: not trained here"}

    # a coarser MetaSchedule curve (what --quick asks for) is compared anew, not read back
    compared = (out / "twoconv" / "compare.json").stat().st_mtime_ns
    coarse = run(corpus, dataset, target, out, grid_points=2, refine=False)
    assert (out / "twoconv" / "compare.json").stat().st_mtime_ns != compared
    assert len(coarse["networks"][0]["curve"]) <= 2
    # compared again, it keeps the builds both comparisons share, then and now: all but top-1,
    # searched again (its report said an older model format)
    shared = coarse["networks"][0]["repeat"]
    assert set(shared) == {"untuned", "metaschedule", *cells} - {"top-1"}
    assert all(before > 0 and now > 0 for before, now in shared.values())
    # asked to, it compares again with nothing changed: how far one comparison is from the next
    compared = (out / "twoconv" / "compare.json").stat().st_mtime_ns
    retaken = run(corpus, dataset, target, out, grid_points=2, refine=False, recompare=True)
    assert (out / "twoconv" / "compare.json").stat().st_mtime_ns != compared
    assert set(retaken["networks"][0]["repeat"]) == {"untuned", "metaschedule", *cells}

    page = write_page(again, tmp_path / "docs" / "results.md", "recommender evaluate --quick")
    text = page.read_text()
    assert "## Means over the 1 networks every method was timed on" in text
    assert "resnet152: no tuning log" in text and "\n| top-1 | " in text
    assert "Search time runs from the command's start to the compiled network" in text
    assert "## Repeatability" not in text  # nothing compared twice in that run
    for figure in ("speedup_vs_search.png", "share_of_max.png"):
        assert f"(results/{figure})" in text
        assert (tmp_path / "docs" / "results" / figure).stat().st_size > 0
    written = json.loads((tmp_path / "docs" / "results" / "evaluate.json").read_text())
    assert written["networks"] == again["networks"] and written["means"] == again["means"]

    text = write_page(retaken, tmp_path / "docs" / "retaken.md", "recommender evaluate").read_text()
    assert "## Repeatability" in text
    assert "Builds unchanged since its previous comparison, timed again (ms): untuned " in text


def _ratio_of_rounded_ms(numerator: float, denominator: float):
    """``numerator / denominator``, within what rounding each to 0.001 ms can move it."""
    rounding = 0.0005 / numerator + 0.0005 / denominator
    return pytest.approx(numerator / denominator, rel=rounding + 0.005)


def test_a_deeper_metaschedule_continues_the_log_and_every_method_is_measured_against_it(
    corpus, tiny_dataset, target, tmp_path
):
    logs = tmp_path / "logs"
    shutil.copytree(corpus, logs)
    with pytest.raises(InputError, match="not tuned to its budget of 16 trials per task"):
        deep_reference.start("twoconv", 16, logs=logs)
    deep = deep_reference.start("twoconv", 4, logs=logs)
    assert deep == tmp_path / "logs_deep" / "twoconv"
    network = two_conv_net()
    collect(
        network, target, deep, trials_per_task=8, trials_per_iter=4, population=16, progress=False
    )
    corpus_records = TuningLog.open(logs / "twoconv").record_count()
    assert TuningLog.open(deep).record_count() > corpus_records  # the copy, continued

    out = tmp_path / "evaluate"
    results = run(logs, tiny_dataset, target, out, ["twoconv"], ["top-0"], grid_points=2)
    [row] = results["networks"]
    reference = row["metaschedule_deep"]
    assert reference["budget"]["trials_per_task"] == 8 and reference["records"] > corpus_records
    # t_deep / t, from the unrounded times: the tiny kernels' ms are rounded to 3 places
    ratio = reference["corpus"]["latency_ratio_deep_over_method"]
    assert ratio == _ratio_of_rounded_ms(reference["ms"], row["metaschedule"]["ms"])
    cell = row["methods"]["top-0"]
    assert cell["latency_ratio_deep_over_method"] == _ratio_of_rounded_ms(
        reference["ms"], cell["ms"]
    )
    assert results["means_deep"]["networks"] == ["twoconv"]
    assert set(results["means_deep"]["methods"]) == {"metaschedule", "top-0"}
    page = write_page(results, tmp_path / "results.md", "test").read_text()
    assert "## Against a deeper MetaSchedule (1 networks)" in page
    assert "\n| top-0 | " in page.split("## Against a deeper")[1]


def test_a_renamed_method_resumes_from_its_state_under_the_former_name(
    corpus, tiny_dataset, target, tmp_path
):
    """``transfer-all`` timed the paper's pool before the recommender's pool had its own row:
    a run left by that version is moved to ``transfer-all-best`` and read back, not redone."""
    out, dataset = tmp_path / "evaluate", tmp_path / "dataset"
    shutil.copytree(tiny_dataset, dataset)  # the run adds its measurements
    run(corpus, dataset, target, out, ["twoconv"], ["transfer-all-best"])
    now, former = out / "twoconv" / "transfer-all-best", out / "twoconv" / "transfer-all"
    now.rename(former)
    report = json.loads((former / "search.json").read_text())
    old_method = {k: v for k, v in report["method"].items() if k != "levels"}  # exact-only then
    (former / "search.json").write_text(
        json.dumps({**report, "method": old_method | {"name": "transfer-all"}})
    )
    method = KNOWN["transfer-all-best"]
    sizes = log_record_counts(
        {"tinyconv": corpus / "tinyconv", "twoconv": corpus / "twoconv"}, target
    )
    again = search(
        "twoconv",
        method,
        target,
        method_dir(out / "twoconv", method),
        load=lambda: not_loaded("twoconv"),
        model_for=not_loaded,
        logs=corpus,
        log_sizes=sizes,
        progress=False,
    )
    assert not former.exists() and (now / "journal.jsonl").is_file()
    assert again["search_s"] == report["search_s"]


def test_the_edge_profile_times_candidates_through_the_tracker_on_one_core(
    corpus, tiny_dataset, device, tmp_path
):
    one_core = host_target(num_cores=1)  # the corpus and the cost model were made with every core
    results = run(
        corpus,
        tiny_dataset,
        one_core,
        tmp_path,
        ["twoconv"],
        ["top-1"],
        grid_points=2,
        refine=False,
        remote=device,
    )
    [row] = results["networks"]
    assert results["candidates_timed_on"] == str(device)
    assert row["methods"]["top-1"]["candidates_timed"] == 2
    assert row["time_to_match"] == "grid point (upper bound)"


def test_a_held_out_model_trained_on_another_state_of_the_dataset_is_refused(
    tiny_dataset, target, tmp_path
):
    model_dir = tmp_path / "evaluate" / "twoconv" / "model"
    trained, trained_s = held_out_model("twoconv", tiny_dataset, model_dir, target)
    again, read_s = held_out_model("twoconv", tiny_dataset, model_dir, target)  # read back
    assert again.metadata["training_data"] == trained.metadata["training_data"]
    assert trained_s > 0 and read_s == 0
    # one saved before the slower classifier (format 1) is trained again, on the same data
    metadata = json.loads((model_dir / "metadata.json").read_text())
    del metadata["format"], metadata["slower"]
    (model_dir / "metadata.json").write_text(json.dumps(metadata))
    retrained, retrained_s = held_out_model("twoconv", tiny_dataset, model_dir, target)
    assert retrained_s > 0 and retrained.format == model_files.FORMAT and retrained.slower
    changed = tmp_path / "dataset"
    shutil.copytree(tiny_dataset, changed)
    next(changed.glob("*/*.npz")).unlink()
    with pytest.raises(RecommenderError, match="trained on another state of"):
        held_out_model("twoconv", changed, model_dir, target)
    # unless it is of an older format: its searches are redone anyway, with the data as it is
    (model_dir / "metadata.json").write_text(json.dumps(metadata))
    anew, _ = held_out_model("twoconv", changed, model_dir, target)
    assert anew.metadata["training_data"]["hash"] != trained.metadata["training_data"]["hash"]


def test_the_recall_curve_budgets_spend_by_never_saw_the_held_out_network(
    tiny_dataset, target, tmp_path
):
    held_out = conv_shapes()[0].name
    model, _ = held_out_model(held_out, tiny_dataset, tmp_path / "model", target)
    evaluated = set(model.metadata["evaluation"]["networks"])
    assert evaluated == {k.network for k in load_dataset(tiny_dataset)} - {held_out}


def test_a_held_out_model_pooled_with_another_cpus_dataset_never_sees_the_network_there_either(
    tiny_dataset, target, tmp_path
):
    held_out = conv_shapes()[0].name
    other_cpu = tmp_path / "other_cpu_dataset"  # the same kernels timed elsewhere, say
    shutil.copytree(tiny_dataset, other_cpu)
    alone, _ = held_out_model(held_out, tiny_dataset, tmp_path / "alone", target)
    pooled, _ = held_out_model(held_out, tiny_dataset, tmp_path / "pooled", target, (other_cpu,))
    data = pooled.metadata["training_data"]
    assert data["pooled"] == [str(tiny_dataset), str(other_cpu)]
    assert data["networks"] == alone.metadata["training_data"]["networks"]
    assert held_out not in data["networks"]
    assert data["candidates"] == 2 * alone.metadata["training_data"]["candidates"]


def test_an_evaluation_on_another_cpu_than_the_corpus_stops_at_once(corpus, tmp_path):
    other = parse_target("llvm -mcpu=skylake -num-cores=2")
    if other.attrs["mcpu"] == host_target().attrs["mcpu"]:
        other = parse_target("llvm -mcpu=znver3 -num-cores=2")
    with pytest.raises(InputError, match="provenance.json: tuned for .*MetaSchedule's log is"):
        run(corpus, tmp_path / "dataset", other, tmp_path / "evaluate", load_network=not_loaded)
    assert not (tmp_path / "evaluate").exists()


def test_the_cli_refuses_a_typo_or_a_corpus_of_another_cpu_before_any_run(tmp_path, capsys):
    out = tmp_path / "evaluate"
    assert main(["evaluate", "resnet18", "--methods", "top-7", "--out", str(out)]) == 2
    assert "unknown method 'top-7'; known: transfer-paper" in capsys.readouterr().err
    assert main(["evaluate", "resnet18", "resnet81", "--out", str(out)]) == 2
    assert "unknown zoo model 'resnet81'; choose one of: " in capsys.readouterr().err
    # the shipped corpus was tuned on an AMD EPYC (znver3): timings of another CPU are no match
    # (a CPU no other test names: the command warns once per CPU pair and process)
    cascadelake = "llvm -mcpu=cascadelake -num-cores=2"
    command = ["evaluate", "resnet18", "--corpus", "znver3", "--target", cascadelake]
    assert main([*command, "--out", str(out)]) == 2
    assert "provenance.json: tuned for" in capsys.readouterr().err
    assert not out.exists()
