"""Every bad option stops the command at once with one clear message: numbers where argparse
parses them, an unknown CPU where the target is parsed, a corrupt model where it is loaded."""

import json
import subprocess
import sys

import numpy as np
import pytest

from recommender.cli.main import _parser, main
from recommender.core.errors import InputError
from recommender.core.targets import RemoteDevice, host_target, llvm_cpus, parse_target
from recommender.learn import cost_models, model_files
from recommender.learn.features import FEATURE_NAMES

RECOMMEND = ["recommend", "resnet18", "--out", "out"]
COLLECT = ["collect", "resnet18"]
TASKS = ["tasks", "model.onnx"]
SHAPE = "must be NAME:DIMS with DIMS positive ints joined by 'x', e.g. image:1x3x224x224"
NON_NEGATIVE_INT = "must be an int in the range [0, inf)"
POSITIVE_INT = "must be an int in the range [1, inf)"
POSITIVE_FLOAT = "must be a float in the range (0, inf)"
LAYOUTS = (
    "'native' (as the network has it) or NCHW{n}c, convolutions blocked by n channels "
    "(NCHW16c: one AVX-512 register of fp32)"
)


@pytest.mark.parametrize(
    "argv, option, value, expected",
    [
        (RECOMMEND, "--top-k", "-1", f"{NON_NEGATIVE_INT}. Got -1 instead."),
        (RECOMMEND, "--top-k", "1.5", f"{NON_NEGATIVE_INT}. Got '1.5' instead."),
        (RECOMMEND, "--budget", "0", f"{POSITIVE_FLOAT}. Got 0 instead."),
        (RECOMMEND, "--budget", "-30", f"{POSITIVE_FLOAT}. Got -30 instead."),
        (RECOMMEND, "--budget", "nan", f"{POSITIVE_FLOAT}. Got nan instead."),
        (RECOMMEND, "--budget", "inf", f"{POSITIVE_FLOAT}. Got inf instead."),
        (RECOMMEND, "--budget", "1m", f"{POSITIVE_FLOAT}. Got '1m' instead."),
        (RECOMMEND, "--trials", "0", f"{POSITIVE_INT}. Got 0 instead."),
        (RECOMMEND, "--top-n", "0", f"{POSITIVE_INT}. Got 0 instead."),
        (RECOMMEND, "--top-n", "-1", f"{POSITIVE_INT}. Got -1 instead."),
        (RECOMMEND, "--then-tune", "0", f"{POSITIVE_INT}. Got 0 instead."),
        (COLLECT, "--trials-per-task", "0", f"{POSITIVE_INT}. Got 0 instead."),
        (COLLECT, "--minutes", "-5", f"{POSITIVE_FLOAT}. Got -5 instead."),
        (COLLECT, "--trials-per-iter", "0", f"{POSITIVE_INT}. Got 0 instead."),
        (COLLECT, "--population", "0", f"{POSITIVE_INT}. Got 0 instead."),
        (
            ["transfer-tune", "resnet18", "--out", "out"],
            "--top-n",
            "0",
            f"{POSITIVE_INT}. Got 0 instead.",
        ),
        (["dataset", "build"], "--top-n", "0", f"{POSITIVE_INT}. Got 0 instead."),
        (["evaluate"], "--grid", "0", f"{POSITIVE_INT}. Got 0 instead."),
        (TASKS, "--input-shape", "image", f"{SHAPE}. Got 'image' instead."),
        (TASKS, "--input-shape", "image:1x0x8", f"{SHAPE}. Got 'image:1x0x8' instead."),
        (TASKS, "--input-shape", ":1x3", f"{SHAPE}. Got ':1x3' instead."),
        (COLLECT, "--input-shape", "x:1,3", f"{SHAPE}. Got 'x:1,3' instead."),
        (TASKS, "--seq-len", "0", f"{POSITIVE_INT}. Got 0 instead."),
        (COLLECT, "--layout", "NHWC", f"unknown layout 'NHWC': {LAYOUTS}"),
        (COLLECT, "--layout", "NCHW1c", f"unknown layout 'NCHW1c': {LAYOUTS}"),
    ],
)
def test_a_bad_number_names_the_option_the_range_and_the_value(
    argv, option, value, expected, capsys
):
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, option, value])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.endswith(f"error: argument {option}: {expected}\n")


