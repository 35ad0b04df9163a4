"""Coverage: how much of a network the source schedules reach, and why the rest stays untuned.

Shares are of the network's FLOPs, each kernel weighing ``task.descriptor.flops`` x
``task.weight`` (a kernel whose FLOPs TVM cannot count weighs nothing). A kernel is covered at
the *exact* level when one of its exact candidates applies, at the *anchor* level when only
anchor ones do, at the *default* level when only MetaSchedule's design space does (see
``transfer.apply``). Where candidates were timed, the kernels with a valid
timed candidate are split by the level of the candidate chosen for them, or ``untuned_faster``
when none beat the untuned kernel.

Every kernel left without a schedule is listed with the first reason on a candidate's path
(``Gap``). Both reports, the exhaustive run's (``transfer.report``) and the recommender's
(``recommend.report``), build this with ``coverage`` and print it with ``coverage_lines``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from ..tasks.extract import Task
from ..tasks.workload import kernel_kind
from .apply import Level
from .candidate import Candidate

DIGITS = 4  # FLOP shares in JSON


class Gap(StrEnum):
    """Why a kernel has no schedule, in the order a candidate's path meets the reasons."""

    NO_CLASS = "no candidate of its class"  # an empty pool
    NONE_APPLIES = "no candidate applies"
    NONE_VALID = "no valid candidate"  # every one failed to build, check or run
    UNTUNED_FASTER = "no candidate beats untuned"
    PREDICTED_SLOWER = "kept untuned: its untimed pick is predicted slower"  # ``learn.untimed``


@dataclass(frozen=True)
class KernelOutcome:
    """What a search did with one kernel: its pool of candidates (None: not known), the chosen
    one, the untuned kernel's time in seconds, and whether nothing was timed and the search
    kept the untuned kernel as the cost model predicts its pick slower (``learn.untimed``)."""

    task: Task
    pool: list[Candidate] | None
    chosen: Candidate | None
    untuned_s: float | None = None
    predicted_slower: bool = False


@dataclass(frozen=True)
class Unscheduled:
    """A kernel left untuned: the reason and what says most about it (the most common apply
    failure message, the most common failure ``stage: message``, the class, or the times)."""

    task: Task
    gap: Gap
    detail: str
    share: float  # of the network's FLOPs


@dataclass(frozen=True)
class Coverage:
    """Shares of the network's FLOPs (``flops``, weighted), unrounded.

    ``applies``: ``exact`` + ``anchor`` + ``default`` + ``none`` = 1. ``timed``: None where
    nothing was timed, else ``exact``, ``anchor``, ``default`` (level of the chosen candidate)
    and ``untuned_faster``, of the kernels with a valid timed candidate.
    """

    flops: float
    applies: dict[str, float]
    timed: dict[str, float] | None
    unscheduled: list[Unscheduled]

    def to_json(self) -> dict:
        def shares(d: dict[str, float] | None) -> dict[str, float] | None:
            return None if d is None else {k: round(v, DIGITS) for k, v in d.items()}

        return {
            "flops": round(self.flops),
            "applies": shares(self.applies),
            "timed": shares(self.timed),
            "unscheduled": [
                {
                    "task": u.task.name,
                    "kernel_class": u.task.kernel_class.key,
                    "weight": u.task.weight,
                    "flop_share": round(u.share, DIGITS),
                    "reason": u.gap.value,
                    "detail": u.detail,
                }
                for u in self.unscheduled
            ],
        }


def level_of(candidate: Candidate | None) -> str | None:
    """``"exact"``, ``"anchor"``, ``"default"``, or None for no candidate: a report row's
    ``level``."""
    return None if candidate is None else candidate.level.value


def pool_sizes(pool: list[Candidate] | None) -> dict[str, int] | None:
    """Candidates per level (None where the search kept no pool): a report row's ``pool``."""
    if pool is None:
        return None
    return {level.value: sum(c.level is level for c in pool) for level in Level}


def weighted_flops(task: Task) -> float:
    flops = task.descriptor.flops
    return flops * task.weight if math.isfinite(flops) else 0.0


