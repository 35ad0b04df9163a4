"""Shared fixtures: the host target, tiny networks saved as Relax JSON, one small tuning log."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import tvm

sys.path.insert(0, str(Path(__file__).parent))

from tiny import conv_net  # noqa: E402

from recommender.collect import collect  # noqa: E402
from recommender.targets import host_target  # noqa: E402


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
