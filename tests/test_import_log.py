"""A MetaSchedule database tuned elsewhere, imported into a corpus as a source log."""

import json
import shutil

import pytest
from tiny import conv_shapes

from recommender.cli.main import main
from recommender.logs.sources import load_sources
from recommender.logs.tuning_log import RECORDS, WORKLOADS, TuningLog
from recommender.tasks.extract import extract_tasks
from recommender.transfer.candidate import SourceIndex


@pytest.fixture
def ms_work_dir(conv_log, tmp_path):
    """The tiny conv's log as MetaSchedule alone writes it: the two database files only."""
    work_dir = tmp_path / "my_tuning"
    work_dir.mkdir()
    for name in (WORKLOADS, RECORDS):
        shutil.copyfile(conv_log[0] / name, work_dir / name)
    return work_dir


def import_log(work_dir, corpus, *options):
    return main(["import-log", str(work_dir), "--corpus", str(corpus), "--json", *options])


def records(work_dir):
    return [json.loads(line) for line in (work_dir / RECORDS).read_text().splitlines()]


def write_records(work_dir, rows):
    (work_dir / RECORDS).write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_an_imported_database_is_a_source_for_kernels_of_its_class(
    ms_work_dir, tmp_path, target, capsys
):
    corpus = tmp_path / "corpus"
    assert import_log(ms_work_dir, corpus, "--name", "mine") == 0
    summary = json.loads(capsys.readouterr().out)
    log = corpus / "datasets" / "logs" / "mine"
    assert summary["log"] == str(log) and summary["records"] == len(records(ms_work_dir))
    assert summary["dropped_records"] == 0 and summary["configuration"]["layout"] == "native"
    provenance = TuningLog.open(log, target=target).provenance()  # a corpus log, checked
    assert provenance["imported"]["from"] == str(ms_work_dir) and provenance["sessions"] == []
    sources = load_sources({"mine": log}, target, top_n=3)
    other_shape = extract_tasks(conv_shapes()[0], target)[0]
    assert SourceIndex(sources).pool(other_shape)  # its records are candidates elsewhere
    assert import_log(ms_work_dir, corpus, "--name", "mine") == 2  # never overwritten
    assert "has a log of this name already" in capsys.readouterr().err


def test_records_tuned_for_another_target_than_given_are_refused(ms_work_dir, tmp_path, capsys):
    assert import_log(ms_work_dir, tmp_path / "c", "--target", "llvm -mcpu=cascadelake") == 2
    assert "not the --target given" in capsys.readouterr().err
    rows = records(ms_work_dir)
    rows[0][1][2] = {**rows[0][1][2], "mcpu": "cascadelake"}
    write_records(ms_work_dir, rows)
    assert import_log(ms_work_dir, tmp_path / "c") == 2
    assert "records of 2 targets; a log is one target's" in capsys.readouterr().err


def test_records_without_a_target_need_one(ms_work_dir, tmp_path, target, capsys):
    rows = records(ms_work_dir)
    write_records(ms_work_dir, [[i, [*r[:2], None, *r[3:]]] for i, r in rows])
    assert import_log(ms_work_dir, tmp_path / "c") == 2
    assert "the records name no target: give the one tuned for (--target)" in (
        capsys.readouterr().err
    )
    assert import_log(ms_work_dir, tmp_path / "c", "--target", str(target)) == 0


def test_unparseable_traces_are_dropped_and_a_log_of_none_refused(ms_work_dir, tmp_path, capsys):
    rows = records(ms_work_dir)
    broken = [[i, [[[["NoSuchInstruction", [], [], []]], []], *r[1:]]] for i, r in rows]
    write_records(ms_work_dir, [rows[0], *broken[1:]])
    assert import_log(ms_work_dir, tmp_path / "c") == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["records"] == 1 and summary["dropped_records"] == len(rows) - 1
    write_records(ms_work_dir, broken)
    assert import_log(ms_work_dir, tmp_path / "c", "--name", "other") == 2
    assert f"none of the {len(rows)} records parses with TVM" in capsys.readouterr().err


def test_bad_files_are_named(ms_work_dir, tmp_path, capsys):
    (ms_work_dir / WORKLOADS).write_text('["1", "not a module"]\n')
    assert import_log(ms_work_dir, tmp_path / "c") == 2
    err = capsys.readouterr().err
    assert f"{WORKLOADS}:1: workload does not parse with TVM" in err
    (ms_work_dir / RECORDS).unlink()
    assert import_log(ms_work_dir, tmp_path / "c") == 2
    assert f"{RECORDS}: not a MetaSchedule work dir: file missing" in capsys.readouterr().err


def test_a_configuration_the_workloads_contradict_is_refused(ms_work_dir, tmp_path, capsys):
    """The tiny conv (8 -> 8 channels) is unblocked: a corpus blocking by 4 would have blocked
    it, so the log is not of that configuration."""
    assert import_log(ms_work_dir, tmp_path / "c", "--layout", "NCHW4c") == 2
    err = capsys.readouterr().err
    assert "conv2d_nchw" in err and "is unblocked" in err and "--layout native" in err


def test_a_log_name_is_checked_where_it_is_parsed(ms_work_dir, tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["import-log", str(ms_work_dir), "--name", "all"])
    assert "not all or paper. Got 'all' instead." in capsys.readouterr().err
    assert import_log(ms_work_dir, tmp_path / "c", "--name", "resnet18") == 2
    assert "'resnet18' is a zoo network" in capsys.readouterr().err
