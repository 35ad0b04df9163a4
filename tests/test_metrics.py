"""The evaluation's means: one set of networks for every method, the paper's capped time to
match, shares capped and uncapped; and old results read under today's method names."""

import json
import math
from pathlib import Path

import pytest

from recommender.cli.main import main
from recommender.evaluate.methods import METHODS
from recommender.evaluate.metrics import common_networks, means, time_to_match
from recommender.evaluate.results_page import upgrade

ROCKETLAKE = Path(__file__).parents[1] / "corpora" / "rocketlake" / "out" / "evaluate"


def cell(ratio: float, share: float, search_s: float, match_s: float | None) -> dict:
    """A method's cell as the comparison writes it (only what the means read)."""
    return {
        "ms": 10.0 / ratio,
        "speedup": 1 + 9 * share,
        "share_of_max_speedup": share,
        "latency_ratio_max_over_method": ratio,
        "search_s": search_s,
        "metaschedule_time_to_match_s": match_s,
        "speedup_over_pytorch_eager": ratio / 2,
    }


def row(network: str, methods: dict, tuning_s: float = 1000.0, **extra) -> dict:
    return {"network": network, "metaschedule": {"tuning_s": tuning_s}, "methods": methods, **extra}


ROWS = [
    # MetaSchedule never matches top-3 on net-a (it beat the whole log): its last stamp stands in
    row("net-a", {"top-0": cell(0.5, 0.4, 10.0, 500.0), "top-3": cell(1.25, 1.3, 50.0, None)}),
    row("net-b", {"top-0": cell(2.0, 0.8, 20.0, 100.0), "top-3": cell(0.8, 0.7, 40.0, 400.0)}),
    # top-3 was skipped on net-c: no method's mean may include it
    row("net-c", {"top-0": cell(9.0, 0.9, 1.0, 1.0)}, skipped={"top-3": "no held-out model"}),
]


def test_means_are_over_the_networks_every_method_was_timed_on():
    kept, left_out = common_networks(ROWS, ["top-0", "top-3"])
    assert kept == ["net-a", "net-b"]
    assert left_out == {"net-c": "top-3: no held-out model"}

    top0, top3 = (means(ROWS, ["top-0", "top-3"])[m] for m in ("top-0", "top-3"))
    assert top0["networks"] == top3["networks"] == 2
    assert top0["latency_ratio_geomean"] == 1.0  # sqrt(0.5 * 2.0), net-c's 9.0 left out
    assert (top0["latency_ratio_worst"], top0["latency_ratio_worst_network"]) == (0.5, "net-a")
    assert top3["share_of_max_speedup"] == pytest.approx((1.0 + 0.7) / 2)  # capped at 100%
    assert top3["share_of_max_speedup_uncapped"] == pytest.approx((1.3 + 0.7) / 2)
    # the paper's rule: 1000 s (the last stamp) / 50 s on net-a, 400 / 40 on net-b
    assert top3["time_to_match_over_search"] == pytest.approx((20.0 + 10.0) / 2)
    assert top3["time_to_match_capped"] == 1
    assert top3["time_to_match_over_search_matched"] == 10.0
    assert top3["time_to_match_matched"] == 1
    assert top0["speedup_over_pytorch_eager"] == pytest.approx(math.sqrt(0.25 * 1.0))


def test_time_to_match_is_capped_at_the_last_stamp_and_says_so():
    assert time_to_match(cell(1.0, 0.5, 50.0, 100.0), tuning_s=1000.0) == (2.0, False)
    assert time_to_match(cell(1.0, 0.5, 50.0, None), tuning_s=1000.0) == (20.0, True)


def test_a_method_timed_on_no_network_leaves_no_network_out():
    rows = [row("net-a", {"top-0": cell(0.5, 0.4, 10.0, 5.0)}, skipped={"top-3": "no pairing"})]
    assert common_networks(rows, ["top-0", "top-3"]) == (["net-a"], {})
    assert means(rows, ["top-0", "top-3"])["top-3"] == {"networks": 0}


def test_old_results_read_under_todays_names_and_recompute():
    """The Xeon's committed run (``transfer-all`` then timed the best record per source
    workload): its figures recompute, its exhaustive run reads as ``transfer-all-best``."""
    old = json.loads((ROCKETLAKE / "results.json").read_text())
    new = upgrade(old)
    names = [m["name"] for m in new["methods"]]
    assert "transfer-all" not in names and "transfer-all-best" in names
    assert METHODS["transfer-all-best"].made(old["methods"][1])
    assert not METHODS["transfer-all-pool"].made(old["methods"][1])
    assert new["means_over"] == {
        "networks": [r["network"] for r in old["networks"]],
        "left_out": {},
    }
    for name, before in old["means"].items():
        after = new["means"][METHODS[name].name if name in METHODS else "transfer-all-best"]
        assert after["networks"] == before["networks"] == 11
        assert after["share_of_max_speedup_uncapped"] == before["share_of_max_speedup"]
        assert after["share_of_max_speedup"] <= before["share_of_max_speedup"]
        assert after["time_to_match_over_search_matched"] == before["time_to_match_over_search"]
        assert after["search_s"] == before["search_s"]


def test_the_page_is_rewritten_from_a_results_json_on_any_cpu(tmp_path, capsys):
    page = tmp_path / "results.md"
    results = ROCKETLAKE / "results.json"
    assert main(["evaluate", "--page", str(page), "--from-results", str(results)]) == 0
    text = page.read_text()
    assert "## Means over the 11 networks every method was timed on" in text
    assert "| transfer-all-best | 0.895 (0.415 resnet18) | 86.0% (94.3%) | 683 |" in text
    assert "`transfer-all-best`: the paper's pool from every other network" in text
    assert "| budget-30s | 117.82 | 0.42 | 16.01x | 40.4% |" in text  # ResNet-18 passes 40%
    assert "Search time counts choosing only" in text  # these runs' definition, said so
    assert "transfer-all-best" in capsys.readouterr().out
    assert main(["evaluate", "--from-results", str(results)]) == 2
    assert "--from-results needs the page to write: --page PATH" in capsys.readouterr().err
