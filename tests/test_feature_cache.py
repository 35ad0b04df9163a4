"""Ranking's cost: a second ranking of the same kernels applies nothing and ranks the same (the
feature cache), and the first stage keeps the candidates that get applied at all."""

import numpy as np
import pytest
from tiny import two_conv_net

from recommender.learn import model_files
from recommender.learn.feature_cache import FeatureCache
from recommender.logs.sources import load_sources
from recommender.recommend.ranking import rank_candidates
from recommender.transfer.exhaustive import extract


@pytest.fixture(scope="module")
def rank(conv_log, tiny_model, target):
    model = model_files.load(tiny_model, target=target)
    sources = load_sources({"tinyconv": conv_log[0]}, target, top_n=8)

    def rank(cache: FeatureCache | None, **options):
        _, kernels = extract(two_conv_net(), target, sources)
        ranked = rank_candidates(
            kernels, model, target, family_of={}, target_family="", cache=cache, **options
        )
        return kernels, ranked

    return rank


def order(ranked) -> list[list[str]]:
    return [[c.source.label for c in r.candidates] for r in ranked]


def test_a_second_ranking_reads_the_cache_and_applies_nothing(rank, tmp_path):
    _, uncached = rank(None)
    cache = FeatureCache(tmp_path)
    rank(cache)
    kernels, cached = rank(cache)
    assert not any("applied" in vars(c) for k in kernels for c in k.candidates)
    assert order(cached) == order(uncached)
    for a, b in zip(cached, uncached):
        np.testing.assert_allclose(a.scores, b.scores)
    # a candidate found in the cache is still applied when it is measured
    candidate = cached[0].candidates[0]
    assert candidate.applied.ok and "applied" in vars(candidate)


def test_a_corrupt_cache_file_is_recomputed_not_trusted(rank, tmp_path):
    _, uncached = rank(None)
    cache = FeatureCache(tmp_path)
    rank(cache)
    files = list(tmp_path.glob("*.npz"))
    assert files
    for path in files:
        path.write_bytes(b"not an archive")
    kernels, ranked = rank(cache)
    assert order(ranked) == order(uncached)
    assert all("applied" in vars(c) for k in kernels for c in k.candidates)


def test_the_first_stage_applies_only_the_candidates_it_keeps(rank):
    timings = {}
    kernels, ranked = rank(None, keep=2, timings=timings)
    assert set(timings) == {"screen", "rank"}
    for kernel, r in zip(kernels, ranked):
        applied = [c for c in kernel.candidates if "applied" in vars(c)]
        assert len(kernel.candidates) > 2 and len(applied) == 2
        assert {id(c) for c in r.candidates} <= {id(c) for c in applied}
    _, every = rank(None, keep=None)
    assert all(len(r.candidates) > 2 for r in every)


def test_kernels_applied_on_two_threads_rank_as_on_one(rank):
    _, one = rank(None, workers=1)
    _, two = rank(None, workers=2)
    assert order(two) == order(one)
    for a, b in zip(two, one):
        np.testing.assert_allclose(a.scores, b.scores)
        np.testing.assert_allclose(a.p_fail, b.p_fail)
