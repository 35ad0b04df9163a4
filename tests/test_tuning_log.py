"""A tuning log is TVM's JSON database plus provenance and timestamps; bad files are named."""

import json
import shutil

import pytest
import tvm
from tiny import conv_net
from tvm.s_tir import meta_schedule as ms

from recommender.core.configuration import Configuration
from recommender.core.errors import InputError
from recommender.core.targets import parse_target
from recommender.logs.collect import complete_log
from recommender.logs.tuning_log import TuningLog
from recommender.tasks.extract import extract_tasks


@pytest.fixture
def log_copy(conv_log, tmp_path):
    work_dir, _ = conv_log
    copy = tmp_path / "copy"
    shutil.copytree(work_dir, copy)
    return copy


def test_tvm_json_database_reads_the_log(conv_log, target):
    work_dir, summary = conv_log
    database = ms.database.JSONDatabase(work_dir=str(work_dir))
    records = database.get_all_tuning_records()
    assert len(records) == summary.trials_this_run == 8
    task = extract_tasks(conv_net(), target)[0]
    best = database.query_tuning_record(task.mod, target, task.name)
    assert best is not None
    assert min(float(s) for s in best.run_secs) > 0


def test_every_record_has_a_timestamp_in_order(conv_log):
    work_dir, summary = conv_log
    stamps = TuningLog.open(work_dir).stamps()
    assert len(stamps) == TuningLog(work_dir).record_count()
    elapsed = [s.elapsed_s for s in stamps]
    assert elapsed == sorted(elapsed) and elapsed[0] > 0
    assert summary.best_s["fused_conv2d_relu"] == min(s.run_s for s in stamps if s.run_s)


def test_a_search_that_stopped_early_on_its_own_is_not_resumed(log_copy):
    log = TuningLog(log_copy)  # 8 records of a session that aimed at 8
    assert log.trials_left(8) == 0
    assert log.trials_left(12) == 4  # a larger budget goes on
    provenance = log.provenance()
    provenance["sessions"][-1]["budget_trials"] = 12  # as if MetaSchedule had stopped at 8 of 12
    log.write_provenance(provenance)
    assert log.search_ended(12) and not log.search_ended(16)
    assert log.trials_left(12) == 0
    assert log.trials_left(16) == 8


def test_a_log_is_a_reference_once_its_budget_is_spent(log_copy, target):
    assert complete_log(log_copy, target, Configuration()).record_count() == 8
    log = TuningLog(log_copy)
    provenance = log.provenance()
    provenance["budget"]["trials_total"] = 16  # as if stopped half way
    log.write_provenance(provenance)
    assert complete_log(log_copy, target, Configuration()) is None
    assert complete_log(log_copy / "never tuned", target, Configuration()) is None
    with pytest.raises(InputError, match="NCHW16c"):  # prepared another way: not comparable
        complete_log(log_copy, target, Configuration("NCHW16c"))


def test_half_written_last_line_is_moved_aside_on_resume(log_copy, target):
    records = log_copy / "database_tuning_record.json"
    whole = records.read_bytes()
    records.write_bytes(whole + b'[0,[[["GetSBlock"')  # a write cut by a kill
    with pytest.raises(InputError, match=r"database_tuning_record.json:9: corrupt JSON line"):
        TuningLog.open(log_copy)
    TuningLog.create_or_resume(log_copy, target=target, network="conv8x16", budget={})
    assert records.read_bytes() == whole
    assert (log_copy / "database_tuning_record.json.torn").exists()


def test_corrupt_line_in_the_middle_names_file_and_line(log_copy):
    records = log_copy / "database_tuning_record.json"
    lines = records.read_text().splitlines(keepends=True)
    lines[2] = lines[2][:40] + "\n"
    records.write_text("".join(lines))
    with pytest.raises(InputError, match=r"database_tuning_record.json:3: corrupt JSON line"):
        TuningLog.open(log_copy)


