"""Nothing the package starts outlives the command that started it: worker pools, MetaSchedule's
runners and the loopback RPC device end with their process, whether it exits normally, a
Ctrl-C (SIGINT) stops it mid-run, or it is killed outright.

Each job runs in a fresh interpreter; every process under it is recorded while it runs, and
none may be alive a few seconds after it exits (an orphan would be parented to init).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

# A copy kernel built, checked and timed (build and check pools, a runner), on this host or
# through the loopback device; then a second batch, the one a Ctrl-C interrupts.
MEASURE = """
import contextlib, signal, sys
import tvm
from tvm.script import tirx as T
from recommender.backend.loopback import loopback_device
from recommender.backend.measure import measure
from recommender.core.targets import host_target

signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal

@T.prim_func(s_tir=True)
def copy(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32")):
    for i in range(64):
        with T.sblock("copy"):
            vi = T.axis.spatial(64, i)
            b[vi] = a[vi]

def batch(candidates, remote):
    reference = tvm.IRModule({"main": copy})
    others = [tvm.IRModule({"main": copy}) for _ in range(candidates)]  # checked, then timed
    [results] = measure([(reference, [reference, *others])], host_target(), remote=remote)
    assert all(r.ok for r in results), results

device = loopback_device("leaks") if sys.argv[1] == "device" else contextlib.nullcontext()
with device as remote:
    batch(1, remote)
    print("measured", flush=True)  # every pool and the runner are up
    batch(2, remote)
"""

# One worker busy in a long job (a hung kernel, a VGG-16 build).
LONG_JOB = """
import signal, sys, time
from pathlib import Path
from recommender.backend.workers import run_jobs

signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal

def long_job(marker):
    Path(marker).touch()
    time.sleep(600)

list(run_jobs("long", 1, 900, long_job, [(sys.argv[1],)], "long job"))
"""


GIVE_UP_S = 120  # on a job that runs this long, or takes this long to exit after the signal


@dataclass
class Watched:
    seen: dict[psutil.Process, str]  # every process under the job: "parent PID: command"
    returncode: int
    stderr: str
    exit_s: float | None  # from the signal to the job's exit


def watch(
    tmp_path: Path,
    script: str,
    *args: str,
    signum: int | None = None,
    when: Callable[[str], bool] = lambda out: True,
    to_group: bool = True,
) -> Watched:
    """Run ``script`` with ``args``; with ``signum``, send it once ``when(stdout so far)``, to
    the job's process group as a terminal does, or with ``to_group=False`` to the job alone."""
    job, out, err = tmp_path / "job.py", tmp_path / "job.out", tmp_path / "job.err"
    job.write_text(script)  # a file: TVMScript reads the kernel's source
    # files, not pipes: reading a pipe would wait for every process that inherited it
    with out.open("w") as stdout, err.open("w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, job, *args], stdout=stdout, stderr=stderr, process_group=0
        )
    seen: dict[psutil.Process, str] = {}
    start, signalled_at = time.monotonic(), None
    while proc.poll() is None:
        # listed again each round: a child caught between fork and exec still shows its
        # parent's command line
        try:
            children = psutil.Process(proc.pid).children(recursive=True)
        except psutil.Error:
            children = []
        for child in children:
            try:
                if command := child.cmdline():
                    seen[child] = f"parent {child.ppid()}: {' '.join(command)}"
            except psutil.Error:  # it ended while it was listed
                seen.setdefault(child, "ended before its command was read")
        if signum is not None and signalled_at is None and when(out.read_text()):
            os.killpg(proc.pid, signum) if to_group else proc.send_signal(signum)
            signalled_at = time.monotonic()
        if time.monotonic() - (signalled_at or start) > GIVE_UP_S:  # a failure, not a hang
            os.killpg(proc.pid, signal.SIGKILL)
        time.sleep(0.05)
    exit_s = None if signalled_at is None else time.monotonic() - signalled_at
    return Watched(seen, proc.returncode, err.read_text(), exit_s)


def alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def assert_none_survive(seen: dict[psutil.Process, str], within_s: float = 5) -> None:
    deadline = time.monotonic() + within_s
    while any(alive(p) for p in seen) and time.monotonic() < deadline:
        time.sleep(0.2)
    survivors = [f"{p.pid} ({cmd})" for p, cmd in seen.items() if alive(p)]
    for process in seen:  # not left to the next test
        if alive(process):
            process.kill()
    assert not survivors, "\n".join(survivors)


def started(seen: dict[psutil.Process, str], name: str) -> int:
    return sum(name in cmd for cmd in seen.values())


def test_a_measurement_leaves_no_process(tmp_path):
    job = watch(tmp_path, MEASURE, "local")
    assert job.returncode == 0, job.stderr
    assert started(job.seen, "tvm.exec.popen_worker") >= 3  # a builder, a checker, the runner
    assert_none_survive(job.seen)


def test_a_ctrl_c_during_a_measurement_through_the_device_leaves_no_process(tmp_path):
    job = watch(
        tmp_path, MEASURE, "device", signum=signal.SIGINT, when=lambda out: "measured" in out
    )
    assert job.returncode != 0 and "KeyboardInterrupt" in job.stderr, job.stderr
    assert started(job.seen, "tvm.exec.rpc_server") == 1
    assert started(job.seen, "tvm.exec.popen_worker") >= 5  # the device's two, the pools'
    assert_none_survive(job.seen)


@pytest.mark.parametrize(
    "signum, to_group",
    [
        # Ctrl-C: the exit kills the job in flight rather than wait for it
        pytest.param(signal.SIGINT, True, id="ctrl-c"),
        # killed outright, the job runs nothing: its worker dies with it all the same
        pytest.param(signal.SIGKILL, False, id="sigkill"),
    ],
)
def test_a_worker_busy_in_a_long_job_ends_with_its_command(signum, to_group, tmp_path):
    marker = tmp_path / "running"
    job = watch(
        tmp_path,
        LONG_JOB,
        str(marker),
        signum=signum,
        when=lambda out: marker.exists(),
        to_group=to_group,
    )
    assert job.returncode == -signum or "KeyboardInterrupt" in job.stderr, job.stderr
    assert job.exit_s is not None and job.exit_s < 10
    assert started(job.seen, "tvm.exec.popen_worker") == 1
    assert_none_survive(job.seen)
