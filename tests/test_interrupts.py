"""Ctrl-C in a long run: the first stops it at the next checkpoint, a second aborts at once."""

import signal
from pathlib import Path

import pytest

from recommender.backend.workers import run_jobs
from recommender.core.interrupts import checkpoint, ctrl_c_stops_gently, stop_requested


def test_the_first_ctrl_c_lets_the_step_in_flight_finish(interactive_ctrl_c):
    steps = []
    with pytest.raises(KeyboardInterrupt), ctrl_c_stops_gently():
        signal.raise_signal(signal.SIGINT)
        steps.append("finished")  # e.g. a chunk of candidates measured and saved
        checkpoint()
        steps.append("started")
    assert steps == ["finished"]
    assert not stop_requested()  # the next run starts afresh
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_second_ctrl_c_aborts_at_once(interactive_ctrl_c):
    steps = []
    with pytest.raises(KeyboardInterrupt), ctrl_c_stops_gently():
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGINT)
        steps.append("finished")
    assert steps == []


def test_a_block_that_ends_after_a_ctrl_c_says_it_was_interrupted(interactive_ctrl_c):
    with pytest.raises(KeyboardInterrupt), ctrl_c_stops_gently():
        with ctrl_c_stops_gently():  # an inner block (a replay in a CLI command) leaves it
            signal.raise_signal(signal.SIGINT)
        assert stop_requested()


def test_a_run_started_with_ctrl_c_ignored_keeps_ignoring_it(interactive_ctrl_c):
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as `nohup CMD &` in a script starts it
    with ctrl_c_stops_gently():
        signal.raise_signal(signal.SIGINT)
        checkpoint()
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_workers_leave_a_ctrl_c_to_their_parent():
    # a Ctrl-C at a terminal reaches every process of the group, workers included
    [(_, error)] = run_jobs("ctrl-c", 1, 60, signal.raise_signal, [(signal.SIGINT,)], "job")
    assert error is None


def test_a_ctrl_c_during_a_batch_keeps_the_jobs_finished_and_starts_no_more(
    interactive_ctrl_c, tmp_path
):
    jobs = [(tmp_path / f"build{i}",) for i in range(4)]  # one worker: one at a time
    kept = []
    with pytest.raises(KeyboardInterrupt), ctrl_c_stops_gently():
        for (path,), _outcome in zip(jobs, run_jobs("batch", 1, 60, Path.touch, jobs, "job")):
            kept.append(path)  # e.g. a network build copied to where reruns find it
            signal.raise_signal(signal.SIGINT)
            checkpoint()
    assert kept == [tmp_path / "build0"]
    list(run_jobs("batch", 1, 60, Path.touch, [(tmp_path / "after",)], "job"))  # drains the pool
    assert not (tmp_path / "build2").exists() and not (tmp_path / "build3").exists()