def coverage(kernels: Iterable[KernelOutcome]) -> Coverage:
    """The coverage of one network's kernels (see the module docstring).

    Examples
    --------
    >>> cov = coverage(KernelOutcome(k.task, k.candidates, k.best, k.untuned_s) for k in kernels)
    >>> cov.applies  # {"exact": 0.81, "anchor": 0.12, "none": 0.07}
    """
    kernels = list(kernels)
    weights = [weighted_flops(k.task) for k in kernels]
    total = sum(weights)
    applies = dict.fromkeys([*(level.value for level in Level), "none"], 0.0)
    timed = dict.fromkeys([*(level.value for level in Level), "untuned_faster"], 0.0)
    any_timed = False
    unscheduled = []
    for kernel, flops in zip(kernels, weights):
        share = flops / total if total > 0 else 0.0
        pool = kernel.pool or []
        applying = [c for c in pool if c.applies]
        applies[_best_level(applying)] += share
        if any(c.run_s is not None for c in applying):
            any_timed = True
            timed[level_of(kernel.chosen) or "untuned_faster"] += share
        if kernel.chosen is None:
            gap, detail = _gap(kernel, applying)
            unscheduled.append(Unscheduled(kernel.task, gap, detail, share))
    return Coverage(total, applies, timed if any_timed else None, unscheduled)


def _best_level(applying: list[Candidate]) -> str:
    """The level closest to the kernel's own structure among those that apply."""
    return next((lv.value for lv in Level if any(c.level is lv for c in applying)), "none")


def _most_common(texts: Iterable[str]) -> str:
    [(text, _)] = Counter(texts).most_common(1)
    return text


def _gap(kernel: KernelOutcome, applying: list[Candidate]) -> tuple[Gap, str]:
    klass = kernel.task.kernel_class
    if kernel.pool is None:  # nothing applied, but which of the two is unknown
        return Gap.NONE_APPLIES, "the search kept no pool for this kernel"
    if not kernel.pool:
        anchor = f"anchor class {klass.anchor}" if klass.anchor else "no anchor class"
        return Gap.NO_CLASS, f"exact class {klass.summary}; {anchor}"
    if not applying:
        return Gap.NONE_APPLIES, _most_common(c.apply_reason for c in kernel.pool)
    if kernel.predicted_slower:
        return Gap.PREDICTED_SLOWER, f"kind {kernel_kind(klass.key)}"
    timed = [c.run_s for c in applying if c.run_s is not None]
    if timed:
        untuned = "-" if kernel.untuned_s is None else f"{kernel.untuned_s * 1e3:.4g} ms"
        return Gap.UNTUNED_FASTER, f"fastest {min(timed) * 1e3:.4g} ms, untuned {untuned}"
    failures = [str(c.failure) for c in applying if c.failure is not None]
    return Gap.NONE_VALID, _most_common(failures) if failures else "no candidate was measured"


def coverage_lines(report: dict) -> list[str]:
    """Two lines for a report's table, from its JSON ``coverage``."""
    applies, timed = report["applies"], report["timed"]
    default = applies.get("default", 0.0)  # reports written before the default level
    line = (
        f"coverage of {report['flops'] / 1e6:.1f} MFLOP: a candidate applies to "
        f"{applies['exact'] + applies['anchor'] + default:.1%} (exact {applies['exact']:.1%}, "
        f"anchor {applies['anchor']:.1%}, default {default:.1%}); "
    )
    if timed is None:
        line += "nothing timed"
    else:
        line += (
            f"a valid timed one to {sum(timed.values()):.1%} (chosen exact {timed['exact']:.1%}, "
            f"anchor {timed['anchor']:.1%}, default {timed.get('default', 0.0):.1%}, "
            f"untuned faster {timed['untuned_faster']:.1%})"
        )
    unscheduled = report["unscheduled"]
    reasons = Counter(u["reason"] for u in unscheduled)
    left = (
        f"without a schedule: {len(unscheduled)} kernels, "
        f"{sum(u['flop_share'] for u in unscheduled):.1%} of FLOPs"
    )
    if reasons:
        left += ": " + ", ".join(f"{n} {reason}" for reason, n in reasons.most_common())
    return [line, left]
