"""The report of an exhaustive transfer run: per kernel and for the network, with its coverage
(``transfer.coverage``)."""

from __future__ import annotations

from .coverage import KernelOutcome, coverage, coverage_lines, level_of, pool_sizes
from .exhaustive import TransferRun

UNTUNED_NOTE = (
    "untuned = the plain Relax build (naive single-threaded loops), far weaker than TVM's old "
    "TOPI schedules: speedups over it overstate what tuning adds to a good default"
)


def milliseconds(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1e3, 5)


def kernel_rows(run: TransferRun) -> list[dict]:
    rows = []
    for kernel in run.kernels:
        best = kernel.best
        failures: dict[str, int] = {}
        for c in kernel.candidates:
            if c.failure:
                stage = c.failure.stage.value
                failures[stage] = failures.get(stage, 0) + 1
        rows.append(
            {
                "task": kernel.task.name,
                "kernel_class": kernel.task.kernel_class.key,
                "weight": kernel.task.weight,
                "candidates": len(kernel.candidates),
                "pool": pool_sizes(kernel.candidates),
                "failed": failures,
                "untuned_ms": milliseconds(kernel.untuned_s),
                "best_ms": milliseconds(best.run_s if best else None),
                "speedup": round(kernel.untuned_s / best.run_s, 3)
                if best and kernel.untuned_s
                else None,
                "source": best.label if best else None,
                "level": level_of(best),
                "repaired_tiles": best.applied.repaired_tiles if best else None,
            }
        )
    return rows


def summary(run: TransferRun, end_to_end_s: dict[str, float]) -> dict:
    """Everything a script needs: per kernel, end to end, candidate counts, search time."""
    candidates = [c for k in run.kernels for c in k.candidates]
    untuned, tuned = end_to_end_s.get("untuned"), end_to_end_s.get("transfer")
    return {
        "network": run.network,
        "target": str(run.target),
        "kernels": kernel_rows(run),
        "tuned_kernels": sum(k.best is not None for k in run.kernels),
        "candidates": len(candidates),
        "candidates_failed": sum(c.failure is not None for c in candidates),
        "coverage": coverage(
            KernelOutcome(k.task, k.candidates, k.best, k.untuned_s) for k in run.kernels
        ).to_json(),
        "end_to_end_ms": {name: milliseconds(s) for name, s in end_to_end_s.items()},
        "speedup": round(untuned / tuned, 3) if untuned and tuned else None,
        "search_s": round(run.search_s, 2),
        "phases_s": {k: round(v, 2) for k, v in run.timings_s.items()},
        "note": UNTUNED_NOTE,
    }


def table(report: dict) -> str:
    lines = [
        f"{report['network']}: {report['tuned_kernels']}/{len(report['kernels'])} kernels tuned "
        f"by transfer; {report['candidates']} candidates, {report['candidates_failed']} failed; "
        f"search {report['search_s']:.1f} s",
    ]
    header = (
        f"{'task':44} {'w':>2} {'cand':>4} {'untuned ms':>11} {'best ms':>9} {'x':>6} "
        f"{'level':6}  source"
    )
    lines += [header, "-" * len(header)]
    for row in report["kernels"]:
        untuned = f"{row['untuned_ms']:.4f}" if row["untuned_ms"] is not None else "-"
        best = f"{row['best_ms']:.4f}" if row["best_ms"] is not None else "-"
        speedup = f"{row['speedup']:.2f}" if row["speedup"] else "-"
        lines.append(
            f"{row['task'][:44]:44} {row['weight']:>2} {row['candidates']:>4} {untuned:>11} "
            f"{best:>9} {speedup:>6} {row['level'] or '-':6}  {row['source'] or 'untuned'}"
        )
    lines += coverage_lines(report["coverage"])
    e2e = ", ".join(f"{k} {v:.3f} ms" for k, v in report["end_to_end_ms"].items() if v)
    lines.append(f"end to end: {e2e}; speedup {report['speedup']}x")
    lines.append(f"note: {report['note']}")
    return "\n".join(lines)
