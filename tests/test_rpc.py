"""Measurement through TVM's RPC tracker: a loopback tracker and server, stopped by PID."""

from tiny import conv_net

from recommender.logs.collect import collect
from recommender.logs.tuning_log import TuningLog


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
