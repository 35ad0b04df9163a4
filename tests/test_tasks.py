"""Task extraction: kept in the cache directory and read back equal to a fresh extraction."""

import json

import tvm_ffi
from tiny import two_conv_net

from recommender.tasks.extract import extract_tasks


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