def test_record_whose_workload_is_missing_is_named(log_copy):
    records = log_copy / "database_tuning_record.json"
    rows = [json.loads(line) for line in records.read_text().splitlines()]
    rows[4][0] = 7
    records.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError, match=r":5: record names workload 7, but .* holds 1"):
        TuningLog.open(log_copy)


def test_log_for_another_target_or_tvm_version_is_refused(log_copy, target):
    other = parse_target("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72 -num-cores=4")
    with pytest.raises(InputError, match="provenance.json: written for target .*aarch64"):
        TuningLog.create_or_resume(log_copy, target=other, network="conv8x16", budget={})
    provenance = json.loads((log_copy / "provenance.json").read_text())
    provenance["tvm"] = "0.19.0"
    (log_copy / "provenance.json").write_text(json.dumps(provenance))
    before = (log_copy / "database_tuning_record.json").read_bytes()
    with pytest.raises(InputError, match=f"TVM 0.19.0, this is TVM {tvm.__version__}"):
        TuningLog.create_or_resume(log_copy, target=target, network="conv8x16", budget={})
    assert (log_copy / "database_tuning_record.json").read_bytes() == before


def retarget(target, **attrs):
    return parse_target(json.dumps({**json.loads(str(target)), **attrs}))


def test_another_core_count_is_refused_for_tuning_but_read_as_a_reference(log_copy, target):
    more_cores = retarget(target, **{"num-cores": int(target.attrs["num-cores"]) + 1})
    with pytest.raises(InputError, match="written for target"):
        TuningLog.create_or_resume(log_copy, target=more_cores, network="conv8x16", budget={})
    assert TuningLog.open(log_copy, target=more_cores, other_cores=True).record_count() > 0


def test_another_cpu_of_the_architecture_is_read_as_sources_only(log_copy, target):
    other_cpu = retarget(target, mcpu="skylake" if target.attrs["mcpu"] != "skylake" else "znver3")
    with pytest.raises(InputError, match="written for target"):
        TuningLog.open(log_copy, target=other_cpu, other_cores=True)
    assert TuningLog.open(log_copy, target=other_cpu, other_cpu=True).record_count() > 0
    board = parse_target("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72 -num-cores=4")
    with pytest.raises(InputError, match="written for target .*, expected .*aarch64"):
        TuningLog.open(log_copy, target=board, other_cpu=True)


def test_records_without_provenance_are_not_mixed_into(tmp_path, target):
    (tmp_path / "database_tuning_record.json").write_text("")
    with pytest.raises(InputError, match="no provenance.json; refusing to mix runs"):
        TuningLog.create_or_resume(tmp_path, target=target, network="x", budget={})


def test_a_log_shipped_gzipped_opens_as_the_plain_one(log_copy):
    assert (log_copy / "database_tuning_record.json.gz").exists()  # collect packs when it stops
    records = (log_copy / "database_tuning_record.json").read_bytes()
    for plain in ("database_tuning_record.json", "database_workload.json", "timestamps.jsonl"):
        (log_copy / plain).unlink()
    log = TuningLog.open(log_copy)
    assert (log_copy / "database_tuning_record.json").read_bytes() == records
    assert len(log.stamps()) == log.record_count() == 8
    (log_copy / "database_workload.json").unlink()
    (log_copy / "database_workload.json.gz").write_bytes(b"\x1f\x8b not gzip")
    with pytest.raises(InputError, match=r"database_workload.json.gz: corrupt packed log"):
        TuningLog.open(log_copy)


def test_a_plain_log_older_than_its_packed_copy_is_brought_up_to_date(log_copy):
    plain = log_copy / "database_tuning_record.json"
    records = plain.read_bytes()
    plain.write_bytes(records[: len(records) // 2])  # a pulled log that grew since
    TuningLog.open(log_copy, validate=False)
    assert plain.read_bytes() == records
    plain.write_bytes(records + b"\n")  # grown here beyond the packed copy: left alone
    TuningLog.open(log_copy, validate=False)
    assert plain.read_bytes() == records + b"\n"
