"""Measurement through TVM's RPC tracker: a loopback tracker and server, stopped by PID."""

import socket
import subprocess
import sys
import time

import pytest
from tiny import conv_net

from recommender.collect import collect
from recommender.targets import RemoteDevice
from recommender.tuning_log import TuningLog


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def device():
    """A tracker and one server registered under the key 'tiny', on 127.0.0.1 only."""
    port = free_port()
    tracker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tvm.exec.rpc_tracker",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--port-end",
            str(port + 1),
        ],  # the default port-end (9199) is below a free port
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tvm.exec.rpc_server",
            "--host",
            "127.0.0.1",
            "--tracker",
            f"127.0.0.1:{port}",
            "--key",
            "tiny",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        from tvm import rpc

        deadline = time.monotonic() + 60
        while True:
            try:
                queues = rpc.connect_tracker("127.0.0.1", port).summary().get("queue_info", {})
                if queues.get("tiny", {}).get("free", 0) > 0:
                    break
            except (ConnectionError, RuntimeError, OSError):
                pass
            assert time.monotonic() < deadline, "RPC server did not register"
            time.sleep(0.5)
        yield RemoteDevice("127.0.0.1", port, "tiny")
    finally:
        for proc in (server, tracker):
            proc.kill()
            proc.wait()


def test_collection_times_on_the_device_behind_the_tracker(device, target, tmp_path):
    summary = collect(
        conv_net(),
        target,
        tmp_path / "conv",
        trials_per_task=4,
        trials_per_iter=4,
        population=16,
        remote=device,
        progress=False,
    )
    assert summary.trials_this_run >= 4
    assert summary.failures_this_run == 0
    stamps = TuningLog.open(tmp_path / "conv").stamps()
    assert all(s.run_s and s.run_s > 0 for s in stamps)
