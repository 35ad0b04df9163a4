"""The transfer-benefit dataset: measured pairs, stored per kernel, resumable, schema-checked."""

import dataclasses
import json
import shutil

import numpy as np
import pytest
from tiny import conv_net

from recommender.core.errors import InputError
from recommender.core.targets import host_target
from recommender.learn.dataset import build_dataset, training_targets
from recommender.learn.features import FEATURE_NAMES, SCHEMA_VERSION
from recommender.learn.kernel_data import STATUSES, KernelData
from recommender.logs.sources import load_sources
from recommender.transfer.exhaustive import transfer_tune
from recommender.transfer.journal import JOURNAL, Journal


@pytest.fixture(scope="module")
def dataset(conv_log, target, tmp_path_factory):
    work_dir, _ = conv_log
    directory = tmp_path_factory.mktemp("dataset")
    network = conv_net(channels=16, size=8, out_channels=32)
    paths = build_dataset(
        {"wide": network},
        {"tinyconv": work_dir},
        directory,
        target,
        top_n=3,
        progress=False,
        training_targets=["wide"],  # no log of its own: a target only
    )
    return directory, paths


def test_every_same_class_record_is_measured_with_the_untuned_kernel(dataset):
    _, [path] = dataset
    data = KernelData.load(path)
    assert data.network == "wide" and data.kernel_class.startswith("pad+conv2d_nchw+compute@")
    assert data.features.shape == (3, len(FEATURE_NAMES))
    assert len(data.sources) == 3 and all(s.startswith("tinyconv/") for s in data.sources)
    assert [STATUSES[s] for s in data.status] == ["ok"] * 3
    assert np.all(data.run_s > 0) and data.untuned_s > 0
    assert data.best_s == min(data.run_s.min(), data.untuned_s)


def test_a_training_target_is_named_in_the_provenance(dataset):
    directory, _ = dataset
    assert training_targets(directory) == {"wide"}


def test_the_evaluations_exhaustive_run_reads_the_datasets_timings(
    dataset, conv_log, target, tmp_path
):
    directory, [path] = dataset
    measured = directory / "wide" / JOURNAL  # every chunk the build timed, with its seconds
    journal = Journal(tmp_path / JOURNAL, target, beside=[measured])
    sources = load_sources({"tinyconv": conv_log[0]}, target, top_n=3)
    network = conv_net(channels=16, size=8, out_channels=32)
    run = transfer_tune(network, target, sources, progress=False, journal=journal)

    assert not journal.path.exists()  # nothing left to time
    [kernel] = [k for k in run.kernels if k.candidates]
    assert sorted(c.run_s for c in kernel.candidates) == sorted(KernelData.load(path).run_s)
    assert run.timings_s["measure"] > 0  # what the timing cost when the dataset did it
    assert not Journal(tmp_path / "edge", host_target(num_cores=1)).fits(measured)


def test_each_source_log_gets_its_file_and_the_kernel_is_timed_untuned_once(
    conv_log, target, tmp_path
):
    twin = tmp_path / "twin"  # the same log under another network's name: a second source
    shutil.copytree(conv_log[0], twin)
    paths = build_dataset(
        {"wide": conv_net(channels=16, size=8, out_channels=32)},
        {"tinyconv": conv_log[0], "twin": twin},
        tmp_path / "dataset",
        target,
        top_n=1,
        progress=False,
        training_targets=["wide"],
    )
    mine, twins = (KernelData.load(path) for path in sorted(paths))
    assert [s.split("/")[0] for s in mine.sources + twins.sources] == ["tinyconv", "twin"]
    assert mine.untuned_s == twins.untuned_s  # one measurement for both files


def test_a_kernel_another_network_shares_is_featurised_for_it_but_not_timed_again(
    dataset, conv_log, target, tmp_path
):
    directory, [path] = dataset
    copy = tmp_path / "copy"
    shutil.copytree(directory, copy)
    [theirs] = build_dataset(
        {"again": conv_net(channels=16, size=8, out_channels=32)},  # wide's kernel, renamed
        {"tinyconv": conv_log[0]},
        copy,
        target,
        top_n=3,
        progress=False,
        training_targets=["again"],
    )
    mine, again = KernelData.load(path), KernelData.load(theirs)
    assert not (copy / "again" / JOURNAL).exists()  # nothing was timed
    assert again.network == "again" and sorted(again.records) == sorted(mine.records)
    assert dict(zip(again.records, again.run_s)) == dict(zip(mine.records, mine.run_s))
    assert again.untuned_s == mine.untuned_s
    assert np.array_equal(
        again.features[np.argsort(again.records)], mine.features[np.argsort(mine.records)]
    )


def test_a_rebuild_skips_what_is_on_disk(dataset, conv_log, target):
    directory, [path] = dataset
    before = path.stat().st_mtime_ns
    again = build_dataset(
        {"wide": conv_net(channels=16, size=8, out_channels=32)},
        {"tinyconv": conv_log[0]},
        directory,
        target,
        progress=False,
    )
    assert again == [path] and path.stat().st_mtime_ns == before


def test_a_rebuild_measures_only_what_a_file_lacks_and_drops_records_since_outrun(
    dataset, conv_log, target, tmp_path
):
    directory, [path] = dataset
    copy = tmp_path / "copy"
    shutil.copytree(directory, copy)
    stale = copy / path.relative_to(directory)
    data = KernelData.load(stale)
    assert len(set(data.records)) == 3
    outrun = ["a record since outrun by a resumed collection", *data.records[1:]]
    dataclasses.replace(data, records=outrun).save(stale)

    network = {"wide": conv_net(channels=16, size=8, out_channels=32)}
    build_dataset(network, {"tinyconv": conv_log[0]}, copy, target, top_n=3, progress=False)
    again = KernelData.load(stale)
    assert sorted(again.records) == sorted(data.records)
    kept = {r: t for r, t in zip(data.records[1:], data.run_s[1:])}
    assert {r: t for r, t in zip(again.records, again.run_s) if r in kept} == kept


def test_another_schema_or_target_is_refused(dataset, tmp_path, target):
    directory, [path] = dataset
    data = KernelData.load(path)
    stale = tmp_path / "stale.npz"
    np.savez(
        stale,
        features=data.features,
        run_s=data.run_s,
        status=data.status,
        meta=json.dumps({"schema": 0}),
    )
    with pytest.raises(InputError, match=f"feature schema 0, expected {SCHEMA_VERSION}"):
        KernelData.load(stale)
    copy = tmp_path / "copy"
    shutil.copytree(directory, copy)
    provenance = json.loads((copy / "provenance.json").read_text())
    provenance["target_key"]["mcpu"] = "cortex-a72"
    (copy / "provenance.json").write_text(json.dumps(provenance))
    with pytest.raises(InputError, match="provenance.json: built with target_key="):
        build_dataset({}, {}, copy, target, progress=False)
