"""How far one comparison is from the next, on the builds two comparisons share."""

from recommender.evaluate import repeat


def comparison(untuned: float, records: int, methods: dict[str, tuple[str, float]]) -> dict:
    """A network's comparison as ``compare`` writes it, reduced to what repeatability reads."""
    return {
        "network": "googlenet",
        "untuned_ms": untuned,
        "metaschedule": {"ms": 10.0, "records": records},
        "onnxruntime": {"ms": 8.0},
        "pytorch_eager": {"not_timed": "torch is not installed"},
        "methods": {name: {"ms": ms} for name, (_, ms) in methods.items()},
        "compared": {"searches": {name: digest for name, (digest, _) in methods.items()}},
    }


def test_only_builds_that_did_not_change_are_compared_with_their_previous_time():
    before = comparison(300.0, 2000, {"transfer-all-pool": ("a1", 16.25), "top-0": ("b1", 25.4)})
    now = comparison(303.0, 2000, {"transfer-all-pool": ("a1", 19.94), "top-0": ("b2", 17.1)})
    shared = repeat.unchanged_builds(before, now)
    # top-0 was searched again (another digest); PyTorch eager was not timed either time
    assert shared == {
        "untuned": [300.0, 303.0],
        "metaschedule": [10.0, 10.0],
        "onnxruntime": [8.0, 8.0],
        "transfer-all-pool": [16.25, 19.94],
    }
    assert repeat.moved(shared) == {"transfer-all-pool": 19.94 / 16.25}  # untuned: 1%, a tie

    longer_log = comparison(300.0, 2100, {})
    assert "metaschedule" not in repeat.unchanged_builds(before, longer_log)


def test_a_noisy_comparison_is_kept_with_a_warning_and_shown_on_the_page(caplog):
    before = comparison(300.0, 2000, {"transfer-all-pool": ("a1", 16.25)})
    now = comparison(300.0, 2000, {"transfer-all-pool": ("a1", 19.94)})
    repeat.record("googlenet", before, now)
    assert now["repeat"]["transfer-all-pool"] == [16.25, 19.94]
    assert "compare again with --recompare googlenet" in caplog.text
    assert "transfer-all-pool 16.25 -> 19.94 ms" in caplog.text

    [_, line] = repeat.network_line(now)
    assert "transfer-all-pool 16.25 -> 19.94 (moved)" in line
    assert "untuned 300.00 -> 300.00," in line
    section = "\n".join(repeat.page_section({"networks": [now]}))
    assert "on 1 network: the 4 builds both comparisons share moved by 0.0% (median)" in section
    assert "the most, googlenet's transfer-all-pool, 16.25 -> 19.94 ms (23%)" in section


def test_a_first_comparison_has_nothing_to_repeat():
    now = comparison(300.0, 2000, {"top-0": ("b1", 25.4)})
    repeat.record("googlenet", None, now)
    assert "repeat" not in now and repeat.page_section({"networks": [now]}) == []
