"""A TVM RPC tracker and one device server on 127.0.0.1: the RPC path without a board.

The tests use it, and so does the edge-profile evaluation (a one-thread server stands for a
one-core board). Both processes are stopped by PID when the block ends.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from ..core.targets import RemoteDevice


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(*args: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,  # a Ctrl-C at the terminal is ours to handle, not the device's
    )


@contextmanager
def loopback_device(key: str, *, threads: int | None = None) -> Iterator[RemoteDevice]:
    """A tracker and a server registered under ``key``; ``threads`` caps the server's TVM
    thread pool (``TVM_NUM_THREADS``) to stand for a smaller device."""
    from tvm import rpc

    port = free_port()
    # the tracker's default --port-end (9199) is below most free ports
    tracker = _start("tvm.exec.rpc_tracker", "--host", "127.0.0.1", "--port", str(port),
                     "--port-end", str(port + 1))  # fmt: skip
    env = {**os.environ, **({"TVM_NUM_THREADS": str(threads)} if threads else {})}
    server = _start("tvm.exec.rpc_server", "--host", "127.0.0.1", "--tracker",
                    f"127.0.0.1:{port}", "--key", key, env=env)  # fmt: skip
    try:
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
    finally:
        for proc in (server, tracker):
            proc.kill()
            proc.wait()
