"""Targets: this CPU by default, any llvm target by text or JSON, a device behind a tracker."""

import os
import subprocess
import sys
import tarfile

import pytest
import tvm
from tiny import two_conv_net

from recommender.core.errors import InputError
from recommender.core.targets import RemoteDevice, is_host_compatible, parse_target, target_key
from recommender.evaluate import endtoend
from recommender.logs.sources import load_sources
from recommender.tasks.extract import extract_tasks, prepare
from recommender.transfer.candidate import apply_candidates
from recommender.transfer.database import write_records

AARCH64_MACHINE = 183  # ELF e_machine of AArch64


def test_default_target_is_this_cpu_with_its_cores():
    target = parse_target(None)
    key = target_key(target)
    assert key["mcpu"] == tvm.target.codegen.llvm_get_system_cpu()
    assert key["num-cores"] >= 1
    assert is_host_compatible(target)


THREADS_IN_FORCE = """
import tvm, tvm_ffi
from recommender.core.targets import parse_target, use_target_threads
use_target_threads(parse_target("llvm -num-cores=2"))
print(tvm_ffi.get_global_func("runtime.NumThreads")())
"""


def test_kernels_run_on_the_targets_cores_not_tvms_halved_default():
    # TVM alone would use half the hardware threads on x86: one on a 2-vCPU machine
    env = {k: v for k, v in os.environ.items() if k not in ("TVM_NUM_THREADS", "OMP_NUM_THREADS")}
    run = subprocess.run([sys.executable, "-c", THREADS_IN_FORCE], env=env, capture_output=True)
    assert run.stdout.split() == [b"2"], run.stderr
    env["TVM_NUM_THREADS"] = "1"  # a user's own setting wins
    run = subprocess.run([sys.executable, "-c", THREADS_IN_FORCE], env=env, capture_output=True)
    assert run.stdout.split() == [b"1"], run.stderr


def test_cli_style_target_text_becomes_a_target():
    target = parse_target("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72 -num-cores=4")
    assert target_key(target) == {
        "kind": "llvm",
        "mtriple": "aarch64-linux-gnu",
        "mcpu": "cortex-a72",
        "num-cores": 4,
    }
    assert not is_host_compatible(target)


def test_json_target_and_core_override():
    target = parse_target('{"kind": "llvm", "mcpu": "znver3"}', num_cores=1)
    assert target_key(target)["num-cores"] == 1


@pytest.mark.parametrize(
    "spec, message",
    [("cuda", "kind must be 'llvm'"), ("{not json", "not valid JSON"), ("llvm mcpu", "-key=value")],
)
def test_bad_targets_are_refused_with_a_reason(spec, message):
    with pytest.raises(InputError, match=message):
        parse_target(spec)


def test_rpc_spec():
    assert RemoteDevice.parse("127.0.0.1:9190:pi4") == RemoteDevice("127.0.0.1", 9190, "pi4")
    with pytest.raises(InputError, match="HOST:PORT:KEY"):
        RemoteDevice.parse("127.0.0.1:pi4")


def test_logs_tuned_on_another_cpu_of_the_architecture_are_sources_with_a_warning(
    conv_log, target, caplog
):
    other = "skylake" if target.attrs["mcpu"] != "skylake" else "znver3"
    here = parse_target(f"llvm -mcpu={other} -num-cores=2")
    sources = load_sources({"tinyconv": conv_log[0]}, here, top_n=1)
    assert sources
    assert f"tuned for another CPU than {other} ({target.attrs['mcpu']}: tinyconv)" in caplog.text
    board = parse_target("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72 -num-cores=4")
    with pytest.raises(InputError, match="provenance.json: written for target"):
        load_sources({"tinyconv": conv_log[0]}, board)


def elf_machines(archive) -> set[int]:
    with tarfile.open(archive) as tar:
        objects = [tar.extractfile(m).read() for m in tar.getmembers() if m.name.endswith(".o")]
    assert objects and all(o[:4] == b"\x7fELF" for o in objects)
    return {int.from_bytes(o[18:20], "little") for o in objects}


def test_schedules_transferred_to_an_aarch64_board_cross_compile_here(conv_log, target, tmp_path):
    board = parse_target("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72 -num-cores=4")
    network = two_conv_net()
    sources = load_sources({"tinyconv": conv_log[0]}, target, top_n=1)  # tuned on this x86 CPU
    kernels = apply_candidates(extract_tasks(network, board), sources, board)
    picks = [(k.task, c, 1e-3) for k in kernels for c in k.candidates[:1] if c.applied.ok]
    assert len(picks) == 2  # both convolutions take the x86 schedule, postprocessed for aarch64
    database = write_records(picks, board, tmp_path / "db")
    prepared = prepare(network.mod, board)
    for name, db in (("untuned", None), ("tuned", database)):
        endtoend.build(prepared, board, db).export_library(str(tmp_path / f"{name}.tar"))
        assert elf_machines(tmp_path / f"{name}.tar") == {AARCH64_MACHINE}
    # the transferred schedules were compiled in: the tuned objects differ from the untuned
    assert (tmp_path / "tuned.tar").read_bytes() != (tmp_path / "untuned.tar").read_bytes()
