"""A TVM RPC tracker and one device server on 127.0.0.1: the RPC path without a board.

The tests use it, and so does the edge-profile evaluation (a one-thread server stands for a
one-core board). ``python -m tvm.exec.rpc_server`` (and ``rpc_tracker``) only waits for a
``tvm.exec.popen_worker`` child that serves (about 500 MB), which forks one more process per
session: killing the two by PID left those serving children running, parented to init. So
all of them share one process group of their own (a Ctrl-C at the terminal does not reach
it), killed whole when the block ends. The group's leader is a watchdog that kills the group
itself if the parent dies without ending the block (SIGKILL, SIGTERM): it waits for the end
of a pipe only the parent writes to.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ..core.targets import RemoteDevice


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The group's leader: ends the group once the parent's end of its stdin is closed.
_WATCHDOG = "import os, signal, sys; sys.stdin.read(); os.killpg(0, signal.SIGKILL)"


@contextmanager
def _process_group() -> Iterator[Callable[..., subprocess.Popen]]:
    """``start(module, *args, env=...)`` runs ``python -m module`` in one new process group,
    killed whole when the block ends."""
    watchdog = subprocess.Popen(
        [sys.executable, "-c", _WATCHDOG], stdin=subprocess.PIPE, process_group=0
    )
    started = [watchdog]

    def start(*args: str, env: dict | None = None) -> subprocess.Popen:
        proc = subprocess.Popen(
            [sys.executable, "-m", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            process_group=watchdog.pid,
        )
        started.append(proc)
        return proc

    try:
        yield start
    finally:
        with contextlib.suppress(ProcessLookupError):  # the watchdog may have done it
            os.killpg(watchdog.pid, signal.SIGKILL)
        for proc in started:
            proc.wait()
        watchdog.stdin.close()


@contextmanager
def loopback_device(key: str, *, threads: int | None = None) -> Iterator[RemoteDevice]:
    """A tracker and a server registered under ``key``; ``threads`` caps the server's TVM
    thread pool (``TVM_NUM_THREADS``) to stand for a smaller device."""
    from tvm import rpc

    port = free_port()
    env = {**os.environ, **({"TVM_NUM_THREADS": str(threads)} if threads else {})}
    with _process_group() as start:
        # the tracker's default --port-end (9199) is below most free ports
        start("tvm.exec.rpc_tracker", "--host", "127.0.0.1", "--port", str(port),
              "--port-end", str(port + 1))  # fmt: skip
        start("tvm.exec.rpc_server", "--host", "127.0.0.1", "--tracker", f"127.0.0.1:{port}",
              "--key", key, env=env)  # fmt: skip
        deadline = time.monotonic() + 60
        while True:
            try:
                queues = rpc.connect_tracker("127.0.0.1", port).summary().get("queue_info", {})
                if queues.get(key, {}).get("free", 0) > 0:
                    break
            except (ConnectionError, RuntimeError, OSError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the loopback RPC server did not register within 60 s")
            time.sleep(0.5)
        yield RemoteDevice("127.0.0.1", port, key)
