"""Targets: this CPU by default, any llvm target by text or JSON, a device behind a tracker."""

import pytest
import tvm

from recommender.errors import InputError
from recommender.targets import RemoteDevice, is_host_compatible, parse_target, target_key


def test_default_target_is_this_cpu_with_its_cores():
    target = parse_target(None)
    key = target_key(target)
    assert key["mcpu"] == tvm.target.codegen.llvm_get_system_cpu()
    assert key["num-cores"] >= 1
    assert is_host_compatible(target)


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
