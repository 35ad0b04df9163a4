"""Collection survives a killed session: the next call resumes and no measured record is lost."""

import json
import signal
import subprocess
import sys
import time

from recommender.logs.tuning_log import TuningLog


def collect_cmd(model, out, trials):
    return [
        sys.executable,
        "-m",
        "recommender.cli",
        "collect",
        str(model),
        "--out",
        str(out),
        "--trials-per-task",
        str(trials),
        "--trials-per-iter",
        "4",
        "--population",
        "16",
        "--json",
    ]


def wait_for_records(log: TuningLog, count: int, proc, timeout_s: float = 240) -> None:
    deadline = time.monotonic() + timeout_s
    while log.record_count() < count:
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "no records appeared"
        time.sleep(0.2)


def start_collecting(model, out, trials: int, until_records: int):
    """Start ``recommender collect`` and return once ``until_records`` are on disk."""
    proc = subprocess.Popen(
        collect_cmd(model, out, trials),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as from a terminal
    )
    wait_for_records(TuningLog(out / "tinyconv"), until_records, proc)
    return proc


def test_killed_collection_resumes_without_losing_records(conv_json, tmp_path):
    log = TuningLog(tmp_path / "tinyconv")
    first = start_collecting(conv_json, tmp_path, trials=8, until_records=4)
    first.send_signal(signal.SIGKILL)  # a session that stops mid-run
    first.wait()
    kept = log.records_path.read_bytes()
    kept_count = log.record_count()
    assert 4 <= kept_count < 8

    done = subprocess.run(collect_cmd(conv_json, tmp_path, 8), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    [summary] = json.loads(done.stdout)
    assert summary["trials_before"] == kept_count
    assert summary["trials_before"] + summary["trials_this_run"] >= 8
    assert log.records_path.read_bytes().startswith(kept)  # nothing rewritten
    opened = TuningLog.open(log.path)
    assert len(opened.stamps()) == opened.record_count()
    sessions = opened.provenance()["sessions"]
    assert [s["status"] for s in sessions] == ["running", "finished"]  # the first was killed

    again = subprocess.run(collect_cmd(conv_json, tmp_path, 8), capture_output=True, text=True)
    assert json.loads(again.stdout)[0]["status"] == "budget already spent"


def test_interrupt_with_ctrl_c_keeps_records_and_says_so(conv_json, tmp_path):
    log = TuningLog(tmp_path / "tinyconv")
    proc = start_collecting(conv_json, tmp_path, trials=40, until_records=4)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert json.loads(out)[0]["status"] == "interrupted"
    assert TuningLog.open(log.path).provenance()["sessions"][-1]["status"] == "interrupted"
    assert log.record_count() >= 4
