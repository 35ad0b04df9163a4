"""How far one comparison is from the next on this machine, measured on the builds that did
not change.

A network is compared again whenever one of its searches changes (a redone ranked method, a
deeper reference) or on request (``--recompare``). The builds the two comparisons share
(untuned, full MetaSchedule from the same log, the outside runtimes, every method whose search
is the same) should take the same time both times; how far they moved is what one comparison's
ratios can be off by. On the Zen 4 VM one comparison of GoogLeNet timed every transfer build
3-4 ms slow, unchanged ones too (16.25 -> 19.94 ms), and the next one did not (16.26): without
this, such a run passes unnoticed.
"""

from __future__ import annotations

import logging
import math
import statistics

from .comparison import BASELINES

logger = logging.getLogger(__name__)

TOLERANCE = 0.10  # an unchanged build that moves by more than this: a noisy comparison


def unchanged_builds(before: dict, now: dict) -> dict[str, list[float]]:
    """Milliseconds [before, now] of each build two comparisons of one network share: untuned,
    full MetaSchedule (the same number of records), the outside runtimes and every method whose
    search report is the same (``compared.searches`` digests)."""
    pairs = {"untuned": (before.get("untuned_ms"), now.get("untuned_ms"))}
    ms_before, ms_now = before.get("metaschedule", {}), now.get("metaschedule", {})
    if ms_before.get("records") == ms_now.get("records"):
        pairs["metaschedule"] = (ms_before.get("ms"), ms_now.get("ms"))
    for key in BASELINES:
        pairs[key] = (before.get(key, {}).get("ms"), now.get(key, {}).get("ms"))
    digests = before.get("compared", {}).get("searches", {})
    for method, digest in now.get("compared", {}).get("searches", {}).items():
        if digests.get(method) == digest:
            pairs[method] = (
                before.get("methods", {}).get(method, {}).get("ms"),
                now["methods"].get(method, {}).get("ms"),
            )
    return {name: [a, b] for name, (a, b) in pairs.items() if a and b}


def moved(builds: dict[str, list[float]]) -> dict[str, float]:
    """Each build's time now / before, where it moved by more than ``TOLERANCE``."""
    ratios = {name: now / before for name, (before, now) in builds.items()}
    return {name: r for name, r in ratios.items() if abs(math.log(r)) > math.log1p(TOLERANCE)}


def record(network: str, before: dict | None, now: dict) -> None:
    """Keep in ``now`` (the new comparison) the builds it shares with ``before``, and warn
    where one of them moved beyond ``TOLERANCE``."""
    if before is None:
        return
    builds = unchanged_builds(before, now)
    if not builds:
        return
    now["repeat"] = builds
    if far := moved(builds):
        listed = ", ".join(f"{n} {builds[n][0]:.2f} -> {builds[n][1]:.2f} ms" for n in far)
        logger.warning(
            "%s: builds that did not change since its previous comparison moved by more than "
            "%.0f%% (%s): this comparison is noisy; compare again with --recompare %s",
            network,
            TOLERANCE * 100,
            listed,
            network,
        )


def network_line(row: dict) -> list[str]:
    """The page's line under a network's table: its unchanged builds then and now."""
    builds = row.get("repeat")
    if not builds:
        return []
    far = moved(builds)
    listed = ", ".join(
        f"{name} {before:.2f} -> {now:.2f}{' (moved)' if name in far else ''}"
        for name, (before, now) in builds.items()
    )
    return ["", f"Builds unchanged since its previous comparison, timed again (ms): {listed}."]


def page_section(results: dict) -> list[str]:
    """The page's paragraph on repeatability: over every network compared more than once, how
    far its unchanged builds moved (median and worst), so a reader knows what one comparison's
    ratios can be off by."""
    moves = [
        (abs(math.log(now / before)), row["network"], name, before, now)
        for row in results["networks"]
        for name, (before, now) in row.get("repeat", {}).items()
    ]
    if not moves:
        return []
    worst = max(moves)
    networks = len({m[1] for m in moves})
    median = math.expm1(statistics.median(m[0] for m in moves))
    return [
        "## Repeatability",
        "",
        f"Compared again (a search redone, or on request) on {networks} "
        f"network{'s' * (networks != 1)}: the {len(moves)} builds both comparisons share moved "
        f"by {median:.1%} (median); "
        f"the most, {worst[1]}'s {worst[2]}, {worst[3]:.2f} -> {worst[4]:.2f} ms "
        f"({math.expm1(worst[0]):.0%}). A ratio within that of 1 is a tie.",
        "",
    ]
