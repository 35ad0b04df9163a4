"""An exhaustive transfer run stopped part way resumes without timing anything twice."""

import json
import signal

import pytest
import tvm
from tiny import conv_net

from recommender.core.errors import InputError
from recommender.core.interrupts import ctrl_c_stops_gently
from recommender.logs.sources import load_sources
from recommender.transfer import timing
from recommender.transfer.exhaustive import transfer_tune
from recommender.transfer.journal import Journal


def outcomes(run) -> list:
    return [(k.untuned, [c.measurement for c in k.candidates]) for k in run.kernels]


def test_a_rerun_times_only_what_the_journal_lacks(conv_log, target, tmp_path):
    work_dir, _ = conv_log
    network = conv_net(channels=16, size=8, out_channels=32)
    sources = load_sources({"tinyconv": work_dir}, target, top_n=2)
    path = tmp_path / "journal.jsonl"

    first = transfer_tune(network, target, sources, progress=False, journal=Journal(path, target))
    header, chunk = [json.loads(line) for line in path.read_text().splitlines()]
    assert header["target"] == str(target) and len(chunk["measured"]) == 3  # untuned + 2

    # all measured: a rerun restores everything, times nothing and reports the same search time
    again = transfer_tune(network, target, sources, progress=False, journal=Journal(path, target))
    assert outcomes(again) == outcomes(first)
    assert len(path.read_text().splitlines()) == 2
    assert again.timings_s["measure"] == pytest.approx(first.timings_s["measure"], abs=0.5)

    # stopped while writing: the chunk cut short is dropped and timed again, nothing else is
    kept = dict(list(chunk["measured"].items())[:2])
    cut = json.dumps({"seconds": chunk["seconds"], "measured": kept})
    path.write_text(json.dumps(header) + "\n" + cut + "\n" + '{"seconds": 1.0, "meas')
    resumed = transfer_tune(network, target, sources, progress=False, journal=Journal(path, target))
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == 3 and len(lines[2]["measured"]) == 1  # only the missing candidate
    assert [m.ok for _, ms in outcomes(resumed) for m in ms] == [True, True]

    # a run over fewer sources beside it (the paper's pairs) reads it and times nothing
    fewer = load_sources({"tinyconv": work_dir}, target, top_n=1)
    paper = Journal(tmp_path / "paper" / "journal.jsonl", target, beside=[path])
    subset = transfer_tune(network, target, fewer, progress=False, journal=paper)
    assert outcomes(subset) == [(u, ms[:1]) for u, ms in outcomes(resumed)]
    assert not paper.path.exists() and path.read_text().count("\n") == 3


class CtrlCAfterFirstChunk(Journal):
    """A journal whose user presses Ctrl-C once its first chunk is written."""

    def append(self, jobs, seconds):
        first = not self.path.exists()
        super().append(jobs, seconds)
        if first:
            signal.raise_signal(signal.SIGINT)


def test_a_ctrl_c_stops_after_the_chunk_in_flight_and_a_rerun_continues(
    conv_log, target, tmp_path, monkeypatch, interactive_ctrl_c
):
    work_dir, _ = conv_log
    network = conv_net(channels=16, size=8, out_channels=32)
    sources = load_sources({"tinyconv": work_dir}, target, top_n=2)
    path = tmp_path / "journal.jsonl"
    monkeypatch.setattr(timing, "CHUNK", 1)  # three chunks: untuned + 2

    with pytest.raises(KeyboardInterrupt), ctrl_c_stops_gently():
        transfer_tune(
            network, target, sources, progress=False, journal=CtrlCAfterFirstChunk(path, target)
        )
    assert len(path.read_text().splitlines()) == 2  # the header and the chunk in flight

    resumed = transfer_tune(network, target, sources, progress=False, journal=Journal(path, target))
    assert len(path.read_text().splitlines()) == 4  # only the two chunks not measured
    assert [m.ok for _, ms in outcomes(resumed) for m in ms] == [True, True]


def test_a_journal_from_another_target_or_damaged_inside_is_refused_by_name(
    conv_log, target, tmp_path
):
    work_dir, _ = conv_log
    network = conv_net(channels=16, size=8, out_channels=32)
    sources = load_sources({"tinyconv": work_dir}, target, top_n=1)
    path = tmp_path / "journal.jsonl"
    path.write_text(json.dumps({"target": "llvm -mcpu=cortex-a72", "tvm": tvm.__version__}) + "\n")
    with pytest.raises(InputError, match="journal.jsonl.*made for"):
        transfer_tune(network, target, sources, progress=False, journal=Journal(path, target))
    header = {"target": str(target), "tvm": tvm.__version__}
    chunk = {"seconds": 1.0, "measured": {}}
    path.write_text("\n".join(json.dumps(x) for x in (header, "garbage", chunk)) + "\n")
    with pytest.raises(InputError, match="journal.jsonl:2: not a measured chunk"):
        transfer_tune(network, target, sources, progress=False, journal=Journal(path, target))
