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


def time_to_match(cell: dict, tuning_s: float) -> tuple[float | None, bool]:
    """MetaSchedule's time to match over the method's search time, by the paper's rule: where
    MetaSchedule never matches, its last stamp stands in (the ratio is then a lower bound,
    and ``capped`` says so). None without a search time."""
    match_s = cell.get("metaschedule_time_to_match_s")
    capped = match_s is None
    if not cell.get("search_s"):
        return None, capped
    return round((tuning_s if capped else match_s) / cell["search_s"], 2), capped


def common_networks(rows: list[dict], methods: list[str]) -> tuple[list[str], dict[str, str]]:
    """The networks every method was timed on, and why each other one is left out: means are
    taken over one set of networks for all methods, never over differing subsets. A method
    timed on no network at all (the paper's pairs on a corpus without them) leaves none out."""
    ran = [m for m in methods if any("speedup" in r["methods"].get(m, {}) for r in rows)]
    kept, left_out = [], {}
    for row in rows:
        missing = [m for m in ran if "speedup" not in row["methods"].get(m, {})]
        if not missing:
            kept.append(row["network"])
            continue
        first = missing[0]
        wrong = row["methods"].get(first, {}).get("wrong")
        why = f"wrong build ({wrong})" if wrong else row.get("skipped", {}).get(first, "not run")
        left_out[row["network"]] = f"{first}: {why}"
    return kept, left_out


def means(rows: list[dict], methods: list[str]) -> dict[str, dict]:
    """Per method, over the networks every method was timed on (``common_networks``):

    - ``latency_ratio_geomean`` of t_MetaSchedule / t, and the worst network's;
    - the mean share of the maximum speedup, each network's capped at 100%
      (``share_of_max_speedup``) and uncapped (``share_of_max_speedup_uncapped``): above 100%
      the method beat MetaSchedule's own log, which caps what the share can say;
    - the mean time to match over search by the paper's rule (``time_to_match``; how many
      networks were capped), and over the networks MetaSchedule matched alone;
    - mean search seconds and speedup; geometric means of the speedups over the baselines.
    """
    kept, _ = common_networks(rows, methods)
    chosen = [r for r in rows if r["network"] in kept]
    out = {}
    for name in methods:
        cells = [
            (r["network"], r["methods"][name], r["metaschedule"]["tuning_s"])
            for r in chosen
            if name in r["methods"]  # absent only for a method timed on no network
        ]
        entry: dict = {"networks": len(cells)}
        if not cells:
            out[name] = entry
            continue
        ratios = {net: c["latency_ratio_max_over_method"] for net, c, _ in cells}
        worst = min(ratios, key=ratios.get)
        shares = [
            c["share_of_max_speedup"] for _, c, _ in cells if c["share_of_max_speedup"] is not None
        ]
        matches = [time_to_match(c, tuning_s) for _, c, tuning_s in cells]
        entry |= {
            "latency_ratio_geomean": round(statistics.geometric_mean(ratios.values()), 4),
            "latency_ratio_worst": ratios[worst],
            "latency_ratio_worst_network": worst,
        }
        entry |= _mean_and_median("share_of_max_speedup", [min(s, 1.0) for s in shares])
        entry |= _mean_and_median("share_of_max_speedup_uncapped", shares)
        entry |= _mean_and_median("time_to_match_over_search", [r for r, _ in matches if r])
        entry["time_to_match_capped"] = sum(capped for _, capped in matches)
        matched = [r for r, capped in matches if r and not capped]
        entry |= _mean_and_median("time_to_match_over_search_matched", matched)
        entry["time_to_match_matched"] = len(matched)
        entry |= _mean_and_median("search_s", [c["search_s"] for _, c, _ in cells])
        entry |= _mean_and_median("speedup", [c["speedup"] for _, c, _ in cells])
        for key in ("speedup_over_pytorch_eager", "speedup_over_onnxruntime"):
            values = [c[key] for _, c, _ in cells if c.get(key)]
            if values:
                entry[key] = round(statistics.geometric_mean(values), 4)
                entry[f"{key}_networks"] = len(values)
        out[name] = entry
    return out


def _mean_and_median(key: str, values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    return {
        key: round(statistics.mean(values), 4),
        f"{key}_median": round(statistics.median(values), 4),
    }
