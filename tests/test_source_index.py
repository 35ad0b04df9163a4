"""A log's source schedules are read once into ``sources.json.gz`` beside it, and read again
when the log changes."""

import gzip
import logging
import shutil

import pytest

from recommender.core import paths
from recommender.logs.source_index import INDEX, log_hash
from recommender.logs.sources import load_sources
from recommender.logs.tuning_log import RECORDS


@pytest.fixture
def log_copy(conv_log, tmp_path):
    copy = tmp_path / "conv"
    shutil.copytree(conv_log[0], copy)
    (copy / INDEX).unlink(missing_ok=True)
    return copy


def _summary(sources):
    return [
        (s.id, s.kernel_class, s.descriptor, s.run_s, str(s.trace))
        for s in sorted(sources, key=lambda s: (s.workload_key, s.rank))
    ]


def test_the_index_gives_what_reading_the_log_gives(log_copy, target):
    read = load_sources({"conv": log_copy}, target, top_n=3)
    assert (log_copy / INDEX).exists()
    indexed = load_sources({"conv": log_copy}, target, top_n=3)
    assert _summary(indexed) == _summary(read)


def test_an_index_of_more_records_serves_fewer_and_a_deeper_request_reads_the_log(log_copy, target):
    every = load_sources({"conv": log_copy}, target, top_n=3)
    best = load_sources({"conv": log_copy}, target, top_n=1)
    assert {s.id for s in best} == {s.id for s in every if s.rank == 0}
    deeper = load_sources({"conv": log_copy}, target, top_n=6)
    assert len(deeper) > len(every)
    assert {s.id for s in every} <= {s.id for s in deeper}


def test_a_changed_log_is_read_again(log_copy, target):
    before = load_sources({"conv": log_copy}, target, top_n=8)
    records = log_copy / RECORDS
    (log_copy / f"{RECORDS}.gz").unlink(missing_ok=True)  # else the shipped copy is restored
    lines = records.read_text().splitlines(keepends=True)
    records.write_text("".join(lines[: len(lines) // 2]))  # as if tuned for half as long
    after = load_sources({"conv": log_copy}, target, top_n=8)
    assert len(after) < len(before)


def test_a_corrupt_index_is_rebuilt_with_a_warning(log_copy, target, caplog):
    expected = _summary(load_sources({"conv": log_copy}, target, top_n=2))
    (log_copy / INDEX).write_bytes(gzip.compress(b"{not json"))
    with caplog.at_level(logging.WARNING):
        rebuilt = load_sources({"conv": log_copy}, target, top_n=2)
    assert "unreadable source index" in caplog.text
    assert _summary(rebuilt) == expected
    assert _summary(load_sources({"conv": log_copy}, target, top_n=2)) == expected


def test_the_logs_hash_is_remembered_and_made_again_when_a_file_changes_at_the_same_size(log_copy):
    first = log_hash(log_copy)
    assert list((paths.cache_root() / "log_hashes").glob("*.json"))  # remembered
    records = log_copy / RECORDS
    text = records.read_text()
    records.write_text(text.replace("1", "2", 1))  # same size, other content
    assert log_hash(log_copy) != first
    records.write_text(text)
    assert log_hash(log_copy) == first
