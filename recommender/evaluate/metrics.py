"""The paper's metrics, computed in one place for every report: speedup, share of the maximum
speedup, latency ratio, time to match over search; and their means over networks."""

from __future__ import annotations

import statistics


def paper_metrics(
    *, untuned_s: float, latency_s: float, full_s: float, search_s: float, match_s: float | None
) -> dict:
    """One method on one network against full MetaSchedule (``full_s``), all in seconds.

    Speedup S = untuned / method; share of the maximum speedup = (S - 1) / (S_max - 1), None
    when MetaSchedule itself is no faster than untuned; latency ratio = t_MetaSchedule / t;
    time to match over search = MetaSchedule's tuning seconds to be as fast, over the method's
    search seconds (None where MetaSchedule never matched).
    """
    speedup, max_speedup = untuned_s / latency_s, untuned_s / full_s
    return {
        "speedup": round(speedup, 3),
        "share_of_max_speedup": round((speedup - 1) / (max_speedup - 1), 4)
        if max_speedup > 1
        else None,
        "latency_ratio_max_over_method": round(full_s / latency_s, 4),
        "search_s": search_s,
        "metaschedule_time_to_match_s": match_s,
        "time_to_match_over_search": round(match_s / search_s, 2) if match_s and search_s else None,
    }


def method_row(
    search: dict,
    latency_s: float,
    same_time_s: float,
    untuned_s: float,
    full_s: float,
    match_s: float | None,
    eager_s: float | None,
    ort_s: float | None = None,
) -> dict:
    """A method's cell of the evaluation: the paper's metrics plus what its search reported."""
    row = {"ms": round(latency_s * 1e3, 3)}
    row |= paper_metrics(
        untuned_s=untuned_s,
        latency_s=latency_s,
        full_s=full_s,
        search_s=search["search_s"],
        match_s=match_s,
    )
    row |= {
        "candidates_timed": search.get("candidates_timed"),
        "tuned_kernels": search.get("tuned_kernels"),
        "metaschedule_same_time_speedup": round(untuned_s / same_time_s, 3),
        "speedup_over_pytorch_eager": round(eager_s / latency_s, 3) if eager_s else None,
        "speedup_over_onnxruntime": round(ort_s / latency_s, 3) if ort_s else None,
    }
    return row


def means(rows: list[dict], methods: list[str]) -> dict[str, dict]:
    """Per method, the mean (and median) over networks of the headline numbers."""
    out = {}
    for name in methods:
        cells = [r["methods"][name] for r in rows if "speedup" in r["methods"].get(name, {})]
        entry = {"networks": len(cells)}
        for key in (
            "speedup",
            "share_of_max_speedup",
            "search_s",
            "time_to_match_over_search",
            "speedup_over_pytorch_eager",
            "speedup_over_onnxruntime",
        ):
            values = [c[key] for c in cells if c.get(key) is not None]
            if values:
                entry[key] = round(statistics.mean(values), 4)
                entry[f"{key}_median"] = round(statistics.median(values), 4)
        out[name] = entry
    return out
