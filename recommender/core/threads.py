"""Spread work that runs in TVM's C++ over the cores, with threads.

tvm_ffi releases the GIL for every call into TVM (``TVM_FFI_RELEASE_GIL_BY_DEFAULT``), so
replaying traces and running postprocessors in one thread per core overlaps, without the
start-up and the pickling of IR that worker processes would cost. Each item must own what it
changes (one kernel's candidates, one cache file).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0))


def on_every_core(fn: Callable[..., T], *iterables: Iterable) -> list[T]:
    """``list(map(fn, *iterables))`` in one thread per core; the first exception is raised."""
    with ThreadPoolExecutor(cores()) as pool:
        return list(pool.map(fn, *iterables))
