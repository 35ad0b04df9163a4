"""Shared fixtures: the host target, tiny networks saved as Relax JSON, a small tuning log, a
tiny transfer-benefit dataset and cost model made from it, and a loopback RPC device."""

from __future__ import annotations

import os
import signal
import sys
import tempfile
from pathlib import Path

import pytest
import tvm

sys.path.insert(0, str(Path(__file__).parent))
os.environ["RECOMMENDER_CACHE"] = tempfile.mkdtemp(prefix="recommender-cache-")  # not ~/.cache
# an empty corpus of the paper's configuration: the tests neither read nor write the shipped
# corpora, and do not change with the one this CPU has (a blocked corpus makes other kernels)
os.environ["RECOMMENDER_HOME"] = tempfile.mkdtemp(prefix="recommender-corpus-")

from tiny import conv_net, conv_shapes  # noqa: E402

from recommender.backend.loopback import loopback_device
from recommender.core.targets import host_target
from recommender.learn import model_files
from recommender.learn.dataset import build_dataset, load_dataset
from recommender.learn.training import train, training_set
from recommender.logs.collect import collect


@pytest.fixture
def interactive_ctrl_c():
    """SIGINT raises KeyboardInterrupt, as in a terminal, for one test: the suite may run in
    the background, where a shell without job control starts it with SIGINT ignored."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture(scope="session")
def target() -> tvm.target.Target:
    return host_target()


@pytest.fixture(scope="session")
def conv_json(tmp_path_factory) -> Path:
    """The tiny conv network as a Relax JSON file, as a user would bring one."""
    path = tmp_path_factory.mktemp("models") / "tinyconv.json"
    path.write_text(tvm.ir.save_json(conv_net().mod))
    return path


@pytest.fixture(scope="session")
def conv_log(tmp_path_factory, target):
    """A finished 8-trial tuning log of the tiny conv (about 25 s)."""
    work_dir = tmp_path_factory.mktemp("logs") / "conv"
    summary = collect(
        conv_net(),
        target,
        work_dir,
        trials_per_task=8,
        trials_per_iter=4,
        population=16,
        progress=False,
    )
    return work_dir, summary


@pytest.fixture(scope="session")
def tiny_dataset(conv_log, target, tmp_path_factory) -> Path:
    """Every record of the tiny log applied to six other conv shapes and timed (about 1 min)."""
    directory = tmp_path_factory.mktemp("transfer")
    networks = {net.name: net for net in conv_shapes()}
    build_dataset(networks, {"tinyconv": conv_log[0]}, directory, target, top_n=8, progress=False)
    return directory


@pytest.fixture(scope="session")
def tiny_model(tiny_dataset, target, tmp_path_factory) -> Path:
    """A cost model trained on the tiny dataset, saved as the CLI saves one."""
    directory = tmp_path_factory.mktemp("model")
    data = training_set(load_dataset(tiny_dataset))
    model = train(data, n_estimators=60, max_depth=4)
    model_files.save(model, directory, target=target, data=data.data_hash())
    return directory


@pytest.fixture(scope="session")
def device():
    """A tracker and one server registered under the key 'tiny', on 127.0.0.1 only."""
    with loopback_device("tiny") as device:
        yield device
