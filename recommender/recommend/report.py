"""Reports of a transfer run and of a recommendation: JSON for scripts, a table for people."""

from __future__ import annotations

from ..transfer.coverage import KernelOutcome, coverage, coverage_lines, level_of, pool_sizes
from ..transfer.report import UNTUNED_NOTE, milliseconds
from .search import How, KernelChoice, Recommendation


def _outcome(choice: KernelChoice) -> KernelOutcome:
    slower = choice.how is How.PREDICTED_SLOWER
    return KernelOutcome(choice.task, choice.pool, choice.chosen, choice.untuned_s, slower)


def recommendation_rows(result: Recommendation) -> list[dict]:
    """Per kernel: what was ranked, timed and failed, what was chosen and why."""
    rows = []
    for choice in result.kernels:
        ranked = choice.ranked
        every = ranked.kernel.candidates if ranked else []
        chosen = choice.chosen
        row = {
            "task": choice.task.name,
            "kernel_class": choice.task.kernel_class.key,
            "weight": choice.task.weight,
            "candidates": len(every),
            "pool": pool_sizes(choice.pool),
            "ranked": len(ranked.candidates) if ranked else 0,
            "timed": sum(c.run_s is not None for c in every),
            "failed": sum(c.failure is not None for c in every),
            "how": choice.how.value,
            "level": level_of(chosen),
            "untuned_ms": milliseconds(choice.untuned_s),
            "chosen": None,
        }
        if chosen is not None:
            row["chosen"] = {
                "source": chosen.label,
                "model": chosen.source.model if chosen.source else None,
                **(ranked.explain(chosen) if chosen.source else {}),
                "predicted_ms": milliseconds(choice.predicted_s),
                "measured_ms": milliseconds(chosen.run_s),
                "speedup": round(choice.untuned_s / chosen.run_s, 3)
                if chosen.run_s and choice.untuned_s
                else None,
            }
        rows.append(row)
    return rows


def recommendation_summary(result: Recommendation, end_to_end_s: dict[str, float]) -> dict:
    untuned, tuned = end_to_end_s.get("untuned"), end_to_end_s.get("recommended")
    return {
        "network": result.network,
        "target": str(result.target),
        "budget": result.budget.to_json(),
        "kernels": recommendation_rows(result),
        "tuned_kernels": sum(k.chosen is not None for k in result.kernels),
        "untuned_kernels": [k.task.name for k in result.kernels if k.chosen is None],
        "candidates": result.candidates("all"),
        "candidates_ranked": result.candidates("ranked"),
        "candidates_timed": result.candidates("timed"),
        "candidates_failed": result.candidates("failed"),
        "coverage": coverage(_outcome(k) for k in result.kernels).to_json(),
        "untuned_references_timed": result.untuned_timed,
        "end_to_end_ms": {name: milliseconds(s) for name, s in end_to_end_s.items()},
        "speedup": round(untuned / tuned, 3) if untuned and tuned else None,
        "search_s": round(result.search_s, 2),
        "phases_s": {k: round(v, 2) for k, v in result.timings_s.items()},
        "notes": result.notes + [UNTUNED_NOTE],
    }


def recommendation_table(report: dict) -> str:
    lines = [
        f"{report['network']}: {report['tuned_kernels']}/{len(report['kernels'])} kernels tuned; "
        f"{report['candidates']} candidates, {report['candidates_ranked']} ranked after the "
        f"screen, {report['candidates_timed']} timed, "
        f"{report['candidates_failed']} failed; search {report['search_s']:.1f} s "
        f"({', '.join(f'{k} {v:.1f}' for k, v in report['phases_s'].items())})",
    ]
    header = (
        f"{'task':40} {'w':>2} {'cand':>4} {'timed':>5} {'rank':>4} {'untuned ms':>10} "
        f"{'chosen ms':>9} {'x':>6} {'level':6}  source / why"
    )
    lines += [header, "-" * len(header)]
    for row in report["kernels"]:
        chosen = row["chosen"] or {}
        ms = chosen.get("measured_ms") or chosen.get("predicted_ms")
        mark = "" if chosen.get("measured_ms") else "~"  # ~ = predicted, not timed
        untuned = f"{row['untuned_ms']:.3f}" if row["untuned_ms"] is not None else "-"
        speedup = f"{chosen['speedup']:.2f}" if chosen.get("speedup") else "-"
        lines.append(
            f"{row['task'][:40]:40} {row['weight']:>2} {row['candidates']:>4} {row['timed']:>5} "
            f"{chosen.get('initial_rank', '-')!s:>4} {untuned:>10} "
            f"{(mark + f'{ms:.3f}') if ms else '-':>9} {speedup:>6} {row['level'] or '-':6}  "
            f"{chosen.get('source') or row['how']}"
        )
    lines += coverage_lines(report["coverage"])
    e2e = ", ".join(f"{k} {v:.2f} ms" for k, v in report["end_to_end_ms"].items() if v)
    if e2e:
        lines.append(f"end to end: {e2e}; speedup {report['speedup']}x")
    lines += [f"note: {note}" for note in report["notes"]]
    return "\n".join(lines)
