"""Candidate features: deterministic, of the documented length, no measurement needed."""

import numpy as np
import pytest
from tiny import conv_net, matmul_net

import recommender.learn.features as features
from recommender.logs.sources import load_sources
from recommender.tasks.extract import extract_tasks
from recommender.transfer.apply import Level, apply_trace


@pytest.fixture(scope="module")
def applied(conv_log, target):
    work_dir, _ = conv_log
    sources = load_sources({"tinyconv": work_dir}, target, top_n=3)
    [task] = extract_tasks(conv_net(channels=16, size=8, out_channels=32), target)
    return task, [(s, apply_trace(s.trace, task.mod, target), Level.EXACT) for s in sources]


def test_features_are_deterministic_and_documented(applied, target):
    task, candidates = applied
    first = features.featurize(task, candidates, target)
    again = features.featurize(task, candidates, target)
    assert first.shape == (3, len(features.FEATURE_NAMES))
    np.testing.assert_array_equal(first, again)
    assert np.isfinite(first).all()
    for name in features.FEATURE_NAMES:  # every field is described in the module docstring
        stem = name.rstrip("0123456789").rstrip("_")
        assert stem in features.__doc__, name


def test_pair_features_see_the_shape_change(applied, target):
    task, candidates = applied
    row = dict(zip(features.FEATURE_NAMES, features.featurize(task, candidates[:1], target)[0]))
    assert row["p_same_workload"] == 0.0
    # 16->32 channels at 8x8 does twice the work of 8->8 at 16x16
    assert row["p_log_flops_ratio"] == pytest.approx(1.0, abs=0.01)
    assert row["w_reduction_loops"] == 3.0  # channels, kernel height, kernel width


def test_failed_applications_are_not_featurised(applied, target):
    task, candidates = applied
    [matmul] = extract_tasks(matmul_net(), target)
    source = candidates[0][0]
    failed = apply_trace(source.trace, matmul.mod, target)
    with pytest.raises(ValueError, match="successfully applied candidates only"):
        features.featurize(matmul, [(source, failed, Level.EXACT)], target)


def test_the_screen_sees_what_featurize_sees_before_applying(applied, target):
    task, candidates = applied
    full = features.featurize(task, candidates, target, family_of={}, target_family="")
    screen = features.screen_matrix(task, [(s, level) for s, _, level in candidates])
    np.testing.assert_allclose(screen[:, features.SCREEN_COLUMNS], full[:, features.SCREEN_COLUMNS])
    others = np.setdiff1d(np.arange(len(features.FEATURE_NAMES)), features.SCREEN_COLUMNS)
    assert not screen[:, others].any()
    named = {features.FEATURE_NAMES[i] for i in features.SCREEN_COLUMNS}
    assert "s_log_gflops" in named and "p_log_extent_ratio_0" in named and "l_anchor" in named
    assert not any(n.startswith("t_") or "repaired" in n for n in named)
