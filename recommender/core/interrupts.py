"""Ctrl-C in a long run: the first stops it after the step in flight, a second aborts at once.

A KeyboardInterrupt raised wherever the signal lands is not safe here. TVM turns one raised in
a Python callback it calls (a replay's decision provider, a measure callback) into a bare
RuntimeError, which looks like the candidate's failure and would be recorded as one, and
a Ctrl-C at a terminal reaches the whole process group, so worker processes that died of it
would look like failed builds or runs. So within ``ctrl_c_stops_gently`` the first Ctrl-C only
sets a flag, the loops call ``checkpoint`` between steps whose results are saved, and workers
ignore SIGINT (``ignore_ctrl_c``): their parent decides when to stop.

A process that inherits an ignored SIGINT keeps ignoring it, as Python itself does: a shell
without job control starts background commands so (``cmd &`` in a script, ``nohup``), and a
``kill -INT`` does nothing to them. Stop those with SIGTERM (measurements are saved as they are
made), or start them with job control (``bash -c 'set -m; nohup CMD & disown'``).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Iterator

logger = logging.getLogger(__name__)

_stop = threading.Event()


def stop_requested() -> bool:
    """Whether a Ctrl-C asked the run to stop at its next checkpoint."""
    return _stop.is_set()


def checkpoint() -> None:
    """Raise KeyboardInterrupt if a stop was requested; call it between saved steps."""
    if _stop.is_set():
        raise KeyboardInterrupt


def _on_ctrl_c(signum: int, frame: object) -> None:
    if _stop.is_set():
        raise KeyboardInterrupt
    _stop.set()
    logger.warning("stopping after the step in flight; Ctrl-C again to abort")


@contextlib.contextmanager
def ctrl_c_stops_gently() -> Iterator[None]:
    """Within the block, a Ctrl-C requests a stop; the block ends with KeyboardInterrupt.

    Nested blocks share the outermost one's handler; an ignored SIGINT stays ignored. An error
    raised while a stop is requested (TVM's RuntimeError for a second Ctrl-C inside a callback)
    becomes a KeyboardInterrupt, so that it is never taken for a result.
    """
    in_main_thread = threading.current_thread() is threading.main_thread()
    current = signal.getsignal(signal.SIGINT)
    installs = in_main_thread and current not in (_on_ctrl_c, signal.SIG_IGN)
    previous = signal.signal(signal.SIGINT, _on_ctrl_c) if installs else None
    stopped = False
    try:
        yield
    except Exception as err:
        if _stop.is_set():
            raise KeyboardInterrupt from err
        raise
    finally:
        if installs:
            signal.signal(signal.SIGINT, previous)
            stopped = _stop.is_set()
            _stop.clear()
    if stopped:
        raise KeyboardInterrupt


def ignore_ctrl_c() -> None:
    """A worker process's initializer: the Ctrl-C that reaches it is its parent's to handle."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