def test_good_numbers_parse_to_their_types():
    args = _parser().parse_args([*RECOMMEND, "--top-k", "0", "--top-n", "1", "--then-tune", "8"])
    assert (args.top_k, args.top_n, args.then_tune) == (0, 1, 8)
    args = _parser().parse_args([*RECOMMEND, "--budget", "0.5"])
    assert args.budget == 0.5 and args.top_k is None and args.then_tune == 0
    args = _parser().parse_args([*COLLECT, "--minutes", "1.5", "--population", "16"])
    assert (args.minutes, args.population, args.trials_per_task) == (1.5, 16, 64)


def test_input_shapes_parse_to_a_dict_and_an_input_named_twice_is_refused(capsys):
    args = _parser().parse_args(
        [*TASKS, "--input-shape", "image:1x3x224x224", "--input-shape", "input:0:1x8"]
    )
    assert args.input_shape == {"image": (1, 3, 224, 224), "input:0": (1, 8)}
    assert _parser().parse_args(TASKS).input_shape == {}
    with pytest.raises(SystemExit):
        _parser().parse_args([*TASKS, "--input-shape", "x:1x3", "--input-shape", "x:2x3"])
    assert "argument --input-shape: input 'x' is given twice" in capsys.readouterr().err


def test_the_parser_imports_no_heavy_module():
    code = (
        "import sys; from recommender.cli.main import _parser; _parser(); "
        "print(sorted({'tvm', 'xgboost', 'numpy'} & set(sys.modules)))"
    )
    assert (
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
        == "[]\n"
    )


def test_an_unknown_cpu_is_named_with_the_closest_and_how_to_list_them(capsys):
    assert main(["tasks", "resnet18", "--target", "llvm -mcpu=notacpu"]) == 2
    err = capsys.readouterr().err
    assert "--target -mcpu must be a CPU LLVM knows for " in err
    assert "Got 'notacpu' instead." in err
    assert "print(*llvm_cpus(" in err
    with pytest.raises(InputError, match=r"Got 'skylak' instead\. Closest: skylake"):
        parse_target('{"kind": "llvm", "mcpu": "skylak"}')


def test_a_board_target_is_checked_against_its_own_triple():
    board = parse_target("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72 -num-cores=4")
    assert board.attrs["mcpu"] == "cortex-a72" and int(board.attrs["num-cores"]) == 4
    assert "cortex-a72" in llvm_cpus("aarch64-linux-gnu")
    assert "skylake" not in llvm_cpus("aarch64-linux-gnu")
    with pytest.raises(InputError, match=r"for aarch64-linux-gnu\. Got 'skylake' instead"):
        parse_target("llvm -mtriple=aarch64-linux-gnu -mcpu=skylake")


def test_the_host_cpu_is_in_llvms_list():
    assert host_target().attrs["mcpu"] in llvm_cpus()


@pytest.mark.parametrize(
    "parse, message",
    [
        (
            lambda: parse_target("llvm -num-cores=0"),
            r"--target -num-cores must be an int in the range \[1, inf\)\. Got 0 instead\.",
        ),
        (
            lambda: RemoteDevice.parse("127.0.0.1:70000:pi4"),
            r"--rpc PORT must be an int in the range \[1, 65535\]\. Got 70000 instead\.",
        ),
    ],
)
def test_numbers_inside_target_and_rpc_are_checked(parse, message):
    with pytest.raises(InputError, match=message):
        parse()


def test_a_saved_model_of_an_unknown_kind_names_the_file_and_the_valid_kinds(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(32, len(FEATURE_NAMES)))
    y, qid = rng.random(32), np.repeat(np.arange(4), 8)
    ranker = cost_models.create("xgb", n_estimators=5, max_depth=2).fit(X, y, qid=qid)
    failure = cost_models.CandidateClassifier(n_estimators=5).fit(X, y < 0.3)
    model = model_files.CostModel(ranker, failure)
    model_files.save(model, tmp_path, target=host_target(), data="toy")
    metadata = json.loads((tmp_path / "metadata.json").read_text())
    metadata["model"] = "svm"
    (tmp_path / "metadata.json").write_text(json.dumps(metadata))
    with pytest.raises(
        InputError, match=r"metadata\.json: unknown model kind 'svm'; expected one of: xgb"
    ):
        model_files.load(tmp_path)
