"""Task extraction: kept in the cache directory and read back equal to a fresh extraction, and
the same kernels as TVM's own lowering with constants folded by value."""

import json

import pytest
import tvm_ffi
from tiny import two_conv_net
from tvm import relax
from tvm.s_tir import meta_schedule as ms

from recommender.networks.zoo import load_zoo_network
from recommender.tasks.extract import extract_tasks, prepare, structural_key


def test_extracted_tasks_are_cached_and_read_back_equal(target, tmp_path, monkeypatch):
    monkeypatch.setenv("RECOMMENDER_CACHE", str(tmp_path))
    network = two_conv_net()
    extract_tasks(network, target)
    [entry] = (tmp_path / "tasks").glob("*.json")
    written = entry.stat().st_mtime_ns

    cached = extract_tasks(network, target)
    fresh = extract_tasks(network, target, cache=False)
    assert entry.stat().st_mtime_ns == written  # read, not written again
    assert [(t.name, t.weight, t.kernel_class) for t in cached] == [
        (t.name, t.weight, t.kernel_class) for t in fresh
    ]
    assert all(tvm_ffi.structural_equal(c.mod, f.mod) for c, f in zip(cached, fresh))


def test_an_unreadable_cache_entry_is_extracted_again(target, tmp_path, monkeypatch):
    monkeypatch.setenv("RECOMMENDER_CACHE", str(tmp_path))
    names = [t.name for t in extract_tasks(two_conv_net(), target)]
    [entry] = (tmp_path / "tasks").glob("*.json")
    entry.write_text('[{"name": "truncated')
    assert [t.name for t in extract_tasks(two_conv_net(), target)] == names
    assert [e["name"] for e in json.loads(entry.read_text())] == names


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet18", "bert"])  # BN folded into weights; an attention mask
def test_folding_constants_by_shape_gives_the_kernels_folding_by_value_gives(name, target):
    network = load_zoo_network(name)
    with target:
        reference = relax.get_pipeline("zero")(prepare(network.mod, target))
    expected = ms.relax_integration.extract_tasks(reference, target)
    tasks = extract_tasks(network, target, cache=False)
    assert sorted((t.structural_key, t.weight) for t in tasks) == sorted(
        (structural_key(t.dispatched[0]), int(t.weight)) for t in expected
    )
