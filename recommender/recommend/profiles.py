"""Named device profiles: how many cores the kernels run on and how much a run may measure.

``edge`` stands for a small board: one core, a global timing budget of a minute, and only the
best record of each source workload ranked (a third of the candidates to apply and featurise).
Explicit options (``--target``, ``--top-k``/``--budget``/``--trials``, ``--top-n``) override it.
"""

from __future__ import annotations

from dataclasses import dataclass

import tvm

from ..core.targets import parse_target
from .search import Budget


@dataclass(frozen=True)
class Profile:
    name: str
    num_cores: int | None  # None: every core the process may use
    budget: Budget
    top_n: int  # records per source workload to rank

    def settings(
        self, target_spec: str | None, budget: Budget | None, top_n: int | None
    ) -> tuple[tvm.target.Target, Budget, int]:
        """The target, budget and ``top_n`` of a run: the options given, else the profile's."""
        given = target_spec not in (None, "host")
        target = parse_target(target_spec, num_cores=None if given else self.num_cores)
        return target, budget or self.budget, top_n or self.top_n

    def environment(self, target: tvm.target.Target) -> dict[str, str]:
        """What the command sets in its environment: kernels timed on this host (in-process
        and in MetaSchedule's workers, which inherit it) use the target's cores; a remote
        device decides for itself."""
        if self.num_cores is None:
            return {}
        return {"TVM_NUM_THREADS": str(int(target.attrs["num-cores"]))}


PROFILES = {
    "server": Profile("server", None, Budget(top_k=3), 3),
    "edge": Profile("edge", 1, Budget(seconds=60.0), 1),
}
