"""A task scheduler that commits every batch before starting the next, for resumable collection.

MetaSchedule's gradient and round-robin schedulers send one batch of every task to the builder
and runner before joining any: their results reach the database only after a whole round (for
ResNet-18, 19 batches and over ten minutes here), so a session killed in the first round kept
nothing. This scheduler joins the running batch first, so at most one batch is ever in flight.

Which task next: one round over all tasks, then greedily the task that costs the network most
now (weight x best time so far), among those under their trial cap, the core of the gradient
scheduler's choice without its look-back terms.
"""

from __future__ import annotations

import math

from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.task_scheduler import PyTaskScheduler


@derived_object
class CommitEachBatch(PyTaskScheduler):
    def __init__(self) -> None:
        super().__init__()
        self._running: int | None = None
        self._best: dict[int, float] = {}
        self._visited: set[int] = set()

    def next_task_id(self) -> int:
        records = self._outer().tasks_  # type: ignore[attr-defined]
        if self._running is not None and not records[self._running].is_terminated:
            results = self.join_running_task(self._running)
            times = [min(float(s) for s in r.run_secs) for r in results if r.run_secs]
            best = min(times, default=math.inf)
            self._best[self._running] = min(self._best.get(self._running, math.inf), best)
        self._running = None
        alive = [i for i, r in enumerate(records) if not r.is_terminated]
        if not alive:
            return -1
        unvisited = [i for i in alive if i not in self._visited]
        if unvisited:
            choice = unvisited[0]
        else:
            choice = max(alive, key=lambda i: records[i].task_weight * self._best.get(i, math.inf))
        self._visited.add(choice)
        self._running = choice
        return choice
